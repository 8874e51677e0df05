/* Unit tests: ZooKeeper rc to errno (zk/errno.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <zookeeper/zookeeper.h>

#include "zk/errno.h"

static void test_mapping(void **state)
{
	(void)state;
	assert_int_equal(zk_errno(ZOK), 0);
	assert_int_equal(zk_errno(ZNONODE), -ENOENT);
	assert_int_equal(zk_errno(ZNODEEXISTS), -EEXIST);
	assert_int_equal(zk_errno(ZNOTEMPTY), -ENOTEMPTY);
	assert_int_equal(zk_errno(ZNOAUTH), -EACCES);
	assert_int_equal(zk_errno(ZAUTHFAILED), -EACCES);
	assert_int_equal(zk_errno(ZBADARGUMENTS), -EINVAL);
	assert_int_equal(zk_errno(ZNOCHILDRENFOREPHEMERALS), -ENOTDIR);
	assert_int_equal(zk_errno(ZINVALIDSTATE), -ENOTCONN);
	assert_int_equal(zk_errno(ZSESSIONEXPIRED), -ENOTCONN);
	assert_int_equal(zk_errno(ZCLOSING), -ESHUTDOWN);
	assert_int_equal(zk_errno(ZOPERATIONTIMEOUT), -ETIMEDOUT);
	assert_int_equal(zk_errno(ZCONNECTIONLOSS), -EIO);
	assert_int_equal(zk_errno(ZMARSHALLINGERROR), -EFBIG);
	assert_int_equal(zk_errno(-12345), -EIO);
}

static void test_unknown_outcome(void **state)
{
	(void)state;
	assert_true(zk_rc_unknown(ZCONNECTIONLOSS));
	assert_true(zk_rc_unknown(ZOPERATIONTIMEOUT));
	assert_false(zk_rc_unknown(ZOK));
	assert_false(zk_rc_unknown(ZNONODE));
	assert_false(zk_rc_unknown(ZSESSIONEXPIRED));
	/* a read may be sent again: the session was away, nothing was said */
	assert_true(zk_rc_transient(ZCONNECTIONLOSS));
	assert_true(zk_rc_transient(ZSESSIONEXPIRED));
	assert_true(zk_rc_transient(ZINVALIDSTATE));
	assert_true(zk_rc_transient(ZCLOSING));
	assert_false(zk_rc_transient(ZNONODE));
	assert_false(zk_rc_transient(ZNOAUTH));
	assert_false(zk_rc_transient(ZOK));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mapping),
		cmocka_unit_test(test_unknown_outcome),
	};

	return cmocka_run_group_tests_name("errno", tests, NULL, NULL);
}
