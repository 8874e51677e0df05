/*
 * tests/sim/simfs.c - the FUSE side under the simulator: each mount's
 * lock requests (fs/lockreq.c, fs/fdlock.c, fs/node.c) driven as the
 * kernel drives them, through the seam fs/reply.h.
 *
 * A waiter of the driver's that goes through fs/ (dw.fd >= 0) is a lock
 * node made by MKNOD and an OPEN on it; later a flock(2) conversion or
 * LOCK_UN on its descriptor, an interrupt while it waits, and the RELEASE
 * and FORGET that end it.  The answers come back through this file's
 * reply seam, which records them for the checks of check.c: a request is
 * answered exactly once, a granted OPEN is the holder's descriptor, a
 * woken poller finds an event.  What the mount believes is what its
 * descriptor would tell the holder (lockreq_holder_errno(): 0 while the
 * lock holds, EIO once lost), not what the driver remembers.
 *
 * The rest of fs/ is not linked: which engine a directory has is the
 * mount's one engine (zklfs_engine() below); the holders' data, the read
 * cache and the directories' owners have nothing to do with a grant, and
 * their calls here do nothing.  One thread, as the rest of the simulator.
 */
#include "tests/sim/simfs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "fs/fdlock.h"
#include "fs/lockreq.h"
#include "fs/reply.h"
#include "fs/wbuf.h"
#include "fs/xcache.h"
#include "fs/attr.h"

/* A FUSE request, as the sim's kernel keeps it: until the world ends, so
 * that an answer to one already answered is found, not a use after free. */
struct fuse_req {
	int dw;				/* the waiter it asks for (-1: none) */
	int fd;				/* on this descriptor */
	bool fdreq;			/* a flock request, not the OPEN */
	int replies;
	int result;			/* the first answer's errno */
	fuse_interrupt_func_t intr;	/* registered by on_interrupt() */
	void *intr_arg;
	bool interrupted;		/* FUSE_INTERRUPT came */
	bool gone;			/* its caller is gone: open() -ENOENT */
};

struct fuse_pollhandle {
	int fd;
};

/* A mount's fs/ state: one per simulated mount. */
struct simfs {
	struct zklfs fs;
	struct zklfs_conf conf;
	int m;
};

static struct world *W(void)
{
	return sim_world;
}

/* the rest of fs/, as far as a lock request reaches it ----------------------- */

struct zkl_engine *zklfs_engine(struct zklfs *fs, const char *dir)
{
	(void)dir;
	return W()->eng[((struct simfs *)fs)->m];
}

void zklfs_xc_changed(struct zklfs *fs)
{
	(void)fs;
}

void zklfs_dir_gone(struct zklfs *fs, const char *dir)
{
	(void)fs, (void)dir;
}

void zklfs_wbuf_close(struct zklfs *fs, struct node *n)
{
	(void)fs, (void)n;
}

/* the other thread -------------------------------------------------------------- */

/*
 * The FUSE thread, holding no mutex, is about to take @mu: the ZooKeeper
 * thread may run first.  A script's @preempt_run at the rank it names;
 * else, one time in four, one completion delivered on a mount that has
 * one.  That thread is not preempted in turn (zk/mutex.h).
 */
static void preempt(const struct zkl_mutex *mu)
{
	struct world *wd = W();
	struct sn_handle *h[SIM_MOUNTS];
	int n = 0;

	if (!wd || !wd->fuse_thread || wd->fail[0])
		return;
	if (wd->preempt_run) {
		void (*run)(struct world *) = wd->preempt_run;

		if ((int)mu->rank != wd->preempt_rank)
			return;
		wd->preempt_run = NULL;
		wd->fuse_thread = false;
		sn_trace(&wd->net, "        (the FUSE thread is preempted at %s)", mu->name);
		run(wd);
		wd->fuse_thread = true;
		return;
	}
	for (int m = 0; m < SIM_MOUNTS; m++)
		if (wd->net.mounts[m].cur->in.n)
			h[n++] = wd->net.mounts[m].cur;
	if (!n || !sim_rng_chance(&wd->rng, 1, 4))
		return;
	wd->fuse_thread = false;
	sn_trace(&wd->net, "        (the FUSE thread is preempted at %s: a delivery)", mu->name);
	sn_deliver(h[sim_rng_below(&wd->rng, (uint32_t)n)]);
	wd->fuse_thread = true;
}

/* A call into fs/ on the FUSE thread: preemptible, but not the kernel's
 * replies and checks inside it (kernel()). */
static void fuse_thread(struct world *wd, bool on)
{
	wd->fuse_thread = on;
}

/* The seam's calls run as the kernel's: no preemption inside them.
 * Return: whether the FUSE thread ran, for kernel_done(). */
static bool kernel(struct world *wd)
{
	bool was = wd->fuse_thread;

	wd->fuse_thread = false;
	return was;
}

static void kernel_done(struct world *wd, bool was)
{
	wd->fuse_thread = was;
}

/* the seam ----------------------------------------------------------------- */

static struct sfd *fd_of(struct world *wd, const struct fuse_req *r)
{
	return &wd->fds[r->fd];
}

/* Every answer: once, and never to a request nobody asked. */
static bool answered(struct world *wd, struct fuse_req *r, const char *what)
{
	if (++r->replies > 1) {
		sim_failf(wd, "reply: a %s request of fd%d (w%d) answered %d times (now %s)",
			  r->fdreq ? "flock" : "OPEN", r->fd, r->dw, r->replies, what);
		return false;
	}
	return true;
}

/* The waiter @r asked for has its answer @err: check it as the engine's. */
static void to_waiter(struct world *wd, struct fuse_req *r, int err)
{
	struct dw *d = &wd->dws[r->dw];
	struct sfd *f = fd_of(wd, r);

	if (!err)
		d->w = f->n->lr->w;
	sim_answered(wd, d, err);
	if (!err && d->lost_early) {	/* the descriptor must tell at once */
		sim_lost_dw(wd, d);
		if (simfs_believes(wd, d))
			sim_failf(wd, "lost: w%d's descriptor holds a lock lost before "
				  "its answer", d->id);
	}
	if (err) {			/* lockreq gave its entry back */
		d->released = true;
		d->w = NULL;
		f->dw = -1;
	} else if (!wd->fail[0] && !r->gone) {
		/* the holder polls its descriptor, as a lock-aware program does */
		struct fuse_pollhandle *ph = malloc(sizeof(*ph));

		if (!ph)
			abort();
		ph->fd = r->fd;
		lockreq_holder_poll(&wd->fs[f->mount]->fs, f->n, ph);
	}
}

static int reply_open_k(fuse_req_t r, const struct fuse_file_info *fi)
{
	struct world *wd = W();
	struct sfd *f = fd_of(wd, r);

	sn_trace(&wd->net, "        fs: OPEN of fd%d answered: the lock%s", r->fd,
		 r->gone ? " (its caller is gone: -ENOENT)" : "");
	if (!answered(wd, r, "open"))
		return 0;
	if (r->fdreq || fi->fh != FH_HOLDER)
		sim_failf(wd, "reply: fd%d: an open reply that is not the holder's "
			  "descriptor of an OPEN", r->fd);
	to_waiter(wd, r, 0);
	if (r->gone) {			/* the kernel closes nothing: lockreq drops */
		wd->dws[r->dw].released = true;
		f->dw = -1;
		f->closed = true;
		return -ENOENT;
	}
	f->opened = true;
	return 0;
}

static int reply_open(fuse_req_t r, const struct fuse_file_info *fi)
{
	bool was = kernel(W());
	int rc = reply_open_k(r, fi);

	kernel_done(W(), was);
	return rc;
}

static int reply_err_k(fuse_req_t r, int err)
{
	struct world *wd = W();
	struct sfd *f = fd_of(wd, r);

	sn_trace(&wd->net, "        fs: %s of fd%d answered %d", r->fdreq ? "flock" : "OPEN",
		 r->fd, -err);
	if (!answered(wd, r, "err"))
		return 0;
	r->result = err;
	if (!r->fdreq && !err)
		sim_failf(wd, "reply: fd%d: OPEN answered 0 without a descriptor", r->fd);
	if (r->dw >= 0)
		to_waiter(wd, r, -err);
	if (!r->fdreq && err)
		f->closed = true;	/* the open failed: there is no descriptor */
	return 0;
}

static int reply_err(fuse_req_t r, int err)
{
	bool was = kernel(W());
	int rc = reply_err_k(r, err);

	kernel_done(W(), was);
	return rc;
}

static void on_interrupt(fuse_req_t r, fuse_interrupt_func_t fn, void *arg)
{
	r->intr = fn;
	r->intr_arg = arg;
	if (r->interrupted)		/* as libfuse: run it now */
		fn(r, arg);
}

/* Every descriptor is its own thread's; the pid= line of an entry's data
 * names the waiter it is for. */
static void caller(fuse_req_t r, struct zklfs_caller *c)
{
	struct world *wd = W();

	c->tid = wd->fds[r->fd].tid;
	c->pid = SIM_PID_BASE + r->dw;	/* the data names the waiter (check.c) */
	c->start = 1;
	c->uid = 1000;
	snprintf(c->cmd, sizeof(c->cmd), "sim\n");
}

static pid_t tid(fuse_req_t r)
{
	return W()->fds[r->fd].tid;
}

static unsigned long long thread_start(pid_t t)
{
	(void)t;
	return 1;
}

/* A woken poller finds what woke it: the loss, or a request to let go. */
static void notify_poll(struct fuse_pollhandle *ph)
{
	struct world *wd = W();
	struct sfd *f = &wd->fds[ph->fd];
	bool was = kernel(wd);
	unsigned ev = lockreq_holder_poll(&wd->fs[f->mount]->fs, f->n, NULL);

	sn_trace(&wd->net, "        fs: poller of fd%d woken: %#x", ph->fd, ev);
	if (!(ev & (POLLERR | POLLPRI)))
		sim_failf(wd, "poll: fd%d's poller woken with nothing to report", ph->fd);
	free(ph);
	kernel_done(wd, was);
}

static void drop_poll(struct fuse_pollhandle *ph)
{
	free(ph);
}

static const struct zklfs_reply sim_reply = {
	.open = reply_open,
	.err = reply_err,
	.on_interrupt = on_interrupt,
	.caller = caller,
	.tid = tid,
	.thread_start = thread_start,
	.notify_poll = notify_poll,
	.drop_poll = drop_poll,
};

/* the mounts ----------------------------------------------------------------- */

static void node_end(struct zklfs *fs, struct node *n)
{
	(void)fs;
	lockreq_free(n->lr);
	n->lr = NULL;
}

void simfs_init(struct world *wd)
{
	for (int m = 0; m < SIM_MOUNTS; m++) {
		struct simfs *s = calloc(1, sizeof(*s));

		if (!s)
			abort();
		s->m = m;
		s->conf.root = strdup("/locks");
		s->fs.conf = &s->conf;
		s->fs.reply = &sim_reply;
		snprintf(s->fs.host, sizeof(s->fs.host), "m%d", m);
		s->fs.mountpoint = s->fs.host;
		zkl_mutex_init(&s->fs.lock, ZKL_RANK_FS, "fs->lock");
		if (!s->conf.root || zklfs_nodes_init(&s->fs, node_end) != 0)
			abort();
		wd->fs[m] = s;
	}
	zkl_mutex_preempt = preempt;
}

void simfs_free(struct world *wd)
{
	zkl_mutex_preempt = NULL;
	for (int m = 0; m < SIM_MOUNTS; m++) {
		struct simfs *s = wd->fs[m];

		if (!s)
			continue;
		zklfs_nodes_free(&s->fs);
		zkl_mutex_destroy(&s->fs.lock);
		free(s->conf.root);
		free(s);
		wd->fs[m] = NULL;
	}
	for (int i = 0; i < wd->nreq; i++)
		free(wd->reqs[i]);
	free(wd->reqs);
	free(wd->fds);
}

/* A new request of the kernel's, about descriptor @fd for waiter @dw. */
static struct fuse_req *new_req(struct world *wd, int fd, int dw, bool fdreq)
{
	struct fuse_req *r = calloc(1, sizeof(*r));

	if (!r)
		abort();
	r->fd = fd;
	r->dw = dw;
	r->fdreq = fdreq;
	if (wd->nreq == wd->reqcap) {
		wd->reqcap = wd->reqcap ? 2 * wd->reqcap : 64;
		wd->reqs = realloc(wd->reqs, (size_t)wd->reqcap * sizeof(*wd->reqs));
		if (!wd->reqs)
			abort();
	}
	wd->reqs[wd->nreq++] = r;
	return r;
}

/* @d was just asked for on @f: the waiter lives from its enqueue until
 * its answer's give-back. */
static void after_ask(struct dw *d, struct sfd *f)
{
	if (d->ndone == 0 && f->n->lr->w)
		d->w = f->n->lr->w;
	d->req = f->req;
}

int simfs_open(struct world *wd, int m, int dir, enum zkl_kind kind, int flags)
{
	struct simfs *s = wd->fs[m];
	struct fuse_file_info fi = { 0 };
	struct sfd *f;
	int id = sim_new_dw(wd, m, dir, kind, flags), fd = wd->nfd;

	if (id < 0)
		return -1;
	if (wd->nfd == wd->fdcap) {
		wd->fdcap = wd->fdcap ? 2 * wd->fdcap : 32;
		wd->fds = realloc(wd->fds, (size_t)wd->fdcap * sizeof(*wd->fds));
		if (!wd->fds)
			abort();
	}
	f = &wd->fds[wd->nfd++];
	memset(f, 0, sizeof(*f));
	f->mount = m;
	f->dir = dir;
	f->dw = id;
	f->tid = SIM_PID_BASE + id;
	wd->dws[id].fd = fd;
	sn_trace(&wd->net, "  fs: MKNOD + OPEN fd%d for w%d", fd, id);
	fuse_thread(wd, true);
	f->n = lockreq_node(&s->fs, wd->dirs[dir], "job", 1000);
	if (!f->n)
		abort();
	f->req = new_req(wd, fd, id, false);
	fi.flags = (kind == ZKL_SHARED ? O_RDONLY : O_WRONLY) | O_CREAT |
		   (flags & ZKL_NONBLOCK ? O_NONBLOCK : 0);
	lockreq_open(f->req, f->n, &fi);
	fuse_thread(wd, false);
	after_ask(&wd->dws[id], f);
	return id;
}

void simfs_interrupt(struct world *wd, struct dw *d, bool gone)
{
	struct fuse_req *r = d->req;

	sn_trace(&wd->net, "  fs: INTERRUPT of fd%d's request (w%d)%s", d->fd, d->id,
		 gone ? ": its caller dies of the signal" : "");
	r->interrupted = true;
	r->gone = gone && !r->fdreq;	/* its reply finds nobody */
	fuse_thread(wd, true);
	if (r->intr)
		r->intr(r, r->intr_arg);
	fuse_thread(wd, false);
}

/* FORGET of the MKNOD's lookup: the kernel has no more use for the node. */
static void forget(struct world *wd, struct sfd *f)
{
	if (f->forgotten)
		return;
	f->forgotten = true;
	node_forget(&wd->fs[f->mount]->fs, f->n, 1);
}

void simfs_release(struct world *wd, struct dw *d)
{
	struct sfd *f = &wd->fds[d->fd];
	struct zkl_info info;
	char *path = NULL;

	zkl_info(d->w, &info, &path);
	sn_trace(&wd->net, "  fs: RELEASE of fd%d (w%d, %s)", d->fd, d->id,
		 path ? path : "no entry");
	d->released = true;
	wd->last_released = d->id + 1;
	f->dw = -1;
	f->closed = true;
	fuse_thread(wd, true);
	lockreq_release(&wd->fs[f->mount]->fs, f->n);
	fuse_thread(wd, false);
	sim_check_release(wd, d, path);
	free(path);
	if (sim_rng_chance(&wd->rng, 1, 2))
		forget(wd, f);
}

bool simfs_believes(struct world *wd, const struct dw *d)
{
	struct sfd *f = &wd->fds[d->fd];
	struct fuse_file_info fi = { .fh = FH_HOLDER };

	return lockreq_holder_errno(&wd->fs[f->mount]->fs, f->n, &fi) == 0;
}

bool simfs_lost(struct world *wd, struct zkl_waiter *w, void *arg)
{
	for (int i = 0; i < wd->nfd; i++)
		if ((void *)wd->fds[i].n == arg && !wd->fds[i].forgotten) {
			lockreq_lost(w, arg);
			for (int k = 0; k < wd->ndw; k++) {
				struct dw *d = &wd->dws[k];

				if (d->w != w || d->released || d->fd != i)
					continue;
				if (d->ndone) {
					sim_lost_dw(wd, d);
					continue;
				}
				/* granted, the answer not yet given: to_waiter() */
				sn_trace(&wd->net, "        lost w%d, before its answer", k);
				d->lost_early = true;
			}
			return true;
		}
	return false;
}

/*
 * flock(2) on a descriptor that took its entry: LOCK_SH, LOCK_EX or
 * LOCK_UN, with LOCK_NB or not, on an open descriptor that holds (or lost)
 * its lock or holds nothing since a LOCK_UN.  What fdlock_op() must do is
 * known beforehand, and checked: the kind held asked again is 0 at once;
 * anything else gives the entry back, and LOCK_SH/LOCK_EX enqueue a new
 * waiter on the same descriptor.
 */
bool act_fdlock(struct world *wd)
{
	static const int ops[] = { LOCK_SH, LOCK_EX, LOCK_UN };
	struct sfd *f;
	struct dw *old = NULL;
	int n = 0, k, op, id = -1;
	bool nb, same;
	struct fuse_req *r;
	struct lockreq *lr;
	char *path = NULL;
	struct zkl_info info;

	for (int i = 0; i < wd->nfd; i++)
		n += wd->fds[i].opened && !wd->fds[i].closed &&
		     (wd->fds[i].dw < 0 || act_is_answered(&wd->dws[wd->fds[i].dw]));
	if (!n)
		return false;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (f = wd->fds;; f++)
		if (f->opened && !f->closed &&
		    (f->dw < 0 || act_is_answered(&wd->dws[f->dw])) && k-- == 0)
			break;
	op = ops[sim_rng_below(&wd->rng, 3)];
	nb = sim_rng_chance(&wd->rng, 1, 3);
	if (f->dw >= 0)
		old = &wd->dws[f->dw];
	lr = f->n->lr;
	same = old && op != LOCK_UN && lr->state == LR_HELD &&
	       lr->kind == (op == LOCK_EX ? ZKL_EXCLUSIVE : ZKL_SHARED);
	if (op != LOCK_UN && !same) {
		id = sim_new_dw(wd, f->mount, f->dir,
				op == LOCK_EX ? ZKL_EXCLUSIVE : ZKL_SHARED, nb ? ZKL_NONBLOCK : 0);
		if (id < 0)
			return false;
		wd->dws[id].fd = (int)(f - wd->fds);
	}
	sn_trace(&wd->net, "  fs: flock(fd%d, %s%s), which stands for w%d", (int)(f - wd->fds),
		 op == LOCK_SH ? "LOCK_SH" : op == LOCK_EX ? "LOCK_EX" : "LOCK_UN",
		 nb ? "|LOCK_NB" : "", old ? old->id : -1);
	r = new_req(wd, (int)(f - wd->fds), id, true);
	if (old && !same) {		/* given back first, inside fdlock_op() */
		zkl_info(old->w, &info, &path);
		old->released = true;
		wd->last_released = old->id + 1;
		f->dw = -1;
	}
	if (id >= 0) {
		f->dw = id;
		f->req = r;
	}
	fuse_thread(wd, true);
	fdlock_op(r, f->n, op, nb);
	fuse_thread(wd, false);
	if (old && !same)
		sim_check_release(wd, old, path);
	free(path);
	if (id >= 0)
		after_ask(&wd->dws[id], f);
	else if (r->replies != 1 || r->result != 0)
		sim_failf(wd, "flock: fd%d: %s answered %d times, with %d, where 0 at once "
			  "was due", (int)(f - wd->fds), op == LOCK_UN ? "LOCK_UN" : "the kind held",
			  r->replies, r->result);
	return true;
}

void simfs_end(struct world *wd)
{
	for (int i = 0; i < wd->nfd; i++) {
		struct sfd *f = &wd->fds[i];

		if (f->opened && !f->closed && f->dw < 0) {
			sn_trace(&wd->net, "  fs: RELEASE of fd%d (holds nothing)", i);
			f->closed = true;
			lockreq_release(&wd->fs[f->mount]->fs, f->n);
		}
		if (f->closed)
			forget(wd, f);
	}
}
