/*
 * fs/revoke.h - user.zklockfs.revoke: ask the holder of an entry to let go.
 *
 * `setfattr -n user.zklockfs.revoke -v 1 DIR/ENTRY` sets the entry's data
 * to "__REVOKE__" (ZKL_REVOKE_DATA, Curator's convention), which its holder
 * hears from the watch on its own entry: a zklockfs holder's descriptor
 * then reports POLLPRI and reads "revoking" (zkl_engine_on_revoke()), a
 * Curator holder whose lock is revocable releases.  The lock is not broken:
 * the entry stays until its holder gives it back.  Allowed to whoever may
 * unlink the entry (zklfs_may_own()): EPERM for others; EINVAL for a value
 * other than "1".
 *
 * Threads: the handler runs on a FUSE thread and answers from ZooKeeper
 * completions; no lock of its own.
 */
#ifndef FS_REVOKE_H
#define FS_REVOKE_H

#include <stddef.h>

#include "fs/node.h"

/* zklfs_revoke() - setxattr of user.zklockfs.revoke on the entry @n. */
void zklfs_revoke(fuse_req_t req, struct node *n, const char *value, size_t len);

/*
 * zklfs_revoke_in() - setxattr of user.zklockfs.revoke (or with @brk
 * user.zklockfs.break) on the lock file @n, whose entries have no file of
 * their own: @value names the entry (as user.zklockfs.holders lists it).
 * Revoking is as above; breaking deletes the entry, as unlink of it does
 * in a lock directory, with the same rule.  EINVAL for a value that is not
 * the name of a queue entry.
 */
void zklfs_revoke_in(fuse_req_t req, struct node *n, const char *value, size_t len,
		     bool brk);

#endif
