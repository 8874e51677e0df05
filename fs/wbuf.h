/*
 * fs/wbuf.h - the holder's data: coalesced writes.
 *
 * The data is its request's, n->lr->wb: it has somewhere to go only while
 * the request holds its entry.
 *
 * A holder's write() and truncate change its data in memory and answer at
 * once; the data goes to ZooKeeper as one setData of the latest bytes, at
 * the next supervisor tick of the lock's session (zklfs_zlater()), at fsync,
 * or at the give-back (close, LOCK_UN) before the entry's delete.  Every
 * set goes on the lock's session, where the create and the delete go, so
 * ZooKeeper does them in that order.  Taking, sending and answering:
 * fs->wb_send, then fs->lock; completions take fs->lock alone.  fs/fdops.c
 * hands WRITE and FSYNC on a descriptor to zklfs_wbuf_write() and
 * zklfs_wbuf_fsync() with the lock node it holds through; every answer
 * goes through fs->reply (fs/reply.h), so the simulator drives this file
 * as the kernel does.
 */
#ifndef FS_WBUF_H
#define FS_WBUF_H

#include <sys/stat.h>

#include "fs/lockreq.h"

/*
 * zklfs_wbuf_write() - WRITE on the holder's descriptor @fi of lock node
 * @n: the data changed in memory, answered at once.  FUSE thread, without
 * fs->lock.
 */
void zklfs_wbuf_write(fuse_req_t req, struct node *n, const char *buf, size_t size,
		      off_t off, struct fuse_file_info *fi);

/*
 * zklfs_wbuf_fsync() - FSYNC on @fi, a descriptor of lock node @n: on the
 * holder's, sends the latest data unless ZooKeeper answered for it
 * already, and answers once ZooKeeper has done every set sent so far: 0
 * (ZooKeeper holds that data, and the entry still holds the lock), or the
 * error of a set an FSYNC made that no fsync reported yet (EIO: the entry
 * is gone, the lock lost; EAGAIN: the connection was lost, the data is
 * sent again at the next tick; else as zk_errno()).  FUSE thread, without
 * fs->lock.
 */
void zklfs_wbuf_fsync(fuse_req_t req, struct node *n, struct fuse_file_info *fi);

/*
 * zklfs_wbuf_setsize() - SETATTR of the size (truncate, O_TRUNC) through
 * @fi: on the holder's descriptor, the data is cut or zero-filled to @size
 * and the attributes answered at once.  FUSE thread.
 */
void zklfs_wbuf_setsize(fuse_req_t req, struct node *n, off_t size,
			struct fuse_file_info *fi);

/*
 * zklfs_wbuf_read() - while @n has data ZooKeeper has not answered for,
 * READ is answered from it (what this mount wrote, it reads back).
 * Return: true if @req was answered.  FUSE thread, without fs->lock.
 */
bool zklfs_wbuf_read(struct zklfs *fs, struct node *n, fuse_req_t req,
		     size_t size, off_t off);

/*
 * zklfs_wbuf_copy_locked() - the bytes of lock node @n's data from @off,
 * at most @size, while @n has data ZooKeeper has not answered for: a
 * malloc'ed copy in *@buf (NULL if none past @off), its length in *@len.
 * Return: 1 if so; 0 if ZooKeeper has what @n wrote (or @n wrote
 * nothing); -ENOMEM.  Under fs->lock.
 */
int zklfs_wbuf_copy_locked(const struct node *n, size_t size, off_t off,
			   char **buf, size_t *len);

/* zklfs_wbuf_attr() - as zklfs_wbuf_read(), for the size in @st.  Any node; any
 * thread, without fs->lock. */
void zklfs_wbuf_attr(struct zklfs *fs, struct node *n, struct stat *st);

/*
 * zklfs_wbuf_close() - @n's holder lets its entry go (RELEASE, LOCK_UN):
 * its unsent data is sent now, so call it before the delete
 * (lockreq_drop(): same session, the data is in ZooKeeper before the
 * entry is deleted), and the data is forgotten.  FUSE thread, without
 * fs->lock.
 */
void zklfs_wbuf_close(struct zklfs *fs, struct node *n);

/* zklfs_wbuf_forget_locked() - lock node @n ends: off fs->dirty, and the
 * sends in flight no longer name it.  Under fs->lock. */
void zklfs_wbuf_forget_locked(struct zklfs *fs, struct node *n);

#endif
