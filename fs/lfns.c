/*
 * fs/lfns.c - lock files in the namespace (see lockfile.h): what a
 * persistent znode is on a lockfiles mount, making a lock file at
 * open(O_CREAT), its attributes after a truncate, and what reading it
 * gives: the data of the entry that holds it now.
 *
 * Depends on: fs/lockfile.h, fs/zop.h, fs/attr.h, fs/pool.h, fs/xcache.h,
 * fs/handlers.h (a holder's read goes to its record's READ).
 */
#include "fs/lockfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/attr.h"
#include "fs/handlers.h"
#include "fs/limits.h"
#include "fs/lockreq.h"
#include "fs/xcache.h"
#include "fs/zop.h"
#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/log.h"

/* Does @data (@len bytes) hold the folder mark as one of its lines? */
static bool marked(const char *data, int len)
{
	size_t mlen = strlen(LF_FOLDER_MARK);

	for (int i = 0; data && i < len;) {
		const char *nl = memchr(data + i, '\n', (size_t)(len - i));
		int end = nl ? (int)(nl - data) + 1 : len;

		if ((size_t)(end - i) == mlen && memcmp(data + i, LF_FOLDER_MARK, mlen) == 0)
			return true;
		i = end;
	}
	return false;
}

enum lf_class lf_classify(const struct Stat *zs, const char *data, int len)
{
	if (marked(data, len))
		return LF_FOLDER;
	return zs->numChildren == 0 ? LF_LOCKFILE : LF_ASK_CHILDREN;
}

enum lf_class lf_children_class(const struct String_vector *sv)
{
	struct zkl_child c;

	for (int i = 0; i < sv->count; i++)
		if (!zkn_parse(sv->data[i], &c))
			return LF_FOLDER;	/* a folder's child, not an entry */
	return LF_LOCKFILE;
}

/* making one ---------------------------------------------------------------- */

static void mknod_reply(struct zop *op, const struct Stat *zs)
{
	struct fuse_entry_param e;
	struct node *n;

	zkl_mutex_lock(&op->fs->lock);
	n = node_lookup_locked(op->fs, op->path, NODE_LOCKFILE);
	zkl_mutex_unlock(&op->fs->lock);
	if (!n) {
		fuse_reply_err(op->req, ENOMEM);
		zop_free(op);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	zklfs_fill_attr(op->fs, &e.attr, n->ino, NODE_LOCKFILE, zs,
			zklfs_owner(op->fs, op->path, NODE_LOCKFILE, zs));
	e.entry_timeout = e.attr_timeout = 1.0;
	if (fuse_reply_entry(op->req, &e) != 0)
		node_forget(op->fs, n, 1);
	zop_free(op);
}

/* Made meanwhile by someone else: a lock file is taken as it is. */
static void mknod_found(int rc, const char *value, int len, const struct Stat *zs,
			const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (zs->ephemeralOwner != 0 || lf_classify(zs, value, len) == LF_FOLDER) {
		fuse_reply_err(op->req, EEXIST);
		zop_free(op);
		return;
	}
	mknod_reply(op, zs);
}

static int mknod_found_send(struct zop *op)
{
	return zklfs_zget(op->fs, op->zks, op->path, mknod_found, op);
}

static void mknod_done(int rc, const char *path, const struct Stat *zs,
		       const void *data)
{
	struct zop *op = (struct zop *)data;

	(void)path;
	zklfs_xc_changed(op->fs);
	zklfs_ns_changed(op->fs, op->path);
	if (rc == ZNODEEXISTS) {
		zop_send(op, zklfs_session(op->fs, op->path), mknod_found_send);
		return;
	}
	if (rc == ZNOCHILDRENFOREPHEMERALS)
		rc = ZNONODE;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_dir_made(op->fs, op->path, zs->czxid, op->uid);	/* its maker owns it */
	mknod_reply(op, zs);
}

void lf_mknod(fuse_req_t req, struct node *p, const char *name)
{
	struct zop *op = zop_new_child(req, p, name, "lock file");

	/* persistent, even with -o containers: a lock file the server reaped
	 * under an open descriptor would turn its next flock into ENOENT */
	if (op)
		zop_create_child(op, NULL, 0, false, mknod_done);
}

/* truncate -------------------------------------------------------------------- */

static void setsize_done(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;
	struct stat st;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_fill_attr(op->fs, &st, op->node->ino, NODE_LOCKFILE, zs,
			zklfs_owner(op->fs, op->path, NODE_LOCKFILE, zs));
	fuse_reply_attr(op->req, &st, 1.0);
	zop_free(op);
}

static int setsize_send(struct zop *op)
{
	return zklfs_zexists(op->fs, op->zks, op->path, setsize_done, op);
}

void lf_setattr(fuse_req_t req, struct node *n)
{
	struct zop *op = zop_new(req, n, zklfs_node_path(n->fs, n));

	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* `exec 9>F` truncates: the holder's data stays (its pid, say) */
	zop_send(op, zklfs_session(n->fs, op->path), setsize_send);
}

/* reading: the holder's data ---------------------------------------------------- */

static void read_data_done(int rc, const char *value, int len, const struct Stat *zs,
			   const void *data)
{
	struct zop *op = (struct zop *)data;

	(void)zs;
	if (rc == ZNONODE)		/* given back meanwhile: nobody's */
		len = 0;
	else if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (!value || op->off >= len)
		fuse_reply_buf(op->req, NULL, 0);
	else
		fuse_reply_buf(op->req, value + op->off,
			       (size_t)(len - op->off) < op->size ? (size_t)(len - op->off)
								  : op->size);
	zop_free(op);
}

static void read_children_done(int rc, const struct String_vector *sv,
			       const struct Stat *dir, const void *data)
{
	struct zop *op = (struct zop *)data;
	const struct zkl_child *h = NULL;
	struct zkl_child *kids;
	size_t n;
	char *path;

	(void)dir;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	kids = zkl_parse_children(sv->data, sv->count, &n);
	if (!kids) {
		fuse_reply_err(op->req, ENOMEM);
		zop_free(op);
		return;
	}
	h = zkl_lowest(kids, n);
	path = h ? zkn_join(op->path, h->name) : NULL;
	free(kids);
	if (!path) {			/* nobody holds it: no data */
		fuse_reply_buf(op->req, NULL, 0);
		zop_free(op);
		return;
	}
	rc = zklfs_zget(op->fs, op->zks, path, read_data_done, op);
	free(path);
	zop_started(op, rc);
}

static int read_send(struct zop *op)
{
	return zklfs_zchildren(op->fs, op->zks, op->path, read_children_done, op);
}

void lf_read(fuse_req_t req, struct node *n, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	struct node *ln = lf_holder(n->fs, fi, fi->lock_owner, false);
	struct zop *op;

	if (ln) {			/* its own entry: what it wrote */
		struct fuse_file_info h = *fi;

		h.fh = FH_HOLDER;
		zklfs_read(req, ln->ino, size, off, &h);
		return;
	}
	op = zop_new(req, n, zklfs_node_path(n->fs, n));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->size = size;
	op->off = off;
	zop_send(op, zklfs_session(n->fs, op->path), read_send);
}
