/* Unit tests: directories to session slots, the syncs owed, and when the
 * pool opens and closes a session (fs/slots.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fs/slots.h"

static int pick_at(struct zklfs_slots *t, const char *dir, uint64_t now, bool want_sync)
{
	bool sync;
	int slot = zklfs_slot_pick(t, dir, now, &sync);

	assert_int_equal(sync, want_sync);
	return slot;
}

static int pick(struct zklfs_slots *t, const char *dir, bool want_sync)
{
	return pick_at(t, dir, 0, want_sync);
}

/* The directory "@prefix@i" ("/d3"), in @buf. */
static const char *named(char buf[32], const char *prefix, int i)
{
	snprintf(buf, 32, "%s%d", prefix, i);
	return buf;
}

/* @n directories "/dN", each with one pin (a waiter), from @from on. */
static void busy(struct zklfs_slots *t, int from, int n)
{
	char dir[32];
	bool sync;

	for (int i = from; i < from + n; i++)
		zklfs_slot_hold(t, named(dir, "/d", i), 0, &sync);
}

static void test_round_robin_among_equals_and_sticky(void **state)
{
	struct zklfs_slots t;
	bool sync;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 3, 3, 100), 0);
	/* slot 0 made the root; 1 and 2 owe a sync at their first request */
	assert_int_equal(pick(&t, "/r", false), 0);
	assert_int_equal(pick(&t, "/r/a", true), 1);
	assert_int_equal(pick(&t, "/r/b", true), 2);
	assert_int_equal(pick(&t, "/r/c", false), 0);
	/* a directory keeps its slot */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pick(&t, "/r/a", false), 1);
		assert_int_equal(pick(&t, "/r", false), 0);
	}
	/* active ones go where fewest are active */
	busy(&t, 0, 2);					/* slots 1 and 2 */
	assert_int_equal(zklfs_slot_hold(&t, "/z", 0, &sync), 0);
	/* and keep their slot while pinned, however busy it is */
	busy(&t, 2, 4);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(zklfs_slot_hold(&t, "/z", 0, &sync), 0);
		zklfs_slot_pin(&t, "/z", 0, -1, 0);
	}
	zklfs_slots_free(&t);
}

static void test_free_directory_moves_to_a_less_busy_slot(void **state)
{
	struct zklfs_slots t;
	bool sync;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 2, 1, 100), 0);
	/* one slot open: four locks active on it, and /a, idle, too */
	busy(&t, 0, 4);
	assert_int_equal(pick(&t, "/a", false), 0);
	assert_int_equal(zklfs_slots_want(&t), 1);
	zklfs_slot_opened(&t, 1, 0);
	assert_int_equal(zklfs_slots_want(&t), -1);	/* all open */
	/* a pinned directory stays */
	assert_int_equal(zklfs_slot_hold(&t, "/d0", 0, &sync), 0);
	zklfs_slot_pin(&t, "/d0", 0, -1, 0);
	/* a free one moves, and its new slot syncs first */
	assert_int_equal(pick(&t, "/a", true), 1);
	assert_int_equal(t.moves, 1);
	assert_int_equal(pick(&t, "/a", false), 1);
	/* once the slots are within REBALANCE of each other, nothing moves */
	zklfs_slot_hold(&t, "/a", 0, &sync);
	zklfs_slot_pin(&t, "/d3", 0, -1, 0);		/* /d3 free: 3 others against 1 */
	assert_int_equal(pick(&t, "/d3", true), 1);	/* 3 >= 1 + 2: moves */
	zklfs_slot_hold(&t, "/d3", 0, &sync);
	zklfs_slot_pin(&t, "/d2", 0, -1, 0);		/* 2 others against 2 */
	assert_int_equal(pick(&t, "/d2", false), 0);
	assert_int_equal(t.moves, 2);
	zklfs_slots_free(&t);
}

static void test_a_cycled_lock_stays_and_load_decays(void **state)
{
	struct zklfs_slots t;
	char dir[32];
	bool sync;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 2, 2, 100), 0);
	/* four locks cycled on slot 0, nothing on slot 1: each is free for
	 * a moment between its cycles, and none moves for that */
	for (int i = 0; i < 4; i++)
		assert_int_equal(zklfs_slot_hold(&t, named(dir, "/c", i), 0, &sync), i % 2);
	assert_int_equal(t.s[0].load, 2);
	assert_int_equal(t.s[1].load, 2);
	for (int round = 0; round < 10; round++)
		for (int i = 0; i < 4; i++) {
			zklfs_slot_pin(&t, named(dir, "/c", i), i % 2, -1, 0);
			assert_int_equal(zklfs_slot_hold(&t, dir, 10 * (uint64_t)round, &sync),
					 i % 2);
		}
	assert_int_equal(t.moves, 0);
	/* unpinned and not picked for the recent time: no longer load */
	for (int i = 0; i < 4; i++)
		zklfs_slot_pin(&t, named(dir, "/c", i), i % 2, -1, 0);
	zklfs_slots_sweep(&t, 500, 1000);
	assert_int_equal(t.s[0].load, 2);
	zklfs_slots_sweep(&t, 2000, 1000);
	assert_int_equal(t.s[0].load, 0);
	assert_int_equal(t.s[1].load, 0);
	zklfs_slots_free(&t);
}

static void test_grows_while_every_slot_is_busy(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 3, 1, 100), 0);
	busy(&t, 0, 1);
	assert_int_equal(zklfs_slots_want(&t), -1);	/* one lock: no queue */
	busy(&t, 1, 1);
	assert_int_equal(zklfs_slots_want(&t), 1);
	zklfs_slot_opened(&t, 1, 0);
	assert_int_equal(zklfs_slots_want(&t), -1);	/* slot 1 has none */
	busy(&t, 2, 2);					/* both on slot 1 */
	assert_int_equal(t.s[1].load, 2);
	assert_int_equal(zklfs_slots_want(&t), 2);
	zklfs_slot_opened(&t, 2, 0);
	busy(&t, 4, 4);
	assert_int_equal(zklfs_slots_want(&t), -1);	/* at the most */
	zklfs_slots_free(&t);
}

static void test_closes_only_idle_unpinned_slots(void **state)
{
	struct zklfs_slots t;
	bool sync;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 3, 1, 100), 0);
	zklfs_slot_opened(&t, 1, 1000);
	zklfs_slot_opened(&t, 2, 1000);
	assert_int_equal(zklfs_slot_hold(&t, "/a", 1000, &sync), 0);
	assert_int_equal(zklfs_slot_hold(&t, "/b", 1000, &sync), 1);
	/* slot 0 is kept; slot 1 is pinned; slot 2 closes once idle */
	assert_int_equal(zklfs_slots_idle(&t, 1, 1500, 1000), -1);
	assert_int_equal(zklfs_slots_idle(&t, 1, 2000, 1000), 2);
	zklfs_slot_close(&t, 2);
	assert_int_equal(zklfs_slots_idle(&t, 1, 2000, 1000), -1);
	/* a pick keeps a slot in use */
	pick_at(&t, "/b", 2500, false);
	zklfs_slot_pin(&t, "/b", 1, -1, 0);
	assert_int_equal(zklfs_slots_idle(&t, 1, 3000, 1000), -1);
	assert_int_equal(zklfs_slots_idle(&t, 1, 3500, 1000), 1);
	/* with sessions=N, none closes */
	assert_int_equal(zklfs_slots_idle(&t, 3, 9000, 1000), -1);
	zklfs_slot_close(&t, 1);
	/* its directory is bound again at its next pick, with a sync */
	assert_int_equal(pick_at(&t, "/b", 4000, true), 0);
	zklfs_slots_free(&t);
}

static void test_rebound_after_close_syncs(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 2, 1, 100), 0);
	busy(&t, 0, 2);
	zklfs_slot_opened(&t, 1, 0);
	assert_int_equal(pick(&t, "/a", true), 1);	/* moves: slot 1 syncs */
	zklfs_slot_close(&t, 1);
	zklfs_slot_opened(&t, 1, 0);
	assert_int_equal(pick(&t, "/a", true), 1);	/* a new session syncs */
	zklfs_slots_free(&t);
}

static void test_mkdir_makes_the_other_slots_sync_once(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 3, 3, 100), 0);
	pick(&t, "/r", false);			/* 0 */
	pick(&t, "/r/a", true);			/* 1 */
	pick(&t, "/r/b", true);			/* 2 */
	zklfs_slots_changed(&t, "/r/a", 0);	/* made on slot 1 */
	assert_int_equal(pick(&t, "/r/a", false), 1);
	assert_int_equal(pick(&t, "/r", true), 0);
	assert_int_equal(pick(&t, "/r", false), 0);
	assert_int_equal(pick(&t, "/r/b", true), 2);
	assert_int_equal(pick(&t, "/r/b", false), 2);
	/* a new directory: its slot syncs at its first request, and it made
	 * the change; the others owe one more */
	zklfs_slots_changed(&t, "/r/e", 0);	/* slot 0 (round robin) */
	assert_int_equal(pick(&t, "/r/e", false), 0);
	assert_int_equal(pick(&t, "/r/a", true), 1);
	assert_int_equal(pick(&t, "/r/b", true), 2);
	/* a slot that owed a sync when it made a change still owes it */
	zklfs_slots_changed(&t, "/r/a", 0);
	zklfs_slots_changed(&t, "/r/b", 0);	/* slot 2: the change of slot 1 */
	assert_int_equal(pick(&t, "/r/b", true), 2);
	assert_int_equal(pick(&t, "/r/a", true), 1);
	zklfs_slots_free(&t);
}

static void test_failed_sync_is_sent_again(void **state)
{
	struct zklfs_slots t;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 2, 2, 100), 0);
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
	assert_int_equal(zklfs_slots_init(&t, 1, 1, 100), 0);
	assert_int_equal(pick(&t, "/a", false), 0);
	zklfs_slots_changed(&t, "/a/b", 0);
	assert_int_equal(pick(&t, "/a", false), 0);
	assert_int_equal(pick(&t, "/a/b", false), 0);
	busy(&t, 0, 5);
	assert_int_equal(zklfs_slots_want(&t), -1);
	zklfs_slots_free(&t);
}

static void test_full_table_uses_slot_zero_without_storing(void **state)
{
	struct zklfs_slots t;
	bool sync;

	(void)state;
	assert_int_equal(zklfs_slots_init(&t, 4, 4, 2), 0);
	zklfs_slot_hold(&t, "/a", 0, &sync);
	zklfs_slot_hold(&t, "/b", 0, &sync);
	assert_int_equal(zklfs_slot_hold(&t, "/c", 0, &sync), 0);
	assert_int_equal(zklfs_slot_hold(&t, "/c", 0, &sync), 0);
	assert_int_equal(t.ndirs, 2);
	zklfs_slots_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_robin_among_equals_and_sticky),
		cmocka_unit_test(test_free_directory_moves_to_a_less_busy_slot),
		cmocka_unit_test(test_a_cycled_lock_stays_and_load_decays),
		cmocka_unit_test(test_grows_while_every_slot_is_busy),
		cmocka_unit_test(test_closes_only_idle_unpinned_slots),
		cmocka_unit_test(test_rebound_after_close_syncs),
		cmocka_unit_test(test_mkdir_makes_the_other_slots_sync_once),
		cmocka_unit_test(test_failed_sync_is_sent_again),
		cmocka_unit_test(test_one_slot_never_syncs),
		cmocka_unit_test(test_full_table_uses_slot_zero_without_storing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
