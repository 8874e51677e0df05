/*
 * fs/handlers.h - the FUSE handlers each file exports for fs/ops.c's
 * table, and what fs/main.c needs of them at start-up and exit.
 *
 * Included by the handler files (fs/lockops.c, fs/flock.c,
 * fs/read.c, fs/xattrs.c, fs/readdir.c, fs/remove.c, fs/fdops.c, fs/ops.c)
 * and fs/main.c, never by a module below them.  The handler files call
 * down, and fs/fdops.c, which takes the requests made on a descriptor,
 * hands each on to the file of its job; fs/ops.c (the table) names them
 * all.  The order is tools/check-fs-layers's.
 *
 * Threads: every handler runs on the FUSE loop thread, copies what it
 * needs and returns without waiting for ZooKeeper; a request it cannot
 * answer at once is answered later from a ZooKeeper completion, which
 * runs on that same thread (it drives the sessions too: zk/drive.h).
 * A handler holds fs->lock only briefly, never across a fuse_reply_*().
 */
#ifndef FS_HANDLERS_H
#define FS_HANDLERS_H

#include "fs/node.h"

/* fs/ops.c: the table (lookup, forget, getattr, setattr, mkdir, the
 * refused ones, statfs are its own) */
extern const struct fuse_lowlevel_ops zklfs_ops;

/* fs/remove.c: RMDIR, UNLINK */
void zklfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void zklfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);

/* fs/lockops.c: a lock node's MKNOD, OPEN, RELEASE, POLL */
void zklfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev);
void zklfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct fuse_pollhandle *ph);

/* zklfs_lock_node_end() - the inode table's fs->node_end (fs/main.c gives
 * it to zklfs_nodes_init()): a lock node ends, its data is forgotten
 * (zklfs_wbuf_forget_locked()) and its request freed.  Under fs->lock. */
void zklfs_lock_node_end(struct zklfs *fs, struct node *n);

/* fs/flock.c: flock(2) and fcntl(2) record locks on entries */
void zklfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 int op);
void zklfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock);
void zklfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock, int sleep);

/* fs/read.c: an entry's data: READ of @n (fs/fdops.c finds it), whose
 * answer goes through n->fs->reply (fs/reply.h) */
void zklfs_read(fuse_req_t req, struct node *n, size_t size, off_t off,
		struct fuse_file_info *fi);

/*
 * fs/xattrs.c: the user.zklockfs.* xattrs.  Each op looks the name up in
 * the file's table (its row: the nodes the name is on, get, set, remove,
 * listed or not, who may set it) and calls the row's handler.  A name not
 * in it, or not on that node: ENODATA (get), ENOTSUP (set, remove).
 */
void zklfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void zklfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void zklfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags);
void zklfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* fs/readdir.c: listings */
void zklfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void zklfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* fs/fdops.c: the table's handlers of a file's requests, a lock file's
 * (fs/lockfile.h) or an entry's (above); and FLUSH, a lock file's only */
void zklfs_fd_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, dev_t rdev);
void zklfs_fd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_fd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_fd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_fd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void zklfs_fd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		    off_t off, struct fuse_file_info *fi);
void zklfs_fd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi);
void zklfs_fd_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph);
void zklfs_fd_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    int op);
void zklfs_fd_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock);
void zklfs_fd_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int sleep);
/* the ioctls of abi/zklockfs.h: a lock's state and token, by its descriptor */
void zklfs_fd_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		    struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		    size_t in_bufsz, size_t out_bufsz);

/* zklfs_dirlists_free() - at exit: the listings of directories still
 * open.  Main thread. */
void zklfs_dirlists_free(struct zklfs *fs);

#endif
