/*
 * fs/slots.h - which of a mount's sessions the requests about a directory
 * go to, when a session must sync first, and when the pool should open or
 * close one.  Pure bookkeeping (no ZooKeeper, no clock, no locking: the
 * caller serialises and says the time); see fs/pool.c for why.
 *
 * A slot is a session of the mount, open or closed; slot 0 is always
 * open.  A slot's load is how many of its directories are in use as locks:
 * pinned now, or within the last ZKLFS_SLOTS_RECENT_MS.  A directory is bound
 * at its first use to the open slot with the least load (round robin
 * among equals), and keeps it while anything of it lives there: its pins,
 * counted by the engine's waiters (from the enqueue to the delete of their
 * entry, lingering included) and by the mount's holds (a lock request
 * about to enqueue, a watch, a query that spans several calls).  A
 * directory without pins may move: to the open slot with the least load,
 * when the others on its own slot are at least REBALANCE more; it then
 * owes a sync on its new slot (zklfs_slot_pick()'s *sync), since that
 * session's server may not have seen what the old one did.  The load
 * counts directories in use rather than those pinned at the instant, so
 * that a lock cycled by one process, free for a moment between its
 * cycles, does not move back and forth.  Up to @max_dirs directories are
 * stored; beyond, a directory goes to slot 0 and is never stored (slot 0
 * never closes, so that stays true).
 *
 * A mkdir or rmdir through the mount (zklfs_slots_changed()) makes every
 * other slot owe a sync before its next request; zklfs_slot_pick() says
 * so once, and counts the slot as synced.  A slot just opened owes one.
 */
#ifndef FS_SLOTS_H
#define FS_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/opts.h"		/* ZKLFS_SESSIONS_MAX */

/* The load of every open slot at which the pool wants another. */
#define ZKLFS_SLOTS_GROW_AT 2
/* How much less load a slot must have to take a free directory. */
#define ZKLFS_SLOTS_REBALANCE 2
/* How long a directory picked counts in its slot's load without pins. */
#define ZKLFS_SLOTS_RECENT_MS 1000

struct dirslot;

struct zklfs_slot {
	bool open;
	int load;		/* bound directories in use: pinned, now
				   or within ZKLFS_SLOTS_RECENT_MS */
	long pins;		/* of every directory bound here */
	uint64_t used_ms;	/* the last pick of it, or its opening */
	uint64_t synced;	/* ns_gen at its last sync; 0: owes one */
};

struct zklfs_slots {
	int max;				/* slots */
	int nopen;
	size_t max_dirs;
	struct dirslot **dirs;			/* buckets: path -> slot */
	size_t ndirs;
	uint64_t ns_gen;			/* mkdir/rmdir done through us */
	uint64_t moves;				/* free directories rebound */
	unsigned next;				/* round robin among equals */
	struct zklfs_slot s[ZKLFS_SESSIONS_MAX];
};

/*
 * zklfs_slots_init() - @max slots, the first @open of them open (slot 0
 * made the root).  Return: 0 or -ENOMEM.
 */
int zklfs_slots_init(struct zklfs_slots *t, int max, int open, size_t max_dirs);
void zklfs_slots_free(struct zklfs_slots *t);

/* zklfs_slot_pick() - the slot of @dir at @now_ms; *@sync: it must sync
 * first. */
int zklfs_slot_pick(struct zklfs_slots *t, const char *dir, uint64_t now_ms, bool *sync);

/*
 * zklfs_slot_pin() - @dir's pins on @slot grow by @delta (+1 or -1), at
 * @now_ms.  A
 * directory not stored, or bound elsewhere, is not counted (slot 0 never
 * closes; a pin follows a pick of its slot, so the second never happens).
 * zklfs_slot_hold() - zklfs_slot_pick() and a pin, at once.
 */
void zklfs_slot_pin(struct zklfs_slots *t, const char *dir, int slot, int delta,
		    uint64_t now_ms);
int zklfs_slot_hold(struct zklfs_slots *t, const char *dir, uint64_t now_ms, bool *sync);

/* zklfs_slots_sweep() - directories without pins for @recent_ms no
 * longer count in their slot's load. */
void zklfs_slots_sweep(struct zklfs_slots *t, uint64_t now_ms, uint64_t recent_ms);

/* zklfs_slot_unsynced() - @slot's sync failed: its next request syncs again. */
void zklfs_slot_unsynced(struct zklfs_slots *t, int slot);

/* zklfs_slots_changed() - a mkdir or rmdir of @dir, on @dir's slot, is done. */
void zklfs_slots_changed(struct zklfs_slots *t, const char *dir, uint64_t now_ms);

/*
 * zklfs_slots_want() - the closed slot to open next (the lowest), when
 * every open slot has a load of ZKLFS_SLOTS_GROW_AT or more; -1
 * otherwise.  zklfs_slot_opened() - it is open now, owing a sync.
 */
int zklfs_slots_want(const struct zklfs_slots *t);
void zklfs_slot_opened(struct zklfs_slots *t, int slot, uint64_t now_ms);

/*
 * zklfs_slots_idle() - the highest open slot from @keep on with no pins
 * and no pick for @idle_ms, -1 if none.  zklfs_slot_close() - close it:
 * its directories are bound again at their next pick, with a sync.
 */
int zklfs_slots_idle(const struct zklfs_slots *t, int keep, uint64_t now_ms,
		     uint64_t idle_ms);
void zklfs_slot_close(struct zklfs_slots *t, int slot);

#endif
