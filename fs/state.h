/*
 * fs/state.h - writes of a lock znode's data that ZooKeeper fences: the
 * state only the holder may change (LOCKDIR/.state: docs/SPEC.md, "State
 * that only the holder may change"), and the runs of zklock --once-per.
 *
 * ZKLFS_IOC_SETSTATE on the descriptor that holds a lock exclusively (an
 * entry's holder descriptor, or a lock file's that holds it) reads the
 * lock znode's data and sends one multi on the entry's session: a check
 * that the holder's entry exists, and a set of the lock's data, its state
 * line replaced (zk/statedata.h), at the version read.  ZooKeeper applies
 * both or neither: a holder whose entry is gone, whether or not its mount
 * has heard so, changes nothing and is answered EIO.  A set that met
 * another change of the lock's data (a limit set meanwhile) reads it again;
 * one that met a connection loss is sent again once the session is back
 * (the same state again: whatever the lost one did, the result is the
 * same).  The readers of .state (fs/observe.h) see each applied set.
 *
 * Costs the ensemble, per set: one read of the lock's data and one write
 * (the multi is one transaction).
 *
 * A run of zklock --once-per (ZKLFS_IOC_RUN) is two such writes: a probe
 * that puts a run line "0 - LABEL" in the lock's data, whose mtime is the
 * ensemble's clock now; then, if the previous run line's stamp is less
 * than the period before that, the previous line back (a skip), else the
 * line with that stamp (ours counts).  No client's clock is read: a host
 * whose clock is wrong skips and runs as the others do.  Its exit status
 * is a third write, made only while the line is still ours.
 *
 * The request is bounded and interruptible (fs/pending.h).  FUSE thread
 * to start; answered from a ZooKeeper completion (the same thread).
 */
#ifndef FS_STATE_H
#define FS_STATE_H

#include <stddef.h>

#include "abi/zklockfs.h"
#include "fs/node.h"

/*
 * zklfs_state_set() - set the state of the lock held through @ln (the
 * holder's entry node, or NULL: the descriptor holds nothing) to @state
 * (@len bytes), and answer the ioctl @req: 0 once applied, EIO if the lock
 * is lost or its entry gone, EACCES if @ln holds nothing, or shares it, or
 * holds a semaphore's slot, EFBIG if the lock's data would not fit.
 * FUSE thread, without fs->lock.
 */
void zklfs_state_set(fuse_req_t req, struct zklfs *fs, struct node *ln,
		     const char *state, size_t len);

/*
 * zklfs_state_run() - ZKLFS_IOC_RUN of @in through @ln, answered to @req:
 * the run that counts (abi/zklockfs.h), or errors as zklfs_state_set()'s.
 * FUSE thread, without fs->lock.
 */
void zklfs_state_run(fuse_req_t req, struct zklfs *fs, struct node *ln,
		     const struct zklfs_ioc_run *in);

#endif
