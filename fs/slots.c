/* fs/slots.c - directories to session slots; see fs/slots.h. */
#include "fs/slots.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zk/naming.h"

#define BUCKETS 4096

struct dirslot {
	struct dirslot *next;
	int slot;
	char path[];
};

int zklfs_slots_init(struct zklfs_slots *t, int n, size_t max_dirs)
{
	memset(t, 0, sizeof(*t));
	t->n = n;
	t->max_dirs = max_dirs;
	t->dirs = calloc(BUCKETS, sizeof(*t->dirs));
	t->ns_gen = 1;			/* the root, made on slot 0 */
	t->synced[0] = 1;
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

int zklfs_slot_pick(struct zklfs_slots *t, const char *dir, bool *sync)
{
	uint64_t h = zkn_hash(dir);
	struct dirslot **b = &t->dirs[h % BUCKETS], *d;
	size_t len = strlen(dir);
	int slot;

	for (d = *b; d; d = d->next)
		if (strcmp(d->path, dir) == 0)
			break;
	if (d) {
		slot = d->slot;
	} else if (t->ndirs < t->max_dirs && (d = malloc(sizeof(*d) + len + 1))) {
		d->slot = slot = (int)(t->next++ % (unsigned)t->n);
		memcpy(d->path, dir, len + 1);
		d->next = *b;
		*b = d;
		t->ndirs++;
	} else {
		slot = (int)((h >> 32) % (uint64_t)t->n);	/* full: stateless */
	}
	*sync = t->synced[slot] < t->ns_gen;
	t->synced[slot] = t->ns_gen;
	return slot;
}

void zklfs_slot_unsynced(struct zklfs_slots *t, int slot)
{
	t->synced[slot] = 0;
}

void zklfs_slots_changed(struct zklfs_slots *t, const char *dir)
{
	bool sync;
	int slot = zklfs_slot_pick(t, dir, &sync);

	t->ns_gen++;
	if (!sync)		/* @dir's slot was up to date, and made the change */
		t->synced[slot] = t->ns_gen;
}
