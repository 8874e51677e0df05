/*
 * tests/sim/simfs.c - the FUSE side under the simulator: each mount's
 * lock requests (fs/lockreq.c, fs/fdlock.c, fs/node.c) driven as the
 * kernel drives them, through the seam fs/reply.h.
 *
 * A waiter of the driver's that goes through fs/ (driven.fd >= 0) is a lock
 * node made by MKNOD and an OPEN on it; later a flock(2) conversion or
 * LOCK_UN on its descriptor, an interrupt while it waits, and the RELEASE
 * and FORGET that end it.  The answers come back through this file's
 * reply seam, which records them for the checks of check.c: a request is
 * answered exactly once, a granted OPEN is the holder's descriptor, a
 * woken poller finds an event.  What the mount believes is what its
 * descriptor would tell the holder (lockreq_holder_errno(): 0 while the
 * lock holds, EIO once lost), not what the driver remembers.
 *
 * The holder's data (fs/wbuf.c) and fsync's confirmation (fs/confirm.c)
 * run here too: a holder's WRITE, SETATTR of the size and FSYNC on its
 * descriptor (simfsact.c) are answered through the same seam, and their
 * calls to ZooKeeper go on the mount's one session (zklfs_zset() and the
 * others below, through its transport), its zklfs_zlater() to the
 * supervisor's look (sn_look()).  Each set is checked as it is made and
 * as the server applies it (check.c).  So do the observers (fs/observe.c,
 * driven by simobs.c): their answers come through the seam too, their
 * pollers' wake-ups through notify_poll().  And the requests that wait
 * for one ZooKeeper call (fs/zop.c): an entry's READ (fs/read.c), sent
 * again after a connection loss, and a lock file's MKNOD (fs/lfns.c),
 * whose create never is; either answered by a signal or its deadline
 * (fs/pending.c's sweep, at the supervisor's looks as fs/main.c arms it,
 * on the simulator's clock: zklfs_now_ms() below).
 *
 * The rest of fs/ is not linked: which engine a directory has is the
 * mount's one engine (zklfs_engine() below), which session the mount's one
 * session; the read cache, the directories' owners and the attributes a
 * LOOKUP answers have nothing to do with a grant nor with what a READ
 * reads, and their calls here do nothing.  One thread, as the rest of the
 * simulator.
 */
#include "tests/sim/simfs_int.h"
#include "tests/sim/room.h"

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
#include "fs/observe.h"
#include "fs/pending.h"
#include "fs/pool.h"
#include "fs/wbuf.h"
#include "fs/xcache.h"
#include "fs/attr.h"
#include "fs/zop.h"

long sim_fs_requests, sim_preemptions;

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

/* one engine per mount: a directory never moves */
struct zkl_engine *zklfs_engine_hold(struct zklfs *fs, const char *dir)
{
	return zklfs_engine(fs, dir);
}

void zklfs_engine_unhold(struct zklfs *fs, const char *dir, const struct zkl_engine *e)
{
	(void)fs, (void)dir, (void)e;
}

void zklfs_xc_changed(struct zklfs *fs)
{
	(void)fs;
}

/* the read cache keeps nothing: every READ asks ZooKeeper */
bool zklfs_xc_stat(struct zklfs *fs, pid_t pid, const char *path, struct Stat *zs,
		   char **data, int *len)
{
	(void)fs, (void)pid, (void)path, (void)zs, (void)data, (void)len;
	return false;
}

void zklfs_xc_put_stat(struct zklfs *fs, pid_t pid, const char *path,
		       const struct Stat *zs, const char *data, int len)
{
	(void)fs, (void)pid, (void)path, (void)zs, (void)data, (void)len;
}

/* A LOOKUP's attributes (fs/zop.c's zop_reply_entry()): nothing checks
 * them here. */
void zklfs_fill_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino,
		     enum node_type type, const struct Stat *zs, uid_t uid)
{
	(void)fs, (void)type, (void)zs;
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = uid;
}

uid_t zklfs_owner(struct zklfs *fs, const char *path, enum node_type type,
		  const struct Stat *zs)
{
	(void)path, (void)type, (void)zs;
	return fs->uid;
}

/* the root is /locks: nothing is hidden */
bool zklfs_hidden(struct zklfs *fs, const char *dir, const char *name)
{
	(void)fs, (void)dir, (void)name;
	return false;
}

/* The simulator's clock (a step is a millisecond): the requests'
 * deadlines (fs/pending.c) and fs/zop.c's resends follow it. */
uint64_t zklfs_now_ms(void)
{
	return W() ? W()->net.now : 0;
}

void zklfs_dir_gone(struct zklfs *fs, const char *dir)
{
	(void)fs, (void)dir;
}

void zklfs_dir_made(struct zklfs *fs, const char *path, int64_t czxid, uid_t uid)
{
	(void)fs, (void)path, (void)czxid, (void)uid;
}

/* one session: no other has to sync after a lock file is made */
void zklfs_ns_changed(struct zklfs *fs, const char *dir)
{
	(void)fs, (void)dir;
}

/* the mount's one session, for fs/wbuf.c and fs/confirm.c */
struct zks *zklfs_session(struct zklfs *fs, const char *dir)
{
	(void)dir;
	return &((struct simfs *)fs)->zks;
}

struct zks *zklfs_session_of(struct zklfs *fs, const char *path, bool is_dir)
{
	(void)is_dir;
	return zklfs_session(fs, path);
}

int zklfs_session_slot(struct zklfs *fs, const struct zks *zks)
{
	(void)fs, (void)zks;
	return 0;
}

/* The session @dir stays on: the mount's one. */
struct zks *zklfs_session_hold(struct zklfs *fs, const char *dir)
{
	return zklfs_session(fs, dir);
}

void zklfs_session_unhold(struct zklfs *fs, const char *dir, const struct zks *zks)
{
	(void)fs, (void)dir, (void)zks;
}

/* The transport of @fs's mount: where every call of fs/ goes. */
const struct zkt_transport *zklfs_transport(struct zklfs *fs, const struct zks *zks)
{
	(void)zks;
	return &((struct simfs *)fs)->t;
}

static struct zkt_transport transport_of(struct zklfs *fs)
{
	return *zklfs_transport(fs, NULL);
}

/* A holder's data goes to the server: checked as it is sent (check.c). */
int zklfs_zset(struct zklfs *fs, struct zks *zs, const char *path, const char *data,
	       int len, int version, stat_completion_t done, const void *arg)
{
	struct zkt_transport t = transport_of(fs);
	int rc = t.ops->set(t.ctx, path, data, len, version, done, arg);

	(void)zs;
	if (rc == ZOK)
		sim_data_sent(W(), ((struct simfs *)fs)->m, path, data, len,
			      W()->net.next_req);
	return rc;
}

int zklfs_zget(struct zklfs *fs, struct zks *zs, const char *path,
	       data_completion_t done, const void *arg)
{
	struct zkt_transport t = transport_of(fs);

	(void)zs;
	return t.ops->get(t.ctx, path, done, arg);
}

int zklfs_zsync(struct zklfs *fs, struct zks *zs, const char *path,
		string_completion_t done, const void *arg)
{
	struct zkt_transport t = transport_of(fs);

	(void)zs;
	return t.ops->sync(t.ctx, path, done, arg);
}

int zklfs_zexists(struct zklfs *fs, struct zks *zs, const char *path,
		  stat_completion_t done, const void *arg)
{
	struct zkt_transport t = transport_of(fs);

	(void)zs;
	return t.ops->exists(t.ctx, path, done, arg);
}

/* A create of fs/ (fs/zop.c's zop_create_child(): @arg is its zop): a
 * lock file's MKNOD sends it, once at most (check.c). */
int zklfs_zcreate(struct zklfs *fs, struct zks *zs, const char *path, const char *data,
		  int len, int mode, string_stat_completion_t done, const void *arg)
{
	struct zkt_transport t = transport_of(fs);
	const struct zop *op = arg;

	(void)zs;
	if (op->req->op == SR_MKNOD)
		sim_mknod_sent(W(), op->req->zop);
	return t.ops->create(t.ctx, path, data, data ? len : -1, mode, done, arg, NULL);
}

int zklfs_zchildren(struct zklfs *fs, struct zks *zs, const char *path,
		    strings_stat_completion_t done, const void *arg)
{
	struct zkt_transport t = transport_of(fs);

	(void)zs;
	return t.ops->children(t.ctx, path, done, arg);
}

int zklfs_zlater(struct zklfs *fs, struct zks *zs, void (*fn)(void *arg, bool go),
		 void *arg)
{
	struct zkt_transport t = transport_of(fs);

	(void)zs;
	return t.ops->later(t.ctx, fn, arg);
}

bool zklfs_zquiet(struct zklfs *fs, struct zks *zs)
{
	struct zkt_transport t = transport_of(fs);

	(void)zs;
	return t.ops->quiet(t.ctx);
}

size_t zklfs_data_max(struct zklfs *fs, const char *path)
{
	struct zkt_transport t = transport_of(fs);

	return t.ops->data_max(t.ctx, path);
}

/* A SETATTR's answer: the rest of fs/attr.c's attributes say nothing of
 * the data; fs/wbuf.c fills in the size, which the seam checks. */
void zklfs_pending_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino, uid_t uid)
{
	(void)fs;
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = uid;
}

/* the other thread -------------------------------------------------------------- */

/*
 * The FUSE thread, holding no mutex, is about to take @mu: the ZooKeeper
 * thread may run first.  A script's @preempt_run at the rank it names;
 * else, one time in four, one completion delivered on a mount that has
 * one.  That thread is not preempted in turn (zk/mutex.h).
 */
static void preempt(const struct zkmx *mu)
{
	struct world *wd = W();
	struct sn_handle *h[SIM_MOUNTS];
	int n = 0;

	if (!wd || !wd->fuse_thread || wd->fail[0])
		return;
	if (wd->preempt_run) {
		void (*run)(struct world *) = wd->preempt_run;

		if ((int)mu->rank != wd->preempt_rank || wd->preempt_skip-- > 0)
			return;
		wd->preempt_run = NULL;
		wd->fuse_thread = false;
		sim_preemptions++;
		sn_trace(&wd->net, "        (the FUSE thread is preempted at %s)", mu->name);
		run(wd);
		wd->fuse_thread = true;
		return;
	}
	if (wd->calm > 0) {
		wd->calm--;
		return;
	}
	for (int m = 0; m < SIM_MOUNTS; m++)
		if (wd->net.mounts[m].cur->in.n)
			h[n++] = wd->net.mounts[m].cur;
	if (!n || !sim_rng_chance(&wd->rng, 1, 4))
		return;
	wd->fuse_thread = false;
	sim_preemptions++;
	sn_trace(&wd->net, "        (the FUSE thread is preempted at %s: a delivery)", mu->name);
	sn_deliver(h[sim_rng_below(&wd->rng, (uint32_t)n)]);
	wd->fuse_thread = true;
}

/* A call into fs/ on the FUSE thread: preemptible, but not the kernel's
 * replies and checks inside it (kernel()). */
void simfs_fuse_thread(struct world *wd, bool on)
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

static const char *req_name(const struct fuse_req *r)
{
	static const char *const data[] = { [SR_WRITE] = "WRITE", [SR_SETATTR] = "SETATTR",
					    [SR_FSYNC] = "FSYNC", [SR_OBS] = "observer's",
					    [SR_READ] = "READ", [SR_MKNOD] = "MKNOD" };

	return r->op != SR_LOCK ? data[r->op] : r->fdreq ? "flock" : "OPEN";
}

/* A zop's request (READ, MKNOD) answered as another request is (@what):
 * wrong. */
static bool zop_misanswered(struct world *wd, const struct fuse_req *r, const char *what)
{
	if (r->op != SR_READ && r->op != SR_MKNOD)
		return false;
	sim_failf(wd, "%s: r%d answered with %s", r->op == SR_READ ? "read" : "mknod", r->zop,
		  what);
	return true;
}

/* Every answer: once, and never to a request nobody asked. */
static bool answered(struct world *wd, struct fuse_req *r, const char *what)
{
	if (++r->replies > 1) {
		sim_failf(wd, "reply: a %s request of fd%d (w%d) answered %d times (now %s)",
			  req_name(r), r->fd, r->driven, r->replies, what);
		return false;
	}
	return true;
}

/*
 * A request about the holder's data answered @err (0: done).  WRITE and
 * SETATTR are answered inside their call (simfsact.c checks how); an
 * FSYNC later, by its confirmation or a give-back: 0 only with its
 * holder's data at the server (check.c), else EIO (the lock lost or given
 * back), ENOLCK (nothing held), EAGAIN (its data's set met a connection
 * loss).
 */
static int data_answered(struct world *wd, struct fuse_req *r, int err)
{
	if (r->op != SR_FSYNC)
		return 0;
	if (err != 0 && err != EIO && err != ENOLCK && err != EAGAIN)
		sim_failf(wd, "fsync: fd%d answered %d", r->fd, -err);
	else if (!err)
		sim_fsync_done(wd, r->fd, r->holder, r->version);
	return 0;
}

bool simfs_stands_for(struct world *wd, const struct sfd *f, int old)
{
	const char *path = f->n->path;

	/* a give-back lets the waiter go first (lockreq_drop()), then the path */
	return old >= 0 && f->n->lr->w && path && strcmp(path, wd->driven[old].path) == 0;
}

/* The waiter @r asked for has its answer @err: check it as the engine's. */
static void to_waiter(struct world *wd, struct fuse_req *r, int err)
{
	struct driven *d = &wd->driven[r->driven];
	struct sfd *f = fd_of(wd, r);

	if (!err)
		d->w = f->n->lr->w;
	sim_answered(wd, d, err);
	if (!err && d->lost_early) {	/* the descriptor must tell at once */
		sim_lost_driven(wd, d);
		if (simfs_believes(wd, d))
			sim_failf(wd, "lost: w%d's descriptor holds a lock lost before "
				  "its answer", d->id);
	}
	if (err) {			/* lockreq gave its entry back */
		d->released = true;
		d->w = NULL;
		if (f->driven == d->id)
			f->driven = -1;
	} else if (!wd->fail[0] && !r->gone) {
		/* the holder polls its descriptor, as a lock-aware program does */
		struct fuse_pollhandle *ph = malloc(sizeof(*ph));

		if (!ph)
			abort();
		ph->fd = r->fd;
		ph->obs = 0;
		lockreq_holder_poll(&wd->fs[f->mount]->fs, f->n, POLLPRI, ph);
	}
}

static int reply_open_k(fuse_req_t r, const struct fuse_file_info *fi)
{
	struct world *wd = W();
	struct sfd *f = fd_of(wd, r);

	sn_trace(&wd->net, "        fs: OPEN of fd%d answered: the %s%s", r->fd,
		 r->lfopen ? "lock file" : "lock", r->gone ? " (its caller is gone: -ENOENT)" : "");
	if (!answered(wd, r, "open"))
		return 0;
	if (r->lfopen) {		/* a descriptor that holds nothing yet */
		if (fi->fh == FH_HOLDER || fi->fh == FH_PLAIN || fi->noflush)
			sim_failf(wd, "reply: fd%d: a lock file's OPEN answered as an "
				  "entry's", r->fd);
		*f->lfi = *fi;
		f->opened = true;
		return 0;
	}
	if (r->fdreq || fi->fh != FH_HOLDER)
		sim_failf(wd, "reply: fd%d: an open reply that is not the holder's "
			  "descriptor of an OPEN", r->fd);
	to_waiter(wd, r, 0);
	if (r->gone) {			/* the kernel closes nothing: lockreq drops */
		wd->driven[r->driven].released = true;
		f->driven = -1;
		f->closed = true;
		return -ENOENT;
	}
	f->opened = true;
	return 0;
}

static int reply_open(fuse_req_t r, const struct fuse_file_info *fi)
{
	bool was = kernel(W());
	int rc = zop_misanswered(W(), r, "an OPEN's descriptor") ? 0 :
		 r->op == SR_OBS ? (simobs_answered(W(), r, fi, 0), 0) : reply_open_k(r, fi);

	kernel_done(W(), was);
	return rc;
}

/*
 * A flock that joined w's wait (lockreq_join()) is answered: with w's own
 * answer, which came first (0 only once w is granted), or EINTR for its
 * own signal.
 */
static int joined_answered(struct world *wd, struct fuse_req *r, int err)
{
	struct driven *d = &wd->driven[r->joined];

	sn_trace(&wd->net, "        (fd%d's flock joined w%d's wait)", r->fd, d->id);
	if (err == EINTR ? !r->interrupted : d->ndone != 1 || d->result != -err)
		sim_failf(wd, "join: fd%d's flock joined to w%d answered %d, w%d %s %d", r->fd,
			  d->id, err, d->id, d->ndone ? "answered" : "not answered", d->result);
	return 0;
}

/*
 * An interrupted request's wait handed to a request that joined it
 * (lock_interrupt()): the waiter goes on for the heir, which the request
 * of @f now is; nothing is answered to the waiter.  Return: whether so.
 */
static bool handed_over(struct world *wd, struct fuse_req *r, struct sfd *f)
{
	struct fuse_req *heir = f->n->lr->req;
	struct driven *d;

	if (r->driven < 0 || !r->fdreq || !heir || heir == r)
		return false;
	d = &wd->driven[r->driven];
	if (heir->joined != d->id || !f->n->lr->w || f->n->lr->w != d->w)
		sim_failf(wd, "join: w%d's wait went on for fd%d's request, which did "
			  "not join it", d->id, heir->fd);
	sn_trace(&wd->net, "        (w%d's wait handed to fd%d's joined flock)", d->id,
		 heir->fd);
	heir->driven = d->id;
	heir->joined = -1;
	d->req = heir;
	f->req = heir;
	d->cancelled = false;		/* the heir asked for no cancel */
	r->driven = -1;
	return true;
}

static int reply_err_k(fuse_req_t r, int err)
{
	struct world *wd = W();
	struct sfd *f;

	if (r->op == SR_OBS) {
		simobs_answered(wd, r, NULL, err);
		return 0;
	}
	if (r->op == SR_READ) {
		sim_read_answered(wd, r->zop, err, NULL, 0);
		return 0;
	}
	if (r->op == SR_MKNOD) {
		sim_mknod_answered(wd, r->zop, err, NULL);
		return 0;
	}
	f = fd_of(wd, r);
	sn_trace(&wd->net, "        fs: %s of fd%d answered %d", req_name(r), r->fd, -err);
	if (!answered(wd, r, "err"))
		return 0;
	r->result = err;
	if (r->op != SR_LOCK)
		return data_answered(wd, r, err);
	if (r->joined >= 0)
		return joined_answered(wd, r, err);
	if (err == EINTR && handed_over(wd, r, f))
		return 0;
	if (!r->fdreq && !err)
		sim_failf(wd, "reply: fd%d: OPEN answered 0 without a descriptor", r->fd);
	if (r->driven >= 0 && (!err || err == EIO) && simfs_stands_for(wd, f, r->old)) {
		/* the kind it holds, or its lock lost (EIO until LOCK_UN):
		 * nothing was asked of the engine */
		wd->driven[r->driven].ndone = 1;
		wd->driven[r->driven].released = true;
	} else if (r->driven >= 0) {
		to_waiter(wd, r, -err);
	}
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

/* A WRITE done: @count bytes taken. */
static int reply_write(fuse_req_t r, size_t count)
{
	struct world *wd = W();
	bool was = kernel(wd);

	sn_trace(&wd->net, "        fs: %s of fd%d answered %zu bytes", req_name(r), r->fd,
		 count);
	if (!zop_misanswered(wd, r, "a WRITE's count") && answered(wd, r, "write")) {
		if (r->op != SR_WRITE)
			sim_failf(wd, "reply: fd%d: a %s answered as a WRITE", r->fd,
				  req_name(r));
		r->size = count;
	}
	kernel_done(wd, was);
	return 0;
}

/* A SETATTR done: the attributes it answers. */
static int reply_attr(fuse_req_t r, const struct stat *st, double timeout)
{
	struct world *wd = W();
	bool was = kernel(wd);

	(void)timeout;
	sn_trace(&wd->net, "        fs: %s of fd%d answered size %lld", req_name(r), r->fd,
		 (long long)st->st_size);
	if (!zop_misanswered(wd, r, "attributes") && answered(wd, r, "attr")) {
		if (r->op != SR_SETATTR || (size_t)st->st_size != r->size)
			sim_failf(wd, "reply: fd%d: a %s answered the attributes of size %lld",
				  r->fd, req_name(r), (long long)st->st_size);
	}
	kernel_done(wd, was);
	return 0;
}

/* An observer's READ: its bytes, kept for simobs.c; an entry's, checked
 * (check.c). */
static int reply_buf(fuse_req_t r, const char *buf, size_t size)
{
	struct world *wd = W();

	if (r->op == SR_READ) {
		bool was = kernel(wd);

		sim_read_answered(wd, r->zop, 0, buf, size);
		kernel_done(wd, was);
		return 0;
	}
	if (zop_misanswered(wd, r, "a READ's bytes") || !answered(wd, r, "buf"))
		return 0;
	if (r->op != SR_OBS) {
		sim_failf(wd, "reply: fd%d: a %s answered with a READ's bytes", r->fd,
			  req_name(r));
		return 0;
	}
	r->text = malloc(size ? size : 1);
	if (!r->text)
		abort();
	if (size)
		memcpy(r->text, buf, size);
	r->size = size;
	return 0;
}

/* An observer's LOOKUP: its node; a MKNOD's: the lock file made. */
static int reply_entry(fuse_req_t r, const struct fuse_entry_param *e)
{
	struct world *wd = W();

	if (r->op == SR_MKNOD) {
		bool was = kernel(wd);

		sim_mknod_answered(wd, r->zop, 0, (struct node *)(uintptr_t)e->ino);
		kernel_done(wd, was);
		return 0;
	}
	if (!zop_misanswered(wd, r, "a LOOKUP's node") && answered(wd, r, "entry") &&
	    r->op != SR_OBS)
		sim_failf(wd, "reply: fd%d: a %s answered with a LOOKUP's node", r->fd,
			  req_name(r));
	r->node = (struct node *)(uintptr_t)e->ino;
	return 0;
}

/* An observer's POLL: its events. */
static int reply_poll(fuse_req_t r, unsigned revents)
{
	struct world *wd = W();

	if (!zop_misanswered(wd, r, "a POLL's events") && answered(wd, r, "poll") &&
	    r->op != SR_OBS)
		sim_failf(wd, "reply: fd%d: a %s answered with a POLL's events", r->fd,
			  req_name(r));
	r->revents = revents;
	return 0;
}

/* An xattr's size: no request here asks for one. */
static int reply_xattr(fuse_req_t r, size_t count)
{
	struct world *wd = W();

	if (!zop_misanswered(wd, r, "an xattr's size") && answered(wd, r, "xattr"))
		sim_failf(wd, "reply: fd%d: a %s answered with an xattr's size %zu", r->fd,
			  req_name(r), count);
	return 0;
}

/* Who asks: uid 1000, and the thread of the waiter it asks for. */
static const struct fuse_ctx *req_ctx(fuse_req_t r)
{
	r->ctx.uid = 1000;
	r->ctx.gid = 1000;
	r->ctx.pid = r->driven >= 0 ? SIM_PID_BASE + r->driven : 0;
	return &r->ctx;
}

static void on_interrupt(fuse_req_t r, fuse_interrupt_func_t fn, void *arg)
{
	r->intr = fn;
	r->intr_arg = arg;
	if (r->interrupted)		/* as libfuse: run it now */
		fn(r, arg);
}

/* The pid= line of an entry's data names the waiter it is for. */
static void caller(fuse_req_t r, struct zklfs_caller *c)
{
	c->pid = SIM_PID_BASE + r->driven;	/* the data names the waiter (check.c) */
	c->uid = 1000;
	snprintf(c->cmd, sizeof(c->cmd), "sim\n");
}

/* What the signal does to the caller of @r: it ends it (a request that
 * waits on ZooKeeper is answered EINTR at once), unless the driver chose
 * otherwise for an entry's READ (simfsact.c): caught (answered by the
 * sweep once the request has waited its patience), or only stopping it. */
static enum zklfs_signal signalled(fuse_req_t r)
{
	return r->sig;
}

/* on_loss=end is the daemon's: the simulated mounts tell their holders. */
static int holders(fuse_req_t r, pid_t pid, uid_t uid, uint64_t ino,
		   struct zklfs_holders *h)
{
	(void)r, (void)pid, (void)uid, (void)ino, (void)h;
	return 0;
}

static void end(const struct zklfs_holders *h, const char *what, const char *why)
{
	(void)h, (void)what, (void)why;
}

/* A woken poller finds what woke it: the loss, or a request to let go. */
static void notify_poll(struct fuse_pollhandle *ph)
{
	struct world *wd = W();
	struct sfd *f;
	bool was = kernel(wd);
	unsigned ev;

	if (ph->obs) {
		simobs_woken(wd, ph->obs - 1);
		free(ph);
		kernel_done(wd, was);
		return;
	}
	f = &wd->fds[ph->fd];
	ev = lockreq_holder_poll(&wd->fs[f->mount]->fs, f->n, POLLPRI, NULL);

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
	.write = reply_write,
	.attr = reply_attr,
	.buf = reply_buf,
	.entry = reply_entry,
	.poll = reply_poll,
	.xattr = reply_xattr,
	.ctx = req_ctx,
	.on_interrupt = on_interrupt,
	.caller = caller,
	.signalled = signalled,
	.holders = holders,
	.end = end,
	.notify_poll = notify_poll,
	.drop_poll = drop_poll,
};

/* the mounts ----------------------------------------------------------------- */

/* A lock node ends, as fs/lockops.c's zklfs_lock_node_end(): its data
 * forgotten, its request freed. */
static void node_end(struct zklfs *fs, struct node *n)
{
	zklfs_wbuf_forget_locked(fs, n);
	lockreq_free(n->lr);
	n->lr = NULL;
}

/*
 * The deadline sweep of the pending requests (fs/pending.h), as fs/main.c
 * arms it: at the supervisor's next look (sn_look()), those of a quiet
 * session answered at once, then those due by the clock; again while any
 * waits.
 */
static void pend_arm(struct zklfs *fs);

static void pend_sweep(void *arg, bool go)
{
	struct zklfs *fs = arg;
	struct zks *s = zklfs_session(fs, NULL);

	if (go && zklfs_zquiet(fs, s))
		zpend_silent(fs, s);
	if (zpend_sweep(fs, zklfs_now_ms(), !go))
		pend_arm(fs);
}

static void pend_arm(struct zklfs *fs)
{
	if (zklfs_zlater(fs, zklfs_session(fs, NULL), pend_sweep, fs) != 0)
		zpend_sweep(fs, 0, true);
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
		zkmx_init(&s->fs.lock, ZKMX_RANK_FS, "fs->lock");
		zkmx_init(&s->fs.wb_send, ZKMX_RANK_WBSEND, "fs->wb_send");
		s->t = sn_transport(&wd->net.mounts[m]);
		/* the deadline is the session timeout the transport says, which
		 * only a jump of the clock reaches (an entry's READ is given a
		 * shorter one: simfsact.c) */
		if (!s->conf.root || zklfs_nodes_init(&s->fs, node_end) != 0 ||
		    zpend_init(&s->fs, pend_arm) != 0 || zklfs_observe_init(&s->fs) != 0)
			abort();
		zpend_timeout(&s->fs, s->t.ops->timeout_ms(s->t.ctx));
		wd->fs[m] = s;
	}
	zkmx_preempt = preempt;
}

void simfs_free(struct world *wd)
{
	zkmx_preempt = NULL;
	for (int m = 0; m < SIM_MOUNTS; m++) {
		struct simfs *s = wd->fs[m];

		if (!s)
			continue;
		zklfs_observe_free(&s->fs);
		zklfs_nodes_free(&s->fs);
		zpend_free(&s->fs);
		zkmx_destroy(&s->fs.wb_send);
		zkmx_destroy(&s->fs.lock);
		free(s->conf.root);
		free(s);
		wd->fs[m] = NULL;
	}
	for (int i = 0; i < wd->nreq; i++) {
		free(wd->reqs[i]->text);
		free(wd->reqs[i]);
	}
	free(wd->obs);
	free(wd->reqs);
	free(wd->fds);
}

/* A new request of the kernel's, about descriptor @fd for waiter @driven. */
struct fuse_req *simfs_new_req(struct world *wd, int fd, int driven, bool fdreq)
{
	struct fuse_req *r = calloc(1, sizeof(*r));

	if (!r)
		abort();
	sim_fs_requests++;
	r->fd = fd;
	r->driven = driven;
	r->fdreq = fdreq;
	r->old = -1;
	r->joined = -1;
	r->holder = -1;
	r->zop = -1;
	r->sig = ZKLFS_SIG_ENDS;
	SIM_ROOM(wd->reqs, wd->nreq, wd->reqcap, 64);
	wd->reqs[wd->nreq++] = r;
	return r;
}

/* @d was just asked for on @f: the waiter lives from its enqueue until
 * its answer's give-back. */
void simfs_after_ask(struct driven *d, struct sfd *f)
{
	if (d->ndone == 0 && f->n->lr->w)
		d->w = f->n->lr->w;
	d->req = f->req;
}


bool simfs_believes(struct world *wd, const struct driven *d)
{
	struct sfd *f = &wd->fds[d->fd];
	struct fuse_file_info fi = { .fh = FH_HOLDER };

	return lockreq_holder_errno(&wd->fs[f->mount]->fs, f->n, &fi) == 0;
}

void simfs_doubted(struct world *wd, struct zkl_waiter *w, void *arg)
{
	for (int i = wd->nfd - 1; i >= 0; i--)
		if (wd->fds[i].n && (void *)wd->fds[i].n == arg) {
			lockreq_doubted(w, arg);
			return;
		}
}

bool simfs_lost(struct world *wd, struct zkl_waiter *w, void *arg)
{
	/* newest first: a node freed once may have given its address to a
	 * later one; one forgotten may live on, held by its entry */
	for (int i = wd->nfd - 1; i >= 0; i--)
		if (wd->fds[i].n && (void *)wd->fds[i].n == arg) {
			lockreq_lost(w, arg);
			for (int k = 0; k < wd->ndriven; k++) {
				struct driven *d = &wd->driven[k];

				if (d->w != w || d->released || d->fd != i)
					continue;
				if (d->ndone) {
					sim_lost_driven(wd, d);
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
