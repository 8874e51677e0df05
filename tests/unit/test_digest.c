/* Unit tests: SHA-1 and ZooKeeper's digest ids (zk/digest.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "zk/digest.h"

static void sha1_is(const char *data, size_t len, const char *hex)
{
	uint8_t d[20];
	char got[41];

	zkd_sha1(data, len, d);
	for (int i = 0; i < 20; i++)
		snprintf(got + 2 * i, 3, "%02x", d[i]);
	assert_string_equal(got, hex);
}

static void test_sha1(void **state)
{
	char a[1000];

	(void)state;
	memset(a, 'a', sizeof(a));
	sha1_is("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
	/* the padding's edges: 55, 56 and 64 bytes; and many blocks */
	sha1_is(a, 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
	sha1_is(a, 56, "c2db330f6083854c99d4b5bfb6e8f29f201be699");
	sha1_is(a, 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
	sha1_is(a, 1000, "291e9a6c66994949b57ba5e650361e98fc36b1ba");
}

static void test_digest_id(void **state)
{
	char id[128];

	(void)state;
	assert_int_equal(zkd_digest_id("alice:s3cret", id, sizeof(id)),
			 (int)strlen("alice:uLxpHc/uhT86OXPoSjJTp1M8CJY="));
	assert_string_equal(id, "alice:uLxpHc/uhT86OXPoSjJTp1M8CJY=");
	assert_int_equal(zkd_digest_id("no-colon", id, sizeof(id)), -1);
	assert_int_equal(zkd_digest_id("alice:s3cret", id, 20), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha1),
		cmocka_unit_test(test_digest_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
