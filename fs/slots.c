/* fs/slots.c - directories to session slots; see fs/slots.h. */
#include "fs/slots.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zk/naming.h"

#define BUCKETS 4096

struct dirslot {
	struct dirslot *next;
	int slot;		/* -1: its slot closed, bound again at its next pick */
	int pins;
	bool counted;		/* in its slot's load */
	uint64_t seen_ms;	/* its last pin or unpin */
	char path[];
};

int zklfs_slots_init(struct zklfs_slots *t, int max, int open, size_t max_dirs)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	t->max_dirs = max_dirs;
	t->dirs = calloc(BUCKETS, sizeof(*t->dirs));
	t->ns_gen = 1;			/* the root, made on slot 0 */
	for (int i = 0; i < open; i++)
		zklfs_slot_opened(t, i, 0);
	t->s[0].synced = 1;
	return t->dirs ? 0 : -ENOMEM;
}

void zklfs_slots_free(struct zklfs_slots *t)
{
	for (size_t b = 0; t->dirs && b < BUCKETS; b++)
		while (t->dirs[b]) {
			struct dirslot *d = t->dirs[b];

			t->dirs[b] = d->next;
			free(d);
		}
	free(t->dirs);
	t->dirs = NULL;
}

static struct dirslot *find(struct zklfs_slots *t, const char *dir)
{
	for (struct dirslot *d = t->dirs[zkn_hash(dir) % BUCKETS]; d; d = d->next)
		if (strcmp(d->path, dir) == 0)
			return d;
	return NULL;
}

/* The open slot with the least load; of equals, the next after the last
 * one given a directory (round robin). */
static int least_loaded(const struct zklfs_slots *t)
{
	int best = -1;

	for (int k = 0; k < t->max; k++) {
		int i = (int)((t->next + (unsigned)k) % (unsigned)t->max);

		if (t->s[i].open && (best < 0 || t->s[i].load < t->s[best].load))
			best = i;
	}
	return best;
}

static void count(struct zklfs_slots *t, struct dirslot *d, bool in)
{
	if (d->counted == in || d->slot < 0)
		return;
	d->counted = in;
	t->s[d->slot].load += in ? 1 : -1;
}

/* Bind @d to @slot. */
static void bind(struct zklfs_slots *t, struct dirslot *d, int slot)
{
	d->slot = slot;
	t->next = (unsigned)slot + 1;
}

/*
 * zklfs_slot_pick()'s work: @dir's entry (stored now if new; NULL when the
 * table is full), its slot in *@slot.
 */
static struct dirslot *place(struct zklfs_slots *t, const char *dir, uint64_t now_ms,
			     bool *sync, int *slot)
{
	struct dirslot *d = find(t, dir);
	size_t len = strlen(dir);
	int best = least_loaded(t);

	if (!d && t->ndirs < t->max_dirs && (d = malloc(sizeof(*d) + len + 1))) {
		struct dirslot **b = &t->dirs[zkn_hash(dir) % BUCKETS];

		/* never seen by the mount: nothing of it to see on another slot */
		bind(t, d, best);
		d->pins = 0;
		d->counted = false;
		memcpy(d->path, dir, len + 1);
		d->next = *b;
		*b = d;
		t->ndirs++;
	}
	if (!d) {
		*slot = 0;			/* full: never stored */
	} else {
		if (d->pins == 0 && d->slot != best &&
		    (d->slot < 0 || t->s[best].load + ZKLFS_SLOTS_REBALANCE <=
				     t->s[d->slot].load - d->counted)) {
			/* free, and the others on its slot more: what it did
			 * there may not have reached the new one's server yet */
			if (d->slot >= 0)
				t->moves++;
			count(t, d, false);
			bind(t, d, best);
			t->s[best].synced = 0;
		}
		*slot = d->slot;
	}
	*sync = t->s[*slot].synced < t->ns_gen;
	t->s[*slot].synced = t->ns_gen;
	t->s[*slot].used_ms = now_ms;
	return d;
}

/* @d's pins grow by @delta, at @now_ms; it counts in its slot's load. */
static void pin(struct zklfs_slots *t, struct dirslot *d, int delta, uint64_t now_ms)
{
	d->pins += delta;
	t->s[d->slot].pins += delta;
	count(t, d, true);
	d->seen_ms = now_ms;
}

int zklfs_slot_pick(struct zklfs_slots *t, const char *dir, uint64_t now_ms, bool *sync)
{
	int slot;

	place(t, dir, now_ms, sync, &slot);
	return slot;
}

void zklfs_slot_pin(struct zklfs_slots *t, const char *dir, int slot, int delta,
		    uint64_t now_ms)
{
	struct dirslot *d = find(t, dir);

	if (d && d->slot == slot)
		pin(t, d, delta, now_ms);
}

void zklfs_slots_sweep(struct zklfs_slots *t, uint64_t now_ms, uint64_t recent_ms)
{
	for (size_t b = 0; b < BUCKETS; b++)
		for (struct dirslot *d = t->dirs[b]; d; d = d->next)
			if (d->counted && d->pins == 0 && now_ms > d->seen_ms &&
			    now_ms - d->seen_ms > recent_ms)
				count(t, d, false);
}

int zklfs_slot_hold(struct zklfs_slots *t, const char *dir, uint64_t now_ms, bool *sync)
{
	int slot;
	struct dirslot *d = place(t, dir, now_ms, sync, &slot);

	if (d)
		pin(t, d, 1, now_ms);
	return slot;
}

void zklfs_slot_unsynced(struct zklfs_slots *t, int slot)
{
	t->s[slot].synced = 0;
}

void zklfs_slots_changed(struct zklfs_slots *t, const char *dir, uint64_t now_ms)
{
	bool sync;
	int slot = zklfs_slot_pick(t, dir, now_ms, &sync);

	t->ns_gen++;
	if (!sync)		/* @dir's slot was up to date, and made the change */
		t->s[slot].synced = t->ns_gen;
}

int zklfs_slots_want(const struct zklfs_slots *t)
{
	if (t->nopen >= t->max || t->s[least_loaded(t)].load < ZKLFS_SLOTS_GROW_AT)
		return -1;
	for (int i = 0; i < t->max; i++)
		if (!t->s[i].open)
			return i;
	return -1;
}

void zklfs_slot_opened(struct zklfs_slots *t, int slot, uint64_t now_ms)
{
	struct zklfs_slot *s = &t->s[slot];

	*s = (struct zklfs_slot){ .open = true, .used_ms = now_ms };
	t->nopen++;
}

int zklfs_slots_idle(const struct zklfs_slots *t, int keep, uint64_t now_ms,
		     uint64_t idle_ms)
{
	for (int i = t->max - 1; i >= keep && i > 0; i--) {
		const struct zklfs_slot *s = &t->s[i];

		if (s->open && s->pins == 0 && now_ms >= s->used_ms &&
		    now_ms - s->used_ms >= idle_ms)
			return i;
	}
	return -1;
}

void zklfs_slot_close(struct zklfs_slots *t, int slot)
{
	for (size_t b = 0; b < BUCKETS; b++)
		for (struct dirslot *d = t->dirs[b]; d; d = d->next)
			if (d->slot == slot) {
				d->counted = false;
				d->slot = -1;
			}
	t->s[slot].open = false;
	t->s[slot].load = 0;
	t->nopen--;
}
