/* Unit tests: ZooKeeper rc to errno (zk/errno.c). */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <zookeeper/zookeeper.h>

#include "zk/errno.h"

static void test_mapping(void **state)
{
	static const struct { int rc, err; } map[] = {
		{ ZOK, 0 },
		{ ZNONODE, -ENOENT },
		{ ZNODEEXISTS, -EEXIST },
		{ ZNOTEMPTY, -ENOTEMPTY },
		{ ZNOAUTH, -EACCES },
		{ ZAUTHFAILED, -EACCES },
		{ ZBADARGUMENTS, -EINVAL },
		{ ZNOCHILDRENFOREPHEMERALS, -ENOTDIR },
		{ ZINVALIDSTATE, -ENOTCONN },
		{ ZSESSIONEXPIRED, -ENOTCONN },
		{ ZCLOSING, -ESHUTDOWN },
		{ ZOPERATIONTIMEOUT, -ETIMEDOUT },
		{ ZCONNECTIONLOSS, -EIO },
		{ ZMARSHALLINGERROR, -EFBIG },
		{ -12345, -EIO },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(map) / sizeof(*map); i++)
		if (zk_errno(map[i].rc) != map[i].err)
			fail_msg("zk_errno(%d): %d, not %d", map[i].rc, zk_errno(map[i].rc),
				 map[i].err);
}

/* rc and whether pred(rc) must be true (non-zero) */
struct said {
	int rc;
	bool yes;
};

static void each_said(int (*pred)(int), const char *name, const struct said *rows,
		      size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((pred(rows[i].rc) != 0) != rows[i].yes)
			fail_msg("%s(%d) is %s", name, rows[i].rc, rows[i].yes ? "false" : "true");
}

static void test_unknown_outcome(void **state)
{
	static const struct said unknown[] = {
		{ ZCONNECTIONLOSS, true },
		{ ZOPERATIONTIMEOUT, true },
		{ ZOK, false },
		{ ZNONODE, false },
		{ ZSESSIONEXPIRED, false },
	};
	/* a read may be sent again: the session was away, nothing was said */
	static const struct said transient[] = {
		{ ZCONNECTIONLOSS, true },
		{ ZSESSIONEXPIRED, true },
		{ ZINVALIDSTATE, true },
		{ ZCLOSING, true },
		{ ZNONODE, false },
		{ ZNOAUTH, false },
		{ ZOK, false },
	};

	(void)state;
	each_said(zk_rc_unknown, "zk_rc_unknown", unknown, sizeof(unknown) / sizeof(*unknown));
	each_said(zk_rc_transient, "zk_rc_transient", transient,
		  sizeof(transient) / sizeof(*transient));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mapping),
		cmocka_unit_test(test_unknown_outcome),
	};

	return cmocka_run_group_tests_name("errno", tests, NULL, NULL);
}
