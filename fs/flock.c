/*
 * fs/flock.c - flock(2) and fcntl(2) record locks on entries.
 *
 * The kernel keeps such locks to itself unless the filesystem takes them
 * (FUSE_SETLK, FUSE_SETLKW, FUSE_GETLK): then a lock that only this host
 * sees could be handed out, as util-linux flock(1) got, opening its file
 * O_RDONLY|O_CREAT (a shared entry) and then asking for LOCK_EX.  So a
 * whole-file lock on the holder's descriptor of an entry acts on that
 * entry, the lock every host and client sees:
 *
 *   held kind asked for      nothing to do: 0 at once
 *   the other kind           give the entry back, enqueue one of that kind
 *                            (not atomic, as flock(2) allows), answer on
 *                            the grant; LOCK_NB/F_SETLK: EAGAIN if it is
 *                            not granted at once, the descriptor then
 *                            holding nothing
 *   LOCK_UN/F_UNLCK          give the entry back; the descriptor stays
 *                            open, holding nothing, and a later request
 *                            enqueues anew
 *   any other, once lost     EIO, until LOCK_UN gives the lost entry up
 *
 * A lock belongs to the open file description, whichever call took it
 * (as flock(2) and F_OFD_SETLK locks do): fcntl(2) locks are neither
 * dropped at the close() of one copy nor kept apart between processes
 * that share the descriptor.  A record lock on part of the file is EINVAL;
 * a descriptor that did not take its entry (opened without O_CREAT) can
 * carry no lock: ENOLCK.  F_GETLK answers from a listing of the directory;
 * its pid is the opener's for an entry of this mount (fs/lockreq.h), else
 * the pid= line of the entry's data if its host= line is ours, else 0.
 *
 * Directories: the kernel never asks a FUSE filesystem about locks on a
 * directory, so flock(2) on a lock directory stays local to this host.
 *
 * Threads: the handlers run on the FUSE thread; a lock request is answered
 * by fs/lockreq.c from the engine's done callback, F_GETLK from ZooKeeper
 * completions.
 */
#include "fs/handlers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "fs/fdlock.h"
#include "fs/lockreq.h"
#include "fs/pending.h"
#include "fs/wbuf.h"
#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/settings.h"
#include "zk/log.h"

/* The kernel's largest pid (PID_MAX_LIMIT). */
#define ZKLFS_PID_MAX (4 * 1024 * 1024)

/* libfuse gives a whole-file lock as l_start 0, l_len 0 (to the end). */
static bool whole_file(const struct flock *lk)
{
	return lk->l_start == 0 && lk->l_len == 0;
}

/* Is @fi the descriptor that took @n's entry (and so may lock it)? */
static bool holder_fd(struct node *n, const struct fuse_file_info *fi)
{
	return n->type == NODE_PENDING && fi && fi->fh == FH_HOLDER;
}

/* A lock asked for on a descriptor that cannot carry one. */
static void refuse(fuse_req_t req, int err, const char *why)
{
	zklog(LOG_NOTICE, "lock refused: %s", why);
	fuse_reply_err(req, err);
}

void zklfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 int op)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);

	if (!holder_fd(n, fi)) {
		refuse(req, ENOLCK, "only the descriptor that took an entry locks it");
		return;
	}
	fdlock_op(req, n, op & (LOCK_SH | LOCK_EX | LOCK_UN), op & LOCK_NB);
}

void zklfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock, int sleep)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);
	int op = fdlock_of(lock->l_type);

	if (!whole_file(lock)) {
		refuse(req, EINVAL, "a record lock on part of an entry");
		return;
	}
	if (!holder_fd(n, fi)) {
		refuse(req, ENOLCK, "only the descriptor that took an entry locks it");
		return;
	}
	fdlock_op(req, n, op, !sleep);
}

/* F_GETLK: a listing of the lock's directory, then maybe its blocker's data. */
struct getlk {
	struct zklfs *fs;
	struct zpend pend;		/* the F_GETLK, answered once */
	struct zks *zks;
	char *dir;
	enum zkn_kind kind;
	bool has_own;			/* leave out the asker's own entry */
	int32_t own;
	unsigned limit;			/* the lock's, if a semaphore */
	struct flock lk;		/* the answer */
};

static void getlk_send(struct getlk *op);

static void getlk_free(struct getlk *op)
{
	zklfs_session_unhold(op->fs, op->dir, op->zks);
	free(op->dir);
	free(op);
}

/* Sent again from the top, by the session's supervisor (zklfs_zlater()). */
static void getlk_resend(void *arg, bool go)
{
	struct getlk *op = arg;

	if (!go) {			/* the mount is going */
		if (zpend_claim(op->fs, &op->pend))
			fuse_reply_err(op->pend.req, ESHUTDOWN);
		getlk_free(op);
		return;
	}
	getlk_send(op);
}

/*
 * Answer @op with the lock found (@rc ZOK) or an errno, and free it.  A
 * connection loss or a session being replaced sends the question again
 * when the session is back, as every read of the namespace is, until the
 * request is answered otherwise (a signal, its deadline: fs/pending.h).
 */
static void getlk_reply(struct getlk *op, int rc)
{
	if (zk_rc_transient(rc) && !zpend_answered(op->fs, &op->pend) &&
	    zklfs_zlater(op->fs, op->zks, getlk_resend, op) == 0)
		return;
	if (zpend_claim(op->fs, &op->pend)) {
		if (rc == ZOK)
			fuse_reply_lock(op->pend.req, &op->lk);
		else
			fuse_reply_err(op->pend.req, -zk_errno(rc));
	}
	getlk_free(op);
}

/* Copy the value of the line "@key..." of @data (@len bytes) to @out. */
static bool data_line(const char *data, int len, const char *key, char *out,
		      size_t size)
{
	size_t vlen;
	const char *v = zkset_data_value(data, len > 0 ? (size_t)len : 0, key, &vlen);

	if (v)
		snprintf(out, size, "%.*s", (int)vlen, v);
	return v != NULL;
}

/*
 * Another client's entry: its data is all there is.  Its pid counts only
 * if its host is ours (another mount on this host); a pid from another
 * host would name some unrelated process here.  The lines are what its
 * holder wrote, information and never authority: it may name any process.
 */
static void getlk_data_done(int rc, const char *value, int len,
			    const struct Stat *zs, const void *data)
{
	struct getlk *op = (struct getlk *)data;
	char host[256], num[16], *end;
	long pid;

	(void)zs;
	if (rc == ZNONODE) {		/* it went meanwhile: report it anyway */
		getlk_reply(op, ZOK);
		return;
	}
	if (rc != ZOK) {
		getlk_reply(op, rc);
		return;
	}
	if (data_line(value, len, "host=", host, sizeof(host)) &&
	    strcmp(host, op->fs->host) == 0 &&
	    data_line(value, len, "pid=", num, sizeof(num))) {
		pid = strtol(num, &end, 10);
		if (*num && !*end && pid > 0 && pid <= ZKLFS_PID_MAX)
			op->lk.l_pid = (pid_t)pid;
	}
	getlk_reply(op, ZOK);
}

static void getlk_children_done(int rc, const struct String_vector *sv,
				const struct Stat *dir, const void *data)
{
	struct getlk *op = (struct getlk *)data;
	const struct zkg_child *b;
	struct zkg_child *kids;
	uint32_t owner;
	char *path;
	size_t n;

	(void)dir;		/* the listing alone */
	if (rc != ZOK) {
		getlk_reply(op, rc);
		return;
	}
	kids = zkg_parse_children(sv->data, sv->count, &n);
	if (!kids) {
		getlk_reply(op, ZSYSTEMERROR);
		return;
	}
	b = op->limit ? zkg_blocker_limit(kids, n, op->limit, op->has_own, op->own)
		      : zkg_blocker(kids, n, op->kind, op->has_own, op->own);
	memset(&op->lk, 0, sizeof(op->lk));
	op->lk.l_whence = SEEK_SET;
	op->lk.l_type = F_UNLCK;
	if (!b) {
		free(kids);
		getlk_reply(op, ZOK);
		return;
	}
	op->lk.l_type = b->kind == ZKN_SHARED ? F_RDLCK : F_WRLCK;
	path = zkn_join(op->dir, b->name);
	if (path && zkl_owner(zklfs_engine(op->fs, op->dir), op->dir, path, &owner)) {
		/* ours: the opener the daemon saw, not what the holder wrote */
		op->lk.l_pid = lockreq_pid(op->fs, op->dir, b->seq);
		free(path);
		free(kids);
		getlk_reply(op, ZOK);
		return;
	}
	free(kids);
	rc = path ? zklfs_zget(op->fs, op->zks, path, getlk_data_done, op) : ZSYSTEMERROR;
	free(path);
	if (rc != ZOK)
		getlk_reply(op, rc);
}

/* The lock's limit, if a semaphore (zk/settings.h); then its listing. */
static void getlk_limit_done(int rc, const char *value, int len,
			     const struct Stat *zs, const void *data)
{
	struct getlk *op = (struct getlk *)data;

	(void)zs;
	if (rc == ZOK) {
		op->limit = zkset_parse(value, len > 0 ? (size_t)len : 0);
		rc = zklfs_zchildren(op->fs, op->zks, op->dir, getlk_children_done, op);
	}
	if (rc != ZOK)
		getlk_reply(op, rc);
}

static void getlk_send(struct getlk *op)
{
	int rc = zpend_answered(op->fs, &op->pend) ? ZCLOSING :	/* nobody waits */
		 zklfs_zget(op->fs, op->zks, op->dir, getlk_limit_done, op);

	if (rc != ZOK)
		getlk_reply(op, rc);
}

void zklfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);
	struct getlk *op;
	enum zkn_kind kind;
	bool held;
	char *dir;

	if (!whole_file(lock)) {
		refuse(req, EINVAL, "a record lock on part of an entry");
		return;
	}
	if (n->type == NODE_DIR) {
		refuse(req, ENOLCK, "a directory holds no lock entry");
		return;
	}
	kind = lock->l_type == F_WRLCK ? ZKN_EXCLUSIVE : ZKN_SHARED;
	op = calloc(1, sizeof(*op));
	zkmx_lock(&fs->lock);
	dir = n->lr ? strdup(n->lr->dir) : !n->path ? NULL :
	      n->type == NODE_LOCKFILE ? strdup(n->path) :	/* the lock itself */
	      strndup(n->path, zkn_parent_len(n->path));
	if (op) {
		op->has_own = holder_fd(n, fi) && n->lr->w && lockreq_granted(n->lr);
		op->own = n->lr ? n->lr->seq : 0;
	}
	held = op && op->has_own && n->lr->state == LR_HELD && n->lr->kind == kind;
	zkmx_unlock(&fs->lock);
	if (held) {			/* F_SETLK would be 0 at once */
		free(op);
		free(dir);
		memset(lock, 0, sizeof(*lock));
		lock->l_type = F_UNLCK;
		lock->l_whence = SEEK_SET;
		fuse_reply_lock(req, lock);
		return;
	}
	if (!op || !dir) {
		free(op);
		free(dir);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->fs = fs;
	op->dir = dir;
	op->kind = kind;
	op->zks = zklfs_session_hold(fs, dir);	/* asked again there after a loss */
	zpend_start(fs, &op->pend, req);
	getlk_send(op);
}
