/*
 * tests/sim/simobs.c - the observers of each simulated mount
 * (fs/observe.c): LOOKUP, OPEN, READ, POLL and RELEASE of LOCKDIR/.holders
 * and .state as the kernel makes them, through the reply seam (simfs.c),
 * and another client publishing a lock's state.  What they read is
 * checked against the server once the world is quiet: an observer's text
 * converges to the server's holders (or state), and a woken poller finds
 * a change.  One thread.
 */
#include "tests/sim/simfs_int.h"
#include "tests/sim/room.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/observe.h"
#include "zk/escape.h"
#include "zk/grant.h"
#include "zk/settings.h"
#include "zk/statedata.h"

#define SIM_OBS_OPEN	3	/* observer descriptors open at most */

static const char *handle_name(const struct sobs *o)
{
	return o->state ? ZKLFS_STATE_NAME : ZKLFS_HOLDERS_NAME;
}

/* A request of the kernel's to observer descriptor @obs. */
static struct fuse_req *obs_req(struct world *wd, int obs)
{
	struct fuse_req *r = simfs_new_req(wd, -1, -1, false);

	r->op = SR_OBS;
	r->obs = obs;
	wd->asker = r;
	return r;
}

/* @r was answered once, at once; with @err if @err >= 0. */
static bool at_once(struct world *wd, const struct fuse_req *r, const char *what, int err)
{
	if (r->replies != 1 || (err >= 0 && r->result != err))
		sim_failf(wd, "observe: o%d's %s answered %d times, with %d (not %d at once)",
			  r->obs, what, r->replies, r->result, err);
	return !wd->fail[0];
}

void simobs_answered(struct world *wd, struct fuse_req *r, const struct fuse_file_info *fi,
		     int err)
{
	struct sobs *o = &wd->obs[r->obs];

	sn_trace(&wd->net, "        fs: o%d's request answered %s%d", r->obs,
		 fi ? "with its descriptor " : "", -err);
	if (++r->replies > 1) {
		sim_failf(wd, "observe: a request of o%d answered %d times", r->obs,
			  r->replies);
		return;
	}
	r->result = err;
	if (fi) {			/* its OPEN: a descriptor from now on */
		o->fi = *fi;
		o->opened = true;
	} else if (err && !o->opened && !o->closed) {
		o->closed = true;	/* an OPEN refused: no descriptor */
		if (err != ENOMEM)
			sim_failf(wd, "observe: o%d's OPEN answered %d", r->obs, -err);
	}
}

int simobs_open(struct world *wd, int m, int dir, bool state)
{
	struct zklfs *fs = &wd->fs[m]->fs;
	struct fuse_file_info fi = { .flags = O_RDONLY };
	struct fuse_req *rl, *ro;
	int k = wd->nobs;
	struct sobs *o;

	SIM_ROOM(wd->obs, wd->nobs, wd->obscap, 8);
	o = &wd->obs[wd->nobs++];
	memset(o, 0, sizeof(*o));
	o->mount = m;
	o->dir = dir;
	o->state = state;
	sn_trace(&wd->net, "  fs: LOOKUP + OPEN o%d of %s/%s on m%d", k, wd->dirs[dir],
		 handle_name(o), m);
	simfs_fuse_thread(wd, true);
	zkmx_lock(&fs->lock);
	o->lock = node_lookup_locked(fs, wd->dirs[dir], NODE_DIR);
	zkmx_unlock(&fs->lock);
	if (!o->lock)
		abort();
	rl = obs_req(wd, k);
	obs_lookup(rl, o->lock, handle_name(o));
	o->n = rl->node;
	if (!at_once(wd, rl, "LOOKUP", -1) || !o->n || o->n->type != NODE_HOLDERS) {
		sim_failf(wd, "observe: o%d's LOOKUP found no handle", k);
		simfs_fuse_thread(wd, false);
		return k;
	}
	ro = obs_req(wd, k);
	obs_open(ro, o->n, &fi);	/* answered once it has a text */
	simfs_fuse_thread(wd, false);
	return k;
}

/* READ of @o from offset 0: its text, in *@len bytes (NULL if refused). */
static const char *obs_text(struct world *wd, int k, size_t *len)
{
	struct fuse_req *r = obs_req(wd, k);

	simfs_fuse_thread(wd, true);
	obs_read(r, 1 << 16, 0, &wd->obs[k].fi);
	simfs_fuse_thread(wd, false);
	if (!at_once(wd, r, "READ", 0))
		return NULL;
	*len = r->size;
	sn_trace(&wd->net, "        (o%d reads %zu bytes)", k, r->size);
	return r->text;
}

bool simobs_read(struct world *wd, int k, char *buf, size_t size)
{
	const char *text;
	size_t len;

	buf[0] = '\0';
	if (!wd->obs[k].opened || wd->obs[k].closed || !(text = obs_text(wd, k, &len)))
		return false;
	snprintf(buf, size, "%.*s", (int)len, text);
	return true;
}

int simobs_wakes(const struct world *wd, int k)
{
	return wd->obs[k].wakes;
}

/* POLL of @o: at once, and a poller kept if nothing changed since its
 * last READ at offset 0. */
void simobs_poll(struct world *wd, int k)
{
	struct fuse_req *r = obs_req(wd, k);
	struct fuse_pollhandle *ph = malloc(sizeof(*ph));

	if (!ph)
		abort();
	ph->fd = -1;
	ph->obs = k + 1;
	sn_trace(&wd->net, "  fs: POLL of o%d", k);
	simfs_fuse_thread(wd, true);
	obs_poll(r, &wd->obs[k].fi, ph);
	simfs_fuse_thread(wd, false);
	if (at_once(wd, r, "POLL", -1) && r->revents && !(r->revents & POLLPRI))
		sim_failf(wd, "observe: o%d's POLL answered %#x", k, r->revents);
}

/* A woken poller finds the change that woke it. */
void simobs_woken(struct world *wd, int k)
{
	struct fuse_req *r = obs_req(wd, k);

	wd->obs[k].wakes++;
	obs_poll(r, &wd->obs[k].fi, NULL);
	sn_trace(&wd->net, "        fs: o%d's poller woken: %#x", k, r->revents);
	if (r->replies != 1 || !(r->revents & (POLLIN | POLLPRI)))
		sim_failf(wd, "observe: o%d's poller woken with nothing to report (%#x)", k,
			  r->revents);
}

/* RELEASE of @o, and the kernel forgets its lookups. */
static void obs_do_release(struct world *wd, int k)
{
	struct sobs *o = &wd->obs[k];
	struct zklfs *fs = &wd->fs[o->mount]->fs;
	struct fuse_req *r = obs_req(wd, k);

	sn_trace(&wd->net, "  fs: RELEASE of o%d", k);
	o->closed = true;
	simfs_fuse_thread(wd, true);
	obs_release(r, &o->fi);
	simfs_fuse_thread(wd, false);
	at_once(wd, r, "RELEASE", 0);
	node_forget(fs, o->n, 1);
	node_forget(fs, o->lock, 1);
}

/* Another client (zklock --set on another host) publishes @state (""
 * takes it out) as lock @dir's: its state line replaced, its other lines
 * (a limit) kept. */
void simobs_publish(struct world *wd, int dir, const char *state)
{
	struct szk_node *n = szk_find(&wd->net.zk, wd->dirs[dir]);
	char out[256];
	ssize_t now = zksd_edit(n->data, (size_t)n->len, state, strlen(state), out,
				sizeof(out));

	if (now < 0)
		abort();
	sn_trace(&wd->net, "  another client publishes \"%s\" as the state of %s", state,
		 wd->dirs[dir]);
	szk_set(&wd->net.zk, wd->dirs[dir], out, (int)now, -1);
}

/* An observer descriptor that is open, at random: its index, or -1. */
static int pick_open(struct world *wd)
{
	int n = 0, k;

	for (int i = 0; i < wd->nobs; i++)
		n += wd->obs[i].opened && !wd->obs[i].closed;
	if (!n)
		return -1;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (int i = 0; i < wd->nobs; i++)
		if (wd->obs[i].opened && !wd->obs[i].closed && k-- == 0)
			return i;
	return -1;
}

/*
 * An observer: a LOOKUP and OPEN of a lock's .holders (or, one time in
 * three, .state) on a mount that is not a lockfiles one; or a READ from
 * offset 0, a POLL or a RELEASE of an open descriptor; or, one time in
 * six, another client publishes a lock's state.
 */
bool act_observe(struct world *wd)
{
	int open = 0, k, m;
	uint32_t what = sim_rng_below(&wd->rng, 6);

	if (what == 0) {
		char state[16] = "";

		if (!sim_rng_chance(&wd->rng, 1, 4))
			snprintf(state, sizeof(state), "s%u",
				 (unsigned)sim_rng_below(&wd->rng, 1000));
		simobs_publish(wd, (int)sim_rng_below(&wd->rng, SIM_DIRS), state);
		return true;
	}
	for (int i = 0; i < wd->nobs; i++)
		open += !wd->obs[i].closed;
	k = pick_open(wd);
	if (what == 1 || k < 0) {
		if (open >= SIM_OBS_OPEN)
			return false;
		m = (int)sim_rng_below(&wd->rng, SIM_MOUNTS);
		if (m == wd->lockfiles)
			m = (m + 1) % SIM_MOUNTS;
		simobs_open(wd, m, (int)sim_rng_below(&wd->rng, SIM_DIRS),
			    sim_rng_chance(&wd->rng, 1, 3));
		return true;
	}
	if (what <= 3) {
		size_t len;

		sn_trace(&wd->net, "  fs: READ of o%d", k);
		obs_text(wd, k, &len);
	} else if (what == 4) {
		simobs_poll(wd, k);
	} else {
		obs_do_release(wd, k);
	}
	return true;
}

/*
 * What .holders must read for lock @dir: a line per holder of the
 * server's queue (under the limit its data holds), each naming its entry
 * and its kind.  Does @text (@len bytes) say so, in any order?
 */
static bool holders_match(struct world *wd, int dir, const char *text, size_t len)
{
	struct szk_node *lock = szk_find(&wd->net.zk, wd->dirs[dir]);
	unsigned limit = lock->len ? zkset_parse(lock->data, (size_t)lock->len) : 0;
	char *all = malloc(len + 1);
	const struct zkg_child **h;
	struct zkg_child *kids;
	struct String_vector sv;
	size_t n = 0, nh, lines = 0;
	bool ok = true;

	if (szk_children(&wd->net.zk, wd->dirs[dir], &sv) != ZOK || !all)
		abort();
	kids = zkg_parse_children(sv.data, sv.count, &n);
	h = calloc(n + 1, sizeof(*h));
	if (!kids || !h)
		abort();
	nh = limit ? zkg_holders_limit(kids, n, limit, h, n) : zkg_holders(kids, n, h, n);
	all[0] = '\n';			/* each line after a newline */
	memcpy(all + 1, text, len);
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	for (size_t i = 0; ok && i < nh; i++) {
		char name[1024], line[1100];

		zkesc(name, sizeof(name), h[i]->name, strlen(h[i]->name));
		snprintf(line, sizeof(line), "\n%s\t%s\t", name,
			 h[i]->kind == ZKN_SHARED ? "shared" : "exclusive");
		ok = memmem(all, len + 1, line, strlen(line)) != NULL;
	}
	free(all);
	free(h);
	free(kids);
	szk_free_strings(&sv);
	return ok && lines == nh;
}

/*
 * The world is quiet (every session healed, every queue drained): each
 * open descriptor reads what the server holds now.  .state: the state
 * the lock's data holds (none if garbled).  .holders: the server's
 * holders, except of a semaphore whose limit changed (its observer lists
 * again only when the queue changes: README.md, invariant 11).
 */
void simobs_check(struct world *wd)
{
	for (int k = 0; k < wd->nobs && !wd->fail[0]; k++) {
		const struct sobs *o = &wd->obs[k];
		struct szk_node *lock = szk_find(&wd->net.zk, wd->dirs[o->dir]);
		const char *text;
		size_t len;

		if (!o->opened || o->closed)
			continue;
		sn_trace(&wd->net, "  fs: READ of o%d, the world quiet", k);
		text = obs_text(wd, k, &len);
		if (!text)
			return;
		if (o->state) {
			char want[256];
			ssize_t n = zksd_read(lock->data, (size_t)lock->len, want, sizeof(want));

			if (n < 0)
				n = 0;
			if ((size_t)n != len || memcmp(want, text, len) != 0)
				sim_failf(wd, "observe: o%d reads %zu bytes of %s's state, the server "
					  "holds %zd", k, len, wd->dirs[o->dir], n);
		} else if (!(wd->semaphore && o->dir == 0) &&
			   !holders_match(wd, o->dir, text, len)) {
			sim_failf(wd, "observe: o%d's %s of %s is not the server's holders "
				  "(%zu bytes: %.*s)", k, handle_name(o), wd->dirs[o->dir], len,
				  (int)len, text);
		}
	}
}

void simobs_end(struct world *wd)
{
	for (int k = 0; k < wd->nobs; k++)
		if (wd->obs[k].opened && !wd->obs[k].closed)
			obs_do_release(wd, k);
}

void simobs_check_end(struct world *wd)
{
	for (int i = 0; i < wd->nreq; i++)
		if (wd->reqs[i]->op == SR_OBS && wd->reqs[i]->replies != 1)
			sim_failf(wd, "observe: a request of o%d answered %d times at the end",
				  wd->reqs[i]->obs, wd->reqs[i]->replies);
}
