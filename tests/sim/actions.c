/*
 * tests/sim/actions.c - what the driver does to the world: the callers'
 * enqueue, cancel and release, and the other clients' unlink, entries and
 * data writes.  On the simulator's one thread, between steps of the
 * network, never inside a transport call.
 */
#include "tests/sim/sim.h"
#include "tests/sim/simfs.h"
#include "tests/sim/room.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct driven *pick_driven(struct world *wd, bool (*ok)(const struct driven *))
{
	int n = 0, k;

	for (int i = 0; i < wd->ndriven; i++)
		n += ok(&wd->driven[i]);
	if (!n)
		return NULL;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (int i = 0; i < wd->ndriven; i++)
		if (ok(&wd->driven[i]) && k-- == 0)
			return &wd->driven[i];
	return NULL;
}

static bool is_live(const struct driven *d) { return !d->released; }
static bool is_waiting(const struct driven *d) { return !d->released && d->ndone == 0; }
bool act_is_answered(const struct driven *d) { return !d->released && d->ndone == 1; }

bool act_enqueue(struct world *wd)
{
	int live = 0, m, dir, flags;
	enum zkn_kind kind;

	for (int i = 0; i < wd->ndriven; i++)
		live += is_live(&wd->driven[i]);
	if (live >= SIM_MAX_LIVE)
		return false;
	m = (int)sim_rng_below(&wd->rng, SIM_MOUNTS);
	dir = (int)sim_rng_below(&wd->rng, SIM_DIRS);
	kind = sim_rng_chance(&wd->rng, 1, 3) ? ZKN_SHARED : ZKN_EXCLUSIVE;
	flags = sim_rng_chance(&wd->rng, 1, 6) ? ZKL_NONBLOCK : 0;
	/* where mounts linger, often the lock just given back, to find it */
	if (wd->lingers && wd->last_released && sim_rng_chance(&wd->rng, 1, 2)) {
		const struct driven *r = &wd->driven[wd->last_released - 1];

		m = r->mount;
		dir = r->dir;
		kind = r->kind;
	}
	/* half through fs/, as the kernel asks (a lock file's OPEN and
	 * flock on a lockfiles mount); half to the engine itself */
	if (sim_rng_chance(&wd->rng, 1, 2))
		(m == wd->lockfiles ? simfs_open_lockfile : simfs_open)(wd, m, dir, kind, flags);
	else
		act_enqueue_on(wd, m, dir, kind, flags);
	return true;
}

int sim_new_driven(struct world *wd, int m, int dir, enum zkn_kind kind, int flags)
{
	int live = 0, id = wd->ndriven;
	struct driven *d;

	for (int i = 0; i < wd->ndriven; i++)
		live += is_live(&wd->driven[i]);
	if (live >= SIM_MAX_LIVE)
		return -1;
	SIM_ROOM(wd->driven, wd->ndriven, wd->drivencap, 64);
	d = &wd->driven[id];
	memset(d, 0, sizeof(*d));
	d->id = id;
	d->mount = m;
	d->dir = dir;
	d->kind = kind;
	d->flags = flags;
	d->fd = -1;
	wd->ndriven++;
	return id;
}

int act_enqueue_on(struct world *wd, int m, int dir, enum zkn_kind kind, int flags)
{
	int id = sim_new_driven(wd, m, dir, kind, flags), rc;
	struct driven *d;
	char data[32];

	if (id < 0)
		return -1;
	d = &wd->driven[id];
	snprintf(data, sizeof(data), "sim=%d\n", id);
	sn_trace(&wd->net, "  enqueue w%d: m%d %s %s%s", id, d->mount, wd->dirs[d->dir],
		 d->kind == ZKN_EXCLUSIVE ? "exclusive" : "shared",
		 d->flags & ZKL_NONBLOCK ? " nonblock" : "");
	rc = zkl_enqueue(wd->eng[d->mount], wd->dirs[d->dir], "job", d->kind, d->flags,
			 data, (int)strlen(data), 1000, sim_done, (void *)(intptr_t)id,
			 &d->w);
	if (rc == -ETIMEDOUT && (flags & ZKL_NONBLOCK)) {
		if (!sim_was_silent(wd, m))	/* a try on a silent session only */
			sim_failf(wd, "enqueue: w%d ETIMEDOUT on a session not silent", id);
		d->result = rc;
		d->released = true;
		d->ndone = 1;
	} else if (rc) {
		sim_failf(wd, "enqueue: w%d refused at once: %d", id, rc);
		d->released = true;
		d->ndone = 1;
	}
	return id;
}

void act_release_driven(struct world *wd, struct driven *d)
{
	struct zkl_info info;
	char *path = NULL;

	if (d->fd >= 0) {
		simfs_release(wd, d);
		return;
	}
	zkl_info(d->w, &info, &path);
	sn_trace(&wd->net, "  release w%d (%s)", d->id, path ? path : "no entry");
	d->released = true;
	wd->last_released = d->id + 1;
	zkl_release(d->w);
	sim_check_release(wd, d, path);
	free(path);
}

bool act_cancel(struct world *wd)
{
	struct driven *d = pick_driven(wd, is_waiting);

	if (!d)
		return false;
	d->cancelled = true;
	if (d->fd >= 0) {
		void *asked = d->req;

		simfs_interrupt(wd, d, sim_rng_chance(&wd->rng, 1, 2));
		/* answered, or its wait handed to a request that joined it */
		if (d->ndone != 1 && (void *)d->req == asked)
			sim_failf(wd, "interrupt: w%d not answered when it returned", d->id);
		return true;
	}
	sn_trace(&wd->net, "  cancel w%d", d->id);
	zkl_cancel(d->w);
	if (d->ndone != 1)
		sim_failf(wd, "cancel: w%d not answered when zkl_cancel() returned", d->id);
	if (sim_rng_chance(&wd->rng, 1, 2))
		act_release_driven(wd, d);		/* an interrupted open gives it up at once */
	return true;
}

bool act_release(struct world *wd)
{
	struct driven *d = pick_driven(wd, act_is_answered);

	if (!d)
		return false;
	act_release_driven(wd, d);
	return true;
}

/* A random child of a random lock directory, or NULL. */
static struct szk_node *pick_entry(struct world *wd, bool foreign_only)
{
	struct szk *z = &wd->net.zk;
	const char *dir = wd->dirs[sim_rng_below(&wd->rng, SIM_DIRS)];
	int n = 0, k;

	for (int i = 0; i < z->nnodes; i++)
		n += sim_dir_of(z->nodes[i].path, dir) &&
		     (!foreign_only || z->nodes[i].owner == wd->foreign);
	if (!n)
		return NULL;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (int i = 0; i < z->nnodes; i++)
		if (sim_dir_of(z->nodes[i].path, dir) &&
		    (!foreign_only || z->nodes[i].owner == wd->foreign) && k-- == 0)
			return &z->nodes[i];
	return NULL;
}

/* Another client (or rm) deletes an entry, ours or not. */
bool act_unlink(struct world *wd)
{
	struct szk_node *n = pick_entry(wd, false);
	int id;
	char *path;

	if (!n)
		return false;
	id = sim_entry_owner(n);
	path = strdup(n->path);
	act_unlink_path(wd, path, id);
	free(path);
	return true;
}

void act_unlink_path(struct world *wd, const char *path, int id)
{
	sn_trace(&wd->net, "  unlink %s (w%d)", path, id);
	if (id >= 0)
		wd->driven[id].unlinked = true;
	SIM_ROOM(wd->gone, wd->ngone, wd->gcap, 16);
	snprintf(wd->gone[wd->ngone++], sizeof(*wd->gone), "%s", path);
	szk_delete(&wd->net.zk, path, -1);
}

/* The foreign client, with Curator's names, joins a queue. */
bool act_foreign_enqueue(struct world *wd)
{
	const char *dir = wd->dirs[sim_rng_below(&wd->rng, SIM_DIRS)];
	bool shared = sim_rng_chance(&wd->rng, 1, 3);
	char prefix[64], *path = NULL;

	snprintf(prefix, sizeof(prefix), "%s/f-%s", dir, shared ? "read-lock-" : "lock-");
	szk_create(&wd->net.zk, wd->foreign, prefix, "foreign\n", 8,
		   ZOO_EPHEMERAL | ZOO_SEQUENCE, &path, NULL);
	sn_trace(&wd->net, "  foreign enqueue %s", path);
	free(path);
	return true;
}

bool act_foreign_release(struct world *wd)
{
	struct szk_node *n = pick_entry(wd, true);
	char *path;

	if (!n)
		return false;
	path = strdup(n->path);
	sn_trace(&wd->net, "  foreign release %s", path);
	szk_delete(&wd->net.zk, path, -1);
	free(path);
	return true;
}

/* The foreign client gives back every entry it has. */
void foreign_leaves(struct world *wd)
{
	struct szk *z = &wd->net.zk;

	for (int i = 0; i < z->nnodes;) {
		char *path;

		if (z->nodes[i].owner != wd->foreign) {
			i++;
			continue;
		}
		path = strdup(z->nodes[i].path);
		sn_trace(&wd->net, "  foreign release %s", path);
		szk_delete(z, path, -1);	/* the last node takes slot i */
		free(path);
	}
}

/* A holder writes its entry (fs write()), or the foreign client its own. */
bool act_setdata(struct world *wd)
{
	struct szk_node *n = pick_entry(wd, false);
	int id;
	char *path;

	if (!n)
		return false;
	id = sim_entry_owner(n);
	if (id >= 0 && !(wd->driven[id].ndone == 1 && wd->driven[id].result == 0 &&
			 !wd->driven[id].released))
		return false;
	path = strdup(n->path);
	sn_trace(&wd->net, "  set data of %s", path);
	szk_set(&wd->net.zk, path, n->data, n->len, -1);
	free(path);
	return true;
}

