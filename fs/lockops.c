/*
 * fs/lockops.c - taking and giving back a lock.
 *
 * open(O_CREAT) of a new NAME reaches us as MKNOD, under the directory's
 * lock, then OPEN, outside it (we have no create op, see docs/DESIGN.md).
 * MKNOD answers at once with a fresh lock node and touches no ZooKeeper, so
 * mknod(2) alone leaves nothing behind; OPEN enqueues and is answered later,
 * from the engine's done callback, when the lock is granted or refused.  A
 * flock(2)/fcntl(2) request on the holder's descriptor (fs/flock.c) that
 * must enqueue anew is answered the same way.
 */
#include "fs/zklockfs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs/tid.h"
#include "zk/log.h"

void zklfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *p = node_of(fs, parent), *n;
	struct fuse_entry_param e;
	int err;

	(void)rdev;
	if (!S_ISREG(mode)) {
		zkl_log(LOG_NOTICE, "mknod '%s' refused: only regular files are lock entries", name);
		fuse_reply_err(req, EPERM);
		return;
	}
	/* the longer marker decides, as OPEN has not told the kind yet */
	err = zkn_check_entry_name(name, fs->conf->naming, ZKL_SHARED);
	if (err) {
		zkl_log(LOG_NOTICE, "lock name '%.64s' refused: %s", name, strerror(-err));
		fuse_reply_err(req, -err);
		return;
	}
	lsc_busy(fs, p->path);
	zkl_mutex_lock(&fs->lock);
	n = node_new_pending_locked(fs, p->path, name);
	if (n)
		n->uid = fuse_req_ctx(req)->uid;
	zkl_mutex_unlock(&fs->lock);
	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	zklfs_pending_attr(fs, &e.attr, n);
	if (fuse_reply_entry(req, &e) != 0)
		node_forget(fs, n, 1);
}

/* Read up to @size - 1 bytes of /proc/@pid/@what into @buf: the length. */
static size_t proc_read(pid_t pid, const char *what, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, size - 1);
	close(fd);
	n = n < 0 ? 0 : n;
	buf[n] = '\0';
	return (size_t)n;
}

/*
 * When thread @tid started (fs/tid.h): 0 if unknown.  /proc/TID/stat is
 * the thread's own even when TID is not a process: it is found by its id.
 */
static unsigned long long thread_start(pid_t tid)
{
	char stat[1024];

	proc_read(tid, "stat", stat, sizeof(stat));
	return zklfs_stat_start(stat);
}

/* The process of thread @tid (FUSE tells the thread).  A thread-group
 * leader is its own process, and only a leader has a pidfd: one syscall
 * instead of formatting /proc/TID/status, which cost more than the rest
 * of an open. */
static pid_t thread_group(pid_t tid)
{
	char status[2048], *t;
	int fd = (int)syscall(SYS_pidfd_open, tid, 0);

	if (fd >= 0) {
		close(fd);
		return tid;
	}
	proc_read(tid, "status", status, sizeof(status));
	t = strstr(status, "\nTgid:");
	return t ? (pid_t)atoi(t + 6) : tid;
}

/* The holder lines of a new entry (docs/SPEC.md: host, pid, uid, cmd, since, mount). */
static int holder_data(struct zklfs *fs, const struct fuse_ctx *ctx, pid_t pid,
		       char *buf, size_t size)
{
	char cmd[64], since[32];
	time_t now = time(NULL);
	struct tm tm;
	size_t n = proc_read(pid, "comm", cmd, sizeof(cmd));

	/*
	 * The process's name only: its arguments may hold secrets, and every
	 * user and ZooKeeper client reads this.  A name is whatever the
	 * process set (prctl): no control character may break the lines.
	 */
	while (n > 0 && cmd[n - 1] == '\n')
		n--;
	cmd[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)cmd[i] < 0x20 || cmd[i] == 0x7f)
			cmd[i] = '?';
	gmtime_r(&now, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return snprintf(buf, size, "host=%s\npid=%d\nuid=%u\ncmd=%s\nsince=%s\nmount=%s\n",
			fs->host, (int)pid, (unsigned)ctx->uid, cmd, since,
			fs->mountpoint);
}

/*
 * Answer the request waiting on @n with @err, or with the lock: its OPEN
 * (the holder's descriptor), or with @lockreq a flock/fcntl request on that
 * descriptor (0).  A refused request leaves @n holding nothing.
 */
static void lock_answer(struct zklfs *fs, struct node *n, fuse_req_t req,
			bool lockreq, int err)
{
	struct fuse_file_info fi;
	struct zkl_info info;
	char *path;

	if (err) {
		if (err != -EAGAIN && err != -EINTR)
			zkl_log(LOG_WARNING, "lock '%s' in %s failed: %s", n->name,
				n->dir, strerror(-err));
		node_drop_lock(fs, n);		/* ends inflight */
		fuse_reply_err(req, -err);
		return;
	}
	zkl_info(n->w, &info, &path);
	zkl_mutex_lock(&fs->lock);
	n->inflight = false;
	n->granted = true;
	if (info.lost)			/* lost before n->w was set: not heard */
		n->lost = true;
	n->seq = info.seq;
	n->czxid = info.czxid;
	free(n->path);
	n->path = path;
	if (path)
		node_hash_locked(fs, n);
	fi = n->fi;
	zkl_mutex_unlock(&fs->lock);
	if (lockreq) {
		fuse_reply_err(req, 0);
		return;
	}
	fi.fh = FH_HOLDER;
	fi.direct_io = 1;
	fi.keep_cache = 0;
	fi.noflush = 1;		/* close() owes us nothing: the lock ends at RELEASE */
	if (fuse_reply_open(req, &fi) == -ENOENT)	/* the opener is gone */
		node_drop_lock(fs, n);
}

/* The engine's answer: on the ZooKeeper thread, or inside zkl_cancel(). */
static void lock_done(struct zkl_waiter *w, int err, void *arg)
{
	struct node *n = arg;
	struct zklfs *fs = n->fs;
	fuse_req_t req;
	bool lockreq;

	(void)w;
	zkl_mutex_lock(&fs->lock);
	if (!n->armed) {		/* the handler is still setting up */
		n->have_result = true;
		n->result = err;
		zkl_mutex_unlock(&fs->lock);
		return;
	}
	req = n->req;
	lockreq = n->lockreq;
	n->req = NULL;
	zkl_mutex_unlock(&fs->lock);
	if (req)
		lock_answer(fs, n, req, lockreq, err);
}

/*
 * FUSE_INTERRUPT of a waiting OPEN: runs with the request's lock held, which
 * the reply does not take: the answer may come on a ZooKeeper thread at the
 * same time, and its node_drop_lock() would let @w go while we use it.  So
 * that drop waits (intr_busy) and is done here, after zkl_cancel().
 */
static void lock_interrupt(fuse_req_t req, void *arg)
{
	struct node *n = arg;
	struct zklfs *fs = n->fs;
	struct zkl_waiter *w;
	bool drop;

	(void)req;
	zkl_mutex_lock(&fs->lock);
	w = n->w;
	n->intr_busy = w != NULL;
	zkl_mutex_unlock(&fs->lock);
	if (!w)
		return;
	zkl_cancel(w);			/* answers EINTR through lock_done */
	zkl_mutex_lock(&fs->lock);
	n->intr_busy = false;
	drop = n->drop_deferred;
	n->drop_deferred = false;
	zkl_mutex_unlock(&fs->lock);
	if (drop)
		node_drop_lock(fs, n);
}

/*
 * Does an entry of @n's directory other than @n's own wait for or hold a
 * lock for thread @tid started at @start (0: any thread of that id)?
 */
static bool tid_in_dir(struct zklfs *fs, struct node *n, pid_t tid,
		       unsigned long long start)
{
	struct node *l;

	zkl_mutex_lock(&fs->lock);
	for (l = fs->locks[(unsigned)tid % ZKLFS_TID_BUCKETS]; l; l = l->lnext)
		if (zklfs_same_thread(tid, start, l->tid, l->tid_start) &&
		    l != n && strcmp(l->dir, n->dir) == 0)
			break;
	zkl_mutex_unlock(&fs->lock);
	return l != NULL;
}

bool zklfs_lock_deadlocks(fuse_req_t req, struct node *n)
{
	struct zklfs *fs = n->fs;
	pid_t tid = fuse_req_ctx(req)->pid;
	unsigned long long start;

	/*
	 * FUSE says pid 0 for a caller outside our pid namespace (we run in a
	 * container, it does not): such callers cannot be told apart, so
	 * none of them is refused.
	 */
	if (!tid || !tid_in_dir(fs, n, tid, 0))
		return false;
	/*
	 * The id matches: is it the same thread, or one given its id since,
	 * while a child keeps the old one's entry?  Only now is the caller's
	 * start read (fs/tid.h): an open whose id has no entry there, the
	 * common case, reads it once, in lock_enqueue().  The caller waits
	 * in this request, so the id is its own while we read.
	 */
	start = thread_start(tid);
	if (!tid_in_dir(fs, n, tid, start))
		return false;
	zkl_log(LOG_NOTICE, "thread %d already holds or waits for %s: EDEADLK",
		(int)tid, n->dir);
	return true;
}

/*
 * Enqueue @n's entry of @kind for @req (its OPEN, or with @lockreq a
 * flock/fcntl request) and leave the answer to lock_done().  The thread
 * that asks may not already hold or wait in that directory: EDEADLK.
 */
static void lock_enqueue(fuse_req_t req, struct node *n, enum zkl_kind kind,
			 int flags, bool lockreq)
{
	struct zklfs *fs = n->fs;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct zkl_waiter *w = NULL;
	char data[1024];
	fuse_req_t late = NULL;
	struct node **head;
	int len, err, result = 0;
	unsigned long long start;
	pid_t pid;

	if (zklfs_lock_deadlocks(req, n)) {
		fuse_reply_err(req, EDEADLK);
		return;
	}
	/* while the thread waits in @req its id is its own: read it now */
	start = ctx->pid ? thread_start(ctx->pid) : 0;
	pid = thread_group(ctx->pid);
	len = holder_data(fs, ctx, pid, data, sizeof(data));
	if (len >= (int)sizeof(data))
		len = sizeof(data) - 1;
	zkl_mutex_lock(&fs->lock);
	n->tid = ctx->pid;
	n->tid_start = start;
	n->kind = kind;
	n->req = req;
	n->lockreq = lockreq;
	n->inflight = true;
	n->armed = n->have_result = false;
	zkl_mutex_unlock(&fs->lock);
	/* n->uid: the opener's, whoever asks for a conversion on its fd */
	err = zkl_enqueue(zklfs_engine(fs, n->dir), n->dir, n->name, kind, flags,
			  data, len, n->uid, lock_done, n, &w);
	if (err) {
		zkl_mutex_lock(&fs->lock);
		n->req = NULL;
		n->inflight = false;
		zkl_mutex_unlock(&fs->lock);
		zkl_log(LOG_WARNING, "lock '%s' in %s: %s", n->name, n->dir, strerror(-err));
		fuse_reply_err(req, -err);
		return;
	}
	zkl_mutex_lock(&fs->lock);
	n->w = w;
	head = &fs->locks[(unsigned)n->tid % ZKLFS_TID_BUCKETS];
	n->lnext = *head;
	n->lprev = NULL;
	if (*head)
		(*head)->lprev = n;
	*head = n;
	zkl_mutex_unlock(&fs->lock);
	fuse_req_interrupt_func(req, lock_interrupt, n);	/* last: may run now */
	zkl_mutex_lock(&fs->lock);
	n->armed = true;
	if (n->have_result) {
		late = n->req;
		n->req = NULL;
		result = n->result;
	}
	zkl_mutex_unlock(&fs->lock);
	if (late)
		lock_answer(fs, n, late, lockreq, result);
}

static void lock_open(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	enum zkl_kind kind = (fi->flags & O_ACCMODE) == O_RDONLY ? ZKL_SHARED : ZKL_EXCLUSIVE;

	zkl_mutex_lock(&n->fs->lock);
	n->fi = *fi;
	zkl_mutex_unlock(&n->fs->lock);
	lock_enqueue(req, n, kind, (fi->flags & O_NONBLOCK) ? ZKL_NONBLOCK : 0, false);
}

void zklfs_lock_request(fuse_req_t req, struct node *n, enum zkl_kind kind,
			int flags)
{
	lock_enqueue(req, n, kind, flags, true);
}

void zklfs_lock_giveback(struct zklfs *fs, struct node *n)
{
	/*
	 * The data written first, on the session the delete goes to: it is
	 * in the old entry before the entry goes.  Then the waiter: from
	 * then on a loss of the old entry is not this descriptor's
	 * (zklfs_lock_lost() checks n->w).
	 */
	zklfs_wbuf_close(fs, n);
	node_drop_lock(fs, n);
	zkl_mutex_lock(&fs->lock);
	if (n->path && n->hashed)
		node_unhash_path_locked(fs, n->path);
	free(n->path);
	n->path = NULL;
	n->granted = n->lost = false;
	n->seq = 0;
	n->czxid = 0;
	zkl_mutex_unlock(&fs->lock);
}

void zklfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);
	bool lock = false;

	if (n->type == NODE_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	zkl_mutex_lock(&fs->lock);
	if (n->type == NODE_PENDING && !n->opened)
		lock = n->opened = true;
	zkl_mutex_unlock(&fs->lock);
	if (lock) {
		lock_open(req, n, fi);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		zkl_log(LOG_NOTICE, "open for writing refused: only the holder's descriptor writes its entry");
		fuse_reply_err(req, EACCES);
		return;
	}
	fi->fh = FH_PLAIN;
	fi->direct_io = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

void zklfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);
	struct fuse_pollhandle *ph = NULL;

	if (fi->fh == FH_HOLDER) {
		zkl_mutex_lock(&fs->lock);
		ph = n->ph;
		n->ph = NULL;
		zkl_mutex_unlock(&fs->lock);
		if (ph)
			fuse_pollhandle_destroy(ph);
		zklfs_wbuf_close(fs, n);	/* the data before the delete */
		node_drop_lock(fs, n);
	}
	fuse_reply_err(req, 0);
}

/* Under the engine's lock: record the loss and wake the holder's poller. */
void zklfs_lock_lost(struct zkl_waiter *w, void *arg)
{
	struct node *n = arg;
	struct zklfs *fs = n->fs;
	struct fuse_pollhandle *ph;

	zkl_mutex_lock(&fs->lock);
	if (n->w != w) {		/* given back, or not yet taken in */
		zkl_mutex_unlock(&fs->lock);
		return;
	}
	n->lost = true;
	ph = n->ph;
	n->ph = NULL;
	zkl_mutex_unlock(&fs->lock);
	if (ph) {
		fuse_lowlevel_notify_poll(ph);
		fuse_pollhandle_destroy(ph);
	}
}

bool zklfs_holder_lost(struct zklfs *fs, struct node *n, struct fuse_file_info *fi)
{
	bool lost;

	if (!fi || fi->fh != FH_HOLDER)
		return false;
	zkl_mutex_lock(&fs->lock);
	lost = n->lost;
	zkl_mutex_unlock(&fs->lock);
	return lost;
}

bool zklfs_lock_waiting(struct zklfs *fs, struct node *n)
{
	bool waiting;

	zkl_mutex_lock(&fs->lock);
	waiting = n->inflight;
	zkl_mutex_unlock(&fs->lock);
	return waiting;
}

bool zklfs_holder_idle(struct zklfs *fs, struct node *n, struct fuse_file_info *fi)
{
	bool idle;

	if (!fi || fi->fh != FH_HOLDER)
		return false;
	zkl_mutex_lock(&fs->lock);
	idle = !n->granted || !n->path;
	zkl_mutex_unlock(&fs->lock);
	return idle;
}

bool zklfs_own_state(struct zklfs *fs, struct node *n, struct zkl_info *info)
{
	bool mine;

	zkl_mutex_lock(&fs->lock);
	mine = n->w != NULL && n->granted;
	info->created = info->granted = mine;
	info->lost = n->lost;
	info->seq = n->seq;
	info->czxid = n->czxid;
	zkl_mutex_unlock(&fs->lock);
	return mine;
}

/*
 * A regular file is always readable and writable; the holder's descriptor
 * also reports POLLERR|POLLHUP once the lock is lost, waking a poller that
 * is already waiting (we keep its poll handle).
 */
void zklfs_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct fuse_pollhandle *ph)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);
	struct fuse_pollhandle *old = NULL;
	bool lost = false;

	if (fi->fh == FH_HOLDER) {
		zkl_mutex_lock(&fs->lock);
		lost = n->lost;
		if (ph && !lost) {
			old = n->ph;
			n->ph = ph;
			ph = NULL;
		}
		zkl_mutex_unlock(&fs->lock);
	}
	if (old)
		fuse_pollhandle_destroy(old);
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, lost ? POLLERR | POLLHUP :
			POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
}
