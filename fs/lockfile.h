/*
 * fs/lockfile.h - lock files (-o lockfiles): a cluster-wide /var/lock.
 *
 * On a lockfiles mount a persistent znode is a folder (NODE_DIR) if it
 * carries the mark mkdir leaves in its data or has a child that is not a
 * queue entry, else a lock file (NODE_LOCKFILE): a regular file whose
 * queue entries are its ephemeral-sequential children, never shown.  An
 * open of a lock file takes no lock and never waits; flock(2), fcntl(2)
 * and lockf(3) on it take the ZooKeeper lock on its znode.
 *
 * Each lock owner the kernel names (fuse_file_info.lock_owner: the open
 * file description for flock(2) and F_OFD_ locks, the process for POSIX
 * fcntl(2) locks) gets a lock record on the lock file: an anonymous lock
 * node (NODE_PENDING, never known to the kernel) whose lock request
 * (fs/lockreq.h) enqueues, holds and gives back that owner's entry with
 * the rules of a holder's descriptor of an entry (fs/fdlock.h).  The
 * kernel does no unlock-on-close for locks a filesystem manages: a POSIX
 * owner's lock is given back at the FLUSH its close() sends, a
 * description's at its RELEASE.  Reads, writes, fsync, poll and the ioctls
 * of a descriptor act on the record that holds through it.
 *
 * The simulator drives fs/lockfile.c (not fs/lfns.c or fs/lfqueue.c).
 * Called by fs/fdops.c for every request on a NODE_LOCKFILE inode, by
 * fs/xattrs.c for its xattrs, and by fs/ops.c's lookup and mkdir
 * (lf_classify(), LF_FOLDER_MARK).
 *
 * Threads: the handlers run on the FUSE thread, which alone makes and
 * frees records; lock requests are answered from the engine (fs/lockreq.c).
 * Records and fi->fh's descriptor state are under fs->lock.
 */
#ifndef FS_LOCKFILE_H
#define FS_LOCKFILE_H

#include "fs/node.h"

struct Stat;
struct String_vector;

/* The line mkdir writes in a folder's znode on a lockfiles mount, and the
 * one a lock file made by a lockfiles mount carries: each says what its
 * znode is whatever children another client gives it (a plain mount's
 * mkdir inside a lock file must not turn it into a folder). */
#define LF_FOLDER_LINE "zklockfs=folder"
#define LF_FOLDER_MARK LF_FOLDER_LINE "\n"
#define LF_LOCKFILE_LINE "zklockfs=lockfile"
#define LF_LOCKFILE_MARK LF_LOCKFILE_LINE "\n"

/* What a persistent znode is on a lockfiles mount. */
enum lf_class {
	LF_FOLDER,
	LF_LOCKFILE,
	LF_ASK_CHILDREN,	/* unmarked, with children: lf_children_class() */
};

/* lf_classify() - from its Stat and data (@len bytes, may be NULL): a
 * marked znode is what its mark says; an unmarked one without children a
 * lock file; else its children tell. */
enum lf_class lf_classify(const struct Stat *zs, const char *data, int len);

/* lf_marked_lockfile() - does @data (@len bytes) carry the mark of a lock
 * file made by a lockfiles mount?  A plain mount refuses mkdir in it. */
bool lf_marked_lockfile(const char *data, int len);

/* lf_children_class() - an unmarked znode with the children @sv: a folder
 * if one of them is not a queue entry, else a lock file.  Pure. */
enum lf_class lf_children_class(const struct String_vector *sv);

/*
 * The handlers of a lock file (fs/fdops.c calls them for NODE_LOCKFILE).
 * lf_mknod() - open(O_CREAT) of a new name in folder @p: the lock file
 * made (persistent, or a container with -o containers), as mkdir makes a
 * directory; one that appeared meanwhile is taken as it is.
 * lf_open() - never waits, sends nothing: a descriptor that holds nothing.
 * lf_release(), lf_flush() - give back the description's lock, the
 * closing POSIX owner's lock.
 * lf_lock() - flock(2) (@op LOCK_SH, LOCK_EX, LOCK_UN; @nb) by the owner
 * fi->lock_owner, uid @uid.
 * lf_record() - the lock node of the record of fi->lock_owner on @fi's
 * lock file (made for @uid if none and @make), or NULL: F_GETLK's own
 * entry (fs/fdops.c), and the simulator's view of a record.
 * lf_holder() - the record that holds through @fi (for @owner if not 0,
 * else any; with @waiting, or waits), to which reads, writes, fsync, poll
 * and the ioctls go; NULL if none.
 * lf_read() - READ by a descriptor that holds nothing: the data of the
 * entry that holds the lock now (a holder's READ is its record's, as its
 * WRITE is: fs/fdops.c); when that entry is a record's of this mount,
 * what its holder wrote, sent or not.
 */
void lf_mknod(fuse_req_t req, struct node *p, const char *name);
void lf_open(fuse_req_t req, struct node *n, struct fuse_file_info *fi);
void lf_release(fuse_req_t req, struct node *n, struct fuse_file_info *fi);
void lf_flush(fuse_req_t req, struct node *n, struct fuse_file_info *fi);
void lf_lock(fuse_req_t req, struct node *n, struct fuse_file_info *fi, int op,
	     bool nb, uid_t uid);
struct node *lf_record(struct zklfs *fs, const struct fuse_file_info *fi, bool make,
		       uid_t uid);
struct node *lf_holder(struct zklfs *fs, const struct fuse_file_info *fi,
		       uint64_t owner, bool waiting);
void lf_read(fuse_req_t req, struct node *n, size_t size, off_t off);

/* lf_in_use() - is the lock file at @path open, held or waited for
 * through this mount?  Then it stays a lock file, whatever children
 * another client gives its znode.  Without fs->lock. */
bool lf_in_use(struct zklfs *fs, const char *path);

/* lf_tell() - the holder of @fi handles a loss itself (ZKLFS_IOC_TELL):
 * nothing is ended for the records that lock through it, now or later.
 * FUSE thread, without fs->lock. */
void lf_tell(struct zklfs *fs, const struct fuse_file_info *fi);

/* lf_entry_holder_locked() - the lock node of the record of lock file @n
 * that holds through the entry @entry (a child's name), or NULL.  Under
 * fs->lock. */
struct node *lf_entry_holder_locked(struct node *n, const char *entry);

/* lf_queue_xattr() - getxattr of user.zklockfs.queue on the lock @n (a
 * lock file or a lock directory): its queue as text (fs/lfqueue.c). */
void lf_queue_xattr(fuse_req_t req, struct node *n, size_t size);

#endif
