/*
 * fs/observe.h - watching a lock without taking it: the files
 * LOCKDIR/.holders, the poll(2)-able handle behind `zklock --watch` (the
 * "observe" side of leader election), and LOCKDIR/.state, the state its
 * holder publishes (set through fs/state.h).
 *
 * .holders is in every directory, never listed, never in ZooKeeper; a
 * directory or entry of that name cannot be made through the mount.
 * Opened read-only by anyone who may list the directory, it reads as the
 * holders now, one line each, in queue order, tab separated:
 *
 *	ENTRY  KIND  HOST  PID  CMD  SINCE
 *
 * (the fields the holder's mount wrote in the entry, escaped as
 * user.zklockfs.queue's are; "-" where none), and as nothing at all while
 * nobody holds the lock.  poll() reports POLLIN|POLLPRI once the holders
 * differ from what this descriptor last read at offset 0; read again from
 * offset 0 (pread) for the new text.  A descriptor never read is readable
 * at once.  The open itself waits for the first answer (a session timeout
 * at most: fs/pending.h).
 *
 * What it costs the ensemble: one observer per lock per mount, whatever
 * the number of descriptors, with one child watch on the lock; each change
 * of its queue is one listing, plus the lock's data if it may hold a limit
 * (a semaphore's holders), plus one read of each holder's entry.  Nothing
 * is asked between changes.  The last close lets the observer go when its
 * watch next fires.
 *
 * .state is the same, with the lock's data for its text: it reads as the
 * state the lock's data holds (zk/statedata.h; nothing while none, or a
 * state line another client garbled), and poll() reports POLLIN|POLLPRI
 * once it differs from what the descriptor last read at offset 0.  Its
 * observer keeps one data watch on the lock; each change of the lock's
 * data (a set, a limit) is one read.
 *
 * Handlers on the FUSE thread; completions and watches on the ZooKeeper
 * threads; the observers under their own mutex (ZKMX_RANK_OBSERVE), never
 * held across a reply or a poll notification.  Every answer goes through
 * fs->reply (fs/reply.h), so the simulator drives this file as the kernel
 * does.
 */
#ifndef FS_OBSERVE_H
#define FS_OBSERVE_H

#include <stdbool.h>

#include "fs/mount.h"
#include "fs/node.h"

#define ZKLFS_HOLDERS_NAME ".holders"
#define ZKLFS_STATE_NAME ".state"

/* zklfs_observe_init() and _free(): main thread, start and exit; _free()
 * after zklfs_pool_close() (no watch fires) and before zklfs_pool_free()
 * (each observer gives its hold back). */
int zklfs_observe_init(struct zklfs *fs);
void zklfs_observe_free(struct zklfs *fs);

/* zklfs_observe_name() - is @name one of the handles' (in any directory)? */
static inline bool zklfs_observe_name(const char *name)
{
	return name[0] == '.' && (__builtin_strcmp(name, ZKLFS_HOLDERS_NAME) == 0 ||
				  __builtin_strcmp(name, ZKLFS_STATE_NAME) == 0);
}

/* obs_lookup() - LOOKUP of the handle @name in the directory @p. */
void obs_lookup(fuse_req_t req, struct node *p, const char *name);
/* obs_getattr() - GETATTR of @n, a handle's node (NODE_HOLDERS). */
void obs_getattr(fuse_req_t req, struct node *n);
/* The descriptor's requests on @n, a handle's node. */
void obs_open(fuse_req_t req, struct node *n, struct fuse_file_info *fi);
void obs_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void obs_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
void obs_release(fuse_req_t req, struct fuse_file_info *fi);

#endif
