/*
 * fs/lfns.c - lock files in the namespace (see lockfile.h): what a
 * persistent znode is on a lockfiles mount, making a lock file at
 * open(O_CREAT), and what reading it gives: the data of the entry that
 * holds it now.
 *
 * What a holder of this mount wrote is read back at once (fs/wbuf.h).
 */
#include "fs/lockfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/attr.h"
#include "fs/limits.h"
#include "fs/lockreq.h"
#include "fs/wbuf.h"
#include "fs/xcache.h"
#include "fs/zop.h"
#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/settings.h"
#include "zk/log.h"

/* Does @data (@len bytes) hold the mark @line ("zklockfs=folder"), ended
 * by its newline? */
static bool marked(const char *data, int len, const char *line)
{
	size_t vlen, n = len > 0 ? (size_t)len : 0;
	const char *v = zkset_data_value(data, n, line, &vlen);

	return v && vlen == 0 && (size_t)(v - data) < n;
}

bool lf_marked_lockfile(const char *data, int len)
{
	return marked(data, len, LF_LOCKFILE_LINE);
}

enum lf_class lf_classify(const struct Stat *zs, const char *data, int len)
{
	if (marked(data, len, LF_FOLDER_LINE))
		return LF_FOLDER;
	if (marked(data, len, LF_LOCKFILE_LINE))
		return LF_LOCKFILE;
	return zs->numChildren == 0 ? LF_LOCKFILE : LF_ASK_CHILDREN;
}

enum lf_class lf_children_class(const struct String_vector *sv)
{
	struct zkg_child c;

	for (int i = 0; i < sv->count; i++)
		if (!zkn_parse(sv->data[i], &c))
			return LF_FOLDER;	/* a folder's child, not an entry */
	return LF_LOCKFILE;
}

/* making one ---------------------------------------------------------------- */

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
		zop_reply_err(op, EEXIST);
		zop_free(op);
		return;
	}
	zop_reply_entry(op, zs, NODE_LOCKFILE);
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
	zop_reply_entry(op, zs, NODE_LOCKFILE);
}

void lf_mknod(fuse_req_t req, struct node *p, const char *name)
{
	struct zop *op = zop_new_child(req, p, name, "lock file");

	/* persistent, even with -o containers: a lock file the server reaped
	 * under an open descriptor would turn its next flock into ENOENT */
	if (op)
		zop_create_child(op, LF_LOCKFILE_MARK, (int)strlen(LF_LOCKFILE_MARK), false,
				 mknod_done);
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
		zop_reply_buf(op, NULL, 0);
	else
		zop_reply_buf(op, value + op->off,
			       (size_t)(len - op->off) < op->size ? (size_t)(len - op->off)
								  : op->size);
	zop_free(op);
}

/*
 * Read-your-writes on the holder's mount: if @entry, the lock file's
 * holder, is a record of this mount with data written here that ZooKeeper
 * has not answered for, that data (zklfs_wbuf_copy_locked()), as @op
 * asks.  Return: 1 (*@buf, *@len), 0 if ZooKeeper has the entry's data,
 * -ENOMEM.
 */
static int written_here(struct zop *op, const char *entry, char **buf, size_t *len)
{
	struct zklfs *fs = op->fs;
	struct node *ln;
	int ours = 0;

	*buf = NULL;
	*len = 0;
	zkmx_lock(&fs->lock);
	ln = lf_entry_holder_locked(op->node, entry);
	if (ln)
		ours = zklfs_wbuf_copy_locked(ln, op->size, op->off, buf, len);
	zkmx_unlock(&fs->lock);
	return ours;
}

static void read_children_done(int rc, const struct String_vector *sv,
			       const struct Stat *dir, const void *data)
{
	struct zop *op = (struct zop *)data;
	const struct zkg_child *h = NULL;
	struct zkg_child *kids;
	size_t n;
	char *path;

	(void)dir;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	kids = zkg_parse_children(sv->data, sv->count, &n);
	if (!kids) {
		zop_reply_err(op, ENOMEM);
		zop_free(op);
		return;
	}
	h = zkg_lowest(kids, n);
	if (h) {		/* held through this mount: what was written here */
		char *buf;
		size_t len;
		int ours = written_here(op, h->name, &buf, &len);

		if (ours) {
			free(kids);
			if (ours < 0)
				zop_reply_err(op, -ours);
			else
				zop_reply_buf(op, buf, len);
			free(buf);
			zop_free(op);
			return;
		}
	}
	path = h ? zkn_join(op->path, h->name) : NULL;
	free(kids);
	if (!path) {			/* nobody holds it: no data */
		zop_reply_buf(op, NULL, 0);
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

void lf_read(fuse_req_t req, struct node *n, size_t size, off_t off)
{
	struct zop *op = zop_new(req, n, zklfs_node_path(n->fs, n));

	if (!op) {
		n->fs->reply->err(req, ENOMEM);
		return;
	}
	op->size = size;
	op->off = off;
	zop_send(op, zklfs_session(n->fs, op->path), read_send);
}
