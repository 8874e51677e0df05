/*
 * fs/fdops.c - which handler a request on a file takes: a lock file's
 * (fs/lockfile.h) on a NODE_LOCKFILE inode, else an entry's (fs/lockops.c,
 * fs/flock.c, fs/read.c, fs/wbuf.c).  A lock file's read, write, fsync
 * and poll go to the entry handlers with the lock node of the record that
 * holds through the descriptor, as the holder's descriptor of that entry.
 *
 * Named by fs/ops.c's table only.  FUSE thread.
 */
#include "fs/handlers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "fs/fdlock.h"
#include "abi/zklockfs.h"
#include "fs/lockfile.h"
#include "fs/lockreq.h"
#include "fs/observe.h"
#include "fs/state.h"
#include "fs/wbuf.h"
#include "fs/watchdog.h"
#include "zk/log.h"

/*
 * A lock file is one lock: a lock from any offset to its end is the whole
 * file's, as lockf(3) asks from the current offset (F_ULOCK after the pid
 * is written).  A range that ends short of the end is a part: EINVAL.
 */
static bool to_the_end(const struct flock *lk)
{
	return lk->l_len == 0 && lk->l_start >= 0;
}

static bool lockfile(fuse_req_t req, fuse_ino_t ino, struct node **n)
{
	*n = node_of(fuse_req_userdata(req), ino);
	return (*n)->type == NODE_LOCKFILE;
}

/* The node through which @fi, a descriptor of @ino, holds its lock (a lock
 * file's holder's entry, or the entry itself for its holder's descriptor),
 * or NULL if it holds none: what the ioctls on a lock ask about. */
static struct node *held_through(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n;

	if (lockfile(req, ino, &n))
		return lf_holder(fuse_req_userdata(req), fi, 0, true);
	return fi->fh == FH_HOLDER ? n : NULL;
}

/* @fi as the holder's descriptor of a record's lock node. */
static struct fuse_file_info as_holder(const struct fuse_file_info *fi)
{
	struct fuse_file_info h = *fi;

	h.fh = FH_HOLDER;
	return h;
}

void zklfs_fd_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, dev_t rdev)
{
	struct zklfs *fs = fuse_req_userdata(req);

	if (fs->conf->lockfiles && S_ISREG(mode))
		lf_mknod(req, node_of(fs, parent), name);
	else
		zklfs_mknod(req, parent, name, mode, rdev);
}

/* Is @ino a .holders node (fs/observe.h)? */
static bool holders(fuse_req_t req, fuse_ino_t ino, struct node **n)
{
	*n = node_of(fuse_req_userdata(req), ino);
	return (*n)->type == NODE_HOLDERS;
}

void zklfs_fd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n;

	if (lockfile(req, ino, &n))
		lf_open(req, n, fi);
	else if (holders(req, ino, &n))
		obs_open(req, n, fi);
	else
		zklfs_open(req, ino, fi);
}

void zklfs_fd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n;

	if (lockfile(req, ino, &n))
		lf_release(req, n, fi);
	else if (holders(req, ino, &n))
		obs_release(req, fi);
	else
		zklfs_release(req, ino, fi);
}

/* Entries' descriptors are opened noflush: only a lock file's come here. */
void zklfs_fd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n;

	if (lockfile(req, ino, &n))
		lf_flush(req, n, fi);
	else
		fuse_reply_err(req, 0);
}

void zklfs_fd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct fuse_file_info h;
	struct node *n, *ln;

	if (holders(req, ino, &n)) {
		obs_read(req, size, off, fi);
		return;
	}
	if (!lockfile(req, ino, &n)) {
		zklfs_read(req, n, size, off, fi);
		return;
	}
	ln = lf_holder(n->fs, fi, fi->lock_owner, false);
	if (!ln) {			/* whoever holds it now */
		lf_read(req, n, size, off);
		return;
	}
	h = as_holder(fi);		/* its own entry: what it wrote */
	zklfs_read(req, ln, size, off, &h);
}

void zklfs_fd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		    off_t off, struct fuse_file_info *fi)
{
	struct fuse_file_info h;
	struct node *n, *ln;

	if (holders(req, ino, &n)) {
		fuse_reply_err(req, EBADF);	/* opened read-only, always */
		return;
	}
	if (!lockfile(req, ino, &n)) {
		zklfs_wbuf_write(req, n, buf, size, off, fi);
		return;
	}
	ln = lf_holder(n->fs, fi, fi->lock_owner, false);
	if (!ln) {
		zklog(LOG_NOTICE, "write to a lock file refused: the descriptor holds no lock");
		fuse_reply_err(req, EACCES);
		return;
	}
	h = as_holder(fi);
	zklfs_wbuf_write(req, ln, buf, size, off, &h);
}

void zklfs_fd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi)
{
	struct fuse_file_info h;
	struct node *n, *ln;

	(void)datasync;			/* the data is all there is */
	if (!lockfile(req, ino, &n)) {
		zklfs_wbuf_fsync(req, n, fi);
		return;
	}
	ln = lf_holder(n->fs, fi, 0, false);
	if (!ln) {			/* "am I still the holder?": no */
		fuse_reply_err(req, ENOLCK);
		return;
	}
	h = as_holder(fi);
	zklfs_wbuf_fsync(req, ln, &h);
}

void zklfs_fd_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph)
{
	struct fuse_file_info h;
	struct node *n, *ln = NULL;

	if (holders(req, ino, &n)) {
		obs_poll(req, fi, ph);
		return;
	}
	if (lockfile(req, ino, &n))
		ln = lf_holder(n->fs, fi, 0, false);
	if (!ln) {
		zklfs_poll(req, ino, fi, ph);
		return;
	}
	h = as_holder(fi);
	zklfs_poll(req, ln->ino, &h, ph);
}

void zklfs_fd_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    int op)
{
	struct node *n;

	if (lockfile(req, ino, &n))
		lf_lock(req, n, fi, op & (LOCK_SH | LOCK_EX | LOCK_UN), op & LOCK_NB,
			fuse_req_ctx(req)->uid);
	else
		zklfs_flock(req, ino, fi, op);
}

void zklfs_fd_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock)
{
	struct node *n, *ln;

	if (!lockfile(req, ino, &n) || !to_the_end(lock)) {
		zklfs_getlk(req, ino, fi, lock);	/* EINVAL for a part */
		return;
	}
	ln = lf_record(n->fs, fi, false, 0);
	if (ln) {		/* the owner's own entry is not its blocker */
		struct fuse_file_info h = as_holder(fi);

		zklfs_getlk(req, ln->ino, &h, lock);
	} else {
		zklfs_getlk(req, n->ino, NULL, lock);
	}
}

void zklfs_fd_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int sleep)
{
	struct node *n;

	if (!lockfile(req, ino, &n)) {
		zklfs_setlk(req, ino, fi, lock, sleep);
	} else if (!to_the_end(lock)) {
		zklog(LOG_NOTICE, "lock refused: a record lock on part of a lock file");
		fuse_reply_err(req, EINVAL);
	} else {
		lf_lock(req, n, fi, fdlock_of(lock->l_type), !sleep, fuse_req_ctx(req)->uid);
	}
}

/* ZKLFS_IOC_WATCHDOG of the descriptor holding through @ln (or NULL). */
static void watchdog_ioctl(fuse_req_t req, struct node *ln)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct zklfs_ioc_watchdog w;
	struct zkl_info own;
	char *dir = NULL;
	int err = -ENOLCK;

	if (ln && lockreq_own_state(fs, ln, &own) && !own.lost) {	/* held */
		zkmx_lock(&fs->lock);
		dir = ln->lr ? strdup(ln->lr->dir) : NULL;
		zkmx_unlock(&fs->lock);
		err = !dir ? -ENOMEM : zklfs_watchdog_info(fs, zklfs_session_slot(fs,
						zklfs_session(fs, dir)), &w);
		free(dir);
	}
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_ioctl(req, 0, &w, sizeof(w));
}

/* ZKLFS_IOC_SETSTATE, ZKLFS_IOC_RUN: fenced writes of the lock @fi holds
 * (fs/state.h). */
static void state_ioctl(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
			unsigned int cmd, const void *in_buf, size_t in_bufsz,
			size_t out_bufsz)
{
	struct zklfs *fs = fuse_req_userdata(req);
	const struct zklfs_ioc_state *st = in_buf;
	struct node *ln;

	if (cmd == ZKLFS_IOC_RUN ? in_bufsz < sizeof(struct zklfs_ioc_run) ||
				   out_bufsz < sizeof(struct zklfs_ioc_run)
				 : in_bufsz < sizeof(*st) || st->len > ZKLFS_STATE_MAX) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ln = held_through(req, ino, fi);
	if (cmd == ZKLFS_IOC_RUN)
		zklfs_state_run(req, fs, ln, in_buf);
	else
		zklfs_state_set(req, fs, ln, st->data, st->len);
}

/* ZKLFS_IOC_TELL: the holder of @fi handles a loss itself (abi/zklockfs.h). */
static void tell_ioctl(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n;

	if (lockfile(req, ino, &n)) {
		lf_tell(fs, fi);
	} else if (fi->fh == FH_HOLDER && n->lr) {
		lockreq_tell(fs, n);
	} else {
		fuse_reply_err(req, ENOLCK);	/* a reader's: nothing to hold */
		return;
	}
	fuse_reply_ioctl(req, 0, NULL, 0);
}

void zklfs_fd_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		    struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		    size_t in_bufsz, size_t out_bufsz)
{
	struct zklfs *fs = fuse_req_userdata(req);
	bool token = cmd == ZKLFS_IOC_TOKEN;
	struct zklfs_ioc_text t;
	struct node *ln;
	int len;

	(void)arg, (void)flags;
	if (cmd == ZKLFS_IOC_TELL) {
		tell_ioctl(req, ino, fi);
		return;
	}
	if (cmd == ZKLFS_IOC_SETSTATE || cmd == ZKLFS_IOC_RUN) {
		state_ioctl(req, ino, fi, cmd, in_buf, in_bufsz, out_bufsz);
		return;
	}
	if ((cmd != ZKLFS_IOC_STATE && !token && cmd != ZKLFS_IOC_WATCHDOG &&
	     cmd != ZKLFS_IOC_LOSS && cmd != ZKLFS_IOC_KIND) ||
	    out_bufsz < (cmd == ZKLFS_IOC_WATCHDOG ? sizeof(struct zklfs_ioc_watchdog)
						   : sizeof(t))) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	ln = held_through(req, ino, fi);
	if (cmd == ZKLFS_IOC_WATCHDOG) {
		watchdog_ioctl(req, ln);
		return;
	}
	memset(&t, 0, sizeof(t));
	if (cmd == ZKLFS_IOC_LOSS) {
		struct zkl_info own;

		if (ln && lockreq_own_state(fs, ln, &own) && own.lost && own.loss < ZKM_LOSS_N) {
			snprintf(t.text, sizeof(t.text), "%s", zkm_loss_name(own.loss));
			fuse_reply_ioctl(req, 0, &t, sizeof(t));
		} else {
			fuse_reply_err(req, ENOLCK);
		}
		return;
	}
	if (cmd == ZKLFS_IOC_KIND) {
		enum zkn_kind kind;

		if (ln && lockreq_held_kind(fs, ln, &kind)) {
			snprintf(t.text, sizeof(t.text), "%s",
				 kind == ZKN_SHARED ? "shared" : "exclusive");
			fuse_reply_ioctl(req, 0, &t, sizeof(t));
		} else {
			fuse_reply_err(req, ENOLCK);
		}
		return;
	}
	len = ln ? lockreq_own_text(fs, ln, token, t.text, sizeof(t.text)) : -1;
	if (len < 0 && !token && ln && lockreq_waiting(fs, ln))
		len = snprintf(t.text, sizeof(t.text), "waiting");
	if (len < 0)
		fuse_reply_err(req, ENOLCK);
	else
		fuse_reply_ioctl(req, 0, &t, sizeof(t));
}
