/* tests/unit/test_settings.c - a semaphore's limit and a lingering lock's time
 * in a lock znode's data (zk/settings.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "zk/settings.h"

#define PARSE(s) zkset_parse((s), sizeof(s) - 1)

/* a lock znode's data (with its length: a NUL is a byte like any other)
 * and the limit zkset_parse reads in it */
struct parsed {
	const char *data;
	size_t len;
	unsigned limit;
};
#define ROW(s, limit) { (s), sizeof(s) - 1, (limit) }

static void parse_each(const struct parsed *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (zkset_parse(rows[i].data, rows[i].len) != rows[i].limit)
			fail_msg("zkset_parse(\"%.*s\"): %u, not %u", (int)rows[i].len,
				 rows[i].data, zkset_parse(rows[i].data, rows[i].len),
				 rows[i].limit);
}

static void test_parse_reads_the_first_limit_line(void **state)
{
	static const struct parsed rows[] = {
		ROW("", 0),
		ROW("limit=5", 5),
		ROW("limit=5\n", 5),
		ROW("owner=1000\nlimit=1000\n", 1000),
		ROW("limit=3\nlimit=7\n", 3),
		/* another client's data: no limit */
		ROW("10.0.0.7", 0),
		ROW("xlimit=5\n", 0),
		ROW(" limit=5\n", 0),
	};

	(void)state;
	parse_each(rows, sizeof(rows) / sizeof(*rows));
}

static void test_parse_refuses_what_is_not_a_limit(void **state)
{
	static const struct parsed rows[] = {
		ROW("limit=0\n", 0),
		ROW("limit=1001\n", 0),
		ROW("limit=05\n", 0),
		ROW("limit=-5\n", 0),
		ROW("limit=+5\n", 0),
		ROW("limit=5 \n", 0),
		ROW("limit=\n", 0),
		ROW("limit=99999999999999999999\n", 0),
		/* a NUL is a byte like any other, never the end */
		ROW("limit=5\0", 0),
	};

	(void)state;
	parse_each(rows, sizeof(rows) / sizeof(*rows));
}

static void test_value_is_a_plain_number_in_range(void **state)
{
	unsigned v = 0;

	(void)state;
	assert_int_equal(zkset_value("5", 1, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(zkset_value("1000\n", 5, &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(zkset_value("0", 1, &v), -EINVAL);
	assert_int_equal(zkset_value("1001", 4, &v), -EINVAL);
	assert_int_equal(zkset_value("", 0, &v), -EINVAL);
	assert_int_equal(zkset_value("\n", 1, &v), -EINVAL);
	assert_int_equal(zkset_value("5\n\n", 3, &v), -EINVAL);
	assert_int_equal(zkset_value("five", 4, &v), -EINVAL);
	assert_int_equal(v, 1000);	/* untouched on failure */
}

static void edit(const char *in, unsigned limit, const char *want)
{
	char out[128];
	int n = zkset_edit(in, strlen(in), limit, out, sizeof(out));

	assert_int_equal(n, (int)strlen(want));
	assert_memory_equal(out, want, (size_t)n);
	assert_int_equal(zkset_parse(out, (size_t)n), limit);
}

static void test_edit_keeps_every_other_line(void **state)
{
	(void)state;
	edit("", 5, "limit=5\n");
	edit("limit=5\n", 7, "limit=7\n");
	edit("a=1\nlimit=5\nb=2\n", 9, "a=1\nlimit=9\nb=2\n");
	edit("a=1", 2, "a=1\nlimit=2\n");
	edit("a=1\nlimit=5\nlimit=6\nb=2", 3, "a=1\nlimit=3\nb=2");
	/* removed */
	edit("a=1\nlimit=5\nb=2\n", 0, "a=1\nb=2\n");
	edit("limit=5\n", 0, "");
	edit("a=1", 0, "a=1");
	/* a malformed limit line is replaced too: one limit line after */
	edit("limit=abc\n", 4, "limit=4\n");
}

static void test_edit_that_does_not_fit(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(zkset_edit("", 0, 5, out, 7), -E2BIG);
	assert_int_equal(zkset_edit("", 0, 5, out, 8), 8);
	assert_int_equal(zkset_edit("abcdefgh", 8, 0, out, 7), -E2BIG);
}

#define LINGER(s) zkset_setting_parse(&zkset_setting_linger, (s), sizeof(s) - 1)

static void test_linger_is_set_apart_from_the_limit(void **state)
{
	char out[64];
	unsigned v = 99;
	int n;

	(void)state;
	assert_int_equal(LINGER(""), -1);
	assert_int_equal(LINGER("limit=5\n"), -1);
	assert_int_equal(LINGER("linger=0\n"), 0);		/* set: never linger */
	assert_int_equal(LINGER("limit=5\nlinger=250\n"), 250);
	assert_int_equal(LINGER("linger=3600000"), 3600000);
	assert_int_equal(LINGER("linger=3600001\n"), -1);
	assert_int_equal(LINGER("linger=00\n"), -1);
	assert_int_equal(LINGER("linger=99999999999\n"), -1);
	assert_int_equal(PARSE("linger=5\n"), 0);
	assert_int_equal(zkset_setting_value(&zkset_setting_linger, "0\n", 2, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(zkset_setting_value(&zkset_setting_linger, "-1", 2, &v), -EINVAL);
	n = zkset_setting_edit(&zkset_setting_linger, "limit=5\nlinger=9\n", 17, 100, out,
			     sizeof(out));
	assert_int_equal(n, (int)strlen("limit=5\nlinger=100\n"));
	assert_memory_equal(out, "limit=5\nlinger=100\n", (size_t)n);
	n = zkset_setting_edit(&zkset_setting_linger, "limit=5\nlinger=9\n", 17, -1, out,
			     sizeof(out));
	assert_int_equal(n, 8);
	assert_memory_equal(out, "limit=5\n", 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_reads_the_first_limit_line),
		cmocka_unit_test(test_parse_refuses_what_is_not_a_limit),
		cmocka_unit_test(test_value_is_a_plain_number_in_range),
		cmocka_unit_test(test_edit_keeps_every_other_line),
		cmocka_unit_test(test_edit_that_does_not_fit),
		cmocka_unit_test(test_linger_is_set_apart_from_the_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
