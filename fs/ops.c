/*
 * fs/ops.c - the namespace: lookup, stat, mkdir, and the table of every
 * FUSE handler.  Every handler copies what it needs into a struct zop
 * (fs/zop.h), starts one asynchronous ZooKeeper call and returns; the
 * completion, on the ZooKeeper thread, answers the request.  Removals are
 * fs/remove.c's, listings fs/readdir.c's, data fs/read.c's, xattrs
 * fs/xattrs.c's, a file's requests fs/fdops.c's (an entry's locks
 * fs/lockops.c's and fs/flock.c's, a lock file's fs/lockfile.h's), a
 * holder's writes fs/wbuf.c's.
 *
 * On a lockfiles mount, fs/lockfile.h says what a znode is.  Nothing calls
 * into this file but fs/main.c, which takes the table.
 */
#include "fs/handlers.h"

#include "fs/attr.h"
#include "fs/limits.h"
#include "fs/lockfile.h"
#include "fs/lockreq.h"
#include "fs/observe.h"
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
#include "zk/log.h"

/* lookup ---------------------------------------------------------------- */

/* An unmarked znode with children, on a lockfiles mount: they tell. */
static void lookup_kids_done(int rc, const struct String_vector *sv,
			     const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zop_reply_entry(op, zs, lf_children_class(sv) == LF_FOLDER &&
				!lf_in_use(op->fs, op->path) ? NODE_DIR : NODE_LOCKFILE);
}

static int lookup_kids_send(struct zop *op)
{
	return zklfs_zchildren(op->fs, op->zks, op->path, lookup_kids_done, op);
}

/*
 * Answer the LOOKUP @op of the znode @zs (its data @value, @len bytes):
 * a directory or an entry; on a lockfiles mount a folder or a lock file,
 * and entries are not shown.
 */
static void lookup_found(struct zop *op, const struct Stat *zs, const char *value,
			 int len)
{
	if (!op->fs->conf->lockfiles) {
		zop_reply_entry(op, zs, zs->ephemeralOwner ? NODE_FILE : NODE_DIR);
		return;
	}
	if (zs->ephemeralOwner) {
		zop_fail(op, ZNONODE);
		return;
	}
	switch (lf_classify(zs, value, len)) {
	case LF_FOLDER:
		zop_reply_entry(op, zs, NODE_DIR);
		break;
	case LF_LOCKFILE:
		zop_reply_entry(op, zs, NODE_LOCKFILE);
		break;
	case LF_ASK_CHILDREN:
		zop_send(op, zklfs_session(op->fs, op->path), lookup_kids_send);
		break;
	}
}

static void lookup_done(int rc, const char *value, int len,
			const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc == ZBADARGUMENTS)
		rc = ZNONODE;		/* a name ZooKeeper cannot hold: none such */
	else if (rc == ZNONODE)		/* one of ours, deleted by someone? */
		lockreq_entry_gone(op->fs, op->path);
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_xc_put_stat(op->fs, zop_pid(op), op->path, zs, value, len);
	lookup_found(op, zs, value, len);
}

static int lookup_send(struct zop *op)
{
	int rc = zklfs_zget(op->fs, op->zks, op->path, lookup_done, op);

	return rc == ZBADARGUMENTS ? ZNONODE : rc;	/* a name it cannot hold */
}

/* A busy lock directory's listing, to answer a LOOKUP (see listcache_lookup()). */
static void lookup_list_done(int rc, const struct String_vector *sv,
			     const struct Stat *dir, const void *data)
{
	struct zop *op = (struct zop *)data;
	const char *name = zkn_base(op->path);

	(void)dir;		/* the listing alone */
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	listcache_fill(op->fs, op->node->path, sv->data, sv->count);
	for (int i = 0; i < sv->count; i++)
		if (strcmp(sv->data[i], name) == 0) {
			zop_send(op, op->zks, lookup_send);
			return;
		}
	zop_fail(op, ZNONODE);
}

static int lookup_list_send(struct zop *op)
{
	return zklfs_zchildren(op->fs, op->zks, op->node->path, lookup_list_done, op);
}

/*
 * While ZooKeeper is silent (the mount has declared the session of @path
 * quiet), is @path an entry this mount was granted, a lock file it holds
 * or has open, or a directory on the way to a lock it holds?  Then *@zs is
 * what its own tables say of it (bare: no times for a directory, size 0
 * for a lock file): a holder can always read its own state (docs/SPEC.md,
 * "When ZooKeeper is away").  Else ZooKeeper's answer is the one to give:
 * a lookup that finds our entry gone tells its holder of the loss.
 */
static bool from_tables(struct zklfs *fs, const char *path, struct Stat *zs,
			enum node_type *type)
{
	/* an entry's or lock file's requests go on its directory's session,
	 * a directory's on its own (one and the same with one session):
	 * either may be the silent one */
	struct zks *in = zklfs_session_of(fs, path, false), *own = zklfs_session_of(fs, path, true);

	if (!zklfs_zquiet(fs, in) && (own == in || !zklfs_zquiet(fs, own)))
		return false;
	if (fs->conf->lockfiles && lf_in_use(fs, path)) {	/* held, waited for or open */
		memset(zs, 0, sizeof(*zs));
		*type = NODE_LOCKFILE;
		return true;
	}
	/* a lockfiles mount shows no entry: only the folders to a lock file */
	return lockreq_table_stat(fs, path, zs, type) &&
	       !(fs->conf->lockfiles && *type == NODE_FILE);
}

static void zklfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zklfs *fs = fs_of(req);
	struct node *p = node_of(fs, parent);
	struct zkg_child c;
	enum node_type type;
	struct Stat zs;
	struct zop *op;
	char *data;
	int len;

	if (strlen(name) > ZKN_NAME_MAX) {
		zklog(LOG_NOTICE, "name of %zu bytes refused: at most %d",
		      strlen(name), ZKN_NAME_MAX);
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (p->type != NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	/* the kernel looks a name up before its MKDIR or MKNOD: refused
	 * here, no directory or entry is made past the bounds */
	if (zklfs_path_check(fs->root->path, p->path, name)) {
		zklog(LOG_NOTICE, "path refused: longer than %d bytes or deeper "
		      "than %d levels below ROOT", ZKLFS_PATH_MAX, ZKLFS_DEPTH_MAX);
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (zklfs_hidden(fs, p->path, name)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (zklfs_observe_name(name)) {	/* in every directory, of no znode */
		obs_lookup(req, p, name);
		return;
	}
	op = zop_new(req, p, zkn_join(p->path, name));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (from_tables(fs, op->path, &zs, &type)) {
		zop_reply_entry(op, &zs, type);
		return;
	}
	switch (zkn_parse(name, &c) ? LISTCACHE_UNKNOWN : listcache_lookup(fs, p->path, name)) {
	case LISTCACHE_ABSENT:
		zop_fail(op, ZNONODE);
		return;
	case LISTCACHE_STALE:
		zop_send(op, zklfs_session(fs, p->path), lookup_list_send);
		return;
	default:
		break;
	}
	if (zklfs_xc_stat(fs, zop_pid(op), op->path, &zs, &data, &len)) {
		lookup_found(op, &zs, data, len);	/* this process looked a moment ago */
		free(data);
		return;
	}
	zop_send(op, zklfs_session(fs, p->path), lookup_send);
}

static void zklfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct zklfs *fs = fs_of(req);

	node_forget(fs, node_of(fs, ino), nlookup);
	fuse_reply_none(req);
}

static void zklfs_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	struct zklfs *fs = fs_of(req);

	for (size_t i = 0; i < count; i++)
		node_forget(fs, node_of(fs, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

/* getattr / setattr ----------------------------------------------------- */

/* Answer the GETATTR @op with the znode whose Stat is @zs, and free @op. */
static void getattr_reply(struct zop *op, const struct Stat *zs)
{
	struct stat st;

	zklfs_fill_attr(op->fs, &st, op->node->ino, op->type, zs,
			zklfs_owner(op->fs, op->path, op->type, zs));
	zklfs_wbuf_attr(op->fs, op->node, &st);	/* written, not yet sent */
	if (zop_claim(op))
		fuse_reply_attr(op->req, &st, op->type == NODE_FILE ? 0.0 : 1.0);
	zop_free(op);
}

static void getattr_done(int rc, const char *value, int len,
			 const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_xc_put_stat(op->fs, zop_pid(op), op->path, zs, value, len);
	getattr_reply(op, zs);
}

static int getattr_send(struct zop *op)
{
	return zklfs_zget(op->fs, op->zks, op->path, getattr_done, op);
}

static void zklfs_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	enum node_type type;
	char *path;
	struct Stat zs;
	struct zop *op;

	(void)fi;
	if (n->type == NODE_HOLDERS) {	/* no znode: ours to say */
		obs_getattr(req, n);
		return;
	}
	path = zklfs_node_path(fs, n);
	if (!path) {			/* a lock request not yet in ZooKeeper */
		struct stat st;

		zklfs_pending_attr(fs, &st, n->ino, n->lr->uid);
		fuse_reply_attr(req, &st, 0.0);
		return;
	}
	op = zop_new(req, n, path);
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->type = node_shown_type(n);
	if (zklfs_xc_stat(fs, zop_pid(op), op->path, &zs, NULL, NULL) ||
	    (from_tables(fs, op->path, &zs, &type) && type == op->type)) {
		getattr_reply(op, &zs);	/* this process looked a moment ago */
		return;
	}
	zop_send(op, zklfs_session_of(fs, op->path, node_persistent(n->type)), getattr_send);
}

/*
 * Only the size of the holder's own entry can change (truncate).  Mode,
 * owner and times are ZooKeeper's or ours to say: chmod, chown and
 * setting explicit times (utimes, touch -d) are EPERM, never a 0 that
 * changed nothing.  Times "now" (touch of an existing file: ATIME with
 * ATIME_NOW, MTIME with MTIME_NOW) succeed and change nothing, as does
 * CTIME, which no caller chooses (the kernel's stamp of its own change).
 */
static int setattr_refused(int to_set)
{
	int refused = to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);

	if ((to_set & FUSE_SET_ATTR_ATIME) && !(to_set & FUSE_SET_ATTR_ATIME_NOW))
		refused |= FUSE_SET_ATTR_ATIME;
	if ((to_set & FUSE_SET_ATTR_MTIME) && !(to_set & FUSE_SET_ATTR_MTIME_NOW))
		refused |= FUSE_SET_ATTR_MTIME;
	return refused;
}

static void zklfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			  int to_set, struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	int refused = setattr_refused(to_set);

	if (refused) {
		zklog(LOG_NOTICE, "%s refused: modes, owners and times are fixed",
		      refused & FUSE_SET_ATTR_MODE ? "chmod" :
		      refused & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID) ? "chown" : "utimes");
		fuse_reply_err(req, EPERM);
	} else if (n->type == NODE_HOLDERS) {
		if (to_set & FUSE_SET_ATTR_SIZE)
			fuse_reply_err(req, EPERM);	/* .holders is read-only */
		else
			obs_getattr(req, n);
	} else if (n->type == NODE_LOCKFILE || !(to_set & FUSE_SET_ATTR_SIZE)) {
		/* touch, and `exec 9>F` on a lock file: nothing changes */
		zklfs_getattr(req, ino, fi);
	} else {
		zklfs_wbuf_setsize(req, n, attr->st_size, fi);
	}
}

/* mkdir (rmdir and unlink: fs/remove.c) ----------------------------------- */

static void mkdir_done(int rc, const char *path, const struct Stat *zs,
		       const void *data)
{
	struct zop *op = (struct zop *)data;

	(void)path;
	/* made, found made (EEXIST), or unknown: what we remember is stale */
	listcache_forget(op->fs, op->node->path);
	zklfs_xc_changed(op->fs);
	zklfs_ns_changed(op->fs, op->path);
	if (rc == ZNOCHILDRENFOREPHEMERALS)
		rc = ZNONODE;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_dir_made(op->fs, op->path, zs->czxid, op->uid);
	zop_reply_entry(op, zs, NODE_DIR);
}

/* -o containers: a container, which the server deletes once emptied;
 * -o lockfiles: marked a folder, never taken for a lock file */
static void mkdir_create(struct zop *op)
{
	struct zklfs *fs = op->fs;

	zop_create_child(op, fs->conf->lockfiles ? LF_FOLDER_MARK : NULL,
			 (int)strlen(LF_FOLDER_MARK), fs->conf->containers, mkdir_done);
}

/* A plain mount's mkdir in a directory: not in a lock file that a
 * lockfiles mount made (its znode says so), which stays a lock file:
 * ENOTDIR, as for a regular file. */
static void mkdir_parent_read(int rc, const char *value, int len, const struct Stat *zs,
			      const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc == ZOK && !zs->ephemeralOwner && lf_marked_lockfile(value, len)) {
		zop_reply_err(op, ENOTDIR);
		zop_free(op);
		return;
	}
	if (rc != ZOK && rc != ZNONODE) {
		zop_fail(op, rc);
		return;
	}
	mkdir_create(op);		/* ZNONODE: the create says ENOENT */
}

static int mkdir_parent_send(struct zop *op)
{
	return zklfs_zget(op->fs, op->zks, op->node->path, mkdir_parent_read, op);
}

static void zklfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode)
{
	struct zklfs *fs = fs_of(req);
	struct zop *op = zop_new_child(req, node_of(fs, parent), name, "mkdir");

	(void)mode;
	if (!op)
		return;
	if (fs->conf->lockfiles)	/* a lock file is no directory here */
		mkdir_create(op);
	else
		zop_send(op, zklfs_session(fs, op->node->path), mkdir_parent_send);
}

static void zklfs_refuse(fuse_req_t req, const char *what)
{
	zklog(LOG_NOTICE, "%s refused: locks cannot be renamed or linked", what);
	fuse_reply_err(req, EPERM);
}

static void zklfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			 fuse_ino_t newparent, const char *newname,
			 unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	zklfs_refuse(req, "rename");
}

static void zklfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		       const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	zklfs_refuse(req, "link");
}

static void zklfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			  const char *name)
{
	(void)link, (void)parent, (void)name;
	zklfs_refuse(req, "symlink");
}

static void zklfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = ZKN_NAME_MAX };

	(void)ino;
	fuse_reply_statfs(req, &st);
}

static void zklfs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* RELEASEs are background requests: let many be in flight */
	conn->max_background = 256;
	conn->congestion_threshold = 192;
}

/* An entry's lock ends at RELEASE, not at each close() of a copy: its
 * opens set noflush.  A lock file's descriptors take FLUSH: the closing
 * process's POSIX lock ends there (fs/lockfile.h).  Never ENOSYS: the
 * kernel would stop sending FLUSH to the whole mount. */
const struct fuse_lowlevel_ops zklfs_ops = {
	.init		= zklfs_init,
	.lookup		= zklfs_lookup,
	.forget		= zklfs_forget,
	.forget_multi	= zklfs_forget_multi,
	.getattr	= zklfs_getattr,
	.setattr	= zklfs_setattr,
	.mknod		= zklfs_fd_mknod,
	.mkdir		= zklfs_mkdir,
	.unlink		= zklfs_unlink,
	.rmdir		= zklfs_rmdir,
	.symlink	= zklfs_symlink,
	.rename		= zklfs_rename,
	.link		= zklfs_link,
	.open		= zklfs_fd_open,
	.read		= zklfs_fd_read,
	.write		= zklfs_fd_write,
	.release	= zklfs_fd_release,
	.fsync		= zklfs_fd_fsync,
	.flush		= zklfs_fd_flush,
	.poll		= zklfs_fd_poll,
	.flock		= zklfs_fd_flock,
	.getlk		= zklfs_fd_getlk,
	.setlk		= zklfs_fd_setlk,
	.ioctl		= zklfs_fd_ioctl,
	.opendir	= zklfs_opendir,
	.readdir	= zklfs_readdir,
	.releasedir	= zklfs_releasedir,
	.statfs		= zklfs_statfs,
	.setxattr	= zklfs_setxattr,
	.getxattr	= zklfs_getxattr,
	.listxattr	= zklfs_listxattr,
	.removexattr	= zklfs_removexattr,
};
