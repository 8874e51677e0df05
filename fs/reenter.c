/*
 * fs/reenter.c - who asks for a lock, and what it holds already: EDEADLK
 * and reentrant opens; and how the descriptors that stand for one entry
 * leave it, the entry going with the last (see lockreq.h).
 *
 * A thread that holds a lock and opens it again gets a descriptor that
 * stands for the entry it holds (JOINED), as Curator's InterProcessMutex
 * counts acquires: no second entry, and the entry goes when the last
 * descriptor that stands for it closes (lockreq_close(), below).
 * A thread is its id and its start time; a start unknown on either side
 * (/proc hid it) joins nothing: such an open is EDEADLK, as for another
 * thread's second open, rather than a lock handed to another thread.
 */
#include "fs/lockreq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/reply.h"
#include "fs/tid.h"
#include "zk/log.h"

/*
 * The request of thread @tid started at @start (0: any thread of that id)
 * that holds or waits for an entry in @n's directory, other than @n's own;
 * NULL if none.  Under fs->lock.
 */
static struct lockreq *thread_lr_locked(struct zklfs *fs, struct node *n, pid_t tid,
					unsigned long long start)
{
	struct lockreq *l;

	ZKMX_ASSERT_HELD(&fs->lock);
	for (l = fs->locks[(unsigned)tid % ZKLFS_TID_BUCKETS]; l; l = l->lnext)
		if (zklfs_same_thread(tid, start, l->tid, l->tid_start) &&
		    l != n->lr && strcmp(l->dir, n->lr->dir) == 0)
			return l;
	return NULL;
}

/*
 * Has @req's thread anything in @n's directory?  Return: its start (read
 * only then; 0 if unknown) through @start, and whether it has.
 */
static bool thread_there(fuse_req_t req, struct node *n, pid_t *tid,
			 unsigned long long *start)
{
	struct zklfs *fs = n->fs;
	bool any;

	/*
	 * FUSE says pid 0 for a caller outside our pid namespace (we run in a
	 * container, it does not): such callers cannot be told apart, so
	 * none of them is refused or joined.
	 */
	*tid = fs->reply->tid(req);
	*start = 0;
	if (!*tid)
		return false;
	zkmx_lock(&fs->lock);
	any = thread_lr_locked(fs, n, *tid, 0) != NULL;
	zkmx_unlock(&fs->lock);
	/*
	 * The id matches: is it the same thread, or one given its id since,
	 * while a child keeps the old one's entry?  Only now is the caller's
	 * start read (fs/tid.h): an open whose id has no entry there, the
	 * common case, reads it once, in lock_enqueue().  The caller waits
	 * in this request, so the id is its own while we read.
	 */
	if (any)
		*start = fs->reply->thread_start(*tid);
	return any;
}

bool lockreq_deadlocks(fuse_req_t req, struct node *n)
{
	struct zklfs *fs = n->fs;
	unsigned long long start;
	pid_t tid;
	bool busy;

	if (!thread_there(req, n, &tid, &start))
		return false;
	zkmx_lock(&fs->lock);
	busy = thread_lr_locked(fs, n, tid, start) != NULL;
	zkmx_unlock(&fs->lock);
	if (busy)
		zklog(LOG_NOTICE, "thread %d already holds or waits for %s: EDEADLK",
		      (int)tid, n->lr->dir);
	return busy;
}

/* @lr (IDLE, @n's) stands for the entry @o holds.  Under fs->lock. */
static bool join_locked(struct lockreq *lr, struct lockreq *o)
{
	char *path = strdup(o->node->path);

	if (!path)
		return false;
	free(lr->node->path);
	lr->node->path = path;		/* a copy, never hashed: @o's node is */
	lr->owner = o;
	lr->jnext = o->joined;
	o->joined = lr;
	o->njoined++;
	lr->kind = o->kind;
	lockreq_set_state_locked(lr, LR_JOINED);
	return true;
}

enum lr_reentry lockreq_reenter(fuse_req_t req, struct node *n, enum zkn_kind kind)
{
	struct zklfs *fs = n->fs;
	enum lr_reentry r = LR_NEW;
	unsigned long long start;
	struct lockreq *l;
	const char *why = NULL;
	pid_t tid;

	if (!thread_there(req, n, &tid, &start))
		return LR_NEW;
	zkmx_lock(&fs->lock);
	l = thread_lr_locked(fs, n, tid, start);
	if (!l) {
		r = LR_NEW;
	} else if (l->state == LR_LOST) {
		r = LR_LOSTLOCK;
		why = "lost the lock it holds there: EIO";
	} else if (l->state != LR_HELD || !l->node->path) {
		r = LR_DEADLOCK;
		why = "already waits there: EDEADLK";
	} else if (l->kind == ZKN_SHARED && kind == ZKN_EXCLUSIVE) {
		r = LR_DEADLOCK;
		why = "holds it shared and asks for it exclusive: EDEADLK";
	} else if (!start || !l->tid_start || l->tid_start != start) {
		r = LR_DEADLOCK;
		why = "holds it, but cannot be told from a thread gone since: EDEADLK";
	} else if (!join_locked(n->lr, l)) {
		r = LR_DEADLOCK;
		why = "holds it (no memory to open it again): EDEADLK";
	} else {
		r = LR_JOIN;
	}
	zkmx_unlock(&fs->lock);
	if (why)
		zklog(LOG_NOTICE, "thread %d %s in %s", (int)tid, why, n->lr->dir);
	return r;
}

/*
 * @lr (JOINED) stands for nothing from now on.  Return: its owner's node
 * if that was the last part of an entry whose own descriptor is closed
 * or parted: it goes now.  Under fs->lock.
 */
static struct node *unjoin_locked(struct lockreq *lr)
{
	struct lockreq *o = lr->owner, **pp;

	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	for (pp = &o->joined; *pp && *pp != lr; pp = &(*pp)->jnext)
		;
	if (*pp)
		*pp = lr->jnext;
	lr->jnext = NULL;
	lr->owner = NULL;
	o->njoined--;
	lockreq_set_state_locked(lr, LR_IDLE);
	free(lr->node->path);		/* a copy of the entry's, never hashed */
	lr->node->path = NULL;
	return !o->njoined && (o->closed || o->parted) ? o->node : NULL;
}

struct node *lockreq_close(struct zklfs *fs, struct node *n)
{
	struct lockreq *lr = n->lr;
	struct fuse_pollhandle *ph;
	struct node *ended;

	zkmx_lock(&fs->lock);
	ph = lr->ph;
	lr->ph = NULL;
	if (lr->state == LR_JOINED) {
		ended = unjoin_locked(lr);
	} else {
		lr->closed = true;
		ended = lr->njoined ? NULL : n;	/* else it stays for the others */
	}
	zkmx_unlock(&fs->lock);
	if (ph)
		fs->reply->drop_poll(ph);
	return ended;
}

void lockreq_end(struct zklfs *fs, struct node *ended)
{
	bool closed;

	zkmx_lock(&fs->lock);
	closed = ended->lr->closed;
	zkmx_unlock(&fs->lock);
	if (closed)
		lockreq_drop(fs, ended);		/* may free it: FORGET came */
	else
		lockreq_giveback(fs, ended);	/* its descriptor stays open */
}

struct node *lockreq_part(struct zklfs *fs, struct node *n)
{
	struct node *ended = NULL;

	zkmx_lock(&fs->lock);
	if (n->lr->state == LR_JOINED)
		ended = unjoin_locked(n->lr);
	else if (n->lr->njoined)
		n->lr->parted = true;
	zkmx_unlock(&fs->lock);
	return ended;
}
