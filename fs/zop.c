/* fs/zop.c - one FUSE request waiting for one ZooKeeper call (see zop.h). */
#include "fs/zop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/attr.h"
#include "fs/limits.h"
#include "fs/reply.h"
#include "zk/errno.h"
#include "zk/log.h"

pid_t zop_pid(const struct zop *op)
{
	return op->pid;
}

struct zop *zop_new(fuse_req_t req, struct node *node, char *path)
{
	const struct fuse_ctx *ctx;
	struct zop *op;

	if (!path)
		return NULL;
	op = calloc(1, sizeof(*op));
	if (!op) {
		free(path);
		return NULL;
	}
	op->fs = node->fs;
	op->req = req;
	op->node = node;
	op->path = path;
	ctx = op->fs->reply->ctx(req);
	op->uid = ctx->uid;
	op->pid = ctx->pid;		/* op->req may be answered first */
	zpend_start(op->fs, &op->pend, req);
	return op;
}

void zop_free(struct zop *op)
{
	if (zop_claim(op)) {		/* a path that forgot to answer */
		zklog(LOG_ERR, "%s: a request left unanswered: EIO", op->path);
		op->fs->reply->err(op->req, EIO);
	}
	free(op->path);
	free(op);
}

bool zop_claim(struct zop *op)
{
	return zpend_claim(op->fs, &op->pend);
}

void zop_reply_err(struct zop *op, int err)
{
	if (zop_claim(op))
		op->fs->reply->err(op->req, err);
}

void zop_reply_buf(struct zop *op, const char *buf, size_t len)
{
	if (zop_claim(op))
		op->fs->reply->buf(op->req, buf, len);
}

void zklfs_reply_value(struct zklfs *fs, fuse_req_t req, size_t size, const char *val,
		       size_t len)
{
	if (size == 0)
		fs->reply->xattr(req, len);
	else if (size < len)
		fs->reply->err(req, ERANGE);
	else
		fs->reply->buf(req, val, len);
}

void zop_reply_value(struct zop *op, const char *val, size_t len)
{
	if (zop_claim(op))
		zklfs_reply_value(op->fs, op->req, op->size, val, len);
}

void zop_reply_entry(struct zop *op, const struct Stat *zs, enum node_type type)
{
	struct fuse_entry_param e;
	struct node *n;

	if (!zop_claim(op)) {		/* no node is looked up for nobody */
		zop_free(op);
		return;
	}
	zkmx_lock(&op->fs->lock);
	n = node_lookup_locked(op->fs, op->path, type);
	zkmx_unlock(&op->fs->lock);
	if (!n) {
		op->fs->reply->err(op->req, ENOMEM);
		zop_free(op);
		return;
	}
	type = node_shown_type(n);
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	zklfs_fill_attr(op->fs, &e.attr, n->ino, type, zs,
			zklfs_owner(op->fs, op->path, type, zs));
	/* directories and lock files live long; entries come and go */
	e.entry_timeout = e.attr_timeout = type == NODE_FILE ? 0.0 : 1.0;
	if (op->fs->reply->entry(op->req, &e) != 0)
		node_forget(op->fs, n, 1);
	zop_free(op);
}

struct zop *zop_new_child(fuse_req_t req, struct node *p, const char *name,
			  const char *what)
{
	struct zklfs *fs = p->fs;
	int err = zkn_check_name(name);
	struct zop *op;

	if (!err)
		err = zklfs_path_check(fs->root->path, p->path, name);
	if (!err && zklfs_hidden(fs, p->path, name))
		err = -EEXIST;
	if (err) {
		zklog(LOG_NOTICE, "%s '%.64s': %s", what, name, strerror(-err));
		fs->reply->err(req, -err);
		return NULL;
	}
	op = zop_new(req, p, zkn_join(p->path, name));
	if (!op)
		fs->reply->err(req, ENOMEM);
	return op;
}

/*
 * Does @op need the session @zks while the mount holds it silent (nothing
 * heard for the session timeout less the margin)?  Then it is answered
 * ETIMEDOUT at once, and freed: a command of several requests waits out
 * one outage once (docs/SPEC.md, "When ZooKeeper is away").  Else the
 * sweep answers it as soon as the session turns silent (zpend_silent()).
 */
static bool zop_silent(struct zop *op, struct zks *zks)
{
	if (!zklfs_zquiet(op->fs, zks)) {
		zpend_session(op->fs, &op->pend, zks);
		return false;
	}
	zop_reply_err(op, ETIMEDOUT);
	zop_free(op);
	return true;
}

void zop_create_child(struct zop *op, const char *data, int len, bool container,
		      string_stat_completion_t done)
{
	struct zklfs *fs = op->fs;
	struct zks *zks = zklfs_session(fs, op->path);

	if (zop_silent(op, zks))
		return;
	/* on the new znode's own session: its entries will be made there */
	zop_started(op, zklfs_zcreate(fs, zks, op->path, data, len,
				      container ? ZOO_CONTAINER : ZOO_PERSISTENT, done, op));
}

static bool zop_again(struct zop *op, int rc);

/*
 * Answer @op with the errno of a failed ZooKeeper call and free it.  The
 * answers a filesystem gives every day (no such node, exists, not empty)
 * are not news; anything else gets its one log line.  A read that met a
 * connection loss is sent again instead, for up to a session timeout.
 * No such node: @op's path is not there (a read of it, or a write in a
 * directory gone), so the maker of a directory there is forgotten: a
 * container the server reaped leaves the table of owners.
 */
void zop_fail(struct zop *op, int rc)
{
	if (zop_again(op, rc))
		return;
	if (rc == ZNONODE)
		zklfs_dir_gone(op->fs, op->path);
	if (rc != ZNONODE && rc != ZNODEEXISTS && rc != ZNOTEMPTY &&
	    !zpend_answered(op->fs, &op->pend))	/* else said by the sweep */
		zklog(LOG_WARNING, "%s: %s", op->path, zerror(rc));
	zop_reply_err(op, -zk_errno(rc));
	zop_free(op);
}

/* After starting a call: answer the request now if it could not start. */
void zop_started(struct zop *op, int rc)
{
	if (rc == ZOK)
		return;
	zop_fail(op, rc);
}

/*
 * Send @op's read with @send on session @zks, and again (the same step) if
 * it meets a connection loss or expiry: a short outage, or the server's
 * restart, delays a stat or a listing instead of failing it.  Writes
 * (mkdir, rmdir, unlink, write) are not sent twice: their outcome may be
 * unknown.
 */
void zop_send(struct zop *op, struct zks *zks, int (*send)(struct zop *op))
{
	op->zks = zks;
	op->send = send;
	if (zpend_answered(op->fs, &op->pend)) {	/* nobody waits for the next step */
		zop_free(op);
		return;
	}
	if (zop_silent(op, zks))
		return;
	zop_started(op, send(op));
}

static void zop_resend(void *arg, bool go)
{
	struct zop *op = arg;

	if (!go) {
		op->send = NULL;	/* the mount is going */
		zop_fail(op, ZCLOSING);
		return;
	}
	if (zpend_answered(op->fs, &op->pend)) {	/* interrupted, or too late */
		zop_free(op);
		return;
	}
	if (zop_silent(op, op->zks))
		return;
	zop_started(op, op->send(op));
}

/* Whether @op will be sent again rather than failed with @rc: until its
 * request is answered, by a signal or by its deadline (fs/pending.h). */
static bool zop_again(struct zop *op, int rc)
{
	if (!op->send || !zk_rc_transient(rc))
		return false;
	return zklfs_now_ms() < op->pend.due_ms && zklfs_zlater(op->fs, op->zks, zop_resend, op) == 0;
}
