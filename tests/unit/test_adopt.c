/* Unit tests: is a candidate entry ours after an unknown create (zk/adopt.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "zk/adopt.h"

#define NONCE "zkl=0123456789abcdef\n"
#define DATA "host=h\npid=1\nuid=0\ncmd=x\nsince=s\nmount=/m\n" NONCE
#define SID ((int64_t)0x1000000abcdLL)

static enum zka_verdict cand(const char *data, bool taken, int64_t owner,
			     int64_t session)
{
	return zka_candidate(data, data ? (int)strlen(data) : 0, NONCE, owner,
			     session, taken);
}

static void test_ours(void **state)
{
	(void)state;
	assert_int_equal(cand(DATA, false, SID, SID), ZKA_OURS);
	assert_int_equal(cand(NONCE, false, SID, SID), ZKA_OURS);
}

static void test_no_nonce(void **state)
{
	(void)state;
	assert_int_equal(cand("host=h\n", false, SID, SID), ZKA_OTHER);
	assert_int_equal(cand("", false, SID, SID), ZKA_OTHER);
	assert_int_equal(cand(NULL, false, SID, SID), ZKA_OTHER);
	/* another nonce, or ours not at the end */
	assert_int_equal(cand("zkl=0123456789abcdee\n", false, SID, SID), ZKA_OTHER);
	assert_int_equal(cand(NONCE "x\n", false, SID, SID), ZKA_OTHER);
	assert_int_equal(cand("zkl=0123456789abcdef", false, SID, SID), ZKA_OTHER);
}

static void test_planted(void **state)
{
	(void)state;
	/* another session's entry carrying our nonce */
	assert_int_equal(cand(DATA, false, SID + 1, SID), ZKA_PLANTED);
	/* a persistent znode (owner 0) */
	assert_int_equal(cand(DATA, false, 0, SID), ZKA_PLANTED);
	/* our session's, but already another waiter's: our nonce copied in */
	assert_int_equal(cand(DATA, true, SID, SID), ZKA_PLANTED);
	/* our session unknown: nothing can be ours */
	assert_int_equal(cand(DATA, false, 0, 0), ZKA_PLANTED);
	assert_int_equal(cand(DATA, false, SID, 0), ZKA_PLANTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ours),
		cmocka_unit_test(test_no_nonce),
		cmocka_unit_test(test_planted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
