/*
 * fs/reply.h - the kernel's side of a lock request: who asks, and how the
 * answer goes back.  The seam between the lock requests (fs/lockreq.c,
 * fs/fdlock.c), the holder's data (fs/wbuf.c), the observers
 * (fs/observe.c: LOCKDIR/.holders and .state) and the requests that wait
 * for one ZooKeeper call (fs/zop.c, and the READ of an entry's data,
 * fs/read.c) on one side and libfuse on the other, as zk/transport.h is
 * between the engine and ZooKeeper: the daemon uses zklfs_fuse_reply
 * (fs/reply.c, libfuse and /proc), the simulator (tests/sim/simfs.c) its
 * own, so that it drives OPEN, INTERRUPT, RELEASE and flock/fcntl
 * requests, the holder's WRITE, SETATTR and FSYNC, an observer's LOOKUP,
 * OPEN, READ, POLL and RELEASE, and an entry's READ, through the same
 * code as the kernel does, in any order.
 *
 * Every operation may be called on any thread, without fs->lock
 * (fs/mount.h: never held across a reply).
 */
#ifndef FS_REPLY_H
#define FS_REPLY_H

#include "fs/ender.h"
#include "fs/mount.h"
#include "fs/signals.h"

/* Who asks for a lock: the caller of a request, read while it waits in it.
 * Information for the entry's data and the log, never a grant's reason. */
struct zklfs_caller {
	pid_t pid;			/* its process; 0 if outside our pid
					   namespace */
	uid_t uid;
	char cmd[64];			/* its process's name, raw */
};

struct zklfs_reply {
	/* fuse_reply_open(), fuse_reply_err(): 0, or -ENOENT if the request
	 * was interrupted and its caller is gone (the kernel forgot it) */
	int (*open)(fuse_req_t req, const struct fuse_file_info *fi);
	int (*err)(fuse_req_t req, int err);
	/* fuse_reply_write(), fuse_reply_attr(), fuse_reply_buf(): a WRITE
	 * of @count bytes, a SETATTR's (or GETATTR's) attributes, a READ's
	 * bytes */
	int (*write)(fuse_req_t req, size_t count);
	int (*attr)(fuse_req_t req, const struct stat *st, double timeout);
	int (*buf)(fuse_req_t req, const char *buf, size_t size);
	/* fuse_reply_entry(), fuse_reply_poll(): a LOOKUP's node (0, or
	 * -ENOENT if the kernel forgot the request), a POLL's events */
	int (*entry)(fuse_req_t req, const struct fuse_entry_param *e);
	int (*poll)(fuse_req_t req, unsigned revents);
	/* fuse_reply_xattr(): the size of an xattr (or of the list) asked
	 * with a buffer of 0 */
	int (*xattr)(fuse_req_t req, size_t count);
	/* fuse_req_ctx(): what the kernel says of @req's caller: its uid and
	 * thread (a zop's, fs/zop.h), valid while @req is unanswered */
	const struct fuse_ctx *(*ctx)(fuse_req_t req);
	/* fuse_req_interrupt_func(): @fn runs on FUSE_INTERRUPT of @req, at
	 * once if it has come already, on another thread than the answer's */
	void (*on_interrupt)(fuse_req_t req, fuse_interrupt_func_t fn, void *arg);
	/* the caller of @req: every field */
	void (*caller)(fuse_req_t req, struct zklfs_caller *c);
	/* what the signals pending for the caller of @req do to it
	 * (fs/signals.h), asked at its FUSE_INTERRUPT */
	enum zklfs_signal (*signalled)(fuse_req_t req);
	/* on_loss=end: the anchors of the description @req (of process @pid,
	 * uid @uid) locks through, on the inode @ino (zklfs_holders_read()),
	 * and 0, or -ENOLCK if the daemon could not end that process
	 * (zklfs_holders_reachable()); and ending the holders of the lost
	 * lock @what (zklfs_ender_post()) */
	int (*holders)(fuse_req_t req, pid_t pid, uid_t uid, uint64_t ino,
		       struct zklfs_holders *h);
	void (*end)(const struct zklfs_holders *h, const char *what, const char *why);
	/* wake the poller @ph, and let it go; let @ph go unwoken */
	void (*notify_poll)(struct fuse_pollhandle *ph);
	void (*drop_poll)(struct fuse_pollhandle *ph);
};

/* The daemon's: libfuse, and /proc for the caller. */
extern const struct zklfs_reply zklfs_fuse_reply;

/*
 * zklfs_process_comm() - the name of the process of thread @tid (its
 * thread-group leader's /proc/PID/comm: a thread may name itself
 * anything) into @buf, without its newline: "" if @tid is 0 or gone.  For
 * a message or a refusal, never a grant.  Any thread.
 */
void zklfs_process_comm(pid_t tid, char *buf, size_t size);

#endif
