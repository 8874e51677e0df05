/* Unit tests: a thread's start time, and is it the thread that asked (fs/tid.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fs/tid.h"

/* /proc/TID/stat of a thread named NAME started at tick 1142317 */
#define STAT(NAME) "23022 (" NAME ") R 23018 23018 12916 0 -1 4194304 100 0 0 " \
	"0 0 0 0 0 20 0 1 0 1142317 3133440 406 18446744073709551615 " \
	"94513961029632 94513961049513 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"

static void test_start_of_a_plain_name(void **state)
{
	(void)state;
	assert_int_equal(zklfs_stat_start(STAT("cat")), 1142317);
	assert_int_equal(zklfs_stat_start(STAT("")), 1142317);
}

static void test_start_counted_from_the_last_parenthesis(void **state)
{
	(void)state;
	/* a name may hold spaces and ')' (prctl, or the executable's name) */
	assert_int_equal(zklfs_stat_start(STAT("a b c")), 1142317);
	assert_int_equal(zklfs_stat_start(STAT("x) R 1 2 3 4 5 6 7 8 9")), 1142317);
	assert_int_equal(zklfs_stat_start(STAT(") (")), 1142317);
	assert_int_equal(zklfs_stat_start(STAT("))))")), 1142317);
}

static void test_start_unknown(void **state)
{
	(void)state;
	assert_int_equal(zklfs_stat_start(""), 0);		/* thread gone */
	assert_int_equal(zklfs_stat_start("23022 (cat"), 0);
	assert_int_equal(zklfs_stat_start("23022 (cat) R 1 2 3"), 0);
	/* cut within field 22, or not a number there */
	assert_int_equal(zklfs_stat_start("1 (c) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "), 0);
	assert_int_equal(zklfs_stat_start("1 (c) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5 1"), 0);
	assert_int_equal(zklfs_stat_start("1 (c) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12x 1"), 0);
	/* field 22 last, at the end of the text */
	assert_int_equal(zklfs_stat_start("1 (c) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77"), 77);
}

static void test_same_thread(void **state)
{
	(void)state;
	assert_true(zklfs_same_thread(100, 5000, 100, 5000));
	/* the id given again to a thread started later */
	assert_false(zklfs_same_thread(100, 5001, 100, 5000));
	/* another id */
	assert_false(zklfs_same_thread(101, 5000, 100, 5000));
	/* a start unknown: the id alone decides */
	assert_true(zklfs_same_thread(100, 0, 100, 5000));
	assert_true(zklfs_same_thread(100, 5000, 100, 0));
	assert_false(zklfs_same_thread(101, 0, 100, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_of_a_plain_name),
		cmocka_unit_test(test_start_counted_from_the_last_parenthesis),
		cmocka_unit_test(test_start_unknown),
		cmocka_unit_test(test_same_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
