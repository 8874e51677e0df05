/*
 * fs/settings.c - user.zklockfs.limit and user.zklockfs.linger of a lock
 * directory, and the state user.zklockfs.statedata reads (see settings.h).
 */
#include "fs/settings.h"

#include "fs/attr.h"
#include "fs/pool.h"
#include "fs/xcache.h"
#include "fs/zop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "zk/settings.h"
#include "zk/lock.h"
#include "zk/escape.h"
#include "zk/statedata.h"
#include "zk/log.h"

#define SET_TRIES 5			/* the data keeps changing under us */
#define LASTRUN 1			/* op->attr of user.zklockfs.lastrun */

/* reading --------------------------------------------------------------------- */

/* Answer @op, a getxattr of the lock's data (a setting, the state or the
 * last run), from that data (@value, @len bytes); free @op. */
static void get_answer(struct zop *op, const char *value, int len)
{
	long v;
	char val[24];

	if (!op->setting && op->attr == LASTRUN) {
		struct zksd_run run;
		char line[64 + 4 * ZKSD_LABEL_MAX];
		int k;

		if (!zksd_run_read(value, len > 0 ? (size_t)len : 0, &run)) {
			zop_reply_err(op, ENODATA);
		} else {
			k = run.exited ? snprintf(line, sizeof(line), "%lld %d ",
						  (long long)run.start_ms, run.exit_status)
				       : snprintf(line, sizeof(line), "%lld - ",
						  (long long)run.start_ms);
			zkesc(line + k, sizeof(line) - (size_t)k, run.label, strlen(run.label));
			zop_reply_value(op, line, strlen(line));
		}
		zop_free(op);
		return;
	}
	if (!op->setting) {		/* the state: never longer than its line */
		char *state = malloc(len > 0 ? (size_t)len : 1);
		ssize_t n = state ? zksd_read(value, len > 0 ? (size_t)len : 0, state,
					      len > 0 ? (size_t)len : 0) : -ENOMEM;

		if (n == -ENOMEM)
			zop_reply_err(op, ENOMEM);
		else		/* a garbled line (by hand) reads as none */
			zop_reply_value(op, state, n > 0 ? (size_t)n : 0);
		free(state);
		zop_free(op);
		return;
	}
	v = zkset_setting_parse(op->setting, value, len > 0 ? (size_t)len : 0);
	if (v < 0) {
		zop_reply_err(op, ENODATA);
	} else {
		snprintf(val, sizeof(val), "%ld", v);
		zop_reply_value(op, val, strlen(val));
	}
	zop_free(op);
}

static void get_done(int rc, const char *value, int len, const struct Stat *zs,
		     const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	/* the same command's next read of the lock's data (zklock --list
	 * asks the limit, then the last run) is answered from it */
	zklfs_xc_put_stat(op->fs, zop_pid(op), op->path, zs, value ? value : "",
			  value && len > 0 ? len : 0);
	get_answer(op, value, len);
}

static int get_send(struct zop *op)
{
	return zklfs_zget(op->fs, op->zks, op->path, get_done, op);
}

void zklfs_setting_get(fuse_req_t req, struct node *n, size_t size,
		       const struct zkset_setting *s, bool lastrun)
{
	struct zklfs *fs = fs_of(req);
	struct zop *op = zop_new(req, n, zklfs_node_path(fs, n));
	char *cached = NULL;
	struct Stat zs;
	int clen = 0;

	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->size = size;
	op->setting = s;
	op->attr = lastrun ? LASTRUN : 0;
	if (zklfs_xc_stat(fs, zop_pid(op), op->path, &zs, &cached, &clen)) {
		get_answer(op, cached, clen);
		free(cached);
		return;
	}
	zop_send(op, zklfs_session(fs, op->path), get_send);
}

/* writing --------------------------------------------------------------------- */

/* A setxattr or removexattr of a setting, between its calls. */
struct limit_set {
	struct zop *op;
	const struct zkset_setting *s;
	long now;			/* -1: remove */
	long before;			/* -1: not set */
	int flags;			/* XATTR_CREATE, XATTR_REPLACE */
	int tries;
	char *data;			/* what is sent */
};

static void set_free(struct limit_set *ls)
{
	free(ls->data);
	free(ls);
}

/* Answer @ls's request with @err (0: done) and free it. */
static void set_reply(struct limit_set *ls, int err)
{
	zop_reply_err(ls->op, err);
	zop_free(ls->op);
	set_free(ls);
}

static void read_for_set(struct limit_set *ls);

static void set_done(int rc, const struct Stat *zs, const void *data)
{
	struct limit_set *ls = (struct limit_set *)data;
	struct zop *op = ls->op;

	(void)zs;
	if (rc == ZBADVERSION && ++ls->tries < SET_TRIES) {
		read_for_set(ls);	/* changed since we read it: again */
		return;
	}
	if (rc != ZOK) {
		zop_fail(op, rc);
		set_free(ls);
		return;
	}
	zklfs_xc_changed(op->fs);	/* the lock's limit */
	if (ls->s == &zkset_setting_limit)
		zkl_limit_changed(zklfs_engine(op->fs, op->path), op->path,
				  ls->before > 0 ? (unsigned)ls->before : 0,
				  ls->now > 0 ? (unsigned)ls->now : 0);
	set_reply(ls, 0);
}

static void got_for_set(int rc, const char *value, int len, const struct Stat *zs,
			const void *data)
{
	struct limit_set *ls = (struct limit_set *)data;
	struct zop *op = ls->op;
	size_t have = len > 0 ? (size_t)len : 0, cap = have + 16;
	int n;

	if (rc != ZOK) {
		zop_fail(op, rc);
		set_free(ls);
		return;
	}
	/*
	 * A limit turns every user's plain lock there (open, exec 9>, Python,
	 * Java) into a semaphore slot, and on a shared mount anyone may make a
	 * directory first: only the mount's owner and root set or remove one.
	 * The other settings stay the directory owner's too.
	 */
	if (ls->s == &zkset_setting_limit ? op->uid != 0 && op->uid != op->fs->uid :
	    !zklfs_may_own(op->fs, op->uid, op->path, NODE_DIR, zs)) {
		zklog(LOG_NOTICE, "setting %.*s refused: uid %u owns %s", (int)strlen(ls->s->key) - 1,
		      ls->s->key, (unsigned)op->uid, ls->s == &zkset_setting_limit ?
		      "not the mount" : "neither the directory nor the mount");
		set_reply(ls, EPERM);
		return;
	}
	ls->before = zkset_setting_parse(ls->s, value, have);
	if ((ls->flags & XATTR_CREATE) && ls->before >= 0) {
		set_reply(ls, EEXIST);
		return;
	}
	if (((ls->flags & XATTR_REPLACE) || ls->now < 0) && ls->before < 0) {
		set_reply(ls, ENODATA);
		return;
	}
	free(ls->data);
	ls->data = malloc(cap);
	n = ls->data ? zkset_setting_edit(ls->s, value, have, ls->now, ls->data, cap) : -ENOMEM;
	if (n < 0) {
		set_reply(ls, n == -E2BIG ? E2BIG : ENOMEM);
		return;
	}
	rc = zklfs_zset(op->fs, zklfs_session(op->fs, op->path), op->path, ls->data, n,
			zs->version, set_done, ls);
	if (rc != ZOK) {
		zop_fail(op, rc);
		set_free(ls);
	}
}

static void read_for_set(struct limit_set *ls)
{
	struct zop *op = ls->op;
	int rc = zklfs_zget(op->fs, zklfs_session(op->fs, op->path), op->path, got_for_set, ls);

	if (rc != ZOK) {
		zop_fail(op, rc);
		set_free(ls);
	}
}

void zklfs_setting_set(fuse_req_t req, struct node *n, const char *value,
		       size_t len, int flags, const struct zkset_setting *s)
{
	struct zklfs *fs = fs_of(req);
	struct limit_set *ls;
	unsigned now = 0;

	if (value && zkset_setting_value(s, value, len, &now) != 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ls = calloc(1, sizeof(*ls));
	if (ls)
		ls->op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!ls || !ls->op) {
		free(ls);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ls->s = s;
	ls->now = value ? (long)now : -1;
	ls->flags = flags;
	read_for_set(ls);
}
