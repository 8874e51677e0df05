/* Unit tests: the grant decision (zk/grant.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "zk/grant.h"

#define EXCL(n)		{ .name = "x" #n, .seq = (n), .kind = ZKN_EXCLUSIVE }
#define SHARED(n)	{ .name = "s" #n, .seq = (n), .kind = ZKN_SHARED }

static void test_lowest_exclusive_is_granted(void **state)
{
	struct zkg_child kids[] = { EXCL(9), EXCL(7), EXCL(8) };
	const struct zkg_child *watch = (void *)1;

	(void)state;
	assert_int_equal(zkg_decide(kids, 3, 7, ZKN_EXCLUSIVE, &watch), ZKG_GRANTED);
	assert_null(watch);
}

static void test_exclusive_watches_only_its_predecessor(void **state)
{
	struct zkg_child kids[] = { EXCL(3), EXCL(5), EXCL(4), EXCL(9), EXCL(6) };
	const struct zkg_child *watch = NULL;

	(void)state;
	assert_int_equal(zkg_decide(kids, 5, 6, ZKN_EXCLUSIVE, &watch), ZKG_WAIT);
	assert_int_equal(watch->seq, 5);
}

static void test_shared_waits_for_earlier_exclusive(void **state)
{
	struct zkg_child kids[] = { EXCL(7), SHARED(8), SHARED(9) };
	const struct zkg_child *watch;

	(void)state;
	assert_int_equal(zkg_decide(kids, 3, 9, ZKN_SHARED, &watch), ZKG_WAIT);
	assert_int_equal(watch->seq, 7);
}

static void test_readers_share(void **state)
{
	struct zkg_child kids[] = { SHARED(1), SHARED(2), SHARED(3) };

	(void)state;
	assert_int_equal(zkg_decide(kids, 3, 3, ZKN_SHARED, NULL), ZKG_GRANTED);
	assert_int_equal(zkg_decide(kids, 3, 1, ZKN_SHARED, NULL), ZKG_GRANTED);
}

static void test_writer_waits_for_last_reader(void **state)
{
	struct zkg_child kids[] = { SHARED(1), SHARED(2), EXCL(3) };
	const struct zkg_child *watch;

	(void)state;
	assert_int_equal(zkg_decide(kids, 3, 3, ZKN_EXCLUSIVE, &watch), ZKG_WAIT);
	assert_int_equal(watch->seq, 2);
}

static void test_late_reader_queues_behind_waiting_writer(void **state)
{
	struct zkg_child kids[] = { SHARED(1), EXCL(2), SHARED(3) };
	const struct zkg_child *watch;

	(void)state;
	assert_int_equal(zkg_decide(kids, 3, 3, ZKN_SHARED, &watch), ZKG_WAIT);
	assert_int_equal(watch->seq, 2);
}

static void test_deleted_entry_is_missing(void **state)
{
	struct zkg_child kids[] = { EXCL(1), EXCL(3) };

	(void)state;
	assert_int_equal(zkg_decide(kids, 2, 2, ZKN_EXCLUSIVE, NULL), ZKG_MISSING);
	assert_int_equal(zkg_decide(NULL, 0, 2, ZKN_SHARED, NULL), ZKG_MISSING);
}

static void test_fifo_across_counter_wrap(void **state)
{
	/* entries made just before and just after the counter wrapped */
	struct zkg_child kids[] = { EXCL(INT32_MIN + 1), EXCL(INT32_MAX), EXCL(INT32_MIN) };
	const struct zkg_child *watch;

	(void)state;
	assert_int_equal(zkg_decide(kids, 3, INT32_MAX, ZKN_EXCLUSIVE, &watch), ZKG_GRANTED);
	assert_int_equal(zkg_decide(kids, 3, INT32_MIN, ZKN_EXCLUSIVE, &watch), ZKG_WAIT);
	assert_int_equal(watch->seq, INT32_MAX);
	assert_int_equal(zkg_decide(kids, 3, INT32_MIN + 1, ZKN_EXCLUSIVE, &watch), ZKG_WAIT);
	assert_int_equal(watch->seq, INT32_MIN);
}

static void test_holders(void **state)
{
	struct zkg_child readers[] = { SHARED(4), SHARED(2), EXCL(5), SHARED(6) };
	struct zkg_child writer[] = { EXCL(9), SHARED(10), EXCL(8) };
	const struct zkg_child *h[4];

	(void)state;
	assert_int_equal(zkg_holders(readers, 4, h, 4), 2);
	assert_true((h[0]->seq == 4 && h[1]->seq == 2) || (h[0]->seq == 2 && h[1]->seq == 4));
	assert_int_equal(zkg_holders(writer, 3, h, 4), 1);
	assert_int_equal(h[0]->seq, 8);
	assert_int_equal(zkg_holders(NULL, 0, h, 4), 0);
	assert_int_equal(zkg_holders(readers, 4, h, 1), 2);	/* count beyond max */
}

static void test_sort_is_queue_order(void **state)
{
	struct zkg_child kids[] = { EXCL(9), EXCL(-7), SHARED(3) };
	struct zkg_child wrap[] = { EXCL(INT32_MIN + 2), EXCL(INT32_MAX - 1), EXCL(INT32_MIN) };

	(void)state;
	zkg_sort(kids, 3);
	assert_int_equal(kids[0].seq, -7);
	assert_int_equal(kids[1].seq, 3);
	assert_int_equal(kids[2].seq, 9);
	/* a queue that spans the wrap keeps its order */
	zkg_sort(wrap, 3);
	assert_int_equal(wrap[0].seq, INT32_MAX - 1);
	assert_int_equal(wrap[1].seq, INT32_MIN);
	assert_int_equal(wrap[2].seq, INT32_MIN + 2);
}

/*
 * Numbers spread over the whole 32-bit range have no serial order (a raw
 * client can make such entries): the sort still gives one order, every
 * entry once, each no nearer above the lowest pick than the one before.
 */
static void test_sort_of_numbers_in_no_serial_order(void **state)
{
	struct zkg_child kids[64];
	uint32_t base, x = 2463534242u, sum = 0;

	(void)state;
	for (int i = 0; i < 64; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;	/* xorshift */
		kids[i] = (struct zkg_child)EXCL((int32_t)x);
		sum += x;
	}
	base = (uint32_t)zkg_lowest(kids, 64)->seq;
	zkg_sort(kids, 64);
	for (int i = 0; i < 64; i++)
		sum -= (uint32_t)kids[i].seq;
	assert_int_equal(sum, 0);
	for (int i = 1; i < 64; i++)
		assert_true((uint32_t)kids[i].seq - base >= (uint32_t)kids[i - 1].seq - base);
}

static void test_parse_children_keeps_queue_entries(void **state)
{
	char *names[] = { "leases", "b-read-lock-0000000008", "a-lock-0000000007", "sub" };
	struct zkg_child *kids;
	size_t n;

	(void)state;
	kids = zkg_parse_children(names, 4, &n);
	assert_non_null(kids);
	assert_int_equal(n, 2);
	assert_ptr_equal(kids[0].name, names[1]);
	assert_int_equal(kids[0].kind, ZKN_SHARED);
	assert_int_equal(kids[1].seq, 7);
	free(kids);
	kids = zkg_parse_children(NULL, 0, &n);
	assert_non_null(kids);
	assert_int_equal(n, 0);
	free(kids);
}

/* One pass over the sorted listing says, for every entry, what zkg_decide() says. */
static void test_walk_agrees_with_decide(void **state)
{
	struct zkg_child kids[64];
	unsigned int rnd = 12345;

	(void)state;
	for (int round = 0; round < 200; round++) {
		size_t n = 1 + round % 40;
		int32_t seq = (int32_t)(round * 7);
		struct zkg_walk wk;

		for (size_t i = 0; i < n; i++) {
			rnd = rnd * 1103515245u + 12345u;
			seq += 1 + (int32_t)((rnd >> 16) % 3);	/* gaps, as deletes leave */
			kids[i] = (struct zkg_child){ .name = "k", .seq = seq,
				.kind = (rnd >> 8) % 3 ? ZKN_EXCLUSIVE : ZKN_SHARED };
		}
		zkg_sort(kids, n);
		zkg_walk_init(&wk, kids, n);
		for (size_t i = 0; i < n; i++) {
			enum zkn_kind k = kids[i].kind;
			const struct zkg_child *w1 = NULL, *w2 = NULL;

			if (i % 3 == 1)
				continue;	/* entries may be skipped */
			assert_int_equal(zkg_walk_decide(&wk, kids[i].seq, k, &w2),
					 zkg_decide(kids, n, kids[i].seq, k, &w1));
			assert_ptr_equal(w1, w2);
		}
	}
}

static void test_lowest(void **state)
{
	struct zkg_child kids[] = { SHARED(9), EXCL(2147483647), EXCL(-2147483647 - 1),
				    SHARED(3) };

	(void)state;
	assert_null(zkg_lowest(kids, 0));
	assert_int_equal(zkg_lowest(kids, 1)->seq, 9);
	assert_int_equal(zkg_lowest(kids, 4)->seq, 3);
	/* across the wrap: 2147483647 comes before INT32_MIN */
	assert_int_equal(zkg_lowest(kids + 1, 2)->seq, 2147483647);
}

static void test_walk_across_counter_wrap(void **state)
{
	struct zkg_child kids[] = { EXCL(-2147483647 - 1), SHARED(2147483646),
				    SHARED(2147483647), EXCL(-2147483647) };
	const struct zkg_child *watch;
	struct zkg_walk wk;

	(void)state;
	zkg_sort(kids, 4);
	zkg_walk_init(&wk, kids, 4);
	assert_int_equal(zkg_walk_decide(&wk, 2147483646, ZKN_SHARED, &watch), ZKG_GRANTED);
	assert_int_equal(zkg_walk_decide(&wk, 2147483647, ZKN_SHARED, &watch), ZKG_GRANTED);
	assert_int_equal(zkg_walk_decide(&wk, -2147483647 - 1, ZKN_EXCLUSIVE, &watch), ZKG_WAIT);
	assert_int_equal(watch->seq, 2147483647);
	assert_int_equal(zkg_walk_decide(&wk, 5, ZKN_EXCLUSIVE, &watch), ZKG_MISSING);
}

/* F_GETLK: what a new entry would wait for, the asker's own left out */
static void test_blocker_of_a_new_exclusive_is_the_first_entry(void **state)
{
	struct zkg_child kids[] = { SHARED(5), EXCL(7), SHARED(4) };

	(void)state;
	assert_int_equal(zkg_blocker(kids, 3, ZKN_EXCLUSIVE, false, 0)->seq, 4);
	assert_int_equal(zkg_blocker(kids, 3, ZKN_EXCLUSIVE, true, 4)->seq, 5);
	assert_null(zkg_blocker(kids, 1, ZKN_EXCLUSIVE, true, 5));
	assert_null(zkg_blocker(kids, 0, ZKN_EXCLUSIVE, false, 0));
}

static void test_blocker_of_a_new_shared_is_the_first_exclusive(void **state)
{
	struct zkg_child kids[] = { SHARED(1), EXCL(3), SHARED(2), EXCL(-2147483647 - 1),
				    EXCL(2147483647) };

	(void)state;
	assert_null(zkg_blocker(kids, 1, ZKN_SHARED, false, 0));
	assert_int_equal(zkg_blocker(kids, 3, ZKN_SHARED, false, 0)->seq, 3);
	/* its own exclusive entry converting to shared blocks nothing */
	assert_null(zkg_blocker(kids, 3, ZKN_SHARED, true, 3));
	/* across the wrap, 2147483647 comes before -2147483648 */
	assert_int_equal(zkg_blocker(kids + 3, 2, ZKN_SHARED, false, 0)->seq, 2147483647);
}

/* Semaphores: up to N hold, whatever their kind, in queue order. */
static void test_limit_grants_the_first_n_whatever_their_kind(void **state)
{
	struct zkg_child kids[] = { EXCL(10), SHARED(11), EXCL(12), EXCL(13), SHARED(14) };

	(void)state;
	assert_int_equal(zkg_decide_limit(kids, 5, 10, 3), ZKG_GRANTED);
	assert_int_equal(zkg_decide_limit(kids, 5, 11, 3), ZKG_GRANTED);
	assert_int_equal(zkg_decide_limit(kids, 5, 12, 3), ZKG_GRANTED);
	assert_int_equal(zkg_decide_limit(kids, 5, 13, 3), ZKG_WAIT);
	assert_int_equal(zkg_decide_limit(kids, 5, 14, 3), ZKG_WAIT);
	assert_int_equal(zkg_decide_limit(kids, 5, 9, 3), ZKG_MISSING);
	/* a limit of 1 is a mutex: a shared entry behind a shared one waits */
	assert_int_equal(zkg_decide_limit(kids + 1, 1, 11, 1), ZKG_GRANTED);
	assert_int_equal(zkg_decide_limit(kids + 3, 2, 14, 1), ZKG_WAIT);
	/* any holder going, not only the first, lets the next one in */
	kids[1] = kids[4];		/* 11 goes: 10 12 13 14 are left */
	assert_int_equal(zkg_decide_limit(kids, 4, 13, 3), ZKG_GRANTED);
	assert_int_equal(zkg_decide_limit(kids, 4, 14, 3), ZKG_WAIT);
}

static void test_limit_across_counter_wrap(void **state)
{
	struct zkg_child kids[] = { EXCL(-2147483647 - 1), EXCL(2147483646),
				    EXCL(2147483647), EXCL(-2147483647) };

	(void)state;
	/* order: 2147483646, 2147483647, INT32_MIN, INT32_MIN + 1 */
	assert_int_equal(zkg_decide_limit(kids, 4, 2147483647, 2), ZKG_GRANTED);
	assert_int_equal(zkg_decide_limit(kids, 4, -2147483647 - 1, 2), ZKG_WAIT);
	assert_int_equal(zkg_decide_limit(kids, 4, -2147483647 - 1, 3), ZKG_GRANTED);
}

static void test_walk_limit_agrees_with_decide_limit(void **state)
{
	struct zkg_child kids[64];
	unsigned int rnd = 777;

	(void)state;
	for (int round = 0; round < 200; round++) {
		size_t n = 1 + round % 40;
		unsigned limit = 1 + (unsigned)round % 7;
		int32_t seq = (int32_t)(round * 11) - 100;
		struct zkg_walk wk;

		for (size_t i = 0; i < n; i++) {
			rnd = rnd * 1103515245u + 12345u;
			seq += 1 + (int32_t)((rnd >> 16) % 3);
			kids[i] = (struct zkg_child){ .name = "k", .seq = seq,
				.kind = (rnd >> 8) % 2 ? ZKN_EXCLUSIVE : ZKN_SHARED };
		}
		zkg_sort(kids, n);
		zkg_walk_init(&wk, kids, n);
		for (size_t i = 0; i < n; i++) {
			if (i % 4 == 2)
				continue;	/* entries may be skipped */
			assert_int_equal(zkg_walk_decide_limit(&wk, kids[i].seq, limit),
					 zkg_decide_limit(kids, n, kids[i].seq, limit));
			assert_int_equal(zkg_decide_limit(kids, n, kids[i].seq, limit),
					 i < limit ? ZKG_GRANTED : ZKG_WAIT);
		}
		/* the next holder is the first that waits */
		if (n > limit)
			assert_int_equal(zkg_next_holder(kids, n, limit)->seq, kids[limit].seq);
		else
			assert_null(zkg_next_holder(kids, n, limit));
	}
}

static void test_holders_and_blocker_under_a_limit(void **state)
{
	struct zkg_child kids[] = { SHARED(7), EXCL(3), EXCL(5), SHARED(4) };
	const struct zkg_child *h[4];

	(void)state;
	assert_int_equal(zkg_holders_limit(kids, 4, 2, h, 4), 2);
	assert_int_equal(h[0]->seq, 3);
	assert_int_equal(h[1]->seq, 4);
	assert_int_equal(zkg_holders_limit(kids, 4, 10, h, 4), 4);
	assert_int_equal(h[3]->seq, 7);
	/* room for one: the count is still the number that hold */
	assert_int_equal(zkg_holders_limit(kids, 4, 3, h, 1), 3);
	assert_int_equal(h[0]->seq, 3);
	assert_int_equal(zkg_holders_limit(kids, 0, 3, h, 4), 0);
	/* a new entry waits iff the limit is taken; its own is left out */
	assert_int_equal(zkg_blocker_limit(kids, 4, 4, false, 0)->seq, 3);
	assert_null(zkg_blocker_limit(kids, 4, 5, false, 0));
	assert_null(zkg_blocker_limit(kids, 4, 4, true, 3));
	assert_int_equal(zkg_blocker_limit(kids, 4, 3, true, 3)->seq, 4);
}

/* Is @c among the @nh holders @h? */
static bool listed(const struct zkg_child *const *h, size_t nh, const struct zkg_child *c)
{
	for (size_t i = 0; i < nh; i++)
		if (h[i] == c)
			return true;
	return false;
}

/* Every entry: user.zklockfs.state (zkg_decide*()) says held iff
 * user.zklockfs.holders (zkg_holders*()) lists it; @limit 0: a plain lock. */
static void assert_state_agrees_with_holders(const struct zkg_child *kids, size_t n,
					     unsigned limit)
{
	const struct zkg_child *h[16];
	size_t nh = limit ? zkg_holders_limit(kids, n, limit, h, 16)
			  : zkg_holders(kids, n, h, 16);

	assert_true(n <= 16 && nh <= n);
	for (size_t i = 0; i < n; i++) {
		enum zkg_verdict v = limit ? zkg_decide_limit(kids, n, kids[i].seq, limit)
					   : zkg_decide(kids, n, kids[i].seq, kids[i].kind, NULL);

		assert_int_equal(v == ZKG_GRANTED, listed(h, nh, &kids[i]));
	}
}

/*
 * A raw client can make entries whose numbers lie more than 2^31 apart:
 * serial order then goes round in a circle (0 before 2^30 before -2^30
 * before 0), and no entry comes first.  Nobody holds such a lock: every
 * entry has one before it, so every state reads "waiting", and holders
 * names nobody either.
 */
static void test_numbers_in_no_serial_order_hold_nobody(void **state)
{
	struct zkg_child kids[] = { EXCL(0), EXCL(1073741824), EXCL(-1073741824) };
	const struct zkg_child *h[3];

	(void)state;
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(zkg_decide(kids, 3, kids[i].seq, ZKN_EXCLUSIVE, NULL), ZKG_WAIT);
	assert_int_equal(zkg_holders(kids, 3, h, 3), 0);
	assert_state_agrees_with_holders(kids, 3, 0);
	assert_state_agrees_with_holders(kids, 3, 1);
	assert_state_agrees_with_holders(kids, 3, 2);
}

/* The same agreement over many listings, numbers spread over the whole
 * counter or bunched, kinds mixed, numbers repeated, with and without a
 * limit. */
static void test_state_and_holders_agree_on_any_listing(void **state)
{
	static const int32_t spots[] = { 0, 1, 2, 2147483647, INT32_MIN,
					 INT32_MIN + 1, 1073741824, -1073741824,
					 1073741825, -1, 5 };
	uint32_t r = 12345;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		struct zkg_child kids[8];
		size_t n = 1 + round % 8;

		for (size_t i = 0; i < n; i++) {
			r = r * 1103515245u + 12345u;
			kids[i].name = "e";
			kids[i].seq = round % 2 ? (int32_t)r :
				      spots[(r >> 8) % (sizeof(spots) / sizeof(*spots))];
			kids[i].kind = (r >> 20) % 3 ? ZKN_EXCLUSIVE : ZKN_SHARED;
		}
		assert_state_agrees_with_holders(kids, n, 0);
		assert_state_agrees_with_holders(kids, n, 1 + (unsigned)round % 3);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lowest_exclusive_is_granted),
		cmocka_unit_test(test_exclusive_watches_only_its_predecessor),
		cmocka_unit_test(test_shared_waits_for_earlier_exclusive),
		cmocka_unit_test(test_readers_share),
		cmocka_unit_test(test_writer_waits_for_last_reader),
		cmocka_unit_test(test_late_reader_queues_behind_waiting_writer),
		cmocka_unit_test(test_deleted_entry_is_missing),
		cmocka_unit_test(test_fifo_across_counter_wrap),
		cmocka_unit_test(test_holders),
		cmocka_unit_test(test_sort_is_queue_order),
		cmocka_unit_test(test_sort_of_numbers_in_no_serial_order),
		cmocka_unit_test(test_parse_children_keeps_queue_entries),
		cmocka_unit_test(test_walk_agrees_with_decide),
		cmocka_unit_test(test_lowest),
		cmocka_unit_test(test_walk_across_counter_wrap),
		cmocka_unit_test(test_blocker_of_a_new_exclusive_is_the_first_entry),
		cmocka_unit_test(test_blocker_of_a_new_shared_is_the_first_exclusive),
		cmocka_unit_test(test_limit_grants_the_first_n_whatever_their_kind),
		cmocka_unit_test(test_limit_across_counter_wrap),
		cmocka_unit_test(test_walk_limit_agrees_with_decide_limit),
		cmocka_unit_test(test_holders_and_blocker_under_a_limit),
		cmocka_unit_test(test_numbers_in_no_serial_order_hold_nobody),
		cmocka_unit_test(test_state_and_holders_agree_on_any_listing),
	};

	return cmocka_run_group_tests_name("grant", tests, NULL, NULL);
}
