/* fs/state.c - setting LOCKDIR/.state, fenced by ZooKeeper (state.h). */
#include "fs/state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/lockreq.h"
#include "fs/pending.h"
#include "fs/pool.h"
#include "zk/errno.h"
#include "zk/log.h"
#include "zk/statedata.h"

/* A set whose lock's data changed between our read and our multi is read
 * again, this many times at most: then EAGAIN (a limit set in a loop). */
#define STATE_TRIES 16

/* One set in flight: its request, and what the multi needs. */
struct setop {
	struct zpend pend;
	struct zklfs *fs;
	struct zks *zks;		/* the entry's session */
	char *dir, *entry;		/* the lock's znode, the holder's entry */
	char *state;
	size_t len;
	int tries;
	char *data;			/* the lock's data, its state replaced */
	zoo_op_t ops[2];
	zoo_op_result_t results[2];
	struct Stat stat;
};

static void setop_free(struct setop *s)
{
	free(s->dir);
	free(s->entry);
	free(s->state);
	free(s->data);
	free(s);
}

/* Answer @s's ioctl with @err (0: done), unless a signal or the deadline
 * did; let it go. */
static void finish(struct setop *s, int err)
{
	if (zpend_claim(s->fs, &s->pend)) {
		if (err)
			fuse_reply_err(s->pend.req, err);
		else
			fuse_reply_ioctl(s->pend.req, 0, NULL, 0);
	}
	setop_free(s);
}

static void read_lock(struct setop *s);

static void again(void *arg, bool go)
{
	struct setop *s = arg;

	if (go)
		read_lock(s);
	else
		finish(s, ESHUTDOWN);
}

/* Whatever failed for a moment: the whole set again once the session is
 * back, or now (@later false). */
static void retry(struct setop *s, bool later)
{
	if (zpend_answered(s->fs, &s->pend)) {	/* nobody waits for it */
		finish(s, 0);
		return;
	}
	if (!later)
		read_lock(s);
	else if (zks_later(s->zks, again, s) != 0)
		finish(s, ESHUTDOWN);
}

static void multi_done(int rc, const void *data)
{
	struct setop *s = (struct setop *)data;

	if (rc == ZOK) {
		finish(s, 0);
	} else if (s->results[0].err == ZNONODE || rc == ZSESSIONEXPIRED) {
		/* the holder's entry is gone: the server changed nothing */
		zklog(LOG_NOTICE, "state of %s not set: its holder's entry is gone", s->dir);
		finish(s, EIO);
	} else if (s->results[1].err == ZBADVERSION && ++s->tries < STATE_TRIES) {
		retry(s, false);	/* the lock's data changed: read it again */
	} else if (zk_rc_transient(rc)) {
		retry(s, true);
	} else {
		finish(s, s->results[1].err == ZNONODE ? EIO : rc == ZBADVERSION ? EAGAIN :
			  -zk_errno(rc));
	}
}

static void data_done(int rc, const char *value, int len, const struct Stat *st,
		      const void *data)
{
	struct setop *s = (struct setop *)data;
	const struct zkt_transport *t = zklfs_transport(s->fs, s->zks);
	size_t cap = zks_data_max(s->dir);
	ssize_t n;

	if (zk_rc_transient(rc)) {
		retry(s, true);
		return;
	}
	if (rc != ZOK) {		/* the lock is gone, its entries with it */
		finish(s, rc == ZNONODE ? EIO : -zk_errno(rc));
		return;
	}
	free(s->data);
	s->data = malloc(cap);
	if (!s->data) {
		finish(s, ENOMEM);
		return;
	}
	n = zksd_edit(value, len > 0 ? (size_t)len : 0, s->state, s->len, s->data, cap);
	if (n < 0) {
		finish(s, EFBIG);
		return;
	}
	zoo_check_op_init(&s->ops[0], s->entry, -1);
	zoo_set_op_init(&s->ops[1], s->dir, s->data, (int)n, st->version, &s->stat);
	memset(s->results, 0, sizeof(s->results));
	rc = t->ops->multi(t->ctx, 2, s->ops, s->results, multi_done, s);
	if (rc != ZOK)
		multi_done(rc, s);
}

static void read_lock(struct setop *s)
{
	int rc = zklfs_zget(s->fs, s->zks, s->dir, data_done, s);

	if (rc != ZOK)
		data_done(rc, NULL, 0, NULL, s);
}

void zklfs_state_set(fuse_req_t req, struct zklfs *fs, struct node *ln,
		     const char *state, size_t len)
{
	struct zkl_info own;
	struct setop *s;
	int err = 0;

	if (!ln || !lockreq_own_state(fs, ln, &own)) {
		fuse_reply_err(req, EACCES);	/* holds nothing: a reader, a waiter */
		return;
	}
	if (own.lost) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (own.kind != ZKN_EXCLUSIVE || own.limit) {
		fuse_reply_err(req, EACCES);	/* one of several holders */
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	s->fs = fs;
	s->len = len;
	s->state = malloc(len ? len : 1);
	if (s->state)
		memcpy(s->state, state, len);
	zkmx_lock(&fs->lock);
	if (!ln->lr || !ln->path)
		err = EACCES;		/* given back meanwhile */
	else if (!(s->dir = strdup(ln->lr->dir)) || !(s->entry = strdup(ln->path)))
		err = ENOMEM;
	zkmx_unlock(&fs->lock);
	if (!err && !s->state)
		err = ENOMEM;
	if (err) {
		fuse_reply_err(req, err);
		setop_free(s);
		return;
	}
	s->zks = zklfs_session(fs, s->dir);
	zpend_start(fs, &s->pend, req);
	read_lock(s);
}
