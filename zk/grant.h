/*
 * zk/grant.h - the grant decision of the lock recipe, as pure functions.
 *
 * Given the children of a lock znode (parsed with zkn_parse(); children
 * without a sequence number are left out by the caller) these decide who
 * holds the lock and whom a waiter must outlive.  An exclusive entry is
 * granted when no entry comes before it; a shared entry when no exclusive
 * entry comes before it.  "Before" is serial-number order (zkn_seq_cmp).
 * Order of @kids does not matter.  No locks, no allocation, any thread.
 */
#ifndef ZK_GRANT_H
#define ZK_GRANT_H

#include "zk/naming.h"

enum zkl_verdict {
	ZKL_GRANTED,	/* our entry holds the lock */
	ZKL_WAIT,	/* *watch is the entry to outlive (no herd effect) */
	ZKL_MISSING,	/* our entry is not among @kids: it was deleted */
};

/*
 * zkl_decide() - does the entry @our_seq of @kind hold the lock?
 * On ZKL_WAIT, *@watch points into @kids at the entry just before ours that
 * blocks us: the previous entry for an exclusive waiter, the previous
 * exclusive entry for a shared one.
 */
enum zkl_verdict zkl_decide(const struct zkl_child *kids, size_t n,
			    int32_t our_seq, enum zkl_kind kind,
			    const struct zkl_child **watch);

/*
 * zkl_holders() - which entries hold the lock now: the first entry if it is
 * exclusive, else every shared entry before the first exclusive one.
 * Stores at most @max pointers into @kids in @out, in no particular order.
 * Numbers that serial comparison cannot order (some more than 2^31 apart,
 * or repeated: only a raw client makes them) have no "first": then the
 * holders are exactly the entries zkl_decide() grants, often none, so that
 * an entry's state and the holders always agree (O(n^2) then, else
 * O(n log n)).
 * Return: the number of holders (which may exceed @max).
 */
size_t zkl_holders(const struct zkl_child *kids, size_t n,
		   const struct zkl_child **out, size_t max);

/*
 * zkl_parse_children() - the children of a lock znode (@count names, as a
 * children listing gives them) that take part in its queue, parsed with
 * zkn_parse(); names are borrowed from @names.
 * Return: a malloc'ed array of *@n entries, or NULL on ENOMEM.
 */
struct zkl_child *zkl_parse_children(char *const *names, int count, size_t *n);

/*
 * zkl_lowest() - the first entry of the queue (NULL if @n is 0).  Nothing
 * is ever inserted before an entry that exists, so a waiter whose entry to
 * outlive was the lowest holds the lock as soon as that entry is gone.
 */
const struct zkl_child *zkl_lowest(const struct zkl_child *kids, size_t n);

/*
 * zkl_blocker() - F_GETLK's question: would an entry of @kind enqueued now
 * (behind every one of @kids) have to wait?  The entry @own (if @has_own)
 * is left out: it is the asker's own, which is given back before a
 * conversion enqueues.  Return: NULL if it would be granted at once, else
 * the first entry in queue order that it would wait for (for an exclusive
 * entry, the lowest of all; for a shared one, the lowest exclusive one).
 */
const struct zkl_child *zkl_blocker(const struct zkl_child *kids, size_t n,
				    enum zkl_kind kind, bool has_own,
				    int32_t own);

/*
 * Semaphores.  A lock znode whose data sets a limit N (zk/limit.h) lets N
 * entries hold at once: an entry holds when fewer than N entries, of any
 * kind, come before it.  The functions below take that @limit (1 to
 * ZKL_LIMIT_MAX); a lock without one is decided by those above.
 */
#define ZKL_LIMIT_MAX 1000

/*
 * zkl_decide_limit() - does the entry @our_seq hold, under @limit?  No
 * entry to outlive is named: a waiter of a semaphore may be granted by the
 * going of any of the entries before it.  O(n).
 */
enum zkl_verdict zkl_decide_limit(const struct zkl_child *kids, size_t n,
				  int32_t our_seq, unsigned limit);

/*
 * zkl_holders_limit() - the first @limit entries in queue order, as
 * zkl_holders() stores them (and outside one serial order, those that
 * zkl_decide_limit() grants).  O(n * min(@limit, @max)).  Return: how many
 * hold (at most @limit).
 */
size_t zkl_holders_limit(const struct zkl_child *kids, size_t n, unsigned limit,
			 const struct zkl_child **out, size_t max);

/*
 * zkl_blocker_limit() - zkl_blocker() under @limit: an entry enqueued now
 * waits iff @limit entries (not counting @own, if @has_own) are there.
 * Return: NULL if it would hold at once, else the lowest of them.
 */
const struct zkl_child *zkl_blocker_limit(const struct zkl_child *kids, size_t n,
					  unsigned limit, bool has_own, int32_t own);

/*
 * zkl_sort() - sort @kids in queue order (ascending serial order).  Numbers
 * 2^31 or more apart (only a raw client makes them) have no serial order:
 * they are sorted by their distance above zkl_lowest()'s pick, a total
 * order, so the sort itself stays sound.
 */
void zkl_sort(struct zkl_child *kids, size_t n);

/*
 * One pass over a sorted listing that decides for many entries: what
 * zkl_decide() says for each, in O(n) for the whole pass rather than O(n)
 * per entry.  Used when one listing answers every waiter of a mount in
 * that lock.
 */
struct zkl_walk {
	const struct zkl_child *kids;	/* sorted with zkl_sort() */
	size_t n, i;			/* kids[0..i) are behind the cursor */
	const struct zkl_child *prev;	/* the last entry behind it */
	const struct zkl_child *lastx;	/* the last exclusive entry behind it */
};

/* zkl_walk_init() - a cursor before the first of the sorted @kids. */
void zkl_walk_init(struct zkl_walk *wk, const struct zkl_child *kids, size_t n);

/*
 * zkl_walk_decide() - zkl_decide() for @seq; successive calls must come
 * with ascending @seq (entries may be skipped).
 */
enum zkl_verdict zkl_walk_decide(struct zkl_walk *wk, int32_t seq,
				 enum zkl_kind kind,
				 const struct zkl_child **watch);

/* zkl_walk_decide_limit() - zkl_decide_limit() over the walk, likewise. */
enum zkl_verdict zkl_walk_decide_limit(struct zkl_walk *wk, int32_t seq,
				       unsigned limit);

/*
 * zkl_next_holder() - in the sorted @kids, the entry that holds next under
 * @limit, once any one of the first @limit goes: the one at index @limit.
 * Return: NULL if there is none (nobody waits).
 */
const struct zkl_child *zkl_next_holder(const struct zkl_child *sorted, size_t n,
					unsigned limit);

#endif
