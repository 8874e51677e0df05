/*
 * fs/lrquery.c - what the handlers ask of a lock node's request: what its
 * descriptor reports (poll, EIO, ENOLCK, its state and token), and who
 * opened an entry (see lockreq.h).  Each takes fs->lock briefly.
 */
#include "fs/lockreq.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "fs/reply.h"

pid_t lockreq_pid(struct zklfs *fs, const char *dir, int32_t seq)
{
	pid_t pid = 0;

	zkmx_lock(&fs->lock);
	for (unsigned i = 0; i < ZKLFS_PID_BUCKETS && !pid; i++)
		for (struct lockreq *l = fs->locks[i]; l; l = l->lnext)
			if (l->state == LR_HELD && l->seq == seq &&
			    strcmp(l->dir, dir) == 0) {
				pid = l->pid;
				break;
			}
	zkmx_unlock(&fs->lock);
	return pid;
}

/* Is @dir @path, or below it? */
static bool at_or_below(const char *dir, const char *path, size_t plen)
{
	return strncmp(dir, path, plen) == 0 &&
	       (dir[plen] == '\0' || dir[plen] == '/' || (plen == 1 && *path == '/'));
}

bool lockreq_table_stat(struct zklfs *fs, const char *path, struct Stat *zs,
			enum node_type *type)
{
	bool lockfiles = fs->conf->lockfiles;
	bool known = false;
	size_t plen = strlen(path);
	struct node *n;

	memset(zs, 0, sizeof(*zs));
	zkmx_lock(&fs->lock);
	n = node_find_locked(fs, path);
	if (n && n->lr && lockreq_granted(n->lr)) {
		zs->czxid = zs->mzxid = n->lr->czxid;
		zs->ctime = zs->mtime = n->lr->asked_ms;
		zs->ephemeralOwner = 1;		/* an entry, of our session */
		zs->dataLength = (int32_t)n->lr->wb.len;
		*type = NODE_FILE;
		known = true;
	}
	for (unsigned i = 0; i < ZKLFS_PID_BUCKETS && !known; i++)
		for (struct lockreq *l = fs->locks[i]; l; l = l->lnext)
			if (lockreq_granted(l) && at_or_below(l->dir, path, plen)) {
				/* the lock itself is a lock file there */
				*type = lockfiles && !l->dir[plen] ? NODE_LOCKFILE : NODE_DIR;
				known = true;
				break;
			}
	zkmx_unlock(&fs->lock);
	return known;
}

unsigned lockreq_holder_poll(struct zklfs *fs, struct node *n, unsigned events,
			     struct fuse_pollhandle *ph)
{
	struct lockreq *lr = n->lr;
	struct fuse_pollhandle *old = NULL;
	unsigned ev;

	zkmx_lock(&fs->lock);
	ev = lr->state == LR_LOST ? POLLERR | POLLHUP :
	     POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | (lr->revoking ? POLLPRI : 0);
	/* a move into doubt or out of it: told once, to a poll that asks */
	if (lr->state != LR_LOST && (events & POLLPRI) && lr->doubt_polled != lr->doubt_moves) {
		lr->doubt_polled = lr->doubt_moves;
		ev |= POLLPRI;
	}
	if (ph && lr->state != LR_LOST) {
		old = lr->ph;		/* the newest poller is the one to wake */
		lr->ph = ph;
		ph = NULL;
	}
	zkmx_unlock(&fs->lock);
	if (old)
		fs->reply->drop_poll(old);
	if (ph)
		fs->reply->drop_poll(ph);
	return ev;
}

bool lockreq_holder_lost(struct zklfs *fs, struct node *n,
			 const struct fuse_file_info *fi)
{
	struct lockreq *lr = n->lr;
	bool lost;

	if (!fi || fi->fh != FH_HOLDER || !lr)
		return false;
	zkmx_lock(&fs->lock);
	lost = lr->state == LR_LOST;
	zkmx_unlock(&fs->lock);
	return lost;
}

bool lockreq_waiting(struct zklfs *fs, struct node *n)
{
	struct lockreq *lr = n->lr;
	bool waiting;

	if (!lr)
		return false;
	zkmx_lock(&fs->lock);
	waiting = lockreq_asking(lr);
	zkmx_unlock(&fs->lock);
	return waiting;
}

pid_t lockreq_opener(struct zklfs *fs, struct node *n)
{
	struct lockreq *lr = n->lr;
	pid_t pid = 0;

	if (!lr)
		return 0;
	zkmx_lock(&fs->lock);
	if (lr->w && lockreq_granted(lr))
		pid = lr->pid;
	zkmx_unlock(&fs->lock);
	return pid;
}

bool lockreq_holder_idle(struct zklfs *fs, struct node *n,
			 const struct fuse_file_info *fi)
{
	struct lockreq *lr = n->lr;
	bool idle;

	if (!fi || fi->fh != FH_HOLDER || !lr)
		return false;
	zkmx_lock(&fs->lock);
	idle = !lockreq_granted(lr) || !n->path;
	zkmx_unlock(&fs->lock);
	return idle;
}

bool lockreq_own_state(struct zklfs *fs, struct node *n, struct zkl_info *info)
{
	struct lockreq *lr = n->lr;
	bool mine;

	if (!lr) {			/* a directory or another's entry */
		memset(info, 0, sizeof(*info));
		return false;
	}
	zkmx_lock(&fs->lock);
	mine = lr->w != NULL && lockreq_granted(lr);
	if (!mine) {
		zkmx_unlock(&fs->lock);
		memset(info, 0, sizeof(*info));
		return false;
	}
	info->created = info->granted = mine;
	info->lost = lr->state == LR_LOST;
	info->loss = lr->loss;
	info->revoking = lr->revoking;
	info->doubt = lr->doubt;
	info->kind = lr->kind;
	info->limit = lr->limit;
	info->seq = lr->seq;
	info->czxid = lr->czxid;
	info->grants = lr->grants;
	zkmx_unlock(&fs->lock);
	return mine;
}

bool lockreq_held_kind(struct zklfs *fs, struct node *n, enum zkn_kind *kind)
{
	bool held;

	if (!n->lr)
		return false;
	zkmx_lock(&fs->lock);
	held = n->lr->w && n->lr->state == LR_HELD && n->path;
	*kind = n->lr->kind;
	zkmx_unlock(&fs->lock);
	return held;
}

int lockreq_holder_errno(struct zklfs *fs, struct node *n,
			 const struct fuse_file_info *fi)
{
	if (lockreq_holder_lost(fs, n, fi))
		return EIO;
	return lockreq_holder_idle(fs, n, fi) ? ENOLCK : 0;
}

int lockreq_own_text(struct zklfs *fs, struct node *n, bool token, char *buf,
		     size_t size)
{
	struct zkl_info own;

	if (!lockreq_own_state(fs, n, &own))
		return -1;
	if (!token)
		return snprintf(buf, size, "%s", own.lost ? "lost" : own.doubt ? "doubt" :
				own.revoking ? "revoking" : own.granted ? "held" : "waiting");
	if (!own.grants)
		return snprintf(buf, size, "%lld %d", (long long)own.czxid, own.seq);
	/* a lingering entry's: it grows with each grant */
	return snprintf(buf, size, "%lld %d %u", (long long)own.czxid, own.seq, own.grants);
}
