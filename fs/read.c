/*
 * fs/read.c - what an entry says: its data (READ).  Data written here,
 * not yet sent, is read from the holder's buffer (fs/wbuf.h).  Its xattrs
 * are fs/xattrs.c's.
 */
#include "fs/handlers.h"

#include "fs/lockreq.h"
#include "fs/wbuf.h"
#include "fs/xcache.h"
#include "fs/zop.h"

#include <errno.h>
#include <stdlib.h>

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

void zklfs_read(fuse_req_t req, struct node *n, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	struct Stat zs;
	struct zop *op;
	char *data;
	int err, len;

	err = lockreq_holder_errno(fs, n, fi);
	if (err) {
		fs->reply->err(req, err);
		return;
	}
	if (zklfs_wbuf_read(fs, n, req, size, off))
		return;			/* written here, not yet in ZooKeeper */
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {
		fs->reply->err(req, n->path ? ENOMEM : EIO);
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
