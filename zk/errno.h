/* zk/errno.h - ZooKeeper return codes as errno, in one place. */
#ifndef ZK_ERRNO_H
#define ZK_ERRNO_H

/*
 * zk_errno() - the negative errno for a ZooKeeper rc (ZOK gives 0).
 * Connection trouble is -EIO, except an unknown outcome which the
 * caller must resolve itself (see zk_rc_unknown()).
 */
int zk_errno(int rc);

/* zk_rc_unknown() - true if an operation that got @rc may have happened. */
int zk_rc_unknown(int rc);

/*
 * zk_rc_transient() - true if @rc says only that the connection or the
 * session was away (lost, timed out, expired, moved, being replaced): a
 * read may be sent again once the session is back, and the lock engine
 * stalls the step to redo it then (zke_call_failed_locked()).
 */
int zk_rc_transient(int rc);

#endif
