/* Unit tests: zklock's watchdog verdict (abi/zklockfs.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "abi/zklockfs.h"

static void test_verdict(void **state)
{
	(void)state;
	/* not connected yet: nothing to go by */
	assert_int_equal(zk_heartbeat_verdict(1, 1, 0, 5000), ZK_HB_ALIVE);
	assert_int_equal(zk_heartbeat_verdict(1, 1, 5000, 4999), ZK_HB_ALIVE);
	/* from the instant on, not a millisecond later */
	assert_int_equal(zk_heartbeat_verdict(1, 1, 5000, 5000), ZK_HB_DUE);
	assert_int_equal(zk_heartbeat_verdict(1, 1, 5000, 9000), ZK_HB_DUE);
	/* a replaced session: its locks are gone, however alive the new one */
	assert_int_equal(zk_heartbeat_verdict(1, 2, 90000, 5000), ZK_HB_REPLACED);
	assert_int_equal(zk_heartbeat_verdict(7, 8, 0, 5000), ZK_HB_REPLACED);
	assert_int_equal(zk_heartbeat_verdict(2, 1, 90000, 5000), ZK_HB_REPLACED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
