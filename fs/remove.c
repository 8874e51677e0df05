/*
 * fs/remove.c - rmdir, and unlink: of an entry (breaking someone's lock,
 * docs/SPEC.md), of a lock file (-o lockfiles: EBUSY while held or
 * waited for).  Each asks ZooKeeper who owns the znode (the sticky-bit
 * rule of /tmp, fs/attr.h), then deletes it; the completion answers.
 *
 * FUSE thread, then the ZooKeeper thread.
 */
#include "fs/handlers.h"

#include <errno.h>

#include "fs/attr.h"
#include "fs/xcache.h"
#include "fs/zop.h"
#include "fs/observe.h"
#include "zk/errno.h"
#include "zk/lock.h"
#include "zk/log.h"

static void delete_done(int rc, const void *data)
{
	struct zop *op = (struct zop *)data;

	zklfs_xc_changed(op->fs);
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	listcache_forget(op->fs, op->node->path);
	zkmx_lock(&op->fs->lock);
	node_unhash_path_locked(op->fs, op->path);
	zkmx_unlock(&op->fs->lock);
	zop_reply_err(op, 0);
	zop_free(op);
}

/* Removed, or unknown: the other sessions must see it before their next request. */
static void rmdir_done(int rc, const void *data)
{
	const struct zop *op = data;

	zklfs_ns_changed(op->fs, op->path);
	if (rc == ZOK || rc == ZNONODE)
		zklfs_dir_gone(op->fs, op->path);
	delete_done(rc, data);
}

/*
 * The sticky-bit rule of /tmp, for unlink and rmdir: the znode's owner
 * (zklfs_owner(): never what its data says), the mount's owner, root.
 */
static bool may_remove(struct zop *op, enum node_type type, const struct Stat *zs)
{
	if (zklfs_may_own(op->fs, op->uid, op->path, type, zs))
		return true;
	zklog(LOG_NOTICE, "%s refused: uid %u owns neither it nor the mount",
	      type == NODE_DIR ? "rmdir" : "unlink", (unsigned)op->uid);
	zop_reply_err(op, EPERM);
	zop_free(op);
	return false;
}

static void rmdir_got(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (zs->ephemeralOwner != 0) {
		zop_fail(op, ZNOCHILDRENFOREPHEMERALS);	/* ENOTDIR */
		return;
	}
	if (!may_remove(op, NODE_DIR, zs))
		return;
	/* a lingering entry goes first, on the same session: the rmdir sees
	 * the lock empty if nobody holds it */
	zkl_unlinger(zklfs_engine(op->fs, op->path), op->path);
	zop_started(op, zklfs_zdelete(op->fs, zklfs_session(op->fs, op->path), op->path,
				      rmdir_done, op));
}

/*
 * Ask who owns @name in @parent (its Stat, to @got), on the session of
 * the znode itself (@own: a directory) or of @parent (an entry).
 */
static void remove_ask(fuse_req_t req, fuse_ino_t parent, const char *name, bool own,
		       stat_completion_t got)
{
	struct zklfs *fs = fs_of(req);
	struct node *p = node_of(fs, parent);
	struct zop *op;

	if (zklfs_observe_name(name)) {	/* a handle, not a znode */
		fuse_reply_err(req, EPERM);
		return;
	}
	op = zop_new(req, p, zkn_join(p->path, name));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	zop_started(op, zklfs_zexists(fs, zklfs_session(fs, own ? op->path : p->path),
				      op->path, got, op));
}

void zklfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_ask(req, parent, name, true, rmdir_got);
}

/* A lock file goes as an empty directory does; EBUSY while anyone holds
 * or waits. */
static void unlink_lockfile_done(int rc, const void *data)
{
	struct zop *op = (struct zop *)data;

	zklfs_ns_changed(op->fs, op->path);
	if (rc == ZNOTEMPTY) {
		zklog(LOG_NOTICE, "unlink of a lock file refused: it is held or waited for");
		zop_reply_err(op, EBUSY);
		zop_free(op);
		return;
	}
	if (rc == ZOK || rc == ZNONODE)
		zklfs_dir_gone(op->fs, op->path);
	delete_done(rc, data);
}

static void unlink_lockfile(struct zop *op, const struct Stat *zs)
{
	if (!may_remove(op, NODE_LOCKFILE, zs))
		return;
	zkl_unlinger(zklfs_engine(op->fs, op->path), op->path);
	zop_started(op, zklfs_zdelete(op->fs, zklfs_session(op->fs, op->path), op->path,
				      unlink_lockfile_done, op));
}

static void unlink_got(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc == ZOK && op->fs->conf->lockfiles) {
		if (zs->ephemeralOwner)	/* entries are not shown */
			zop_fail(op, ZNONODE);
		else
			unlink_lockfile(op, zs);
		return;
	}
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (!may_remove(op, NODE_FILE, zs))
		return;
	rc = zklfs_zdelete(op->fs, zklfs_session(op->fs, op->node->path), op->path, delete_done,
			   op);
	zop_started(op, rc);
}

void zklfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_ask(req, parent, name, false, unlink_got);
}
