/*
 * tests/fuzz/fuzz_grant.c - a lock znode's children listing (zk/grant.c),
 * and the values of the xattrs made from it (user.zklockfs.holders lists
 * zkl_holders(), user.zklockfs.state says "held" when zkl_decide() grants).
 *
 * Input: the children's names, one per line (at most 64).  Invariants:
 * - zkl_parse_children() keeps exactly the names zkn_parse() reads, in order,
 *   with the same sequence number and kind, borrowing the caller's names;
 * - every pointer zkl_decide(), zkl_holders(), zkl_blocker(), zkl_lowest()
 *   give back points into the array;
 * - in any listing, user.zklockfs.state and .holders agree: an entry is
 *   among zkl_holders() iff zkl_decide() grants it (under a limit, the same
 *   for zkl_holders_limit() and zkl_decide_limit());
 * - an entry present is never ZKL_MISSING, a number absent always is; an
 *   entry to outlive comes before ours and, for a shared entry, is exclusive;
 * - when the numbers are distinct and in one serial order (what ZooKeeper's
 *   counter gives; RFC 1982 leaves two numbers 2^31 apart unordered, and
 *   zkn_seq_cmp() calls each before the other): there is a holder iff
 *   there is an entry; the holders are exactly the entries zkl_decide() grants;
 *   the watch is the entry just before ours (the last exclusive one for a
 *   shared entry); zkl_walk_decide() over the sorted listing agrees with
 *   zkl_decide(); zkl_lowest() is the first; zkl_blocker() is the lowest
 *   entry an entry enqueued now would wait behind, NULL iff it would be
 *   granted at once, with or without leaving out one's own entry; and
 *   under a limit (semaphores), what limited() says.
 */
#include "tests/fuzz/fuzz.h"
#include "zk/grant.h"

#define MAX_KIDS 64

static bool in(const struct zkl_child *p, const struct zkl_child *kids, size_t n)
{
	return p >= kids && p < kids + n;
}

/* Would an entry of @kind with @seq, enqueued behind all of @kids, wait? */
static bool would_wait(const struct zkl_child *kids, size_t n, enum zkl_kind kind,
		       bool has_own, int32_t own)
{
	for (size_t i = 0; i < n; i++)
		if (!(has_own && kids[i].seq == own) &&
		    (kind == ZKL_EXCLUSIVE || kids[i].kind == ZKL_EXCLUSIVE))
			return true;
	return false;
}

static void blockers(const struct zkl_child *kids, size_t n,
		     const struct zkl_child *sorted, bool has_own, int32_t own)
{
	for (int k = ZKL_EXCLUSIVE; k <= ZKL_SHARED; k++) {
		const struct zkl_child *b = zkl_blocker(kids, n, (enum zkl_kind)k,
							has_own, own);
		const struct zkl_child *first = NULL;

		for (size_t i = 0; !first && i < n; i++)
			if (!(has_own && sorted[i].seq == own) &&
			    (k == ZKL_EXCLUSIVE || sorted[i].kind == ZKL_EXCLUSIVE))
				first = &sorted[i];
		CHECK((b == NULL) == !would_wait(kids, n, (enum zkl_kind)k, has_own, own));
		CHECK((b == NULL) == (first == NULL));
		if (b) {
			CHECK(in(b, kids, n));
			CHECK(b->seq == first->seq);
		}
	}
}

/* Each entry is among the @nh holders @h iff the decision grants it. */
static void agree(const struct zkl_child *kids, size_t n,
		  const struct zkl_child **h, size_t nh, unsigned limit)
{
	for (size_t i = 0; i < n; i++) {
		enum zkl_verdict v = limit ? zkl_decide_limit(kids, n, kids[i].seq, limit)
					   : zkl_decide(kids, n, kids[i].seq, kids[i].kind, NULL);
		bool holder = false;

		for (size_t j = 0; j < nh; j++)
			holder |= h[j] == &kids[i];
		CHECK(holder == (v == ZKL_GRANTED));
	}
}

static void consistent(const struct zkl_child *kids, size_t n,
		       const struct zkl_child *sorted,
		       const struct zkl_child **h, size_t nh)
{
	struct zkl_walk wk;
	const struct zkl_child *low = zkl_lowest(kids, n);

	CHECK(n ? low && in(low, kids, n) && low->seq == sorted[0].seq : !low);
	zkl_walk_init(&wk, sorted, n);
	for (size_t i = 0; i < n; i++) {
		const struct zkl_child *w = NULL, *w2 = NULL, *pred = NULL;
		enum zkl_verdict v = zkl_decide(kids, n, sorted[i].seq, sorted[i].kind, &w);
		enum zkl_verdict v2 = zkl_walk_decide(&wk, sorted[i].seq, sorted[i].kind, &w2);
		bool holder = false;

		for (size_t j = 0; j < i; j++)
			if (sorted[i].kind == ZKL_EXCLUSIVE || sorted[j].kind == ZKL_EXCLUSIVE)
				pred = &sorted[j];
		CHECK(v == (pred ? ZKL_WAIT : ZKL_GRANTED));
		CHECK(v2 == v);
		if (pred) {
			CHECK(w && w->seq == pred->seq);
			CHECK(w2 && w2->seq == pred->seq);
		}
		for (size_t j = 0; j < nh; j++)
			holder |= h[j]->seq == sorted[i].seq;
		CHECK(holder == (v == ZKL_GRANTED));
	}
	blockers(kids, n, sorted, false, 0);
	for (size_t i = 0; i < n; i++)
		blockers(kids, n, sorted, true, kids[i].seq);
}

/*
 * Under a limit L (semaphores), for distinct ordered numbers: the entry at
 * index i holds iff i < L, by zkl_decide_limit() and by the walk; the
 * holders are the first min(L, n); the next holder is index L; a new
 * entry waits iff n >= L, behind the lowest.
 */
static void limited(const struct zkl_child *kids, size_t n,
		    const struct zkl_child *sorted, unsigned limit)
{
	const struct zkl_child *h[MAX_KIDS], *b, *nx;
	struct zkl_walk wk;
	size_t nh = zkl_holders_limit(kids, n, limit, h, MAX_KIDS);

	CHECK(nh == (limit < n ? limit : n));
	for (size_t i = 0; i < nh; i++)
		CHECK(in(h[i], kids, n) && h[i]->seq == sorted[i].seq);
	zkl_walk_init(&wk, sorted, n);
	for (size_t i = 0; i < n; i++) {
		enum zkl_verdict v = zkl_decide_limit(kids, n, sorted[i].seq, limit);

		CHECK(v == (i < limit ? ZKL_GRANTED : ZKL_WAIT));
		CHECK(zkl_walk_decide_limit(&wk, sorted[i].seq, limit) == v);
	}
	nx = zkl_next_holder(sorted, n, limit);
	CHECK(n > limit ? nx == &sorted[limit] : nx == NULL);
	b = zkl_blocker_limit(kids, n, limit, false, 0);
	CHECK(n >= limit ? b && in(b, kids, n) && b->seq == sorted[0].seq : b == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *names[MAX_KIDS];
	int count = 0;
	size_t n, nh, nh1, parsed = 0;
	struct zkl_child *kids, *sorted, c;
	const struct zkl_child *h[MAX_KIDS], *h1[1], *w;
	bool distinct = true, ordered = true;

	for (size_t at = 0; at <= size && count < MAX_KIDS; ) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (data + at)) : size - at;

		names[count++] = fuzz_str(data + at, len);
		at += len + 1;
	}

	kids = zkl_parse_children(names, count, &n);
	CHECK(kids);
	CHECK(n <= (size_t)count);
	for (int i = 0; i < count; i++) {
		if (!zkn_parse(names[i], &c))
			continue;
		CHECK(parsed < n);
		CHECK(kids[parsed].name == names[i]);
		CHECK(kids[parsed].seq == c.seq && kids[parsed].kind == c.kind);
		parsed++;
	}
	CHECK(parsed == n);

	nh = zkl_holders(kids, n, h, MAX_KIDS);
	nh1 = zkl_holders(kids, n, h1, 1);
	CHECK(nh <= n && nh1 == nh);
	for (size_t i = 0; i < nh; i++)
		CHECK(in(h[i], kids, n));
	agree(kids, n, h, nh, 0);
	if (nh)
		CHECK(h1[0] == h[0] || in(h1[0], kids, n));
	{
		unsigned limit = 1 + (size ? data[0] % 8 : 0);
		size_t nl = zkl_holders_limit(kids, n, limit, h, MAX_KIDS);

		CHECK(nl <= n);
		agree(kids, n, h, nl, limit);
	}

	for (size_t i = 0; i < n; i++) {
		enum zkl_verdict v;
		int32_t absent = (int32_t)((uint32_t)kids[i].seq + 1u);
		bool present = false;

		w = NULL;
		v = zkl_decide(kids, n, kids[i].seq, kids[i].kind, &w);
		CHECK(v != ZKL_MISSING);
		if (v == ZKL_WAIT) {
			CHECK(w && in(w, kids, n));
			CHECK(zkn_seq_cmp(w->seq, kids[i].seq) < 0);
			CHECK(kids[i].kind == ZKL_EXCLUSIVE || w->kind == ZKL_EXCLUSIVE);
		}
		for (size_t j = 0; j < n; j++) {
			present |= kids[j].seq == absent;
			if (j != i && kids[j].seq == kids[i].seq)
				distinct = false;
		}
		if (!present)
			CHECK(zkl_decide(kids, n, absent, kids[i].kind, NULL) == ZKL_MISSING);
	}

	sorted = malloc(sizeof(*sorted) * (n ? n : 1));
	CHECK(sorted);
	memcpy(sorted, kids, sizeof(*sorted) * n);
	zkl_sort(sorted, n);
	for (size_t i = 0; distinct && ordered && i < n; i++)
		for (size_t j = i + 1; ordered && j < n; j++)
			ordered = zkn_seq_cmp(sorted[i].seq, sorted[j].seq) < 0 &&
				  zkn_seq_cmp(sorted[j].seq, sorted[i].seq) > 0;
	if (distinct && ordered) {
		CHECK((nh == 0) == (n == 0));
		nh = zkl_holders(kids, n, h, MAX_KIDS);
		consistent(kids, n, sorted, h, nh);
		limited(kids, n, sorted, 1 + (size ? data[0] % 8 : 0));
		limited(kids, n, sorted, ZKL_LIMIT_MAX);
	}

	free(sorted);
	free(kids);
	for (int i = 0; i < count; i++)
		free(names[i]);
	return 0;
}
