/* Unit tests: directories to session slots, and the syncs owed (fs/slots.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fs/slots.h"

static int pick(struct zklfs_slots *t, const char *dir, bool want_sync)
{
	bool sync;
	int slot = zklfs_slot_pick(t, dir, &sync);

	assert_int_equal(sync, want_sync);
	return slot;
}

static void test_round_robin_and_sticky(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 3, 100), 0);
	/* slot 0 made the root; 1 and 2 owe a sync at their first request */
	assert_int_equal(pick(&t, "/r", false), 0);
	assert_int_equal(pick(&t, "/r/a", true), 1);
	assert_int_equal(pick(&t, "/r/b", true), 2);
	assert_int_equal(pick(&t, "/r/c", false), 0);
	assert_int_equal(pick(&t, "/r/d", false), 1);
	/* a directory keeps its slot */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pick(&t, "/r/a", false), 1);
		assert_int_equal(pick(&t, "/r/b", false), 2);
		assert_int_equal(pick(&t, "/r", false), 0);
	}
	zklfs_slots_free(&t);
}

static void test_mkdir_makes_the_other_slots_sync_once(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 3, 100), 0);
	pick(&t, "/r", false);			/* 0 */
	pick(&t, "/r/a", true);			/* 1 */
	pick(&t, "/r/b", true);			/* 2 */
	zklfs_slots_changed(&t, "/r/a");	/* made on slot 1 */
	assert_int_equal(pick(&t, "/r/a", false), 1);
	assert_int_equal(pick(&t, "/r", true), 0);
	assert_int_equal(pick(&t, "/r", false), 0);
	assert_int_equal(pick(&t, "/r/b", true), 2);
	assert_int_equal(pick(&t, "/r/b", false), 2);
	/* a new directory: its slot syncs at its first request, and it made
	 * the change; the others owe one more */
	zklfs_slots_changed(&t, "/r/e");	/* slot 0 (round robin) */
	assert_int_equal(pick(&t, "/r/e", false), 0);
	assert_int_equal(pick(&t, "/r/a", true), 1);
	assert_int_equal(pick(&t, "/r/b", true), 2);
	/* a slot that owed a sync when it made a change still owes it */
	zklfs_slots_changed(&t, "/r/a");
	zklfs_slots_changed(&t, "/r/b");	/* slot 2: the change of slot 1 */
	assert_int_equal(pick(&t, "/r/b", true), 2);
	assert_int_equal(pick(&t, "/r/a", true), 1);
	zklfs_slots_free(&t);
}

static void test_failed_sync_is_sent_again(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 2, 100), 0);
	assert_int_equal(pick(&t, "/a", false), 0);
	assert_int_equal(pick(&t, "/b", true), 1);
	zklfs_slot_unsynced(&t, 1);
	assert_int_equal(pick(&t, "/b", true), 1);
	assert_int_equal(pick(&t, "/b", false), 1);
	zklfs_slots_free(&t);
}

static void test_one_slot_never_syncs(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 1, 100), 0);
	assert_int_equal(pick(&t, "/a", false), 0);
	zklfs_slots_changed(&t, "/a/b");
	assert_int_equal(pick(&t, "/a", false), 0);
	assert_int_equal(pick(&t, "/a/b", false), 0);
	zklfs_slots_free(&t);
}

static void test_full_table_hashes_without_storing(void **state)
{
	struct zklfs_slots t;
	bool sync;
	int s1, s2;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 4, 2), 0);
	pick(&t, "/a", false);
	pick(&t, "/b", true);
	s1 = zklfs_slot_pick(&t, "/c", &sync);
	s2 = zklfs_slot_pick(&t, "/c", &sync);
	assert_int_equal(s1, s2);
	assert_true(s1 >= 0 && s1 < 4);
	assert_int_equal(t.ndirs, 2);
	zklfs_slots_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_robin_and_sticky),
		cmocka_unit_test(test_mkdir_makes_the_other_slots_sync_once),
		cmocka_unit_test(test_failed_sync_is_sent_again),
		cmocka_unit_test(test_one_slot_never_syncs),
		cmocka_unit_test(test_full_table_hashes_without_storing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
