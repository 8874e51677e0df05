/*
 * fs/xattrs.c - the user.zklockfs.* extended attributes: one table of
 * every name, and getxattr, setxattr, removexattr and listxattr, which
 * look a name up in it and call its row's handler.
 *
 * An entry's seq, kind, state and token and a lock's holders are answered
 * here; a lock's settings and published state are fs/settings.h's, its
 * queue fs/lockfile.h's (fs/lfqueue.c), revoking and breaking an entry
 * fs/revoke.h's.
 */
#include "fs/handlers.h"

#include "fs/lockfile.h"
#include "fs/lockreq.h"
#include "fs/revoke.h"
#include "fs/settings.h"
#include "fs/xcache.h"
#include "fs/zop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/grant.h"
#include "zk/log.h"
#include "zk/metrics.h"
#include "zk/settings.h"

struct xattr;

/* Where an xattr is: a bit per node type (fs/node.h), and the root's. */
#define ON(type) (1u << (type))
#define ON_DIR ON(NODE_DIR)
#define ON_LOCKFILE ON(NODE_LOCKFILE)
#define ON_ROOT (1u << 16)		/* beside its ON_DIR */
/* a lock, its directory or its lock file: node_persistent() */
#define ON_LOCK (ON_DIR | ON_LOCKFILE)
/* an entry, and a lock node (which holds one once created); not
 * LOCKDIR/.holders or .state, which are named as no entry is */
#define ON_ENTRY (ON(NODE_FILE) | ON(NODE_PENDING))

/* Does listxattr list it? */
enum listed {
	UNLISTED,
	LISTED,
	LISTED_IF_SET,			/* if the lock's data sets it (->setting) */
};

/*
 * Who may set or remove it (anyone may get it).  The handler checks, on
 * the Stat it reads (zklfs_may_own(), fs/attr.h), but for
 * MOUNT_OWNER_FIRST: checked here, before the handler.
 */
enum who {
	NOBODY,				/* no set, no remove */
	ENTRY_OWNER,			/* whoever may unlink the entry */
	DIR_OWNER,			/* the directory's owner, the mount's, root */
	MOUNT_OWNER,			/* the mount's owner or root */
	MOUNT_OWNER_FIRST,		/* the same, before anything is read */
};

/* A row's handlers: each answers @req.  set's @value is never NULL. */
typedef void xattr_get_fn(fuse_req_t req, struct node *n, size_t size,
			  const struct xattr *x);
typedef void xattr_set_fn(fuse_req_t req, struct node *n, const struct xattr *x,
			  const char *value, size_t len, int flags);
typedef void xattr_rm_fn(fuse_req_t req, struct node *n, const struct xattr *x);

/* One name on the nodes @on.  A name may have a row per kind of node. */
struct xattr {
	const char *name;
	unsigned on;			/* ON_* */
	enum listed listed;
	xattr_get_fn *get;		/* NULL: ENODATA */
	xattr_set_fn *set;		/* NULL: ENOTSUP */
	xattr_rm_fn *rm;		/* NULL: ENOTSUP */
	enum who who;
	const struct zkset_setting *setting;	/* a lock's setting (zk/settings.h) */
};

/* an entry's seq, kind, state, token ---------------------------------------- */

/* The zop of a getxattr of the entry @n, its name parsed into @me; or
 * NULL, @req answered: ENODATA if @n is no entry ("waiting" for @state
 * while a lock node waits for its entry). */
static struct zop *entry_op(fuse_req_t req, struct node *n, size_t size, bool state,
			    struct zkg_child *me)
{
	struct zklfs *fs = fs_of(req);
	struct zop *op = zop_new(req, n, zklfs_node_path(fs, n));

	if (!op) {			/* a lock node holding no entry */
		if (state && lockreq_waiting(fs, n))
			zklfs_reply_value(fs, req, size, "waiting", strlen("waiting"));
		else
			fuse_reply_err(req, ENODATA);
		return NULL;
	}
	op->size = size;
	if (!zkn_parse(zkn_base(op->path), me)) {
		zop_reply_err(op, ENODATA);
		zop_free(op);
		return NULL;
	}
	return op;
}

/* Answer @op with the text @val, and free @op. */
static void reply_text(struct zop *op, const char *val)
{
	zop_reply_value(op, val, strlen(val));
	zop_free(op);
}

static void get_seq(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	struct zkg_child me;
	struct zop *op = entry_op(req, n, size, false, &me);
	char val[16];

	(void)x;
	if (!op)
		return;
	snprintf(val, sizeof(val), "%d", me.seq);
	reply_text(op, val);
}

static void get_kind(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	struct zkg_child me;
	struct zop *op = entry_op(req, n, size, false, &me);

	(void)x;
	if (op)
		reply_text(op, me.kind == ZKN_SHARED ? "shared" : "exclusive");
}

/* Our own lock's state or token (@token): the engine knows, even while
 * ZooKeeper is away.  True once @req is answered. */
static bool own_text(fuse_req_t req, struct node *n, size_t size, bool token)
{
	struct zklfs *fs = fs_of(req);
	char val[64];
	int len = lockreq_own_text(fs, n, token, val, sizeof(val));

	if (len < 0)
		return false;
	zklfs_reply_value(fs, req, size, val, (size_t)len);
	return true;
}

/* Answer user.zklockfs.token of the entry whose Stat is @zs; free @op. */
static void token_reply(struct zop *op, const struct Stat *zs)
{
	struct zkg_child me;
	char val[64];

	zkn_parse(zkn_base(op->path), &me);
	snprintf(val, sizeof(val), "%lld %d", (long long)zs->czxid, me.seq);
	reply_text(op, val);
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

static void get_token(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	struct zklfs *fs = fs_of(req);
	struct zkg_child me;
	struct Stat zs;
	struct zop *op;

	(void)x;
	if (own_text(req, n, size, true) || !(op = entry_op(req, n, size, false, &me)))
		return;
	if (zklfs_xc_stat(fs, zop_pid(op), op->path, &zs, NULL, NULL))
		token_reply(op, &zs);
	else
		zop_send(op, zklfs_session_of(fs, op->path, false), token_send);
}

/* a lock's listing: an entry's state, a lock's holders ---------------------- */

/* op->attr of a listing's getxattr: the lock's holders, not an entry's state */
#define HOLDERS 1

/* Answer the state or holders xattr @op from the lock's listing @sv (its
 * limit in op->off), and free @op. */
static void listing_reply(struct zop *op, const struct String_vector *sv)
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
	if (op->attr == HOLDERS) {
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
	} else {			/* an entry's state */
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

/* The lock's directory: @op's own (holders), its parent's (an entry's state). */
static char *listing_dir(const struct zop *op)
{
	return op->attr == HOLDERS ? strdup(op->path)
				   : strndup(op->path, zkn_parent_len(op->path));
}

static void listing_children_done(int rc, const struct String_vector *sv,
				  const struct Stat *zdir, const void *data)
{
	struct zop *op = (struct zop *)data;
	char *dir;

	(void)zdir;		/* the listing alone */
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	dir = listing_dir(op);
	if (dir)
		zklfs_xc_put_list(op->fs, zop_pid(op), dir, (unsigned)op->off, sv);
	free(dir);
	listing_reply(op, sv);
}

/* Did this process read @op's lock a moment ago?  Then @op is answered. */
static bool listing_cached(struct zop *op)
{
	struct String_vector sv;
	char *dir = listing_dir(op);
	unsigned limit;
	bool hit = dir && zklfs_xc_list(op->fs, zop_pid(op), dir, &limit, &sv);

	free(dir);
	if (!hit)
		return false;
	op->off = (off_t)limit;
	listing_reply(op, &sv);
	deallocate_String_vector(&sv);
	return true;
}

/* The lock's limit (zk/settings.h) is in op->off; now its listing. */
static void listing_limit_done(int rc, const char *value, int len,
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
	dir = listing_dir(op);
	rc = dir ? zklfs_zchildren(op->fs, op->zks, dir, listing_children_done, op) : ZSYSTEMERROR;
	free(dir);
	if (rc != ZOK)
		zop_fail(op, rc);
}

/* The listing the xattr needs, after the limit of a semaphore: the
 * directory's (holders), the entry's directory's (state). */
static int listing_send(struct zop *op)
{
	char *dir = listing_dir(op);
	int rc;

	if (!dir)
		return ZSYSTEMERROR;
	rc = zklfs_zget(op->fs, op->zks, dir, listing_limit_done, op);
	free(dir);
	return rc;
}

/* Is the entry @path kept by this mount after its last close (zk/linger.c)? */
static bool lingering(struct zklfs *fs, const char *path)
{
	char *dir = strndup(path, zkn_parent_len(path));
	bool yes = dir && zkl_cached(zklfs_engine(fs, dir), dir, path);

	free(dir);
	return yes;
}

static void get_state(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	struct zklfs *fs = fs_of(req);
	struct zkg_child me;
	struct zop *op;

	(void)x;
	if (own_text(req, n, size, false) || !(op = entry_op(req, n, size, true, &me)))
		return;
	if (lingering(fs, op->path))
		reply_text(op, "cached");
	else if (!listing_cached(op))	/* the entry's directory's session */
		zop_send(op, zklfs_session_of(fs, op->path, false), listing_send);
}

static void get_holders(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	struct zklfs *fs = fs_of(req);
	struct zop *op = zop_new(req, n, zklfs_node_path(fs, n));

	(void)x;
	if (!op) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	op->size = size;
	op->attr = HOLDERS;
	if (!listing_cached(op))
		zop_send(op, zklfs_session(fs, op->path), listing_send);
}

/* the mount's, and a lock's data --------------------------------------------- */

/* The mount's figures (zk/metrics.h). */
static void get_metrics(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	size_t len = zkm_format(NULL, 0) + 256, got;
	char *buf = malloc(len);	/* room for figures grown meanwhile */

	(void)n;
	(void)x;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	got = zkm_format(buf, len);
	zklfs_reply_value(fs_of(req), req, size, buf, got < len ? got : len - 1);
	free(buf);
}

/* "1" on a lockfiles mount, where zklock makes a missing LOCKDIR a lock file. */
static void get_lockfiles(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	struct zklfs *fs = fs_of(req);

	(void)n;
	(void)x;
	if (fs->conf->lockfiles)
		zklfs_reply_value(fs, req, size, "1", 1);
	else
		fuse_reply_err(req, ENODATA);
}

static void get_queue(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	(void)x;
	lf_queue_xattr(req, n, size);
}

static void get_setting(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	zklfs_setting_get(req, n, size, x->setting, false);
}

static void get_statedata(fuse_req_t req, struct node *n, size_t size,
			  const struct xattr *x)
{
	(void)x;
	zklfs_setting_get(req, n, size, NULL, false);
}

static void get_lastrun(fuse_req_t req, struct node *n, size_t size, const struct xattr *x)
{
	(void)x;
	zklfs_setting_get(req, n, size, NULL, true);
}

static void set_setting(fuse_req_t req, struct node *n, const struct xattr *x,
			const char *value, size_t len, int flags)
{
	zklfs_setting_set(req, n, value, len, flags, x->setting);
}

static void rm_setting(fuse_req_t req, struct node *n, const struct xattr *x)
{
	zklfs_setting_set(req, n, NULL, 0, 0, x->setting);
}

static void set_revoke(fuse_req_t req, struct node *n, const struct xattr *x,
		       const char *value, size_t len, int flags)
{
	(void)x;
	(void)flags;
	zklfs_revoke(req, n, value, len);
}

/* On a lock file, the value names the entry. */
static void set_revoke_in(fuse_req_t req, struct node *n, const struct xattr *x,
			  const char *value, size_t len, int flags)
{
	(void)x;
	(void)flags;
	zklfs_revoke_in(req, n, value, len, false);
}

static void set_break_in(fuse_req_t req, struct node *n, const struct xattr *x,
			 const char *value, size_t len, int flags)
{
	(void)x;
	(void)flags;
	zklfs_revoke_in(req, n, value, len, true);
}

/* the table ------------------------------------------------------------------ */

/* In the order listxattr lists them.  A lock file's settings are the
 * mount owner's, not its maker's: whoever touches nightly.lock first would
 * otherwise turn every host's flock(1) on it into a semaphore.  (A lock
 * directory's maker may: zklock refuses a semaphore it did not ask for.) */
static const struct xattr xattrs[] = {
	/* name, on, listed, get,
	   set, rm, who, setting */
	{ "user.zklockfs.metrics",   ON_ROOT,     LISTED,        get_metrics,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.seq",       ON_ENTRY,    LISTED,        get_seq,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.kind",      ON_ENTRY,    LISTED,        get_kind,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.state",     ON_ENTRY,    LISTED,        get_state,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.token",     ON_ENTRY,    LISTED,        get_token,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.holders",   ON_LOCK,     LISTED,        get_holders,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.limit",     ON_DIR,      LISTED_IF_SET, get_setting,
	  set_setting,   rm_setting, MOUNT_OWNER,       &zkset_setting_limit },
	{ "user.zklockfs.limit",     ON_LOCKFILE, LISTED_IF_SET, get_setting,
	  set_setting,   rm_setting, MOUNT_OWNER_FIRST, &zkset_setting_limit },
	{ "user.zklockfs.linger",    ON_DIR,      LISTED_IF_SET, get_setting,
	  set_setting,   rm_setting, DIR_OWNER,         &zkset_setting_linger },
	{ "user.zklockfs.linger",    ON_LOCKFILE, LISTED_IF_SET, get_setting,
	  set_setting,   rm_setting, MOUNT_OWNER_FIRST, &zkset_setting_linger },
	{ "user.zklockfs.statedata", ON_LOCK,     UNLISTED,      get_statedata,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.lastrun",   ON_LOCK,     UNLISTED,      get_lastrun,
	  NULL,          NULL,       NOBODY,            NULL },
	/* zklock --list asks */
	{ "user.zklockfs.queue",     ON_LOCK,     UNLISTED,      get_queue,
	  NULL,          NULL,       NOBODY,            NULL },
	/* zklock asks */
	{ "user.zklockfs.lockfiles", ON_DIR,      UNLISTED,      get_lockfiles,
	  NULL,          NULL,       NOBODY,            NULL },
	{ "user.zklockfs.revoke",    ON_ENTRY,    UNLISTED,      NULL,
	  set_revoke,    NULL,       ENTRY_OWNER,       NULL },
	{ "user.zklockfs.revoke",    ON_LOCKFILE, UNLISTED,      NULL,
	  set_revoke_in, NULL,       ENTRY_OWNER,       NULL },
	{ "user.zklockfs.break",     ON_LOCKFILE, UNLISTED,      NULL,
	  set_break_in,  NULL,       ENTRY_OWNER,       NULL },
};

#define NXATTRS (sizeof(xattrs) / sizeof(*xattrs))

/* Where @n is, as ON_* says. */
static unsigned on_of(const struct node *n)
{
	return ON(n->type) | (n->ino == FUSE_ROOT_ID ? ON_ROOT : 0);
}

/* The row of the xattr @name (untrusted) on @n, or NULL. */
static const struct xattr *xattr_find(const struct node *n, const char *name)
{
	unsigned on = on_of(n);

	for (size_t i = 0; i < NXATTRS; i++)
		if ((xattrs[i].on & on) && strcmp(name, xattrs[i].name) == 0)
			return &xattrs[i];
	return NULL;
}

/* May @req set or remove @x?  MOUNT_OWNER_FIRST is checked here; EPERM
 * answered.  The handler checks the others. */
static bool may(fuse_req_t req, const struct node *n, const struct xattr *x)
{
	uid_t uid = fuse_req_ctx(req)->uid;

	if (x->who != MOUNT_OWNER_FIRST || uid == 0 || uid == n->fs->uid)
		return true;
	zklog(LOG_NOTICE, "setting of a lock file refused: uid %u is not the "
	      "mount's owner", (unsigned)uid);
	fuse_reply_err(req, EPERM);
	return false;
}

void zklfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct node *n = node_of(fs_of(req), ino);
	const struct xattr *x = xattr_find(n, name);

	if (x && x->get)
		x->get(req, n, size, x);
	else
		fuse_reply_err(req, ENODATA);
}

void zklfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags)
{
	struct node *n = node_of(fs_of(req), ino);
	const struct xattr *x = xattr_find(n, name);

	if (!x || !x->set)
		fuse_reply_err(req, ENOTSUP);
	else if (may(req, n, x))
		x->set(req, n, x, value ? value : "", size, flags);
}

void zklfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct node *n = node_of(fs_of(req), ino);
	const struct xattr *x = xattr_find(n, name);

	if (!x || !x->rm)
		fuse_reply_err(req, ENOTSUP);
	else if (may(req, n, x))
		x->rm(req, n, x);
}

/* The names listed on a node at @on, whose lock's data is @data (@len
 * bytes, or NULL), into @buf of @cap bytes: their length. */
static size_t list_names(unsigned on, const char *data, size_t len, char *buf, size_t cap)
{
	size_t at = 0;

	for (size_t i = 0; i < NXATTRS; i++) {
		const struct xattr *x = &xattrs[i];
		size_t k = strlen(x->name) + 1;

		if (!(x->on & on) || x->listed == UNLISTED || k > cap - at ||
		    (x->listed == LISTED_IF_SET &&
		     zkset_setting_parse(x->setting, data, len) < 0))
			continue;
		memcpy(buf + at, x->name, k);
		at += k;
	}
	return at;
}

/* A lock lists the settings its data sets. */
static void listxattr_data_done(int rc, const char *value, int len,
				const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;
	char buf[256];

	(void)zs;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zop_reply_value(op, buf, list_names(on_of(op->node), value,
					    len > 0 ? (size_t)len : 0, buf, sizeof(buf)));
	zop_free(op);
}

static int listxattr_data_send(struct zop *op)
{
	return zklfs_zget(op->fs, op->zks, op->path, listxattr_data_done, op);
}

void zklfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct zop *op;
	char buf[256];

	if (!node_persistent(n->type)) {	/* nothing LISTED_IF_SET */
		zklfs_reply_value(fs, req, size, buf,
				  list_names(on_of(n), NULL, 0, buf, sizeof(buf)));
		return;
	}
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->size = size;
	zop_send(op, zklfs_session(fs, op->path), listxattr_data_send);
}
