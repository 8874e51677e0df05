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

enum zkg_verdict {
	ZKG_GRANTED,	/* our entry holds the lock */
	ZKG_WAIT,	/* *watch is the entry to outlive (no herd effect) */
	ZKG_MISSING,	/* our entry is not among @kids: it was deleted */
};

/*
 * zkg_decide() - does the entry @our_seq of @kind hold the lock?
 * On ZKG_WAIT, *@watch points into @kids at the entry just before ours that
 * blocks us: the previous entry for an exclusive waiter, the previous
 * exclusive entry for a shared one.
 */
enum zkg_verdict zkg_decide(const struct zkg_child *kids, size_t n,
			    int32_t our_seq, enum zkn_kind kind,
			    const struct zkg_child **watch);

/*
 * zkg_holders() - which entries hold the lock now: the first entry if it is
 * exclusive, else every shared entry before the first exclusive one.
 * Stores at most @max pointers into @kids in @out, in no particular order.
 * Numbers that serial comparison cannot order (some more than 2^31 apart,
 * or repeated: only a raw client makes them) have no "first": then the
 * holders are exactly the entries zkg_decide() grants, often none, so that
 * an entry's state and the holders always agree (O(n^2) then, else
 * O(n log n)).
 * Return: the number of holders (which may exceed @max).
 */
size_t zkg_holders(const struct zkg_child *kids, size_t n,
		   const struct zkg_child **out, size_t max);

/*
 * zkg_parse_children() - the children of a lock znode (@count names, as a
 * children listing gives them) that take part in its queue, parsed with
 * zkn_parse(); names are borrowed from @names.
 * Return: a malloc'ed array of *@n entries, or NULL on ENOMEM.
 */
struct zkg_child *zkg_parse_children(char *const *names, int count, size_t *n);

/*
 * zkg_lowest() - the first entry of the queue (NULL if @n is 0).  Nothing
 * is ever inserted before an entry that exists, so a waiter whose entry to
 * outlive was the lowest holds the lock as soon as that entry is gone.
 */
const struct zkg_child *zkg_lowest(const struct zkg_child *kids, size_t n);

/*
 * zkg_blocker() - F_GETLK's question: would an entry of @kind enqueued now
 * (behind every one of @kids) have to wait?  The entry @own (if @has_own)
 * is left out: it is the asker's own, which is given back before a
 * conversion enqueues.  Return: NULL if it would be granted at once, else
 * the first entry in queue order that it would wait for (for an exclusive
 * entry, the lowest of all; for a shared one, the lowest exclusive one).
 */
const struct zkg_child *zkg_blocker(const struct zkg_child *kids, size_t n,
				    enum zkn_kind kind, bool has_own,
				    int32_t own);

/*
 * Semaphores.  A lock znode whose data sets a limit N (zk/settings.h) lets N
 * entries hold at once: an entry holds when fewer than N entries, of any
 * kind, come before it.  The functions below take that @limit (1 to
 * ZKG_LIMIT_MAX); a lock without one is decided by those above.
 */
#define ZKG_LIMIT_MAX 1000

/*
 * zkg_decide_limit() - does the entry @our_seq hold, under @limit?  No
 * entry to outlive is named: a waiter of a semaphore may be granted by the
 * going of any of the entries before it.  O(n).
 */
enum zkg_verdict zkg_decide_limit(const struct zkg_child *kids, size_t n,
				  int32_t our_seq, unsigned limit);

/*
 * zkg_holders_limit() - the first @limit entries in queue order, as
 * zkg_holders() stores them (and outside one serial order, those that
 * zkg_decide_limit() grants).  O(n * min(@limit, @max)).  Return: how many
 * hold (at most @limit).
 */
size_t zkg_holders_limit(const struct zkg_child *kids, size_t n, unsigned limit,
			 const struct zkg_child **out, size_t max);

/*
 * zkg_blocker_limit() - zkg_blocker() under @limit: an entry enqueued now
 * waits iff @limit entries (not counting @own, if @has_own) are there.
 * Return: NULL if it would hold at once, else the lowest of them.
 */
const struct zkg_child *zkg_blocker_limit(const struct zkg_child *kids, size_t n,
					  unsigned limit, bool has_own, int32_t own);

/*
 * zkg_sort() - sort @kids in queue order (ascending serial order).  Numbers
 * 2^31 or more apart (only a raw client makes them) have no serial order:
 * they are sorted by their distance above zkg_lowest()'s pick, a total
 * order, so the sort itself stays sound.
 */
void zkg_sort(struct zkg_child *kids, size_t n);

/*
 * One pass over a sorted listing that decides for many entries: what
 * zkg_decide() says for each, in O(n) for the whole pass rather than O(n)
 * per entry.  Used when one listing answers every waiter of a mount in
 * that lock.
 */
struct zkg_walk {
	const struct zkg_child *kids;	/* sorted with zkg_sort() */
	size_t n, i;			/* kids[0..i) are behind the cursor */
	const struct zkg_child *prev;	/* the last entry behind it */
	const struct zkg_child *lastx;	/* the last exclusive entry behind it */
};

/* zkg_walk_init() - a cursor before the first of the sorted @kids. */
void zkg_walk_init(struct zkg_walk *wk, const struct zkg_child *kids, size_t n);

/*
 * zkg_walk_decide() - zkg_decide() for @seq; successive calls must come
 * with ascending @seq (entries may be skipped).
 */
enum zkg_verdict zkg_walk_decide(struct zkg_walk *wk, int32_t seq,
				 enum zkn_kind kind,
				 const struct zkg_child **watch);

/* zkg_walk_decide_limit() - zkg_decide_limit() over the walk, likewise. */
enum zkg_verdict zkg_walk_decide_limit(struct zkg_walk *wk, int32_t seq,
				       unsigned limit);

/*
 * zkg_next_holder() - in the sorted @kids, the entry that holds next under
 * @limit, once any one of the first @limit goes: the one at index @limit.
 * Return: NULL if there is none (nobody waits).
 */
const struct zkg_child *zkg_next_holder(const struct zkg_child *sorted, size_t n,
					unsigned limit);

#endif
