/* Unit tests: the state line of a lock znode's data (zk/statedata.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "zk/settings.h"
#include "zk/statedata.h"

/* @data edited to hold @state, as a string. */
static const char *edit(const char *data, const char *state, size_t slen)
{
	static char out[512];
	ssize_t n = zksd_edit(data, data ? strlen(data) : 0, state, slen, out, sizeof(out) - 1);

	assert_true(n >= 0);
	out[n] = '\0';
	return out;
}

/* The state in @data, as a string. */
static const char *read_back(const char *data)
{
	static char out[512];
	ssize_t n = zksd_read(data, strlen(data), out, sizeof(out) - 1);

	assert_true(n >= 0);
	out[n] = '\0';
	return out;
}

/* Base64 as RFC 4648's test vectors give it, read back the same. */
static void test_rfc4648_vectors(void **state)
{
	static const char *const v[][2] = {
		{ "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	};
	char line[64];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		snprintf(line, sizeof(line), "state=%s\n", v[i][1]);
		assert_string_equal(edit(NULL, v[i][0], strlen(v[i][0])), line);
		assert_int_equal(zksd_encoded_len(strlen(v[i][0])), strlen(line));
		assert_string_equal(read_back(line), v[i][0]);
	}
}

/* The settings and other lines stay as they are, in place. */
static void test_other_lines_kept(void **state)
{
	(void)state;
	assert_string_equal(edit("limit=2\nlinger=100\n", "a", 1),
			    "limit=2\nlinger=100\nstate=YQ==\n");
	assert_string_equal(edit("limit=2\nstate=YQ==\nlinger=100\n", "bc", 2),
			    "limit=2\nstate=YmM=\nlinger=100\n");
	assert_string_equal(edit("zklockfs=lockfile", "a", 1),
			    "zklockfs=lockfile\nstate=YQ==\n");
	/* a second state line (by hand) goes */
	assert_string_equal(edit("state=YQ==\nx=1\nstate=Yg==\n", "c", 1),
			    "state=Yw==\nx=1\n");
	/* an empty state removes the line */
	assert_string_equal(edit("limit=2\nstate=YQ==\n", "", 0), "limit=2\n");
	assert_string_equal(read_back("limit=2\n"), "");
}

/* Whatever bytes the holder publishes stay in its line: no setting is
 * made of a newline in the state. */
static void test_a_state_never_makes_a_setting(void **state)
{
	const char *s = "x\nlimit=1\nlinger=5\n";
	const char *data = edit("linger=100\n", s, strlen(s));

	(void)state;
	assert_int_equal(zkset_parse(data, strlen(data)), 0);
	assert_int_equal(zkset_setting_parse(&zkset_setting_linger, data, strlen(data)), 100);
	assert_string_equal(read_back(data), s);
}

/* Binary bytes, NULs included, come back whole. */
static void test_binary_round_trip(void **state)
{
	char in[256], data[512], out[256];
	ssize_t n;

	(void)state;
	for (int i = 0; i < 256; i++)
		in[i] = (char)i;
	n = zksd_edit(NULL, 0, in, sizeof(in), data, sizeof(data));
	assert_true(n > 0);
	assert_int_equal(zksd_read(data, (size_t)n, out, sizeof(out)), 256);
	assert_memory_equal(in, out, 256);
}

/* What another client wrote by hand is refused, not misread. */
static void test_bad_lines_and_bounds(void **state)
{
	char out[4], data[8];

	(void)state;
	assert_int_equal(zksd_read("state=Zm9\n", 10, out, sizeof(out)), -EINVAL);
	assert_int_equal(zksd_read("state=Z=9v\n", 11, out, sizeof(out)), -EINVAL);
	assert_int_equal(zksd_read("state=Zm9v!A==\n", 15, out, sizeof(out)), -EINVAL);
	assert_int_equal(zksd_read("state=Zm9vYmFy\n", 15, out, sizeof(out)), -E2BIG);
	assert_int_equal(zksd_read("state=\n", 7, out, sizeof(out)), 0);
	assert_int_equal(zksd_edit("limit=2\n", 8, "a", 1, data, sizeof(data)), -E2BIG);
}

/* A run's line: written and read back, its label unable to make a line. */
static void test_run_lines(void **state)
{
	struct zksd_run r = { .start_ms = 1764979200123 }, back;
	char out[512];
	ssize_t n;

	(void)state;
	snprintf(r.label, sizeof(r.label), "web1 4242\nlimit=1");
	n = zksd_run_edit("limit=3\nstate=YQ==\n", 19, &r, out, sizeof(out) - 1);
	assert_true(n > 0);
	out[n] = '\0';
	assert_int_equal(zkset_parse(out, (size_t)n), 3);
	assert_true(zksd_run_read(out, (size_t)n, &back));
	assert_int_equal(back.start_ms, r.start_ms);
	assert_false(back.exited);
	assert_string_equal(back.label, r.label);
	r.exited = true;
	r.exit_status = 3;
	n = zksd_run_edit(out, (size_t)n, &r, out + 256, 255);
	assert_true(n > 0);
	assert_true(zksd_run_read(out + 256, (size_t)n, &back));
	assert_true(back.exited);
	assert_int_equal(back.exit_status, 3);
	assert_int_equal(memcmp(out + 256, "limit=3\nstate=YQ==\nrun=1764979200123 3 ", 38), 0);
	/* garbled by hand: none */
	assert_false(zksd_run_read("run=12\n", 7, &back));
	assert_false(zksd_run_read("run=x - YQ==\n", 13, &back));
	assert_false(zksd_run_read("run=1 300 YQ==\n", 15, &back));
	assert_false(zksd_run_read("run=1 - Y\n", 10, &back));
	assert_false(zksd_run_read("limit=2\n", 8, &back));
	/* removed */
	n = zksd_run_edit("run=1 - YQ==\nx=1\n", 17, NULL, out, sizeof(out));
	assert_int_equal(n, 4);
	assert_memory_equal(out, "x=1\n", 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_other_lines_kept),
		cmocka_unit_test(test_a_state_never_makes_a_setting),
		cmocka_unit_test(test_binary_round_trip),
		cmocka_unit_test(test_bad_lines_and_bounds),
		cmocka_unit_test(test_run_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
