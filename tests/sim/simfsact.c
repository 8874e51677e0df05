/*
 * tests/sim/simfsact.c - the kernel's requests to each simulated mount's
 * fs/ (simfs.h): MKNOD and OPEN, INTERRUPT, flock(2), RELEASE and FORGET,
 * the holder's WRITE, SETATTR of the size and FSYNC, and the requests of
 * one zop: a reader's READ of an entry, a lock file's MKNOD, as the
 * driver's actions.  One thread.
 */
#include "tests/sim/simfs_int.h"
#include "tests/sim/room.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "fs/fdlock.h"
#include "fs/handlers.h"
#include "fs/lockfile.h"
#include "fs/pending.h"
#include "fs/wbuf.h"

/* A new waiter (*@id) and a new descriptor for it on mount @m of lock
 * @dir; NULL (no waiter) past the live waiters' bound. */
static struct sfd *new_fd(struct world *wd, int m, int dir, enum zkn_kind kind, int flags,
			  int *id)
{
	struct sfd *f;

	*id = sim_new_driven(wd, m, dir, kind, flags);
	if (*id < 0)
		return NULL;
	SIM_ROOM(wd->fds, wd->nfd, wd->fdcap, 32);
	f = &wd->fds[wd->nfd++];
	memset(f, 0, sizeof(*f));
	f->mount = m;
	f->dir = dir;
	f->driven = *id;
	return f;
}

int simfs_open(struct world *wd, int m, int dir, enum zkn_kind kind, int flags)
{
	struct simfs *s = wd->fs[m];
	struct fuse_file_info fi = { 0 };
	int id, fd = wd->nfd;
	struct sfd *f = new_fd(wd, m, dir, kind, flags, &id);
	struct driven *d;

	if (!f)
		return -1;
	d = &wd->driven[id];
	d->fd = fd;
	sn_trace(&wd->net, "  fs: MKNOD + OPEN fd%d for w%d", fd, id);
	simfs_fuse_thread(wd, true);
	f->n = lockreq_node(&s->fs, wd->dirs[dir], "job", 1000);
	if (!f->n)
		abort();
	f->req = simfs_new_req(wd, fd, id, false);
	wd->asker = f->req;
	fi.flags = (kind == ZKN_SHARED ? O_RDONLY : O_WRONLY) | O_CREAT |
		   (flags & ZKL_NONBLOCK ? O_NONBLOCK : 0);
	lockreq_open(f->req, f->n, &fi);
	simfs_fuse_thread(wd, false);
	simfs_after_ask(d, f);
	return id;
}

static bool part_done(struct world *wd, struct sfd *f, struct driven *d);

/* A lock request on @f, as the kernel's FLOCK: on a lock file, through
 * fs/lockfile.c (which finds the record), else on the holder's descriptor. */
static void fd_lock(struct world *wd, struct sfd *f, struct fuse_req *r, int op, bool nb)
{
	wd->asker = r;
	simfs_fuse_thread(wd, true);
	if (f->lockfile)
		lf_lock(r, f->file, f->lfi, op, nb, 1000);
	else
		fdlock_op(r, f->n, op, nb);
	simfs_fuse_thread(wd, false);
}

int simfs_open_lockfile(struct world *wd, int m, int dir, enum zkn_kind kind, int flags)
{
	struct zklfs *fs = &wd->fs[m]->fs;
	struct fuse_file_info fi = { .flags = O_RDWR | O_CREAT };
	struct fuse_req *r0, *r;
	int id, fd = wd->nfd;
	struct sfd *f = new_fd(wd, m, dir, kind, flags, &id);
	struct driven *d;

	if (!f)
		return -1;
	f->lockfile = true;
	f->posix = sim_rng_chance(&wd->rng, 1, 2);
	d = &wd->driven[id];
	d->fd = fd;
	sn_trace(&wd->net, "  fs: OPEN fd%d of the lock file %s, then %s for w%d (%s owner)",
		 fd, wd->dirs[dir], kind == ZKN_SHARED ? "LOCK_SH" : "LOCK_EX", id,
		 f->posix ? "a POSIX" : "the description's");
	simfs_fuse_thread(wd, true);
	zkmx_lock(&fs->lock);
	f->file = node_lookup_locked(fs, wd->dirs[dir], NODE_LOCKFILE);
	zkmx_unlock(&fs->lock);
	if (!f->file)
		abort();
	f->lfi = calloc(1, sizeof(*f->lfi));
	if (!f->lfi)
		abort();
	r0 = simfs_new_req(wd, fd, -1, false);
	r0->lfopen = true;
	wd->asker = r0;
	lf_open(r0, f->file, &fi);
	if (r0->replies != 1 || !f->opened)
		sim_failf(wd, "lock file: fd%d: its OPEN waited or failed (%d)", fd, r0->result);
	f->lfi->lock_owner = (uint64_t)fd + 1;	/* its own owner */
	f->n = lf_record(fs, f->lfi, true, 1000);
	simfs_fuse_thread(wd, false);
	if (!f->n)
		abort();
	r = simfs_new_req(wd, fd, id, true);
	r->old = -1;
	f->req = r;
	fd_lock(wd, f, r, kind == ZKN_SHARED ? LOCK_SH : LOCK_EX, flags & ZKL_NONBLOCK);
	simfs_after_ask(d, f);
	return id;
}

/*
 * A lock file's descriptor closes: FLUSH by its process (a POSIX owner's
 * lock goes there), then RELEASE (the description's goes there).  Its
 * record is freed; so is the lock file's node with its last lookup.
 */
static void lockfile_close(struct world *wd, struct sfd *f)
{
	struct zklfs *fs = &wd->fs[f->mount]->fs;
	int fd = (int)(f - wd->fds);
	struct fuse_req *rf = simfs_new_req(wd, fd, -1, true);
	struct fuse_req *rr = simfs_new_req(wd, fd, -1, true);
	struct fuse_file_info fl = *f->lfi;

	fl.lock_owner = f->posix ? f->lfi->lock_owner : ~f->lfi->lock_owner;
	wd->asker = rf;
	lf_flush(rf, f->file, &fl);
	wd->asker = rr;
	lf_release(rr, f->file, f->lfi);
	free(f->lfi);
	f->lfi = NULL;
	if (rf->replies != 1 || rf->result || rr->replies != 1 || rr->result)
		sim_failf(wd, "lock file: fd%d: FLUSH or RELEASE not answered 0 once", fd);
	f->forgotten = true;		/* its record went with it */
	node_forget(fs, f->file, 1);
}

void simfs_flush(struct world *wd, int fd)
{
	struct sfd *f = &wd->fds[fd];
	struct zklfs *fs = &wd->fs[f->mount]->fs;
	struct fuse_req *r = simfs_new_req(wd, fd, -1, true);
	struct fuse_file_info fl = *f->lfi;
	struct driven *d = f->driven >= 0 ? &wd->driven[f->driven] : NULL;
	struct zkl_info info;
	char *path = NULL;
	bool went;

	if (d)
		zkl_info(d->w, &info, &path);
	fl.lock_owner = f->posix ? f->lfi->lock_owner : ~f->lfi->lock_owner;
	sn_trace(&wd->net, "  fs: FLUSH of fd%d by %s (w%d)", fd,
		 f->posix ? "its POSIX owner" : "a process sharing the description",
		 d ? d->id : -1);
	wd->asker = r;
	simfs_fuse_thread(wd, true);
	lf_flush(r, f->file, &fl);
	went = lf_record(fs, f->lfi, false, 0) != f->n;
	if (went)		/* a new one for the owner's next request */
		f->n = lf_record(fs, f->lfi, true, 1000);
	simfs_fuse_thread(wd, false);
	if (r->replies != 1 || r->result)
		sim_failf(wd, "lock file: fd%d: FLUSH not answered 0 once", fd);
	if (went && d && d->ndone) {
		part_done(wd, f, d);
		sim_check_release(wd, d, path);
	}
	free(path);
}

void simfs_interrupt(struct world *wd, struct driven *d, bool gone)
{
	struct fuse_req *r = d->req;

	sn_trace(&wd->net, "  fs: INTERRUPT of fd%d's request (w%d)%s", d->fd, d->id,
		 gone ? ": its caller dies of the signal" : "");
	r->interrupted = true;
	r->gone = gone && !r->fdreq;	/* its reply finds nobody */
	simfs_fuse_thread(wd, true);
	if (r->intr)
		r->intr(r, r->intr_arg);
	simfs_fuse_thread(wd, false);
}

/* FORGET of the MKNOD's lookup: the kernel has no more use for the node. */
static void forget(struct world *wd, struct sfd *f)
{
	if (f->forgotten)
		return;
	f->forgotten = true;
	node_forget(&wd->fs[f->mount]->fs, f->n, 1);
}

/* A descriptor that stands for @d's entry, open: at random. */
static struct sfd *fd_of_driven(struct world *wd, const struct driven *d)
{
	int n = 0, k;

	for (int i = 0; i < wd->nfd; i++)
		n += wd->fds[i].driven == d->id && !wd->fds[i].closed;
	if (!n)
		return NULL;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (int i = 0; i < wd->nfd; i++)
		if (wd->fds[i].driven == d->id && !wd->fds[i].closed && k-- == 0)
			return &wd->fds[i];
	return NULL;
}

/* @f gives @d's entry up (RELEASE, LOCK_UN): it goes with @f's open file
 * description, the one owner it has.  Return: whether it went. */
static bool part_done(struct world *wd, struct sfd *f, struct driven *d)
{
	f->driven = -1;
	d->released = true;
	wd->last_released = d->id + 1;
	return true;
}

void simfs_release(struct world *wd, struct driven *d)
{
	struct sfd *f = fd_of_driven(wd, d);

	simfs_close(wd, f ? (int)(f - wd->fds) : -1, d);
}

void simfs_close(struct world *wd, int fd, struct driven *d)
{
	struct sfd *f = fd >= 0 ? &wd->fds[fd] : NULL;
	struct zkl_info info;
	char *path = NULL;

	if (!f) {
		sim_failf(wd, "release: w%d has no descriptor open", d->id);
		return;
	}
	zkl_info(d->w, &info, &path);
	sn_trace(&wd->net, "  fs: RELEASE of fd%d (w%d, %s)", (int)(f - wd->fds), d->id,
		 path ? path : "no entry");
	/* before the call: a cohort hand-off inside it passes over the entry */
	part_done(wd, f, d);
	f->closed = true;
	simfs_fuse_thread(wd, true);
	if (f->lockfile)
		lockfile_close(wd, f);
	else
		fdlock_end(&wd->fs[f->mount]->fs, f->n);
	simfs_fuse_thread(wd, false);
	sim_check_release(wd, d, path);
	free(path);
	if (sim_rng_chance(&wd->rng, 1, 2))
		forget(wd, f);
}

/* A flock of @f joined to a wait and not answered yet, or NULL. */
static struct fuse_req *pending_join(struct world *wd, int fd)
{
	for (int i = 0; i < wd->nreq; i++)
		if (wd->reqs[i]->fd == fd && wd->reqs[i]->joined >= 0 &&
		    !wd->reqs[i]->replies && !wd->reqs[i]->interrupted)
			return wd->reqs[i];
	return NULL;
}

/*
 * FUSE_INTERRUPT of a flock that joined a wait: answered EINTR at once,
 * alone; the wait goes on.  Unless the wait's own answer reached it first
 * (a delivery while the interrupt waited for fs->lock): then that answer,
 * as the kernel takes a reply that beats the interrupt.
 */
static bool join_interrupted(struct world *wd, struct fuse_req *r)
{
	int driven = wd->fds[r->fd].driven;
	const struct driven *d = &wd->driven[r->joined];
	bool beaten;

	sn_trace(&wd->net, "  fs: INTERRUPT of fd%d's flock joined to w%d", r->fd, r->joined);
	r->interrupted = true;
	simfs_fuse_thread(wd, true);
	if (r->intr)
		r->intr(r, r->intr_arg);
	simfs_fuse_thread(wd, false);
	beaten = d->ndone == 1 && r->result == -d->result;
	if (r->replies != 1 || (r->result != EINTR && !beaten) ||
	    (wd->fds[r->fd].driven != driven && !beaten))
		sim_failf(wd, "join: fd%d's interrupted flock answered %d times, with %d",
			  r->fd, r->replies, r->result);
	return true;
}

/*
 * flock(2) on a descriptor whose request waits (another thread or process
 * sharing the description asked): LOCK_UN is 0 and the waiting one goes
 * on; LOCK_NB is EWOULDBLOCK, at once, and nothing changes.  A blocking
 * one joins the wait (lockreq_join()), answered with it later, when that
 * wait is a blocking one that satisfies it; else it is ENOLCK at once.
 * One time in three, a flock joined before is interrupted instead.
 */
static bool fdlock_busy(struct world *wd, struct sfd *f, int op, bool nb)
{
	int fd = (int)(f - wd->fds), driven = f->driven, want = op == LOCK_UN ? 0 : EWOULDBLOCK;
	const struct driven *d = &wd->driven[driven];
	bool join = op != LOCK_UN && !nb, fits, with_wait;
	struct fuse_req *r = pending_join(wd, fd);

	if (r && sim_rng_chance(&wd->rng, 1, 3))
		return join_interrupted(wd, r);
	r = simfs_new_req(wd, fd, -1, true);
	fits = !(d->flags & ZKL_NONBLOCK) &&
	       (d->kind == ZKN_EXCLUSIVE || (op == LOCK_SH) == (d->kind == ZKN_SHARED));
	if (join)
		want = fits ? -1 : ENOLCK;	/* -1: not answered yet */

	sn_trace(&wd->net, "  fs: flock(fd%d, %s%s) while its request (w%d) waits", fd,
		 op == LOCK_SH ? "LOCK_SH" : op == LOCK_EX ? "LOCK_EX" : "LOCK_UN",
		 nb ? "|LOCK_NB" : "", driven);
	/* fdlock_op() decides under its first mutex, and lockreq_join()
	 * publishes the join under the next (a lock file's record is found
	 * under the one before): the wait may be answered only from then on,
	 * before the join's interrupt is armed among others */
	wd->calm = (f->lockfile ? 2 : 1) + join;
	fd_lock(wd, f, r, op, nb);
	wd->calm = 0;
	with_wait = join && r->replies && want < 0 && d->ndone == 1 &&
		    r->result == -d->result;
	if (with_wait)
		want = r->result;	/* joined, and answered with the wait */
	if (join && want < 0)
		r->joined = driven;	/* answered with w's wait, later */
	/* a wait that ended meanwhile may leave the descriptor (a failure) */
	if ((want < 0 ? r->replies != 0 : r->replies != 1 || r->result != want) ||
	    (f->driven != driven && !with_wait))
		sim_failf(wd, "flock: fd%d: answered %d times, with %d, where %s %d was "
			  "due while w%d waits", fd, r->replies, r->result,
			  want < 0 ? "a join, not" : "at once", want, driven);
	return true;
}

/*
 * flock(2) on a descriptor that took its entry: LOCK_SH, LOCK_EX or
 * LOCK_UN, with LOCK_NB or not, on an open descriptor that holds (or lost)
 * its lock or holds nothing since a LOCK_UN.  The outcome is read from the
 * descriptor afterwards, not foretold (the ZooKeeper thread may run first),
 * and checked: the kind held asked again is 0 at once (never EDEADLK);
 * anything else gives the entry back, and LOCK_SH/LOCK_EX enqueue a new
 * waiter on the same descriptor (a waiter made for the request and never
 * used is dropped from the accounts).
 */
bool act_fdlock(struct world *wd)
{
	static const int ops[] = { LOCK_SH, LOCK_EX, LOCK_UN };
	struct sfd *f;
	struct driven *old = NULL;
	int n = 0, k, op, id = -1, fd;
	bool nb, kept;
	struct fuse_req *r;

	for (int i = 0; i < wd->nfd; i++)
		n += wd->fds[i].opened && !wd->fds[i].closed;
	if (!n)
		return false;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (f = wd->fds;; f++)
		if (f->opened && !f->closed && k-- == 0)
			break;
	fd = (int)(f - wd->fds);
	op = ops[sim_rng_below(&wd->rng, 3)];
	nb = sim_rng_chance(&wd->rng, 1, 3);
	if (f->driven >= 0)
		old = &wd->driven[f->driven];
	if (old && old->ndone == 0)
		return fdlock_busy(wd, f, op, nb);
	if (op != LOCK_UN) {
		id = sim_new_driven(wd, f->mount, f->dir,
				op == LOCK_EX ? ZKN_EXCLUSIVE : ZKN_SHARED, nb ? ZKL_NONBLOCK : 0);
		if (id < 0)
			return false;
		wd->driven[id].fd = fd;
	}
	sn_trace(&wd->net, "  fs: flock(fd%d, %s%s), which stands for w%d", fd,
		 op == LOCK_SH ? "LOCK_SH" : op == LOCK_EX ? "LOCK_EX" : "LOCK_UN",
		 nb ? "|LOCK_NB" : "", old ? old->id : -1);
	r = simfs_new_req(wd, fd, id, true);
	r->old = old ? old->id : -1;
	if (id >= 0) {
		f->driven = id;
		f->req = r;
	}
	fd_lock(wd, f, r, op, nb);
	kept = old && simfs_stands_for(wd, f, old->id);
	if (r->replies && r->result == EDEADLK)
		sim_failf(wd, "flock: fd%d: EDEADLK", fd);
	if (kept && r->replies && r->result == 0 && !simfs_believes(wd, old))
		sim_failf(wd, "flock: fd%d: the kind held answered 0 on a lock that is lost",
			  fd);
	if (kept) {
		f->driven = old->id;	/* the kind held, or EIO */
	} else if (old) {		/* given back inside fdlock_op() */
		old->released = true;
		wd->last_released = old->id + 1;
		if (f->driven == old->id)
			f->driven = -1;
		/* not sim_check_release(): the ZooKeeper thread may have run
		 * since zkl_release() returned, inside fdlock_op() */
	}
	if (id >= 0)
		simfs_after_ask(&wd->driven[id], f);
	if (kept && r->replies && r->result == EIO && simfs_believes(wd, old))
		sim_failf(wd, "flock: fd%d: EIO on a lock that holds", fd);
	if ((kept || op == LOCK_UN) &&
	    (r->replies != 1 || (r->result != 0 && !(kept && r->result == EIO))))
		sim_failf(wd, "flock: fd%d: %s answered %d times, with %d, where 0 at once "
			  "was due", fd, op == LOCK_UN ? "LOCK_UN" : "the kind held",
			  r->replies, r->result);
	return true;
}

/* the holder's data ---------------------------------------------------------- */

/*
 * The lock node a data request on @f goes to, and the holder's
 * descriptor in *@fi: the entry's own; on a lock file, the record that
 * holds through it (of the writing process's owner for a WRITE), as
 * fs/fdops.c finds it.  NULL if a lock file's descriptor holds through
 * none: fs/fdops.c answers that itself.
 */
static struct node *data_node(struct world *wd, struct sfd *f, bool write,
			      struct fuse_file_info *fi)
{
	memset(fi, 0, sizeof(*fi));
	fi->fh = FH_HOLDER;
	if (!f->lockfile)
		return f->n;
	*fi = *f->lfi;
	fi->fh = FH_HOLDER;
	return lf_holder(&wd->fs[f->mount]->fs, f->lfi, write ? f->lfi->lock_owner : 0,
			 false);
}

/* A new version of @d's data, written while its mount had @drops losses. */
static void new_version(struct world *wd, struct driven *d, size_t len)
{
	d->wlen = (int)len;
	d->wversions++;
	d->wdrops = wd->net.mounts[d->mount].drops;
	sn_trace(&wd->net, "        (w%d's version %d: %d bytes)", d->id, d->wversions,
		 d->wlen);
}

/* @d's data, as a WRITE of @size bytes at @off leaves it (fs/wbuf.c:
 * from offset 0 it starts afresh, further on it continues as in a file) */
static void model_write(struct world *wd, struct driven *d, off_t off, const char *buf,
			size_t size)
{
	size_t end = (size_t)off + size, len = off == 0 ? 0 : (size_t)d->wlen;
	size_t now = end > len ? end : len;

	d->wbuf = realloc(d->wbuf, now ? now : 1);
	if (!d->wbuf)
		abort();
	if ((size_t)off > len)
		memset(d->wbuf + len, 0, (size_t)off - len);
	memcpy(d->wbuf + off, buf, size);
	new_version(wd, d, now);
}

/* ... and a truncate to @size */
static void model_truncate(struct world *wd, struct driven *d, size_t size)
{
	d->wbuf = realloc(d->wbuf, size ? size : 1);
	if (!d->wbuf)
		abort();
	if (size > (size_t)d->wlen)
		memset(d->wbuf + d->wlen, 0, size - (size_t)d->wlen);
	new_version(wd, d, size);
}

/*
 * A WRITE or SETATTR @r on @f was answered inside its call, as the
 * holder's data is changed in memory: once, and taken only while the
 * descriptor stands for a granted waiter (refused EIO if its lock is
 * lost, ENOLCK if it holds none).  Return: the waiter whose data it
 * changed, or NULL.
 */
static struct driven *data_answered(struct world *wd, struct sfd *f, struct fuse_req *r,
				    const char *what)
{
	int fd = (int)(f - wd->fds);
	struct driven *d = f->driven >= 0 ? &wd->driven[f->driven] : NULL;

	if (r->replies != 1) {
		sim_failf(wd, "data: fd%d: a %s answered %d times inside its call", fd, what,
			  r->replies);
		return NULL;
	}
	if (r->result) {
		if (r->result != EIO && r->result != ENOLCK)
			sim_failf(wd, "data: fd%d: a %s answered %d", fd, what, -r->result);
		return NULL;
	}
	if (!d || d->ndone != 1 || d->result != 0)
		sim_failf(wd, "data: fd%d: a %s taken while the descriptor holds nothing",
			  fd, what);
	return wd->fail[0] ? NULL : d;
}

/* A request of @op on @f, for nobody's lock. */
static struct fuse_req *data_req(struct world *wd, struct sfd *f, enum sreq_op op)
{
	struct fuse_req *r = simfs_new_req(wd, (int)(f - wd->fds), -1, true);

	r->op = op;
	wd->asker = r;
	return r;
}

int simfs_write(struct world *wd, int fd, off_t off, const char *buf, size_t size)
{
	struct sfd *f = &wd->fds[fd];
	struct fuse_file_info fi;
	struct node *n = data_node(wd, f, true, &fi);
	struct fuse_req *r;
	struct driven *d;

	sn_trace(&wd->net, "  fs: WRITE of %zu bytes \"%.*s\" at %lld on fd%d (w%d)", size,
		 (int)size, buf, (long long)off, fd, f->driven);
	if (!n)
		return -1;
	r = data_req(wd, f, SR_WRITE);
	simfs_fuse_thread(wd, true);
	zklfs_wbuf_write(r, n, buf, size, off, &fi);
	simfs_fuse_thread(wd, false);
	d = data_answered(wd, f, r, "WRITE");
	if (d && r->size != size)
		sim_failf(wd, "data: fd%d: a WRITE of %zu bytes answered %zu", fd, size, r->size);
	else if (d)
		model_write(wd, d, off, buf, size);
	return r->result;
}

int simfs_truncate(struct world *wd, int fd, off_t size)
{
	struct sfd *f = &wd->fds[fd];
	struct fuse_file_info fi;
	struct node *n = data_node(wd, f, true, &fi);
	struct fuse_req *r;
	struct driven *d;

	sn_trace(&wd->net, "  fs: SETATTR of fd%d (w%d): size %lld", fd, f->driven,
		 (long long)size);
	if (!n)
		return -1;
	r = data_req(wd, f, SR_SETATTR);
	r->size = (size_t)size;
	simfs_fuse_thread(wd, true);
	zklfs_wbuf_setsize(r, n, size, &fi);
	simfs_fuse_thread(wd, false);
	d = data_answered(wd, f, r, "SETATTR");
	if (d)
		model_truncate(wd, d, (size_t)size);
	return r->result;
}

void simfs_fsync(struct world *wd, int fd)
{
	struct sfd *f = &wd->fds[fd];
	struct fuse_file_info fi;
	struct node *n = data_node(wd, f, false, &fi);
	const struct driven *d = f->driven >= 0 ? &wd->driven[f->driven] : NULL;
	struct fuse_req *r;

	sn_trace(&wd->net, "  fs: FSYNC of fd%d (w%d)", fd, f->driven);
	if (!n)
		return;
	r = data_req(wd, f, SR_FSYNC);
	if (d && d->ndone == 1 && d->result == 0) {
		r->holder = d->id;
		r->version = d->wversions;
	}
	simfs_fuse_thread(wd, true);
	zklfs_wbuf_fsync(r, n, &fi);
	simfs_fuse_thread(wd, false);
}

/* Is @f open, and (@held) does it stand for a granted waiter? */
static bool data_fd(const struct world *wd, const struct sfd *f, bool held)
{
	const struct driven *d = f->driven >= 0 ? &wd->driven[f->driven] : NULL;

	return f->opened && !f->closed &&
	       (!held || (d && d->ndone == 1 && d->result == 0 && !d->released));
}

/*
 * The holder's data: on an open descriptor that stands for a granted
 * waiter (one time in six any open one, holding or not), a WRITE of a few
 * letters (from offset 0 half the time, else at or a little past the end
 * of what it wrote), a truncate, or an FSYNC.
 */
bool act_fsdata(struct world *wd)
{
	bool held = !sim_rng_chance(&wd->rng, 1, 6);
	int n = 0, k, fd, len;
	uint32_t op;
	struct sfd *f;

	for (int i = 0; i < wd->nfd; i++)
		n += data_fd(wd, &wd->fds[i], held);
	if (!n)
		return false;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (f = wd->fds;; f++)
		if (data_fd(wd, f, held) && k-- == 0)
			break;
	fd = (int)(f - wd->fds);
	len = f->driven >= 0 ? wd->driven[f->driven].wlen : 0;
	op = sim_rng_below(&wd->rng, 6);
	if (op < 3) {
		char buf[8];
		size_t size = 1 + sim_rng_below(&wd->rng, sizeof(buf));
		off_t off = sim_rng_chance(&wd->rng, 1, 2) ? 0 :
			    (off_t)sim_rng_below(&wd->rng, (uint32_t)len + 3);

		for (size_t i = 0; i < size; i++)
			buf[i] = (char)('a' + sim_rng_below(&wd->rng, 26));
		simfs_write(wd, fd, off, buf, size);
	} else if (op == 3) {
		simfs_truncate(wd, fd, (off_t)sim_rng_below(&wd->rng, (uint32_t)len + 4));
	} else {
		simfs_fsync(wd, fd);
	}
	return true;
}

/* one zop: an entry's READ, a lock file's MKNOD --------------------------------- */

/* The kernel forgets the nodes of the zops answered since: the entry a
 * READ looked up, the lock file a MKNOD made. */
static void zops_forget(struct world *wd)
{
	for (int k = 0; k < wd->nzops; k++) {
		struct szop *rd = &wd->zops[k];

		if (rd->node && rd->replies) {
			node_forget(&wd->fs[rd->mount]->fs, rd->node, 1);
			rd->node = NULL;
		}
	}
}

/* A new zop's record for a request on mount @m about @path, due @deadline
 * from now (as zpend_start() sets it); its request in *@r. */
static int new_zop(struct world *wd, int m, const char *path, int deadline, bool mknod,
		   struct fuse_req **r)
{
	int k = wd->nzops, period = deadline / 10 > 1000 ? 1000 : deadline / 10;
	struct szop *rd;

	SIM_ROOM(wd->zops, wd->nzops, wd->zopcap, 16);
	rd = &wd->zops[wd->nzops++];
	memset(rd, 0, sizeof(*rd));
	rd->mknod = mknod;
	rd->mount = m;
	snprintf(rd->path, sizeof(rd->path), "%s", path);
	rd->since = wd->net.now;
	rd->due = rd->since + (uint64_t)(deadline - period);
	*r = simfs_new_req(wd, -1, -1, false);
	(*r)->op = mknod ? SR_MKNOD : SR_READ;
	(*r)->zop = k;
	wd->asker = *r;
	return k;
}

/* A call into fs/ on the FUSE thread of mount @m that starts a zop due
 * @deadline from now (zpend_timeout() for it alone: the other requests
 * keep the session timeout), and its end. */
static void zop_call(struct world *wd, int m, int deadline)
{
	zpend_timeout(&wd->fs[m]->fs, deadline);
	simfs_fuse_thread(wd, true);
}

static void zop_call_done(struct world *wd, int m)
{
	simfs_fuse_thread(wd, false);
	zpend_timeout(&wd->fs[m]->fs, wd->fs[m]->t.ops->timeout_ms(wd->fs[m]->t.ctx));
}

int simfs_read(struct world *wd, int m, const char *path, off_t off, size_t size,
	       int deadline)
{
	struct zklfs *fs = &wd->fs[m]->fs;
	struct fuse_file_info fi = { .fh = FH_PLAIN };
	struct fuse_req *r;
	int k = new_zop(wd, m, path, deadline, false, &r);
	struct szop *rd = &wd->zops[k];

	rd->off = off;
	rd->size = size;
	sn_trace(&wd->net, "  fs: LOOKUP + READ r%d of %s on m%d: %zu bytes at %lld, due at "
		 "%llu", k, path, m, size, (long long)off, (unsigned long long)rd->due);
	sim_zop_asked(wd, k);
	zkmx_lock(&fs->lock);
	rd->node = node_lookup_locked(fs, path, NODE_FILE);
	zkmx_unlock(&fs->lock);
	if (!rd->node)
		abort();
	zop_call(wd, m, deadline);
	zklfs_read(r, rd->node, size, off, &fi);
	zop_call_done(wd, m);
	return k;
}

void simfs_read_interrupt(struct world *wd, int k, enum zklfs_signal sig)
{
	struct fuse_req *r = NULL;

	for (int i = wd->nreq - 1; i >= 0 && !r; i--)
		if (wd->reqs[i]->op == SR_READ && wd->reqs[i]->zop == k)
			r = wd->reqs[i];
	if (!r)
		abort();
	sn_trace(&wd->net, "  fs: FUSE_INTERRUPT of r%d: its signal %s its caller", k,
		 sig == ZKLFS_SIG_ENDS ? "ends" : sig == ZKLFS_SIG_CAUGHT ? "is caught by" :
		 "stops");
	r->sig = sig;
	r->interrupted = true;
	wd->zops[k].interrupted = true;
	wd->zops[k].sig = (int)sig;
	if (r->intr) {		/* else at its registration (on_interrupt()) */
		simfs_fuse_thread(wd, true);
		r->intr(r, r->intr_arg);
		simfs_fuse_thread(wd, false);
	}
}

/* A READ that waits, not interrupted yet (the kernel sends one interrupt). */
static bool read_waits(const struct szop *rd)
{
	return !rd->mknod && !rd->replies && !rd->interrupted;
}

/* An entry of either lock the server has now, or (one time in six, or
 * if there is none) one it had: a path from @wd's records. */
static const char *entry_to_read(struct world *wd)
{
	static char path[64];
	int n = 0, k;

	if (!sim_rng_chance(&wd->rng, 1, 6)) {
		for (int i = 0; i < wd->net.zk.nnodes; i++)
			for (int j = 0; j < SIM_DIRS; j++)
				n += sim_dir_of(wd->net.zk.nodes[i].path, wd->dirs[j]);
		if (n) {
			k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
			for (int i = 0; i < wd->net.zk.nnodes; i++)
				for (int j = 0; j < SIM_DIRS; j++)
					if (sim_dir_of(wd->net.zk.nodes[i].path, wd->dirs[j]) &&
					    k-- == 0) {
						snprintf(path, sizeof(path), "%s",
							 wd->net.zk.nodes[i].path);
						return path;
					}
		}
	}
	n = 0;
	for (int i = 0; i < wd->ndriven; i++)
		n += wd->driven[i].path[0] != '\0';
	if (!n)
		return NULL;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)n);
	for (int i = 0; i < wd->ndriven; i++)
		if (wd->driven[i].path[0] && k-- == 0)
			return wd->driven[i].path;
	return NULL;
}

/*
 * A READ of an entry by a reader on any mount but a lockfiles one (whose
 * entries are no files): one the server has, or had; from offset 0 three
 * times in four, the whole of it mostly; due in 20 to 400 steps.  Or, one
 * time in four, FUSE_INTERRUPT of a READ that waits, whose caller's
 * signal ends it (half the time), is caught, or only stops it.
 */
bool act_fsread(struct world *wd)
{
	int waiting = 0, m, k;
	const char *path;
	off_t off;

	zops_forget(wd);
	for (int i = 0; i < wd->nzops; i++)
		waiting += read_waits(&wd->zops[i]);
	if (waiting && sim_rng_chance(&wd->rng, 1, 4)) {
		static const enum zklfs_signal sigs[] = { ZKLFS_SIG_ENDS, ZKLFS_SIG_ENDS,
							  ZKLFS_SIG_CAUGHT, ZKLFS_SIG_STOPS };

		k = (int)sim_rng_below(&wd->rng, (uint32_t)waiting);
		for (int i = 0; i < wd->nzops; i++)
			if (read_waits(&wd->zops[i]) && k-- == 0) {
				simfs_read_interrupt(wd, i, sigs[sim_rng_below(&wd->rng, 4)]);
				break;
			}
		return true;
	}
	path = entry_to_read(wd);
	if (!path)
		return false;
	m = (int)sim_rng_below(&wd->rng, SIM_MOUNTS);
	if (m == wd->lockfiles)
		m = (m + 1) % SIM_MOUNTS;
	off = sim_rng_chance(&wd->rng, 1, 4) ? (off_t)(1 + sim_rng_below(&wd->rng, 3)) : 0;
	simfs_read(wd, m, path, off, sim_rng_chance(&wd->rng, 1, 4) ? 3 : 4096,
		   20 + (int)sim_rng_below(&wd->rng, 381));
	return true;
}

int simfs_mknod(struct world *wd, int m, const char *name, int deadline)
{
	struct zklfs *fs = &wd->fs[m]->fs;
	struct fuse_req *r;
	char path[64];
	int k;

	snprintf(path, sizeof(path), "%s/%s", fs->root->path, name);
	k = new_zop(wd, m, path, deadline, true, &r);
	sn_trace(&wd->net, "  fs: MKNOD r%d of the lock file %s on m%d, due at %llu", k, path,
		 m, (unsigned long long)wd->zops[k].due);
	sim_zop_asked(wd, k);
	zop_call(wd, m, deadline);
	lf_mknod(r, fs->root, name);
	zop_call_done(wd, m);
	return k;
}

/* A MKNOD of a new lock file on the lockfiles mount (O_CREAT of a name
 * nobody made), due in 20 to 400 steps. */
bool act_fsmknod(struct world *wd)
{
	char name[16];

	if (wd->lockfiles < 0)
		return false;
	zops_forget(wd);
	snprintf(name, sizeof(name), "f%d", wd->nzops);
	simfs_mknod(wd, wd->lockfiles, name, 20 + (int)sim_rng_below(&wd->rng, 381));
	return true;
}

/* After the end: every request about the holder's data was answered once. */
void simfs_check_data(struct world *wd)
{
	for (int i = 0; i < wd->nreq; i++)
		if ((wd->reqs[i]->op == SR_WRITE || wd->reqs[i]->op == SR_SETATTR ||
		     wd->reqs[i]->op == SR_FSYNC) && wd->reqs[i]->replies != 1)
			sim_failf(wd, "data: fd%d's %s answered %d times", wd->reqs[i]->fd,
				  wd->reqs[i]->op == SR_FSYNC ? "FSYNC" : "WRITE or SETATTR",
				  wd->reqs[i]->replies);
}

void simfs_check_joins(struct world *wd)
{
	for (int i = 0; i < wd->nreq; i++)
		if (wd->reqs[i]->joined >= 0 && wd->reqs[i]->replies != 1)
			sim_failf(wd, "join: fd%d's flock joined to w%d answered %d times",
				  wd->reqs[i]->fd, wd->reqs[i]->joined, wd->reqs[i]->replies);
}

void simfs_end(struct world *wd)
{
	zops_forget(wd);
	for (int i = 0; i < wd->nfd; i++) {
		struct sfd *f = &wd->fds[i];

		if (f->opened && !f->closed && f->driven < 0) {
			sn_trace(&wd->net, "  fs: RELEASE of fd%d (holds nothing)", i);
			f->closed = true;
			if (f->lockfile) {
				lockfile_close(wd, f);
				continue;
			}
			fdlock_end(&wd->fs[f->mount]->fs, f->n);	/* it held nothing */
		}
		if (f->closed)
			forget(wd, f);
	}
}
