/*
 * fs/lockops.c - the FUSE handlers of a lock node: MKNOD (a lock node and
 * its request), OPEN (the request enqueued, answered later by
 * fs/lockreq.c), RELEASE (the data sent, the lock given back), POLL (the
 * holder told of a loss).  And the end of a lock node (zklfs_lock_node_end).
 *
 * FUSE thread, every handler; fs->lock briefly, never across a reply.
 */
#include "fs/handlers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/attr.h"
#include "fs/fdlock.h"
#include "fs/lockreq.h"
#include "fs/wbuf.h"
#include "zk/log.h"

void zklfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *p = node_of(fs, parent), *n;
	struct fuse_entry_param e;
	int err;

	(void)rdev;
	if (!S_ISREG(mode)) {
		zklog(LOG_NOTICE, "mknod '%s' refused: only regular files are lock entries", name);
		fuse_reply_err(req, EPERM);
		return;
	}
	/* the longer marker decides, as OPEN has not told the kind yet */
	err = zkn_check_entry_name(name, fs->conf->naming, ZKN_SHARED);
	if (err) {
		zklog(LOG_NOTICE, "lock name '%.64s' refused: %s", name, strerror(-err));
		fuse_reply_err(req, -err);
		return;
	}
	listcache_busy(fs, p->path);
	n = lockreq_node(fs, p->path, name, fuse_req_ctx(req)->uid);
	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	zklfs_pending_attr(fs, &e.attr, n->ino, n->lr->uid);
	if (fuse_reply_entry(req, &e) != 0)
		node_forget(fs, n, 1);
}

void zklfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);
	bool lock = false;

	if (n->type == NODE_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	zkmx_lock(&fs->lock);
	if (n->type == NODE_PENDING && !n->lr->opened)
		lock = n->lr->opened = true;
	zkmx_unlock(&fs->lock);
	if (lock) {
		lockreq_open(req, n, fi);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		zklog(LOG_NOTICE, "open for writing refused: only the holder's descriptor writes its entry");
		fuse_reply_err(req, EACCES);
		return;
	}
	fi->fh = FH_PLAIN;
	fi->direct_io = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

void zklfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);

	/* the last close of the open file description: its entry goes */
	if (fi->fh == FH_HOLDER)
		fdlock_end(fs, n);
	fuse_reply_err(req, 0);
}

/*
 * A regular file is always readable and writable; the holder's descriptor
 * also reports POLLERR|POLLHUP once the lock is lost, POLLPRI once its
 * holder is asked to let go, and POLLPRI once as it enters doubt and once
 * as it leaves it, waking a poller that is already waiting (we keep its
 * poll handle).
 */
void zklfs_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct fuse_pollhandle *ph)
{
	struct zklfs *fs = fuse_req_userdata(req);
	struct node *n = node_of(fs, ino);

	if (fi->fh == FH_HOLDER) {
		fuse_reply_poll(req, lockreq_holder_poll(fs, n, fi->poll_events, ph));
		return;
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
}

void zklfs_lock_node_end(struct zklfs *fs, struct node *n)
{
	ZKMX_ASSERT_HELD(&fs->lock);
	zklfs_wbuf_forget_locked(fs, n);
	lockreq_free(n->lr);
	n->lr = NULL;
}
