/*
 * tests/sim/check.c - the invariants (see sim.h, and README.md for why each
 * is stated as it is).  Called on the simulator's one thread: from the
 * engine's callbacks (done, lost: the engine holds its lock for lost, so
 * nothing here calls the engine then), from simnet's watch hook, and after
 * each step.
 */
#include "tests/sim/sim.h"
#include "tests/sim/simfs.h"
#include "tests/sim/room.h"

#include "fs/node.h"
#include "fs/pending.h"		/* ZPEND_PATIENCE_MS */
#include "fs/signals.h"
#include "zk/engine.h"		/* zke_children_done: the listings grants follow */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct world *sim_world;
long sim_cohort_grants, sim_linger_grants, sim_data_sets, sim_reads, sim_reads_again;

void sim_failf(struct world *wd, const char *fmt, ...)
{
	va_list ap;

	if (wd->fail[0])
		return;
	va_start(ap, fmt);
	vsnprintf(wd->fail, sizeof(wd->fail), fmt, ap);
	va_end(ap);
	sn_trace(&wd->net, "        VIOLATION: %s", wd->fail);
}

/*
 * Whose entry @n is: the waiter that holds it, granted on it again by a
 * linger (its data, rewritten then, may not say so yet); else the one its
 * data names; else (a holder of fs/ wrote its own data there) the last
 * one granted on it.
 */
int sim_entry_owner(const struct szk_node *n)
{
	struct world *wd = sim_world;
	int id, last = -1;

	for (int i = 0; wd && wd->lingers && i < wd->ndriven; i++)
		if (!wd->driven[i].released && wd->driven[i].ndone == 1 &&
		    wd->driven[i].result == 0 && strcmp(wd->driven[i].path, n->path) == 0)
			return i;
	if (n->len > 4 && strncmp(n->data, "sim=", 4) == 0 &&
	    sscanf(n->data + 4, "%d", &id) == 1)
		return id;
	if (n->len > 5 && strncmp(n->data, "host=", 5) == 0) {	/* fs/'s lines */
		const char *p = memmem(n->data, (size_t)n->len, "\npid=", 5);

		if (p && sscanf(p + 5, "%d", &id) == 1 && id >= SIM_PID_BASE)
			return id - SIM_PID_BASE;
	}
	for (int i = 0; wd && n->owner != wd->foreign && i < wd->ndriven; i++) {
		const struct driven *d = &wd->driven[i];

		if (d->fd >= 0 && d->wversions && d->ndone == 1 && d->result == 0 &&
		    strcmp(d->path, n->path) == 0 &&
		    (last < 0 || d->granted_at > wd->driven[last].granted_at))
			last = i;
	}
	return last;
}

bool sim_dir_of(const char *path, const char *dir)
{
	size_t l = strlen(dir);

	return strncmp(path, dir, l) == 0 && path[l] == '/' &&
	       !strchr(path + l + 1, '/');
}

static struct driven *driven_of(struct world *wd, void *arg)
{
	intptr_t id = (intptr_t)arg;

	if (id < 0 || id >= wd->ndriven)
		abort();
	return &wd->driven[id];
}

/* Does @d believe it holds: its descriptor says so for a waiter of fs/
 * (simfs_believes()), the engine's callbacks for the driver's own. */
static bool believes(struct world *wd, const struct driven *d)
{
	if (d->ndone != 1 || d->result != 0 || d->released)
		return false;
	return d->fd >= 0 ? simfs_believes(wd, d) : !d->lost;
}

static unsigned mount_mark(struct world *wd, int mount)
{
	return wd->net.mounts[mount].silents + wd->net.mounts[mount].expiries;
}

void sim_limit_at(struct world *wd, int32_t version, unsigned limit)
{
	SIM_ROOM(wd->lhist, wd->nlhist, wd->lhcap, 8);
	wd->lhist[wd->nlhist++] = (struct lrule){ version, limit };
}

/* The limit d0's data version @version set (none before the first). */
static unsigned limit_at(const struct world *wd, int32_t version)
{
	unsigned limit = 0;

	for (int i = 0; i < wd->nlhist && wd->lhist[i].version <= version; i++)
		limit = wd->lhist[i].limit;
	return limit;
}

/*
 * A listing the engine decides from is read: from now on @m's grants in
 * that lock follow the limit it showed.  Other listings (a poke's, a
 * linger's child watch, a resolve) decide no grant.
 */
void sim_list_hook(void *ctx, struct sn_mount *m, const char *path,
		   const struct Stat *dir, void (*done)(void))
{
	struct world *wd = ctx;

	if (done != (void (*)(void))zke_children_done)
		return;
	for (int k = 0; k < SIM_DIRS; k++)
		if (strcmp(path, wd->dirs[k]) == 0)
			wd->rule[m->id][k] = k == 0 ? limit_at(wd, dir->version) : 0;
}

/*
 * Is @n an entry @d's own mount gave back (released, its delete not yet
 * done)?  A cohort hand-off grants the next waiter of that mount before the
 * delete (docs/DESIGN.md §12): the entry it passes over is its mount's.
 */
static bool given_back(struct world *wd, const struct driven *d, const struct szk_node *n)
{
	int id = sim_entry_owner(n);
	const struct driven *o = id >= 0 && id < wd->ndriven ? &wd->driven[id] : NULL;

	/* through fs/: given back as soon as its descriptor stands for it no
	 * more (a flock conversion or LOCK_UN, in the middle of which the
	 * hand-off may grant) */
	return o && o->mount == d->mount && !o->lost && o->result == 0 && o->ndone == 1 &&
	       (o->released || (o->fd >= 0 && !simfs_stands_for(wd, &wd->fds[o->fd], id)));
}

/*
 * FIFO, at the moment a grant is delivered, against the server's state,
 * under the rule @d's mount last listed (world.rule): no entry before
 * @d's (exclusive) or no exclusive entry before it (shared); in a
 * semaphore, fewer entries before it than the limit; entries a holder of
 * @d's mount gave back aside.  Entries only ever join behind
 * existing ones, so what a correct grant saw still holds when it is
 * delivered.
 */
static void check_fifo(struct world *wd, struct driven *d)
{
	struct szk *z = &wd->net.zk;
	struct zkl_info info;
	struct zkg_child c;
	unsigned before = 0, limit = wd->rule[d->mount][d->dir];
	bool cohort = false;

	zkl_info(d->w, &info, NULL);
	d->glimit = limit;
	if (!info.created) {
		sim_failf(wd, "fifo: w%d granted without an entry", d->id);
		return;
	}
	for (int i = 0; i < z->nnodes; i++) {
		const char *p = z->nodes[i].path;

		if (!sim_dir_of(p, wd->dirs[d->dir]) || !zkn_parse(strrchr(p, '/') + 1, &c))
			continue;
		if (zkn_seq_cmp(c.seq, info.seq) >= 0)
			continue;
		if (given_back(wd, d, &z->nodes[i])) {
			cohort = true;
			continue;
		}
		if (limit && ++before >= limit)
			sim_failf(wd, "fifo: w%d (seq %d) granted with %u entries before it, "
				  "limit %u", d->id, info.seq, before, limit);
		else if (!limit && (d->kind == ZKN_EXCLUSIVE || c.kind == ZKN_EXCLUSIVE))
			sim_failf(wd, "fifo: w%d (%s, seq %d) granted while %s (owner w%d) "
				  "is before it", d->id,
				  d->kind == ZKN_EXCLUSIVE ? "exclusive" : "shared",
				  info.seq, p, sim_entry_owner(&z->nodes[i]));
	}
	if (cohort) {
		sim_cohort_grants++;
		sn_trace(&wd->net, "        (w%d's grant is a cohort hand-off)", d->id);
	}
}

/*
 * Remember @d's entry.  A grant made without asking the server (a linger's,
 * a cohort's) may land on an entry another client had already deleted:
 * that is the lock broken, as if while held, and the loss follows.
 */
static void granted_on(struct world *wd, struct driven *d)
{
	struct zkl_info info;
	char *path = NULL;

	zkl_info(d->w, &info, &path);
	snprintf(d->path, sizeof(d->path), "%s", path ? path : "");
	free(path);
	for (int i = 0; i < wd->ngone; i++)
		if (strcmp(wd->gone[i], d->path) == 0)
			d->unlinked = true;
	if (info.grants) {
		sim_linger_grants++;
		sn_trace(&wd->net, "        (w%d's grant reuses a lingering entry)", d->id);
	}
	/* a grant without a round trip needs a session surely alive */
	if ((info.grants || d->w->handoff.cohort) && sim_was_doubtful(wd, d->mount))
		sim_failf(wd, "doubt: w%d granted by a %s while m%d was in doubt", d->id,
			  info.grants ? "lingering entry" : "cohort hand-off", d->mount);
}

void sim_done(struct zkl_waiter *w, int err, void *arg)
{
	struct world *wd = sim_world;
	struct driven *d = driven_of(wd, arg);

	if (w != d->w)
		sim_failf(wd, "done: w%d called with another waiter", d->id);
	sim_answered(wd, d, err);
}

/* Is mount @m's session in doubt, as its engine may know it: told so and
 * not yet out, or its connection down (zks_doubtful())? */
bool sim_was_doubtful(struct world *wd, int m)
{
	struct zkt_transport t = sn_transport(&wd->net.mounts[m]);

	return t.ops->doubtful(t.ctx);
}

void sim_doubted(struct zkl_waiter *w, void *arg)
{
	struct world *wd = sim_world;

	sn_trace(&wd->net, "        doubt: %s", zkl_doubt_locked(w) ? "in" : "out");
	simfs_doubted(wd, w, arg);
}

/* Is mount @m's session silent, as its engine may know it: told so, not
 * yet connected again, or quiet by its clock? */
bool sim_was_silent(struct world *wd, int m)
{
	struct zkt_transport t = sn_transport(&wd->net.mounts[m]);

	return wd->net.mounts[m].engine_silent || t.ops->quiet(t.ctx);
}

void sim_answered(struct world *wd, struct driven *d, int err)
{
	sn_trace(&wd->net, "        done w%d: %d (%s)", d->id, err,
		 err ? strerror(-err) : "granted");
	if (d->released)
		sim_failf(wd, "once: w%d answered after its release", d->id);
	if (++d->ndone > 1)
		sim_failf(wd, "once: w%d answered %d times (now %d, first %d)",
			  d->id, d->ndone, err, d->result);
	if (d->ndone > 1)
		return;
	d->result = err;
	switch (err) {
	case 0:
		d->granted_at = ++wd->events;
		d->mark = mount_mark(wd, d->mount);
		check_fifo(wd, d);
		granted_on(wd, d);
		break;
	case -EAGAIN:
		if (!(d->flags & ZKL_NONBLOCK))
			sim_failf(wd, "result: w%d EAGAIN without O_NONBLOCK", d->id);
		break;
	case -ETIMEDOUT:
		if (!(d->flags & ZKL_NONBLOCK) || !sim_was_silent(wd, d->mount))
			sim_failf(wd, "result: w%d ETIMEDOUT but %s", d->id,
				  !(d->flags & ZKL_NONBLOCK) ? "it was no try" :
				  "its mount was never silent");
		break;
	case -EINTR:
		if (!d->cancelled)
			sim_failf(wd, "result: w%d EINTR but never cancelled", d->id);
		break;
	case -EIO:
		if (!d->unlinked)
			sim_failf(wd, "result: w%d EIO but nobody deleted its entry", d->id);
		break;
	default:
		sim_failf(wd, "result: w%d answered %d", d->id, err);
	}
}

/* A loss must have a cause: its entry deleted, or its session silent or expired. */
void sim_lost(struct zkl_waiter *w, void *arg)
{
	struct world *wd = sim_world;

	if (!simfs_lost(wd, w, arg))
		sim_lost_driven(wd, driven_of(wd, arg));
}

void sim_lost_driven(struct world *wd, struct driven *d)
{
	sn_trace(&wd->net, "        lost w%d", d->id);
	if (d->ndone != 1 || d->result != 0)
		sim_failf(wd, "lost: w%d lost but never granted", d->id);
	else if (d->lost)
		sim_failf(wd, "lost: w%d lost twice", d->id);
	else if (d->released)
		sim_failf(wd, "lost: w%d lost after its release", d->id);
	else if (!d->unlinked && mount_mark(wd, d->mount) == d->mark)
		sim_failf(wd, "lost: w%d lost with no cause (no unlink, silence, expiry)",
			  d->id);
	d->lost = true;
	d->lost_at = ++wd->events;
}

/* The entry @d has at the server now, or NULL. */
static const char *entry_of(struct world *wd, const struct driven *d)
{
	struct szk *z = &wd->net.zk;

	for (int i = 0; i < z->nnodes; i++)
		if (sim_entry_owner(&z->nodes[i]) == d->id &&
		    sim_dir_of(z->nodes[i].path, wd->dirs[d->dir]))
			return z->nodes[i].path;
	return NULL;
}

/*
 * Herd: a delete wakes at most one exclusive waiter that still waits with
 * its entry in place (README.md says why those others are left out).
 */
void sim_watch_hook(void *ctx, struct sn_mount *m, int type, const char *path,
		    void *wctx)
{
	struct world *wd = ctx;
	struct driven *d = NULL;
	struct herd *h = NULL;
	char *own = NULL;
	struct zkl_info info;

	(void)m;
	if (type != ZOO_DELETED_EVENT)
		return;
	for (int i = 0; i < wd->ndriven && !d; i++)
		if (wd->driven[i].w == wctx && !wd->driven[i].released && wd->driven[i].ndone == 0)
			d = &wd->driven[i];
	if (!d || d->kind != ZKN_EXCLUSIVE || !entry_of(wd, d))
		return;
	zkl_info(d->w, &info, &own);
	if (own && strcmp(own, path) == 0) {
		free(own);
		return;			/* the watch on its own entry */
	}
	free(own);
	for (int i = 0; i < wd->nherd && !h; i++)
		if (strcmp(wd->herd[i].path, path) == 0)
			h = &wd->herd[i];
	if (!h) {
		SIM_ROOM(wd->herd, wd->nherd, wd->hcap, 16);
		h = &wd->herd[wd->nherd++];
		h->path = strdup(path);
		h->count = 0;
	}
	if (++h->count > 1)
		sim_failf(wd, "herd: the delete of %s woke %d waiting exclusive "
			  "waiters (now w%d)", path, h->count, d->id);
}

/* A holder found by an exclusion check: the waiter and its entry's number. */
struct held {
	int id;
	int32_t seq;
};

/*
 * Do the holders @h (@n of them, in lock @k) hold together only as their
 * grants allowed?  Taken in queue order, each under the rule its grant
 * followed (glimit): fewer before it than its limit, or in a plain lock,
 * none before an exclusive one and no exclusive one before a shared one.
 * Every grant's FIFO check saw the entries below it, which existed then;
 * a limit changed later does not undo a grant made under it.
 */
static bool holders_ok(struct world *wd, int k, struct held *h, int n, const char *what)
{
	for (int i = 1; i < n; i++)		/* few: insertion sort */
		for (int j = i; j > 0 && zkn_seq_cmp(h[j].seq, h[j - 1].seq) < 0; j--) {
			struct held t = h[j];

			h[j] = h[j - 1];
			h[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		const struct driven *d = &wd->driven[h[i].id];

		for (int j = 0; j < i; j++) {
			const struct driven *b = &wd->driven[h[j].id];

			if (d->glimit ? (unsigned)i < d->glimit :
			    d->kind == ZKN_SHARED && b->kind == ZKN_SHARED)
				continue;
			if (d->glimit)
				sim_failf(wd, "%s: w%d holds %s with %d holders before it "
					  "(w%d first), its limit %u", what, h[i].id,
					  wd->dirs[k], i, h[0].id, d->glimit);
			else
				sim_failf(wd, "%s: w%d and w%d both hold %s, one exclusive "
					  "(w%d's grant followed a plain lock)", what, h[j].id,
					  h[i].id, wd->dirs[k], h[i].id);
			return false;
		}
	}
	return true;
}

/* The sequence number of the entry @path, or false. */
static bool seq_of(const char *path, int32_t *seq)
{
	const char *base = strrchr(path, '/');
	struct zkg_child c;

	if (!base || !zkn_parse(base + 1, &c))
		return false;
	*seq = c.seq;
	return true;
}

/*
 * Exclusion over beliefs, whatever the server holds: the waiters that
 * believe they hold one lock hold together only as their grants allowed
 * (holders_ok()), unless one's entry was deleted by another client (that
 * is breaking a lock: its holder learns it from its watch, and a grant
 * behind it may come first).  A session the server expires was silent
 * first, and silence tells every holder it is lost, so an expiry never
 * leaves a believer behind.
 */
static void check_beliefs(struct world *wd)
{
	struct held *h = calloc((size_t)wd->ndriven + 1, sizeof(*h));

	if (!h)
		abort();
	for (int k = 0; k < SIM_DIRS; k++) {
		int n = 0;

		for (int i = 0; i < wd->ndriven; i++) {
			struct driven *d = &wd->driven[i];

			if (d->dir == k && !d->unlinked && !d->asleep && believes(wd, d) &&
			    seq_of(d->path, &h[n].seq))
				h[n++].id = i;
		}
		if (!holders_ok(wd, k, h, n, "belief"))
			break;
	}
	free(h);
}

/*
 * Exclusion over entries: in one directory, the existing entries whose
 * waiters believe they hold are held together only as their grants
 * allowed (holders_ok()).  And no waiter has two entries at once (the
 * second blocks the queue until the session ends).
 */
void sim_check_step(struct world *wd)
{
	struct szk *z = &wd->net.zk;
	struct held *h;
	int *owner;

	check_beliefs(wd);
	for (int m = 0; m < SIM_MOUNTS && !wd->fail[0]; m++) {
		const char *why = zkl_engine_check(wd->eng[m]);

		if (why)
			sim_failf(wd, "fields: m%d: %s", m, why);
	}
	h = calloc((size_t)z->nnodes + 1, sizeof(*h));
	owner = calloc((size_t)z->nnodes + 1, sizeof(*owner));
	if (!h || !owner)
		abort();
	for (int i = 0; i < z->nnodes; i++)	/* once a step: it reads each data */
		owner[i] = sim_entry_owner(&z->nodes[i]);
	for (int k = 0; k < SIM_DIRS && !wd->fail[0]; k++) {
		int n = 0;

		for (int i = 0; i < z->nnodes; i++) {
			int id = owner[i];

			if (id < 0 || !sim_dir_of(z->nodes[i].path, wd->dirs[k]))
				continue;
			for (int j = i + 1; j < z->nnodes; j++)
				if (owner[j] == id) {
					sim_failf(wd, "duplicate: w%d has two entries, %s and %s",
						  id, z->nodes[i].path, z->nodes[j].path);
					goto done;
				}
			if (believes(wd, &wd->driven[id]) && !wd->driven[id].asleep &&
			    seq_of(z->nodes[i].path, &h[n].seq))
				h[n++].id = id;
		}
		holders_ok(wd, k, h, n, "exclusion");
	}
done:
	free(owner);
	free(h);
}

/*
 * Release order: once zkl_release() returns, the delete of the entry the
 * engine knew is queued on the session (or done), so that whatever the
 * mount sends next sees it gone.
 */
void sim_check_release(struct world *wd, struct driven *d, const char *path)
{
	struct sn_mount *m = &wd->net.mounts[d->mount];

	if (!path || !szk_find(&wd->net.zk, path) || m->cur->state == SN_EXPIRED ||
	    zkl_cached(wd->eng[d->mount], wd->dirs[d->dir], path))
		return;
	if (!sn_pending_delete(m, path))
		sim_failf(wd, "release order: w%d released, but no delete of %s "
			  "is queued on m%d", d->id, path, d->mount);
}

/*
 * After the end phase (every session healthy, everything released, the
 * foreign client gone, all queues drained): every waiter was answered
 * exactly once, and no entry is left.
 */
void sim_check_end(struct world *wd)
{
	struct szk *z = &wd->net.zk;

	for (int i = 0; i < wd->ndriven; i++)
		if (wd->driven[i].ndone != 1)
			sim_failf(wd, "once: w%d (m%d, %s) answered %d times at the end",
				  i, wd->driven[i].mount, wd->dirs[wd->driven[i].dir],
				  wd->driven[i].ndone);
	for (int i = 0; i < z->nnodes; i++)
		for (int k = 0; k < SIM_DIRS; k++)
			if (sim_dir_of(z->nodes[i].path, wd->dirs[k]))
				sim_failf(wd, "orphan: %s (w%d) is left after the end",
					  z->nodes[i].path, sim_entry_owner(&z->nodes[i]));
}

/* the holders' data ------------------------------------------------------------ */

/*
 * The waiter of fs/ on mount @m granted last on the entry @path: the one
 * whose data a set of @path on that mount carries (fs/wbuf.c sends only
 * while its node holds the entry, and a give-back sends before its
 * delete).  NULL if none.
 */
static struct driven *data_holder(struct world *wd, int m, const char *path)
{
	struct driven *h = NULL;

	for (int i = 0; i < wd->ndriven; i++) {
		struct driven *d = &wd->driven[i];

		if (d->fd >= 0 && d->mount == m && d->ndone == 1 && d->result == 0 &&
		    strcmp(d->path, path) == 0 && (!h || d->granted_at > h->granted_at))
			h = d;
	}
	return h;
}

/* Does the server's @n hold @d's last version? */
static bool holds_last(const struct szk_node *n, const struct driven *d)
{
	return n->len == d->wlen && memcmp(n->data, d->wbuf, (size_t)d->wlen) == 0;
}

/*
 * A set of a holder's data is made: one setData of the latest bytes its
 * holder wrote (coalesced: what it wrote since is sent next).
 */
void sim_data_sent(struct world *wd, int m, const char *path, const char *data, int len,
		   uint64_t id)
{
	struct driven *h = data_holder(wd, m, path);

	if (!h) {
		sim_failf(wd, "data: m%d sets %s, which no holder of fs/ on it was granted",
			  m, path);
		return;
	}
	sn_trace(&wd->net, "        (#%llu carries w%d's version %d)", (unsigned long long)id,
		 h->id, h->wversions);
	if (!h->wversions || len != h->wlen || memcmp(data, h->wbuf, (size_t)len) != 0) {
		sim_failf(wd, "data: m%d's set of %s carries %d bytes that are not the last "
			  "version w%d wrote (%d of %d bytes)", m, path, len, h->id,
			  h->wversions, h->wlen);
		return;
	}
	SIM_ROOM(wd->wsets, wd->nwsets, wd->wscap, 32);
	wd->wsets[wd->nwsets++] = (struct wset){ id, h->id, h->wversions };
	sim_data_sets++;
}

static const struct wset *wset_of(const struct world *wd, uint64_t id)
{
	for (int i = wd->nwsets - 1; i >= 0; i--)
		if (wd->wsets[i].id == id)
			return &wd->wsets[i];
	return NULL;
}

/*
 * A set applied: a holder's versions reach the server in the order it
 * wrote them (never an older one over a newer one), and never after its
 * mount's delete of the entry.  Any other set of the entry (a lingering
 * entry's data rewritten by the engine) leaves the holders' checks aside.
 */
static void set_applied(struct world *wd, int m, uint64_t id, const char *path, int rc)
{
	const struct wset *ws = wset_of(wd, id);
	struct driven *h;

	if (!ws || rc != ZOK) {
		for (int i = 0; !ws && rc == ZOK && i < wd->ndriven; i++)
			if (wd->driven[i].wversions && strcmp(wd->driven[i].path, path) == 0)
				wd->driven[i].wother = true;
		if (ws && wd->driven[ws->driven].wdeleted)
			sim_failf(wd, "data: w%d's set of %s (version %d) reached the server "
				  "after m%d's delete of the entry", ws->driven, path,
				  ws->version, m);
		return;
	}
	h = &wd->driven[ws->driven];
	if (ws->version < h->wapplied)
		sim_failf(wd, "data: w%d's version %d of %s applied after its version %d",
			  h->id, ws->version, path, h->wapplied);
	h->wapplied = ws->version;
	for (int i = 0; i < wd->ndriven; i++)	/* an earlier holder's data is gone */
		if (&wd->driven[i] != h && wd->driven[i].wversions &&
		    strcmp(wd->driven[i].path, path) == 0)
			wd->driven[i].wother = true;
}

/*
 * The give-back's delete of an entry is about to be applied: if the lock
 * held until then (a lost lock's data goes nowhere) and the mount kept its
 * connection since its holder's last write, the entry holds that write (a
 * read by any client until now sees it).
 */
static void deleting(struct world *wd, int m, const char *path)
{
	const struct szk_node *n = szk_find(&wd->net.zk, path);
	struct driven *h = data_holder(wd, m, path);

	if (!n || !h || !h->released || h->lost || !h->wversions || h->wother ||
	    wd->net.mounts[m].drops != h->wdrops)
		return;
	if (!holds_last(n, h))
		sim_failf(wd, "data: %s deleted after w%d's give-back without its last write "
			  "(%d bytes; version %d of %d applied)", path, h->id, n->len,
			  h->wapplied, h->wversions);
}

void sim_applied(void *ctx, struct sn_mount *m, uint64_t id, enum sn_applied what,
		 const char *path, int rc)
{
	struct world *wd = ctx;

	switch (what) {
	case SN_SET:
		set_applied(wd, m->id, id, path, rc);
		break;
	case SN_DELETING:
		deleting(wd, m->id, path);
		break;
	case SN_DELETED:
		for (int i = 0; rc == ZOK && i < wd->ndriven; i++)
			if (wd->driven[i].fd >= 0 && wd->driven[i].mount == m->id &&
			    strcmp(wd->driven[i].path, path) == 0)
				wd->driven[i].wdeleted = true;
		break;
	}
}

/*
 * An FSYNC answered 0: the server holds the version its holder had
 * written when it asked, or a later one, unless someone else set the
 * entry since (README.md, invariant 10).
 */
void sim_fsync_done(struct world *wd, int fd, int holder, int version)
{
	const struct driven *h = holder >= 0 ? &wd->driven[holder] : NULL;

	if (!h || !version || h->wother)
		return;
	if (h->wapplied < version)
		sim_failf(wd, "fsync: fd%d answered 0, but the server holds w%d's version %d, "
			  "not %d", fd, h->id, h->wapplied, version);
}

/* an entry's READ: one zop (invariant 12) -------------------------------------- */

/* Mount @m's connection losses and expiries so far. */
static unsigned losses(struct world *wd, int m)
{
	return wd->net.mounts[m].drops + wd->net.mounts[m].expiries;
}

/* Is mount @m's session quiet now (the transport's quiet())? */
static bool quiet(struct world *wd, int m)
{
	struct zkt_transport t = sn_transport(&wd->net.mounts[m]);

	return t.ops->quiet(t.ctx);
}

/* Add @path's value now (@n's data, or gone) to what READ @rd may read. */
static void read_may_see(struct szop *rd, const struct szk_node *n)
{
	struct sval *v;

	SIM_ROOM(rd->vals, rd->nvals, rd->valcap, 4);
	v = &rd->vals[rd->nvals++];
	memset(v, 0, sizeof(*v));
	v->gone = !n;
	if (n) {
		v->len = n->len;
		v->data = malloc((size_t)n->len + 1);
		if (!v->data)
			abort();
		memcpy(v->data, n->data, (size_t)n->len);
	}
}

void sim_zop_asked(struct world *wd, int k)
{
	struct szop *rd = &wd->zops[k];

	rd->losses = losses(wd, rd->mount);
	if (rd->mknod)
		return;
	sim_reads++;
	read_may_see(rd, szk_find(&wd->net.zk, rd->path));
}

void sim_zk_changed(void *ctx, const char *path, const struct szk_node *n)
{
	struct world *wd = ctx;

	for (int k = 0; k < wd->nzops; k++)
		if (!wd->zops[k].mknod && !wd->zops[k].replies &&
		    strcmp(wd->zops[k].path, path) == 0)
			read_may_see(&wd->zops[k], n);
}

/* Is @buf (@len bytes) what READ @rd answers of @data (@dlen bytes)? */
static bool read_of(const struct szop *rd, const char *data, int dlen, const char *buf,
		    size_t len)
{
	size_t have = rd->off < dlen ? (size_t)(dlen - rd->off) : 0;

	if (have > rd->size)
		have = rd->size;
	return len == have && (!len || memcmp(buf, data + rd->off, len) == 0);
}

/* May READ @rd answer @buf (@len bytes)?  A value its entry had on the
 * server while it waited, or what a holder of its mount wrote there and
 * ZooKeeper has not answered for (fs/wbuf.c: read back at once). */
static bool read_legit(struct world *wd, const struct szop *rd, const char *buf,
		       size_t len)
{
	for (int i = 0; i < rd->nvals; i++)
		if (!rd->vals[i].gone && read_of(rd, rd->vals[i].data, rd->vals[i].len, buf, len))
			return true;
	for (int i = 0; i < wd->ndriven; i++) {
		const struct driven *d = &wd->driven[i];

		if (d->fd >= 0 && d->mount == rd->mount && d->wversions &&
		    strcmp(d->path, rd->path) == 0 && read_of(rd, d->wbuf, d->wlen, buf, len))
			return true;
	}
	return false;
}

/* Zop #@k is answered @err (or @len bytes): its first answer, or a
 * violation.  Return: whether it is the first. */
static bool first_answer(struct world *wd, int k, int err, size_t len)
{
	struct szop *rd = &wd->zops[k];
	const char *what = rd->mknod ? "mknod" : "read";

	sn_trace(&wd->net, "        fs: %s r%d answered %d (%zu bytes)", what, k, -err, len);
	if (++rd->replies > 1) {
		sim_failf(wd, "%s: r%d of %s on m%d answered %d times (now %d)", what, k,
			  rd->path, rd->mount, rd->replies, -err);
		return false;
	}
	rd->result = err;
	return true;
}

/* May @rd be answered @err (EINTR, ETIMEDOUT) by fs/pending.c (or by
 * fs/zop.c's zop_silent()) now? */
static bool pend_answer_ok(struct world *wd, const struct szop *rd, int err)
{
	uint64_t now = wd->net.now;
	bool due = now >= rd->due;

	if (err == ETIMEDOUT)
		return due || quiet(wd, rd->mount);
	return rd->interrupted && (rd->sig == ZKLFS_SIG_ENDS ||
				   (rd->sig == ZKLFS_SIG_CAUGHT &&
				    (now >= rd->since + ZPEND_PATIENCE_MS || due ||
				     quiet(wd, rd->mount))));
}

/*
 * A READ answered (README.md, invariant 12): once; EINTR only for a
 * signal (one it catches only past its patience, its deadline or its
 * session's silence); ETIMEDOUT only at its deadline or while its
 * session is quiet; a connection loss or an expiry (EIO, ENOTCONN) only
 * past its deadline: before, the zop is sent again; ENOENT only if the
 * entry was gone at some moment since it was asked; bytes only of a
 * value it had meanwhile (read_legit()).
 */
void sim_read_answered(struct world *wd, int k, int err, const char *buf, size_t len)
{
	struct szop *rd = &wd->zops[k];
	uint64_t now = wd->net.now;
	bool due = now >= rd->due, gone = false, ok;

	if (!first_answer(wd, k, err, len))
		return;
	rd->len = len;
	rd->text = malloc(len + 1);
	if (!rd->text)
		abort();
	if (len)
		memcpy(rd->text, buf, len);
	rd->text[len] = '\0';
	for (int i = 0; i < rd->nvals; i++)
		gone |= rd->vals[i].gone;
	if ((!err || err == ENOENT) && losses(wd, rd->mount) != rd->losses)
		sim_reads_again++;
	switch (err) {
	case 0:
		ok = read_legit(wd, rd, buf, len);
		break;
	case ENOENT:
		ok = gone;
		break;
	case EINTR:
	case ETIMEDOUT:
		ok = pend_answer_ok(wd, rd, err);
		break;
	case EIO:
	case ENOTCONN:
		if (!due)
			sim_failf(wd, "read: r%d of %s on m%d answered %d (a connection loss or "
				  "an expiry) at %llu, before its deadline %llu: it is to be sent "
				  "again", k, rd->path, rd->mount, -err, (unsigned long long)now,
				  (unsigned long long)rd->due);
		return;
	default:
		ok = false;
	}
	if (!ok)
		sim_failf(wd, "read: r%d of %s on m%d answered %d (%zu bytes: \"%.*s\") at %llu "
			  "(asked at %llu, due at %llu%s%s), which the server never held meanwhile "
			  "nor it may answer", k, rd->path, rd->mount, -err, len,
			  (int)(len < 32 ? len : 32), buf ? buf : "", (unsigned long long)now,
			  (unsigned long long)rd->since, (unsigned long long)rd->due,
			  rd->interrupted ? ", interrupted" : "", gone ? ", gone meanwhile" : "");
}

/* After the end phase: every READ answered, once. */
void sim_check_zops(struct world *wd)
{
	for (int k = 0; k < wd->nzops && !wd->fail[0]; k++)
		if (wd->zops[k].replies != 1)
			sim_failf(wd, "%s: r%d of %s on m%d answered %d times at the end",
				  wd->zops[k].mknod ? "mknod" : "read", k, wd->zops[k].path,
				  wd->zops[k].mount, wd->zops[k].replies);
}

/* A MKNOD's create is sent: once at most, whatever befalls it (fs/zop.h:
 * a write is never sent again, its outcome may be unknown). */
void sim_mknod_sent(struct world *wd, int k)
{
	struct szop *rd = &wd->zops[k];

	if (++rd->creates > 1)
		sim_failf(wd, "mknod: r%d's create of %s on m%d sent %d times", k, rd->path,
			  rd->mount, rd->creates);
}

/*
 * A lock file's MKNOD answered (invariant 12): once; with the lock file
 * (@n) only once the server has it; a connection loss or an expiry (EIO,
 * ENOTCONN) at any time, its create's outcome unknown; ETIMEDOUT and
 * EINTR as a READ; nothing else (a new name: nobody made it before).
 */
void sim_mknod_answered(struct world *wd, int k, int err, struct node *n)
{
	struct szop *rd = &wd->zops[k];
	bool ok;

	if (!first_answer(wd, k, err, 0))
		return;
	rd->node = n;
	switch (err) {
	case 0:
		ok = n && n->type == NODE_LOCKFILE && szk_find(&wd->net.zk, rd->path);
		break;
	case EIO:
	case ENOTCONN:
		ok = true;
		break;
	case EINTR:
	case ETIMEDOUT:
		ok = pend_answer_ok(wd, rd, err);
		break;
	default:
		ok = false;
	}
	if (!ok)
		sim_failf(wd, "mknod: r%d of %s on m%d answered %d at %llu (asked at %llu, due at "
			  "%llu; the server %s it)", k, rd->path, rd->mount, -err,
			  (unsigned long long)wd->net.now, (unsigned long long)rd->since,
			  (unsigned long long)rd->due,
			  szk_find(&wd->net.zk, rd->path) ? "has" : "has not");
}
