/*
 * fs/slots.h - which of a mount's sessions the requests about a directory
 * go to, and when a session must sync first.  Pure bookkeeping (no
 * ZooKeeper, no locking: the caller serialises); see fs/pool.c for why.
 *
 * A directory gets a slot at its first use, round robin, and keeps it (up
 * to @max_dirs directories; beyond, a hash of its path, never stored).  A
 * mkdir or rmdir through the mount (zklfs_slots_changed()) makes every
 * other slot owe a sync before its next request; zklfs_slot_pick() says
 * so once, and counts the slot as synced.
 */
#ifndef FS_SLOTS_H
#define FS_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/opts.h"		/* ZKLFS_SESSIONS_MAX */

struct dirslot;

struct zklfs_slots {
	int n;					/* sessions */
	size_t max_dirs;
	struct dirslot **dirs;			/* buckets: path -> slot */
	size_t ndirs;
	unsigned next;				/* round robin */
	uint64_t ns_gen;			/* mkdir/rmdir done through us */
	uint64_t synced[ZKLFS_SESSIONS_MAX];	/* ns_gen at the slot's last sync */
};

/* zklfs_slots_init() - @n slots; slot 0 made the root. Return: 0 or -ENOMEM. */
int zklfs_slots_init(struct zklfs_slots *t, int n, size_t max_dirs);
void zklfs_slots_free(struct zklfs_slots *t);

/* zklfs_slot_pick() - the slot of @dir; *@sync: it must sync first. */
int zklfs_slot_pick(struct zklfs_slots *t, const char *dir, bool *sync);

/* zklfs_slot_unsynced() - @slot's sync failed: its next request syncs again. */
void zklfs_slot_unsynced(struct zklfs_slots *t, int slot);

/* zklfs_slots_changed() - a mkdir or rmdir of @dir, on @dir's slot, is done. */
void zklfs_slots_changed(struct zklfs_slots *t, const char *dir);

#endif
