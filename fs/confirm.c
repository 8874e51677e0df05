/*
 * fs/confirm.c - fsync's confirmation that a holder still holds (see
 * confirm.h).
 */
#include "fs/confirm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/lockreq.h"
#include "fs/pool.h"
#include "fs/reply.h"
#include "zk/errno.h"
#include "zk/log.h"

/* One round trip out: struct lr_confirm first, as lock requests see it. */
struct confirm {
	struct lr_confirm lc;		/* fs->lock */
	struct zklfs *fs;
	struct zks *zks;		/* the entry's session */
	char *dir, *path;		/* the lock, the entry: copies */
};

static void send_sync(struct confirm *c);

static void confirm_free(struct confirm *c)
{
	free(c->dir);
	free(c->path);
	free(c);
}

/*
 * The FSYNCs among @now, whose round trip showed the lock held: each
 * answers the error of a data send not reported yet (to these FSYNCs,
 * once, as Linux reports a writeback error), else EAGAIN if ZooKeeper has
 * not answered for the version of the data written when it asked (its set
 * met a connection loss and goes again at the next look), else 0.
 */
static void data_answers_locked(struct lockreq *lr, struct lr_wait *now)
{
	int slot = -lr->wb.err;

	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	for (struct lr_wait *w = now; w; w = w->next) {
		if (!w->data)
			continue;
		w->err = slot ? slot : lr->wb.answered < w->want ? EAGAIN : 0;
		lr->wb.err = 0;
	}
}

/*
 * The round trip of @c ended with @rc: ZOK if it showed the entry there,
 * ZNONODE if gone (the lock is then lost: zkl_entry_gone()).  Answer its
 * requests; start the next round trip for those that came meanwhile, or
 * let @c go.
 */
static void finish(struct confirm *c, int rc)
{
	struct zklfs *fs = c->fs;
	struct node *n;
	struct zkl_waiter *lost = NULL;
	struct lr_wait *now;
	struct lockreq *lr;
	bool again = false, held;

	zkmx_lock(&fs->lock);
	now = c->lc.now;
	c->lc.now = NULL;
	n = c->lc.n;
	lr = n ? n->lr : NULL;
	held = rc == ZOK && lr && lr->state == LR_HELD;
	if (rc == ZNONODE && lr && lr->state == LR_HELD)
		lost = lockreq_pin_locked(lr);	/* a give-back waits for us */
	if (held)
		data_answers_locked(lr, now);
	if (lr && c->lc.next && lr->state == LR_HELD) {
		c->lc.now = c->lc.next;	/* those that came meanwhile */
		c->lc.next = NULL;
		again = true;
	} else if (lr) {
		lr->cf = NULL;		/* a loss answered the rest already */
	}
	zkmx_unlock(&fs->lock);
	if (lost) {			/* lost, as its own watch would say */
		zkl_entry_gone(lost);
		lockreq_unpin(fs, n);
	}
	lockreq_answer_waits(fs, now, held);
	if (again)
		send_sync(c);
	else
		confirm_free(c);
}

/* A reply that may come again once the session is back. */
static bool retry(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

static void exists_done(int rc, const struct Stat *st, const void *data)
{
	struct confirm *c = (struct confirm *)data;

	(void)st;
	if (retry(rc)) {
		send_sync(c);
		return;
	}
	if (rc != ZOK && rc != ZNONODE)
		zklog(LOG_WARNING, "fsync of %s: %s", c->path, zerror(rc));
	finish(c, rc);
}

static void sync_done(int rc, const char *value, const void *data)
{
	struct confirm *c = (struct confirm *)data;

	(void)value;
	if (rc == ZOK)
		rc = zklfs_zexists(c->fs, c->zks, c->path, exists_done, c);
	if (rc == ZOK)
		return;
	if (retry(rc)) {
		send_sync(c);
		return;
	}
	zklog(LOG_WARNING, "fsync of %s: %s", c->path, zerror(rc));
	finish(c, rc);
}

/*
 * Send @c's round trip; again after a connection loss, unless the lock
 * was lost or given back meanwhile (its fsyncs are answered then).
 */
static void send_sync(struct confirm *c)
{
	struct zklfs *fs = c->fs;
	bool go;
	int rc;

	zkmx_lock(&fs->lock);
	go = c->lc.n && c->lc.n->lr->state == LR_HELD && c->lc.now;
	zkmx_unlock(&fs->lock);
	if (!go) {
		finish(c, ZCONNECTIONLOSS);	/* answered EIO already, or none */
		return;
	}
	rc = zklfs_zsync(fs, c->zks, c->dir, sync_done, c);
	if (rc != ZOK)
		sync_done(rc, NULL, c);
}

void zklfs_confirm(struct zklfs *fs, struct node *n, fuse_req_t req, bool data,
		   zklfs_confirm_answer_fn *answer_fn, size_t size)
{
	struct lr_wait *w = calloc(1, sizeof(*w));
	struct lockreq *lr = n->lr;
	struct confirm *c = NULL;
	int err = 0;

	if (!w) {
		answer_fn(fs, req, size, ENOMEM);
		return;
	}
	w->answer = answer_fn;
	w->size = size;
	w->data = data;
	zpend_start(fs, &w->pend, req);	/* before another thread may see @w */
	zkmx_lock(&fs->lock);
	w->want = lr->wb.ver;
	if (lr->state == LR_LOST) {
		err = EIO;
	} else if (lr->state != LR_HELD || !n->path) {
		err = ENOLCK;		/* given back (LOCK_UN): nothing to confirm */
	} else if (lr->cf) {		/* one is out: the next one is ours */
		w->next = lr->cf->next;
		lr->cf->next = w;
	} else {
		c = calloc(1, sizeof(*c));
		if (c) {
			c->fs = fs;
			c->dir = strdup(lr->dir);
			c->path = strdup(n->path);
			c->zks = zklfs_session(fs, lr->dir);
		}
		if (!c || !c->dir || !c->path) {
			if (c)
				confirm_free(c);
			c = NULL;
			err = ENOMEM;
		} else {
			c->lc.n = n;
			c->lc.now = w;
			lr->cf = &c->lc;
		}
	}
	zkmx_unlock(&fs->lock);
	if (err) {
		if (zpend_claim(fs, &w->pend))
			answer_fn(fs, req, size, err);
		free(w);
	} else if (c) {
		send_sync(c);
	}
}
