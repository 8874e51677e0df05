/*
 * fs/confirm.h - "am I still the leader?": fsync on a holder's descriptor
 * confirms, with a round trip to ZooKeeper, that its entry still exists
 * and holds the lock.
 *
 * Its state is the request's (struct lr_confirm, fs/lockreq.h).  Called
 * by the FSYNC handler (fs/wbuf.c) once the holder's data is on its way
 * (zklock --confirm is an fsync of the descriptor zklock left its command:
 * only a holder can ask); answered from a ZooKeeper completion (on the
 * FUSE thread, which drives the sessions: zk/drive.h), or at once by a
 * loss or a give-back (fs/lockreq.c).
 *
 * The round trip is a sync of the lock's directory, then an exists of the
 * entry, on the entry's session: ZooKeeper does one session's requests in
 * order, so it follows everything the mount sent on that session before
 * (the holder's data among them), and the sync makes the server it is
 * connected to catch up with the leader first.  One round trip is out per
 * entry at a time: the fsyncs that come meanwhile share the next one.  A
 * connection loss sends it again on the session's return; the silence
 * that makes the lock lost (the session timeout, less a margin) answers
 * them EIO.
 */
#ifndef FS_CONFIRM_H
#define FS_CONFIRM_H

#include "fs/lockreq.h"

/*
 * zklfs_confirm() - answer @req (an FSYNC on the holder's descriptor of
 * @n) with @answer,
 * later: 0 once a round trip has shown its entry exists and the lock is
 * still held (with @data, an FSYNC's: and ZooKeeper answered for the
 * version of the holder's data written by now; else the error of a data
 * send not reported yet, or EAGAIN), EIO if the entry is gone, the lock
 * lost or given back meanwhile.
 * ENOLCK at once if @n holds nothing (LOCK_UN), EIO if the lock is lost.
 * FUSE thread, without fs->lock.
 */
void zklfs_confirm(struct zklfs *fs, struct node *n, fuse_req_t req, bool data,
		   zklfs_confirm_answer_fn *answer, size_t size);

#endif
