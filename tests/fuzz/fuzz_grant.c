/*
 * tests/fuzz/fuzz_grant.c - a lock znode's children listing (zk/grant.c),
 * and the values of the xattrs made from it (user.zklockfs.holders lists
 * zkg_holders(), user.zklockfs.state says "held" when zkg_decide() grants).
 *
 * Input: the children's names, one per line (at most 64).  Invariants:
 * - zkg_parse_children() keeps exactly the names zkn_parse() reads, in order,
 *   with the same sequence number and kind, borrowing the caller's names;
 * - every pointer zkg_decide(), zkg_holders(), zkg_blocker(), zkg_lowest()
 *   give back points into the array;
 * - in any listing, user.zklockfs.state and .holders agree: an entry is
 *   among zkg_holders() iff zkg_decide() grants it (under a limit, the same
 *   for zkg_holders_limit() and zkg_decide_limit());
 * - an entry present is never ZKG_MISSING, a number absent always is; an
 *   entry to outlive comes before ours and, for a shared entry, is exclusive;
 * - when the numbers are distinct and in one serial order (what ZooKeeper's
 *   counter gives; RFC 1982 leaves two numbers 2^31 apart unordered, and
 *   zkn_seq_cmp() calls each before the other): there is a holder iff
 *   there is an entry; the holders are exactly the entries zkg_decide() grants;
 *   the watch is the entry just before ours (the last exclusive one for a
 *   shared entry); zkg_walk_decide() over the sorted listing agrees with
 *   zkg_decide(); zkg_lowest() is the first; zkg_blocker() is the lowest
 *   entry an entry enqueued now would wait behind, NULL iff it would be
 *   granted at once, with or without leaving out one's own entry; and
 *   under a limit (semaphores), what limited() says.
 */
#include "tests/fuzz/fuzz.h"
#include "zk/grant.h"

#define MAX_KIDS 64

static bool in(const struct zkg_child *p, const struct zkg_child *kids, size_t n)
{
	return p >= kids && p < kids + n;
}

/* Would an entry of @kind with @seq, enqueued behind all of @kids, wait? */
static bool would_wait(const struct zkg_child *kids, size_t n, enum zkn_kind kind,
		       bool has_own, int32_t own)
{
	for (size_t i = 0; i < n; i++)
		if (!(has_own && kids[i].seq == own) &&
		    (kind == ZKN_EXCLUSIVE || kids[i].kind == ZKN_EXCLUSIVE))
			return true;
	return false;
}

static void blockers(const struct zkg_child *kids, size_t n,
		     const struct zkg_child *sorted, bool has_own, int32_t own)
{
	for (int k = ZKN_EXCLUSIVE; k <= ZKN_SHARED; k++) {
		const struct zkg_child *b = zkg_blocker(kids, n, (enum zkn_kind)k,
							has_own, own);
		const struct zkg_child *first = NULL;

		for (size_t i = 0; !first && i < n; i++)
			if (!(has_own && sorted[i].seq == own) &&
			    (k == ZKN_EXCLUSIVE || sorted[i].kind == ZKN_EXCLUSIVE))
				first = &sorted[i];
		CHECK((b == NULL) == !would_wait(kids, n, (enum zkn_kind)k, has_own, own));
		CHECK((b == NULL) == (first == NULL));
		if (b) {
			CHECK(in(b, kids, n));
			CHECK(b->seq == first->seq);
		}
	}
}

/* Each entry is among the @nh holders @h iff the decision grants it. */
static void agree(const struct zkg_child *kids, size_t n,
		  const struct zkg_child **h, size_t nh, unsigned limit)
{
	for (size_t i = 0; i < n; i++) {
		enum zkg_verdict v = limit ? zkg_decide_limit(kids, n, kids[i].seq, limit)
					   : zkg_decide(kids, n, kids[i].seq, kids[i].kind, NULL);
		bool holder = false;

		for (size_t j = 0; j < nh; j++)
			holder |= h[j] == &kids[i];
		CHECK(holder == (v == ZKG_GRANTED));
	}
}

static void consistent(const struct zkg_child *kids, size_t n,
		       const struct zkg_child *sorted,
		       const struct zkg_child **h, size_t nh)
{
	struct zkg_walk wk;
	const struct zkg_child *low = zkg_lowest(kids, n);

	CHECK(n ? low && in(low, kids, n) && low->seq == sorted[0].seq : !low);
	zkg_walk_init(&wk, sorted, n);
	for (size_t i = 0; i < n; i++) {
		const struct zkg_child *w = NULL, *w2 = NULL, *pred = NULL;
		enum zkg_verdict v = zkg_decide(kids, n, sorted[i].seq, sorted[i].kind, &w);
		enum zkg_verdict v2 = zkg_walk_decide(&wk, sorted[i].seq, sorted[i].kind, &w2);
		bool holder = false;

		for (size_t j = 0; j < i; j++)
			if (sorted[i].kind == ZKN_EXCLUSIVE || sorted[j].kind == ZKN_EXCLUSIVE)
				pred = &sorted[j];
		CHECK(v == (pred ? ZKG_WAIT : ZKG_GRANTED));
		CHECK(v2 == v);
		if (pred) {
			CHECK(w && w->seq == pred->seq);
			CHECK(w2 && w2->seq == pred->seq);
		}
		for (size_t j = 0; j < nh; j++)
			holder |= h[j]->seq == sorted[i].seq;
		CHECK(holder == (v == ZKG_GRANTED));
	}
	blockers(kids, n, sorted, false, 0);
	for (size_t i = 0; i < n; i++)
		blockers(kids, n, sorted, true, kids[i].seq);
}

/*
 * Under a limit L (semaphores), for distinct ordered numbers: the entry at
 * index i holds iff i < L, by zkg_decide_limit() and by the walk; the
 * holders are the first min(L, n); the next holder is index L; a new
 * entry waits iff n >= L, behind the lowest.
 */
static void limited(const struct zkg_child *kids, size_t n,
		    const struct zkg_child *sorted, unsigned limit)
{
	const struct zkg_child *h[MAX_KIDS], *b, *nx;
	struct zkg_walk wk;
	size_t nh = zkg_holders_limit(kids, n, limit, h, MAX_KIDS);

	CHECK(nh == (limit < n ? limit : n));
	for (size_t i = 0; i < nh; i++)
		CHECK(in(h[i], kids, n) && h[i]->seq == sorted[i].seq);
	zkg_walk_init(&wk, sorted, n);
	for (size_t i = 0; i < n; i++) {
		enum zkg_verdict v = zkg_decide_limit(kids, n, sorted[i].seq, limit);

		CHECK(v == (i < limit ? ZKG_GRANTED : ZKG_WAIT));
		CHECK(zkg_walk_decide_limit(&wk, sorted[i].seq, limit) == v);
	}
	nx = zkg_next_holder(sorted, n, limit);
	CHECK(n > limit ? nx == &sorted[limit] : nx == NULL);
	b = zkg_blocker_limit(kids, n, limit, false, 0);
	CHECK(n >= limit ? b && in(b, kids, n) && b->seq == sorted[0].seq : b == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *names[MAX_KIDS];
	int count = 0;
	size_t n, nh, nh1, parsed = 0;
	struct zkg_child *kids, *sorted, c;
	const struct zkg_child *h[MAX_KIDS], *h1[1], *w;
	bool distinct = true, ordered = true;

	for (size_t at = 0; at <= size && count < MAX_KIDS; ) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (data + at)) : size - at;

		names[count++] = fuzz_str(data + at, len);
		at += len + 1;
	}

	kids = zkg_parse_children(names, count, &n);
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

	nh = zkg_holders(kids, n, h, MAX_KIDS);
	nh1 = zkg_holders(kids, n, h1, 1);
	CHECK(nh <= n && nh1 == nh);
	for (size_t i = 0; i < nh; i++)
		CHECK(in(h[i], kids, n));
	agree(kids, n, h, nh, 0);
	if (nh)
		CHECK(h1[0] == h[0] || in(h1[0], kids, n));
	{
		unsigned limit = 1 + (size ? data[0] % 8 : 0);
		size_t nl = zkg_holders_limit(kids, n, limit, h, MAX_KIDS);

		CHECK(nl <= n);
		agree(kids, n, h, nl, limit);
	}

	for (size_t i = 0; i < n; i++) {
		enum zkg_verdict v;
		int32_t absent = (int32_t)((uint32_t)kids[i].seq + 1u);
		bool present = false;

		w = NULL;
		v = zkg_decide(kids, n, kids[i].seq, kids[i].kind, &w);
		CHECK(v != ZKG_MISSING);
		if (v == ZKG_WAIT) {
			CHECK(w && in(w, kids, n));
			CHECK(zkn_seq_cmp(w->seq, kids[i].seq) < 0);
			CHECK(kids[i].kind == ZKN_EXCLUSIVE || w->kind == ZKN_EXCLUSIVE);
		}
		for (size_t j = 0; j < n; j++) {
			present |= kids[j].seq == absent;
			if (j != i && kids[j].seq == kids[i].seq)
				distinct = false;
		}
		if (!present)
			CHECK(zkg_decide(kids, n, absent, kids[i].kind, NULL) == ZKG_MISSING);
	}

	sorted = malloc(sizeof(*sorted) * (n ? n : 1));
	CHECK(sorted);
	memcpy(sorted, kids, sizeof(*sorted) * n);
	zkg_sort(sorted, n);
	for (size_t i = 0; distinct && ordered && i < n; i++)
		for (size_t j = i + 1; ordered && j < n; j++)
			ordered = zkn_seq_cmp(sorted[i].seq, sorted[j].seq) < 0 &&
				  zkn_seq_cmp(sorted[j].seq, sorted[i].seq) > 0;
	if (distinct && ordered) {
		CHECK((nh == 0) == (n == 0));
		nh = zkg_holders(kids, n, h, MAX_KIDS);
		consistent(kids, n, sorted, h, nh);
		limited(kids, n, sorted, 1 + (size ? data[0] % 8 : 0));
		limited(kids, n, sorted, ZKG_LIMIT_MAX);
	}

	free(sorted);
	free(kids);
	for (int i = 0; i < count; i++)
		free(names[i]);
	return 0;
}
