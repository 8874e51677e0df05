/* zk/grant.c - the grant decision (see grant.h). */
#include "zk/grant.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

enum zkg_verdict zkg_decide(const struct zkg_child *kids, size_t n,
			    int32_t our_seq, enum zkn_kind kind,
			    const struct zkg_child **watch)
{
	const struct zkg_child *pred = NULL;
	bool found = false;

	for (size_t i = 0; i < n; i++) {
		const struct zkg_child *c = &kids[i];

		if (c->seq == our_seq) {
			found = true;
			continue;
		}
		if (zkn_seq_cmp(c->seq, our_seq) > 0)
			continue;
		if (kind == ZKN_SHARED && c->kind == ZKN_SHARED)
			continue;
		if (!pred || zkn_seq_cmp(c->seq, pred->seq) > 0)
			pred = c;
	}
	if (!found)
		return ZKG_MISSING;
	if (watch)
		*watch = pred;
	return pred ? ZKG_WAIT : ZKG_GRANTED;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Are the numbers of @kids distinct and less than 2^31 apart, so that
 * serial comparison orders them all?  A raw client can make entries
 * further apart, where "before" goes round in a circle and there may be no
 * first entry, or repeat a number under another name.  O(n log n); false
 * on ENOMEM (the slow answer is right for any listing).
 */
static bool one_order(const struct zkg_child *kids, size_t n)
{
	const struct zkg_child *low = zkg_lowest(kids, n);
	uint32_t *off;
	bool ok = true;

	for (size_t i = 0; i < n; i++)
		if (&kids[i] != low && zkn_seq_cmp(kids[i].seq, low->seq) <= 0)
			return false;
	if (n < 2)
		return true;
	off = malloc(sizeof(*off) * n);
	if (!off)
		return false;
	for (size_t i = 0; i < n; i++)
		off[i] = (uint32_t)kids[i].seq - (uint32_t)low->seq;
	qsort(off, n, sizeof(*off), u32_cmp);
	for (size_t i = 1; ok && i < n; i++)
		ok = off[i] != off[i - 1];
	free(off);
	return ok;
}

/*
 * Outside one order the holders are, by definition, the entries that the
 * decision grants: user.zklockfs.state and .holders never disagree.
 * O(n^2), for listings only a raw client can make.  @limit 0: plain.
 */
static size_t holders_by_decision(const struct zkg_child *kids, size_t n,
				  unsigned limit, const struct zkg_child **out,
				  size_t max)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		enum zkg_verdict v = limit ? zkg_decide_limit(kids, n, kids[i].seq, limit)
					   : zkg_decide(kids, n, kids[i].seq, kids[i].kind, NULL);

		if (v != ZKG_GRANTED)
			continue;
		if (count < max)
			out[count] = &kids[i];
		count++;
	}
	return count;
}

size_t zkg_holders(const struct zkg_child *kids, size_t n,
		   const struct zkg_child **out, size_t max)
{
	const struct zkg_child *first_x = NULL;
	size_t count = 0;

	if (!one_order(kids, n))
		return holders_by_decision(kids, n, 0, out, max);
	for (size_t i = 0; i < n; i++)
		if (kids[i].kind == ZKN_EXCLUSIVE &&
		    (!first_x || zkn_seq_cmp(kids[i].seq, first_x->seq) < 0))
			first_x = &kids[i];
	for (size_t i = 0; i < n; i++) {
		if (kids[i].kind != ZKN_SHARED ||
		    (first_x && zkn_seq_cmp(kids[i].seq, first_x->seq) > 0))
			continue;
		if (count < max)
			out[count] = &kids[i];
		count++;
	}
	if (count == 0 && first_x) {
		if (max > 0)
			out[0] = first_x;
		count = 1;
	}
	return count;
}

const struct zkg_child *zkg_blocker(const struct zkg_child *kids, size_t n,
				    enum zkn_kind kind, bool has_own,
				    int32_t own)
{
	const struct zkg_child *first = NULL;

	for (size_t i = 0; i < n; i++) {
		if (has_own && kids[i].seq == own)
			continue;
		if (kind == ZKN_SHARED && kids[i].kind == ZKN_SHARED)
			continue;
		if (!first || zkn_seq_cmp(kids[i].seq, first->seq) < 0)
			first = &kids[i];
	}
	return first;
}

const struct zkg_child *zkg_lowest(const struct zkg_child *kids, size_t n)
{
	const struct zkg_child *low = n ? &kids[0] : NULL;

	for (size_t i = 1; i < n; i++)
		if (zkn_seq_cmp(kids[i].seq, low->seq) < 0)
			low = &kids[i];
	return low;
}

/*
 * By distance above @base (the lowest entry), unsigned: a total order
 * whatever the numbers, so qsort() is never handed a comparison that goes
 * round in a circle (undefined behaviour, which some qsort()s turn into
 * writes out of bounds); for numbers less than 2^31 apart, the serial one.
 */
static int child_cmp(const void *a, const void *b, void *base)
{
	uint32_t x = (uint32_t)((const struct zkg_child *)a)->seq - *(uint32_t *)base;
	uint32_t y = (uint32_t)((const struct zkg_child *)b)->seq - *(uint32_t *)base;

	return x < y ? -1 : x > y;
}

void zkg_sort(struct zkg_child *kids, size_t n)
{
	uint32_t base;

	if (n < 2)
		return;
	base = (uint32_t)zkg_lowest(kids, n)->seq;
	qsort_r(kids, n, sizeof(*kids), child_cmp, &base);
}

struct zkg_child *zkg_parse_children(char *const *names, int count, size_t *n)
{
	struct zkg_child *kids = malloc(sizeof(*kids) * (size_t)(count > 0 ? count : 1));

	*n = 0;
	for (int i = 0; kids && i < count; i++)
		if (zkn_parse(names[i], &kids[*n]))
			(*n)++;
	return kids;
}

void zkg_walk_init(struct zkg_walk *wk, const struct zkg_child *kids, size_t n)
{
	*wk = (struct zkg_walk){ .kids = kids, .n = n };
}

/* Move the cursor up to @seq.  Return: whether @seq is there. */
static bool walk_to(struct zkg_walk *wk, int32_t seq)
{
	while (wk->i < wk->n && zkn_seq_cmp(wk->kids[wk->i].seq, seq) < 0) {
		wk->prev = &wk->kids[wk->i++];
		if (wk->prev->kind == ZKN_EXCLUSIVE)
			wk->lastx = wk->prev;
	}
	return wk->i < wk->n && wk->kids[wk->i].seq == seq;
}

enum zkg_verdict zkg_walk_decide(struct zkg_walk *wk, int32_t seq,
				 enum zkn_kind kind,
				 const struct zkg_child **watch)
{
	const struct zkg_child *pred;

	if (!walk_to(wk, seq))
		return ZKG_MISSING;
	pred = kind == ZKN_SHARED ? wk->lastx : wk->prev;
	if (watch)
		*watch = pred;
	return pred ? ZKG_WAIT : ZKG_GRANTED;
}

/* semaphores ------------------------------------------------------------- */

enum zkg_verdict zkg_decide_limit(const struct zkg_child *kids, size_t n,
				  int32_t our_seq, unsigned limit)
{
	size_t before = 0;
	bool found = false;

	for (size_t i = 0; i < n; i++) {
		if (kids[i].seq == our_seq)
			found = true;
		else if (zkn_seq_cmp(kids[i].seq, our_seq) < 0)
			before++;
	}
	if (!found)
		return ZKG_MISSING;
	return before < limit ? ZKG_GRANTED : ZKG_WAIT;
}

size_t zkg_holders_limit(const struct zkg_child *kids, size_t n, unsigned limit,
			 const struct zkg_child **out, size_t max)
{
	const struct zkg_child *last = NULL;
	size_t want = limit < n ? limit : n;

	if (!one_order(kids, n))
		return holders_by_decision(kids, n, limit, out, max);
	/* the next lowest after @last, as many times as @out has room */
	for (size_t count = 0; count < want && count < max; count++) {
		const struct zkg_child *next = NULL;

		for (size_t i = 0; i < n; i++)
			if ((!last || zkn_seq_cmp(kids[i].seq, last->seq) > 0) &&
			    (!next || zkn_seq_cmp(kids[i].seq, next->seq) < 0))
				next = &kids[i];
		if (!next)
			return count;	/* numbers not in one serial order */
		out[count] = last = next;
	}
	return want;
}

const struct zkg_child *zkg_blocker_limit(const struct zkg_child *kids, size_t n,
					  unsigned limit, bool has_own, int32_t own)
{
	const struct zkg_child *first = NULL;
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		if (has_own && kids[i].seq == own)
			continue;
		count++;
		if (!first || zkn_seq_cmp(kids[i].seq, first->seq) < 0)
			first = &kids[i];
	}
	return count >= limit ? first : NULL;
}

enum zkg_verdict zkg_walk_decide_limit(struct zkg_walk *wk, int32_t seq,
				       unsigned limit)
{
	if (!walk_to(wk, seq))
		return ZKG_MISSING;
	return wk->i < limit ? ZKG_GRANTED : ZKG_WAIT;
}

const struct zkg_child *zkg_next_holder(const struct zkg_child *sorted, size_t n,
					unsigned limit)
{
	return limit < n ? &sorted[limit] : NULL;
}
