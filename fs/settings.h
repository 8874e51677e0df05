/*
 * fs/settings.h - the settings of a lock directory: user.zklockfs.limit,
 * the limit of holders that makes it a semaphore, and user.zklockfs.linger,
 * how long a mount may keep an entry after its last close (lingering
 * locks; it overrides the mount's -o linger=).
 *
 * Kept as lines "limit=N" and "linger=MS" in the data of the directory's
 * znode (zk/settings.h), where every mount and client reads them; the engine
 * decides with them (zk/sem.c, zk/linger.c).  Read by anyone; set or removed by the directory's
 * owner (zklfs_owner()), the mount's owner or root, as chmod would be:
 * EPERM for others.  Setting it is a read-modify-write of the znode's data
 * at the version read, so a concurrent change of its other lines is never
 * lost; a limit that grew wakes the waiters it lets in
 * (zkl_limit_changed()).
 *
 * Threads: the handlers run on FUSE threads and answer from ZooKeeper
 * completions; no lock of their own.
 */
#ifndef FS_SETTINGS_H
#define FS_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "fs/node.h"

#include "zk/settings.h"

/* zklfs_setting_get() - getxattr of the setting @s of the lock directory @n:
 * "N", or ENODATA if it has none; with @s NULL, the state the lock's holder
 * published (zk/statedata.h), the way a lock file's is read, empty if none
 * (LOCKDIR/.state reads the same: fs/observe.h); with @lastrun, the last
 * run of zklock --once-per: "START EXIT LABEL" (START the ensemble's
 * stamp in ms, EXIT "-" while it runs, LABEL escaped), ENODATA if none. */
void zklfs_setting_get(fuse_req_t req, struct node *n, size_t size,
		       const struct zkset_setting *s, bool lastrun);

/*
 * zklfs_setting_set() - setxattr of @s (@value of @len bytes, XATTR_CREATE or
 * XATTR_REPLACE in @flags), or removexattr when @value is NULL.
 * EINVAL for a value out of @s's range (limit 1..1000, linger
 * 0..3600000); EEXIST, ENODATA as the flags say; EPERM for a user who may
 * not.
 */
void zklfs_setting_set(fuse_req_t req, struct node *n, const char *value,
		       size_t len, int flags, const struct zkset_setting *s);

#endif
