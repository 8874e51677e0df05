/*
 * fs/read.c - what an entry says: its data (read) and the extended
 * attributes of entries and directories.
 *
 * Data written here, not yet sent, is read from the holder's buffer
 * (fs/wbuf.h); our own lock's state is its request's (fs/lockreq.h); a
 * semaphore's limit is fs/settings.h's, asking a holder to let go
 * fs/revoke.h's.
 */
#include "fs/handlers.h"

#include "fs/settings.h"
#include "fs/lockfile.h"
#include "fs/lockreq.h"
#include "fs/reply.h"
#include "fs/revoke.h"
#include "fs/wbuf.h"
#include "fs/xcache.h"
#include "fs/zop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/settings.h"
#include "zk/metrics.h"
#include "zk/log.h"

/* read --------------------------------------------------------------------- */

/* Answer the READ @op from the data @value (@len bytes), and free @op. */
static void read_reply(struct zop *op, const char *value, int len)
{
	if (op->off >= len || !value)
		zop_reply_buf(op, NULL, 0);
	else
		zop_reply_buf(op, value + op->off,
			       (size_t)len - (size_t)op->off < op->size ?
			       (size_t)len - (size_t)op->off : op->size);
	zop_free(op);
}

static void read_done(int rc, const char *value, int len, const struct Stat *zs,
		      const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc == ZNONODE && op->fi.fh == FH_HOLDER) {
		zop_reply_err(op, EIO);	/* lost: not noticed yet */
		zop_free(op);
		return;
	}
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (op->fi.fh != FH_HOLDER)
		zklfs_xc_put_stat(op->fs, zop_pid(op), op->path, zs, value, len);
	read_reply(op, value, len);
}

static int read_send(struct zop *op)
{
	return zklfs_zget(op->fs, op->zks, op->path, read_done, op);
}

void zklfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct Stat zs;
	struct zop *op;
	char *data;
	int err, len;

	err = lockreq_holder_errno(fs, n, fi);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	if (zklfs_wbuf_read(fs, n, req, size, off))
		return;			/* written here, not yet in ZooKeeper */
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {
		fuse_reply_err(req, n->path ? ENOMEM : EIO);
		return;
	}
	op->size = size;
	op->off = off;
	op->fi.fh = fi ? fi->fh : FH_PLAIN;
	/* a reader (the holder asks ZooKeeper: is its entry still there?) */
	if (op->fi.fh != FH_HOLDER &&
	    zklfs_xc_stat(fs, zop_pid(op), op->path, &zs, &data, &len)) {
		read_reply(op, data, len);
		free(data);
		return;
	}
	zop_send(op, zklfs_session_of(fs, op->path, false), read_send);
}

/* xattr -------------------------------------------------------------------- */

enum xattr { X_NONE, X_SEQ, X_KIND, X_STATE, X_TOKEN, X_HOLDERS };

/* The mount's figures, Prometheus text (zk/metrics.h): its root only. */
#define ZKLFS_METRICS_XATTR "user.zklockfs.metrics"

static const char *const xattr_names[] = {
	[X_SEQ] = "user.zklockfs.seq",
	[X_KIND] = "user.zklockfs.kind",
	[X_STATE] = "user.zklockfs.state",
	[X_TOKEN] = "user.zklockfs.token",
	[X_HOLDERS] = "user.zklockfs.holders",
};

/* Answer the state or holders xattr @op from the lock's listing @sv (its
 * limit in op->off), and free @op. */
static void xattr_reply(struct zop *op, const struct String_vector *sv)
{
	struct zkg_child *kids;
	char *val = NULL;
	size_t len = 0, n;

	kids = zkg_parse_children(sv->data, sv->count, &n);
	if (!kids) {
		zop_reply_err(op, ENOMEM);
		zop_free(op);
		return;
	}
	if (op->attr == X_HOLDERS) {
		const struct zkg_child **h = malloc(sizeof(*h) * (n + 1));
		size_t nh = !h ? 0 : op->off ? zkg_holders_limit(kids, n, (unsigned)op->off, h, n)
				     : zkg_holders(kids, n, h, n);
		FILE *f = h ? open_memstream(&val, &len) : NULL;

		for (size_t i = 0; f && i < nh; i++)
			fprintf(f, "%s\n", h[i]->name);
		if (f && fclose(f) != 0) {
			free(val);
			val = NULL;		/* ENOMEM below, not an empty list */
		}
		free(h);
	} else {			/* X_STATE of an entry */
		struct zkg_child me;
		const char *s = "gone";

		if (zkn_parse(zkn_base(op->path), &me)) {
			switch (op->off ? zkg_decide_limit(kids, n, me.seq, (unsigned)op->off)
					: zkg_decide(kids, n, me.seq, me.kind, NULL)) {
			case ZKG_GRANTED: s = "held"; break;
			case ZKG_WAIT: s = "waiting"; break;
			case ZKG_MISSING: s = "gone"; break;
			}
		}
		val = strdup(s);
		len = strlen(s);
	}
	free(kids);
	if (!val)
		zop_reply_err(op, ENOMEM);
	else
		zop_reply_value(op, val, len);
	free(val);
	zop_free(op);
}

/* Answer user.zklockfs.token of the entry whose Stat is @zs; free @op. */
static void token_reply(struct zop *op, const struct Stat *zs)
{
	struct zkg_child me;
	char val[64];

	zkn_parse(zkn_base(op->path), &me);
	snprintf(val, sizeof(val), "%lld %d", (long long)zs->czxid, me.seq);
	zop_reply_value(op, val, strlen(val));
	zop_free(op);
}

static void token_done(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_xc_put_stat(op->fs, zop_pid(op), op->path, zs, NULL, 0);
	token_reply(op, zs);
}

static int token_send(struct zop *op)
{
	return zklfs_zexists(op->fs, op->zks, op->path, token_done, op);
}

/* The directory setting (zk/settings.h) the xattr @name is, or NULL. */
static const struct zkset_setting *setting_of(const char *name)
{
	if (strcmp(name, ZKLFS_LIMIT_XATTR) == 0)
		return &zkset_setting_limit;
	if (strcmp(name, ZKLFS_LINGER_XATTR) == 0)
		return &zkset_setting_linger;
	return NULL;
}

/* Is the entry @path kept by this mount after its last close (zk/linger.c)? */
static bool lingering(struct zklfs *fs, const char *path)
{
	char *dir = strndup(path, zkn_parent_len(path));
	bool yes = dir && zkl_cached(zklfs_engine(fs, dir), dir, path);

	free(dir);
	return yes;
}

/* The lock's directory: @op's own (holders), its parent's (an entry's state). */
static char *xattr_dir(const struct zop *op)
{
	return op->attr == X_HOLDERS ? strdup(op->path)
				     : strndup(op->path, zkn_parent_len(op->path));
}

static void xattr_children_done(int rc, const struct String_vector *sv,
				const struct Stat *zdir, const void *data)
{
	struct zop *op = (struct zop *)data;
	char *dir;

	(void)zdir;		/* the listing alone */
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	dir = xattr_dir(op);
	if (dir)
		zklfs_xc_put_list(op->fs, zop_pid(op), dir, (unsigned)op->off, sv);
	free(dir);
	xattr_reply(op, sv);
}

/* Did this process read @op's lock a moment ago?  Then @op is answered. */
static bool xattr_cached(struct zop *op)
{
	struct String_vector sv;
	char *dir = xattr_dir(op);
	unsigned limit;
	bool hit = dir && zklfs_xc_list(op->fs, zop_pid(op), dir, &limit, &sv);

	free(dir);
	if (!hit)
		return false;
	op->off = (off_t)limit;
	xattr_reply(op, &sv);
	deallocate_String_vector(&sv);
	return true;
}

/* The lock's limit (zk/settings.h) is in op->off; now its listing. */
static void xattr_limit_done(int rc, const char *value, int len,
			     const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;
	char *dir;

	(void)zs;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	op->off = (off_t)zkset_parse(value, len > 0 ? (size_t)len : 0);
	dir = xattr_dir(op);
	rc = dir ? zklfs_zchildren(op->fs, op->zks, dir, xattr_children_done, op) : ZSYSTEMERROR;
	free(dir);
	if (rc != ZOK)
		zop_fail(op, rc);
}

/* The listing the xattr needs, after the limit of a semaphore: the
 * directory's (holders), the entry's directory's (state). */
static int xattr_list_send(struct zop *op)
{
	char *dir = xattr_dir(op);
	int rc;

	if (!dir)
		return ZSYSTEMERROR;
	rc = zklfs_zget(op->fs, op->zks, dir, xattr_limit_done, op);
	free(dir);
	return rc;
}

/* The mount's figures (zk/metrics.h), on its root directory. */
static void reply_metrics(fuse_req_t req, size_t size)
{
	size_t len = zkm_format(NULL, 0) + 256, n;
	char *buf = malloc(len);	/* room for figures grown meanwhile */

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = zkm_format(buf, len);
	zklfs_reply_value(req, size, buf, n < len ? n : len - 1);
	free(buf);
}

/* "user.zklockfs.lockfiles": "1" on a folder of a lockfiles mount, where
 * zklock makes a missing LOCKDIR a lock file; not listed. */
#define ZKLFS_LOCKFILES_XATTR "user.zklockfs.lockfiles"

void zklfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   size_t size)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct zkg_child me;
	enum xattr x = X_NONE;
	struct zop *op;
	char val[64];
	struct Stat zs;
	int len;

	if (strcmp(name, ZKLFS_METRICS_XATTR) == 0) {
		if (n->ino == FUSE_ROOT_ID)
			reply_metrics(req, size);
		else
			fuse_reply_err(req, ENODATA);
		return;
	}
	if (strcmp(name, LF_QUEUE_XATTR) == 0) {	/* zklock --list asks */
		if (node_persistent(n->type))
			lf_queue_xattr(req, n, size);
		else
			fuse_reply_err(req, ENODATA);
		return;
	}
	if (strcmp(name, ZKLFS_LOCKFILES_XATTR) == 0) {	/* zklock asks */
		if (fs->conf->lockfiles && n->type == NODE_DIR)
			zklfs_reply_value(req, size, "1", 1);
		else
			fuse_reply_err(req, ENODATA);
		return;
	}
	if (setting_of(name) || strcmp(name, ZKLFS_STATEDATA_XATTR) == 0 ||
	    strcmp(name, ZKLFS_LASTRUN_XATTR) == 0) {
		if (node_persistent(n->type))
			zklfs_limit_get(req, n, size, setting_of(name),
					strcmp(name, ZKLFS_LASTRUN_XATTR) == 0);
		else
			fuse_reply_err(req, ENODATA);
		return;
	}
	for (size_t i = 1; i < sizeof(xattr_names) / sizeof(*xattr_names); i++)
		if (strcmp(name, xattr_names[i]) == 0)
			x = (enum xattr)i;
	/* our own lock: the engine knows, even while ZooKeeper is away */
	if ((x == X_STATE || x == X_TOKEN) &&
	    (len = lockreq_own_text(fs, n, x == X_TOKEN, val, sizeof(val))) >= 0) {
		zklfs_reply_value(req, size, val, (size_t)len);
		return;
	}
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {			/* a lock node holding no entry */
		if (x == X_STATE && lockreq_waiting(fs, n)) {
			zklfs_reply_value(req, size, "waiting", strlen("waiting"));
			return;
		}
		fuse_reply_err(req, ENODATA);
		return;
	}
	op->size = size;
	op->attr = x;
	if (node_persistent(n->type) ? x != X_HOLDERS :
	    x == X_HOLDERS || x == X_NONE || !zkn_parse(zkn_base(op->path), &me)) {
		zop_reply_err(op, ENODATA);
		zop_free(op);
		return;
	}
	switch (x) {
	case X_SEQ:
		snprintf(val, sizeof(val), "%d", me.seq);
		break;
	case X_KIND:
		snprintf(val, sizeof(val), "%s", me.kind == ZKN_SHARED ? "shared" : "exclusive");
		break;
	case X_TOKEN:
		if (zklfs_xc_stat(fs, zop_pid(op), op->path, &zs, NULL, NULL)) {
			token_reply(op, &zs);
			return;
		}
		zop_send(op, zklfs_session_of(fs, op->path, false), token_send);
		return;
	case X_HOLDERS:
		if (!xattr_cached(op))
			zop_send(op, zklfs_session(fs, op->path), xattr_list_send);
		return;
	case X_STATE:			/* the entry's directory's session */
		if (lingering(fs, op->path)) {
			snprintf(val, sizeof(val), "cached");
			break;
		}
		if (!xattr_cached(op))
			zop_send(op, zklfs_session_of(fs, op->path, false), xattr_list_send);
		return;
	default:
		break;
	}
	zop_reply_value(op, val, strlen(val));
	zop_free(op);
}

/* @name and its NUL into @buf at @len: the length after it. */
static size_t put_name(char *buf, size_t len, const char *name)
{
	memcpy(buf + len, name, strlen(name) + 1);
	return len + strlen(name) + 1;
}

/* The names of the xattrs @type has, the limit if @limit, the linger if
 * @linger, the figures if @root: into @buf. */
static size_t xattr_list(enum node_type type, bool limit, bool linger, bool root,
			 char *buf)
{
	size_t len = 0;

	if (root)
		len = put_name(buf, len, ZKLFS_METRICS_XATTR);
	for (size_t i = 1; i < sizeof(xattr_names) / sizeof(*xattr_names); i++)
		if ((i == X_HOLDERS) == (type == NODE_DIR))
			len = put_name(buf, len, xattr_names[i]);
	if (limit)
		len = put_name(buf, len, ZKLFS_LIMIT_XATTR);
	if (linger)
		len = put_name(buf, len, ZKLFS_LINGER_XATTR);
	return len;
}

/* A directory lists user.zklockfs.limit and .linger only when it sets them. */
static void listxattr_dir_done(int rc, const char *value, int len,
			       const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;
	char buf[256];

	(void)zs;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	size_t have = len > 0 ? (size_t)len : 0;

	zop_reply_value(op, buf,
			  xattr_list(NODE_DIR, zkset_parse(value, have),
				     zkset_setting_parse(&zkset_setting_linger, value, have) >= 0,
				     op->node->ino == FUSE_ROOT_ID, buf));
	zop_free(op);
}

static int listxattr_dir_send(struct zop *op)
{
	return zklfs_zget(op->fs, op->zks, op->path, listxattr_dir_done, op);
}

void zklfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct zop *op;
	char buf[256];

	if (!node_persistent(n->type)) {
		zklfs_reply_value(req, size, buf, xattr_list(n->type, false, false, false, buf));
		return;
	}
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->size = size;
	zop_send(op, zklfs_session(fs, op->path), listxattr_dir_send);
}

/*
 * A lock file's limit and linger are the mount owner's (or root's) to set,
 * not its maker's: whoever touches nightly.lock first would otherwise turn
 * every host's flock(1) on it into a semaphore.  (A lock directory's
 * maker may: zklock refuses a semaphore it did not ask for.)
 */
static bool may_set(fuse_req_t req, struct node *n)
{
	uid_t uid = fuse_req_ctx(req)->uid;

	if (n->type != NODE_LOCKFILE || uid == 0 || uid == n->fs->uid)
		return true;
	zklog(LOG_NOTICE, "setting of a lock file refused: uid %u is not the "
	      "mount's owner", (unsigned)uid);
	fuse_reply_err(req, EPERM);
	return false;
}

void zklfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   const char *value, size_t size, int flags)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);

	if (setting_of(name) && node_persistent(n->type) && !may_set(req, n))
		return;
	if (setting_of(name) && node_persistent(n->type))
		zklfs_limit_set(req, n, value ? value : "", size, flags, setting_of(name));
	else if (strcmp(name, ZKLFS_REVOKE_XATTR) == 0 && !node_persistent(n->type))
		zklfs_revoke(req, n, value ? value : "", size);
	else if ((strcmp(name, ZKLFS_REVOKE_XATTR) == 0 || strcmp(name, ZKLFS_BREAK_XATTR) == 0) &&
		 n->type == NODE_LOCKFILE)
		zklfs_revoke_in(req, n, value ? value : "", size,
				strcmp(name, ZKLFS_BREAK_XATTR) == 0);
	else
		fuse_reply_err(req, ENOTSUP);
}

void zklfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);

	if (setting_of(name) && node_persistent(n->type) && !may_set(req, n))
		return;
	if (setting_of(name) && node_persistent(n->type))
		zklfs_limit_set(req, n, NULL, 0, 0, setting_of(name));
	else
		fuse_reply_err(req, ENOTSUP);
}
