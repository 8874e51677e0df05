/* Unit tests: entry names (zk/naming.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "zk/naming.h"

static void parses(const char *name, int32_t seq, enum zkn_kind kind)
{
	struct zkg_child c;

	assert_true(zkn_parse(name, &c));
	assert_int_equal(c.seq, seq);
	assert_int_equal(c.kind, kind);
	assert_ptr_equal(c.name, name);
}

static void test_our_curator_names(void **state)
{
	(void)state;
	parses("web1-lock-0000000042", 42, ZKN_EXCLUSIVE);
	parses("web1-read-lock-0000000043", 43, ZKN_SHARED);
}

static void test_our_kazoo_names(void **state)
{
	(void)state;
	parses("web1__lock__0000000007", 7, ZKN_EXCLUSIVE);
	parses("web1__rlock__0000000008", 8, ZKN_SHARED);
}

static void test_other_recipes(void **state)
{
	(void)state;
	/* Curator InterProcessMutex, Curator read/write lock, go-zookeeper */
	parses("_c_2b0fd7c4-5c4e-4f0b-9c6b-1c1d6c0b2d8e-lock-0000000001", 1, ZKN_EXCLUSIVE);
	parses("_c_2b0fd7c4-5c4e-4f0b-9c6b-1c1d6c0b2d8e-__READ__0000000002", 2, ZKN_SHARED);
	parses("_c_2b0fd7c4-5c4e-4f0b-9c6b-1c1d6c0b2d8e-__WRIT__0000000003", 3, ZKN_EXCLUSIVE);
	parses("_c_0123456789abcdef0123456789abcdef-lock-0000000004", 4, ZKN_EXCLUSIVE);
	parses("0f1e2d3c4b5a__lock__2147483647", INT32_MAX, ZKN_EXCLUSIVE);
	/* a NAME that ends in digits or looks like an entry itself */
	parses("host1234567890-lock-0000000009", 9, ZKN_EXCLUSIVE);
	parses("a-lock-0000000001-read-lock-0000000002", 2, ZKN_SHARED);
}

static void test_negative_sequence_after_wrap(void **state)
{
	(void)state;
	parses("a-lock--2147483648", INT32_MIN, ZKN_EXCLUSIVE);
	parses("a-lock--000000005", -5, ZKN_EXCLUSIVE);
	parses("a-read-lock--1500000000", -1500000000, ZKN_SHARED);
	parses("a__rlock__-000000001", -1, ZKN_SHARED);
	/* one minus sign is the marker's, not the number's */
	parses("a-lock-1500000000", 1500000000, ZKN_EXCLUSIVE);
}

static void test_markerless_contenders(void **state)
{
	(void)state;
	/* ZooKeeper's own lock recipe, and any number after '-' or '_' */
	parses("x-72057594037927936-0000000001", 1, ZKN_EXCLUSIVE);
	parses("_c_2b0f-latch-0000000001", 1, ZKN_EXCLUSIVE);
	parses("lock_0000000007", 7, ZKN_EXCLUSIVE);
	parses("x--1500000000", -1500000000, ZKN_EXCLUSIVE);
	/* "a-lock-" + "-0000000005" is no number: "a-lock--" + "0000000005" is */
	parses("a-lock--0000000005", 5, ZKN_EXCLUSIVE);
}

static void test_children_outside_the_queue(void **state)
{
	struct zkg_child c;

	(void)state;
	assert_false(zkn_parse("leases", &c));
	assert_false(zkn_parse("a-lock-123", &c));
	assert_false(zkn_parse("", &c));
	assert_false(zkn_parse("a-lock-9999999999", &c));	/* > INT32_MAX */
	/* digits alone make no entry: only a marker and ZooKeeper's number */
	assert_false(zkn_parse("tmp.1234567890", &c));
	assert_false(zkn_parse("go-build1234567890", &c));	/* os.MkdirTemp */
	assert_false(zkn_parse("1234567890", &c));
	assert_false(zkn_parse("job-123456789", &c));
	/* not "%010d" of a 32-bit counter */
	assert_false(zkn_parse("a-lock-00000000042", &c));
	assert_false(zkn_parse("a-lock- 000000042", &c));
	assert_false(zkn_parse("a-lock-+000000042", &c));
	assert_false(zkn_parse("a-lock--000000000", &c));
}

static void test_check_name(void **state)
{
	char longname[300];

	(void)state;
	assert_int_equal(zkn_check_name("deploy"), 0);
	assert_int_equal(zkn_check_name("web-1.example.com"), 0);
	assert_int_equal(zkn_check_name("d\xc3\xa9ploiement"), 0);	/* UTF-8 */
	assert_int_equal(zkn_check_name("."), -EINVAL);
	assert_int_equal(zkn_check_name(".."), -EINVAL);
	assert_int_equal(zkn_check_name(""), -EINVAL);
	/* names that merely end in digits are ordinary */
	assert_int_equal(zkn_check_name("job0123456789"), 0);
	assert_int_equal(zkn_check_name("tmp.1234567890"), 0);
	assert_int_equal(zkn_check_name("go-build1234567890"), 0);
	assert_int_equal(zkn_check_name("job-123456789"), 0);
	assert_int_equal(zkn_check_name("-123456789"), 0);
	assert_int_equal(zkn_check_name("a-lock-123"), 0);
	/* the exact shapes of queue entries, of every scheme read */
	assert_int_equal(zkn_check_name("x-lock-0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("x-1234567890"), -EINVAL);	/* a contender's */
	assert_int_equal(zkn_check_name("x_0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("x-read-lock-0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("x__lock__0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("x__rlock__0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("_c_a-__READ__0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("_c_a-__WRIT__0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("x-lock--000000005"), -EINVAL);
	assert_int_equal(zkn_check_name("x-lock--2147483648"), -EINVAL);
	assert_int_equal(zkn_check_name("-lock-0000000001"), -EINVAL);
	assert_int_equal(zkn_check_name("a\x01z"), -EINVAL);
	assert_int_equal(zkn_check_name("a\x7fz"), -EINVAL);
	assert_int_equal(zkn_check_name("bad\xff"), -EINVAL);	/* not UTF-8 */
	assert_int_equal(zkn_check_name("\xc0\xaf"), -EINVAL);	/* overlong */
	assert_int_equal(zkn_check_name("pua\xee\x80\x80"), -EINVAL); /* U+E000 */
	memset(longname, 'x', 256);
	longname[256] = '\0';
	assert_int_equal(zkn_check_name(longname), -ENAMETOOLONG);
	longname[255] = '\0';
	assert_int_equal(zkn_check_name(longname), 0);
}

static void test_entry_name_fits_with_marker(void **state)
{
	char name[256];

	(void)state;
	memset(name, 'x', sizeof(name));
	name[255 - 6 - 11] = '\0';	/* exactly fits "-lock-" + number */
	assert_int_equal(zkn_check_entry_name(name, ZKN_CURATOR, ZKN_EXCLUSIVE), 0);
	assert_int_equal(zkn_check_entry_name(name, ZKN_CURATOR, ZKN_SHARED), -ENAMETOOLONG);
	assert_int_equal(zkn_check_entry_name("ok", ZKN_KAZOO, ZKN_SHARED), 0);
	assert_int_equal(zkn_check_entry_name("..", ZKN_KAZOO, ZKN_SHARED), -EINVAL);
}

/* An entry must read back as its kind: "db-read" + "-lock-" reads shared. */
static void test_entry_name_reads_back_as_its_kind(void **state)
{
	(void)state;
	assert_int_equal(zkn_check_entry_name("db-read", ZKN_CURATOR, ZKN_EXCLUSIVE), -EINVAL);
	assert_int_equal(zkn_check_entry_name("db-read", ZKN_CURATOR, ZKN_SHARED), -EINVAL);
	assert_int_equal(zkn_check_entry_name("db-reader", ZKN_CURATOR, ZKN_EXCLUSIVE), 0);
	assert_int_equal(zkn_check_entry_name("read", ZKN_CURATOR, ZKN_EXCLUSIVE), 0);
	/* kazoo's exclusive marker cannot end in a shared one */
	assert_int_equal(zkn_check_entry_name("db-read", ZKN_KAZOO, ZKN_EXCLUSIVE), 0);
	assert_int_equal(zkn_check_entry_name("x__r", ZKN_KAZOO, ZKN_EXCLUSIVE), 0);
	assert_int_equal(zkn_check_entry_name("x__READ_", ZKN_CURATOR, ZKN_EXCLUSIVE), 0);
	/* the number is read after the marker: digits before it do no harm */
	assert_int_equal(zkn_check_entry_name("host1234567890", ZKN_CURATOR, ZKN_EXCLUSIVE), 0);
	assert_int_equal(zkn_check_entry_name("host1234567890", ZKN_KAZOO, ZKN_SHARED), 0);
	assert_int_equal(zkn_check_entry_name("job-123456789", ZKN_CURATOR, ZKN_SHARED), 0);
	/* an entry's name is no NAME: it would open that entry */
	assert_int_equal(zkn_check_entry_name("x-lock-0000000001", ZKN_CURATOR, ZKN_EXCLUSIVE),
			 -EINVAL);
}

static void test_markers_and_schemes(void **state)
{
	enum zkn_naming s;

	(void)state;
	assert_string_equal(zkn_marker(ZKN_CURATOR, ZKN_EXCLUSIVE), "-lock-");
	assert_string_equal(zkn_marker(ZKN_CURATOR, ZKN_SHARED), "-read-lock-");
	assert_string_equal(zkn_marker(ZKN_KAZOO, ZKN_EXCLUSIVE), "__lock__");
	assert_string_equal(zkn_marker(ZKN_KAZOO, ZKN_SHARED), "__rlock__");
	assert_int_equal(zkn_parse_scheme("kazoo", &s), 0);
	assert_int_equal(s, ZKN_KAZOO);
	assert_int_equal(zkn_parse_scheme("curator", &s), 0);
	assert_int_equal(s, ZKN_CURATOR);
	assert_int_equal(zkn_parse_scheme("Kazoo", &s), -EINVAL);
}

static void test_serial_order_survives_wrap(void **state)
{
	(void)state;
	assert_true(zkn_seq_cmp(1, 2) < 0);
	assert_true(zkn_seq_cmp(2, 1) > 0);
	assert_int_equal(zkn_seq_cmp(7, 7), 0);
	assert_true(zkn_seq_cmp(INT32_MAX, INT32_MIN) < 0);
	assert_true(zkn_seq_cmp(INT32_MAX - 5, INT32_MIN + 5) < 0);
	assert_true(zkn_seq_cmp(INT32_MIN + 5, INT32_MAX - 5) > 0);
	assert_true(zkn_seq_cmp(-1, 0) < 0);
}

static void test_paths(void **state)
{
	char *p;

	(void)state;
	p = zkn_join("/", "locks");
	assert_string_equal(p, "/locks");
	free(p);
	p = zkn_join("/locks/deploy", "a-lock-0000000001");
	assert_string_equal(p, "/locks/deploy/a-lock-0000000001");
	assert_string_equal(zkn_base(p), "a-lock-0000000001");
	free(p);
	assert_string_equal(zkn_base("/"), "");
	assert_string_equal(zkn_base("bare"), "bare");
	assert_int_equal(zkn_parent_len("/locks"), 1);
	assert_int_equal(zkn_parent_len("/locks/deploy"), 6);
	assert_int_equal(zkn_parent_len("/locks/deploy/a-lock-0000000001"), 13);
	/* FNV-1a 64 reference values */
	assert_true(zkn_hash("") == 0xcbf29ce484222325ULL);
	assert_true(zkn_hash("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(zkn_hash("/l/a") != zkn_hash("/l/b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_our_curator_names),
		cmocka_unit_test(test_our_kazoo_names),
		cmocka_unit_test(test_other_recipes),
		cmocka_unit_test(test_negative_sequence_after_wrap),
		cmocka_unit_test(test_markerless_contenders),
		cmocka_unit_test(test_children_outside_the_queue),
		cmocka_unit_test(test_check_name),
		cmocka_unit_test(test_entry_name_fits_with_marker),
		cmocka_unit_test(test_entry_name_reads_back_as_its_kind),
		cmocka_unit_test(test_markers_and_schemes),
		cmocka_unit_test(test_serial_order_survives_wrap),
		cmocka_unit_test(test_paths),
	};

	return cmocka_run_group_tests_name("naming", tests, NULL, NULL);
}
