/*
 * fs/fdlock.h - flock(2)/fcntl(2) on the holder's descriptor of an entry:
 * what each request does to the entry that descriptor stands for (the
 * rules: fs/flock.c).
 *
 * A request is answered later, from the engine; the holder's data is sent
 * before its entry goes.  The handlers (fs/flock.c) call fdlock_op() once
 * they know the request is a whole-file lock on a holder's descriptor, and
 * RELEASE (fs/lockops.c) fdlock_end(); the simulator (tests/sim/simfs.c)
 * calls fdlock_op() as they do.
 */
#ifndef FS_FDLOCK_H
#define FS_FDLOCK_H

#include <fcntl.h>
#include <sys/file.h>

#include "fs/node.h"

/* fdlock_of() - the flock(2) operation a whole-file fcntl(2) lock of
 * @l_type asks for: LOCK_EX for F_WRLCK, LOCK_SH for F_RDLCK, else LOCK_UN. */
static inline int fdlock_of(short l_type)
{
	return l_type == F_WRLCK ? LOCK_EX : l_type == F_RDLCK ? LOCK_SH : LOCK_UN;
}

/*
 * fdlock_op() - LOCK_SH, LOCK_EX or LOCK_UN (@op) asked by @req on the
 * holder's descriptor of @n; with @nb fail (EWOULDBLOCK) rather than wait.
 * A request while another of the same description waits joins that wait
 * (lockreq_join()), or with @nb fails: never EDEADLK, whoever asks.
 * Answers @req through fs->reply: at once, or once the entry it enqueues
 * is granted or refused.  FUSE thread, without fs->lock.
 */
void fdlock_op(fuse_req_t req, struct node *n, int op, bool nb);

/*
 * fdlock_end() - RELEASE of the holder's descriptor of @n (the last close
 * of its open file description, or a lock file's record ending): its
 * poller let go, its data sent (zklfs_wbuf_close()), then its entry
 * deleted (lockreq_drop(), which may free @n).  FUSE thread, without
 * fs->lock.
 */
void fdlock_end(struct zklfs *fs, struct node *n);

#endif
