/*
 * fs/limitattr.h - user.zklockfs.limit: the limit of holders a lock
 * directory sets, which makes it a semaphore.
 *
 * Kept as a line "limit=N" in the data of the directory's znode
 * (zk/limit.h), where every mount and client reads it; the engine decides
 * with it (zk/sem.c).  Read by anyone; set or removed by the directory's
 * owner (zklfs_owner()), the mount's owner or root, as chmod would be:
 * EPERM for others.  Setting it is a read-modify-write of the znode's data
 * at the version read, so a concurrent change of its other lines is never
 * lost; a limit that grew wakes the waiters it lets in
 * (zkl_limit_changed()).
 *
 * Threads: the handlers run on FUSE threads and answer from ZooKeeper
 * completions; no lock of their own.
 *
 * Depends on: fs/zop.h, fs/attr.h, fs/pool.h.
 */
#ifndef FS_LIMITATTR_H
#define FS_LIMITATTR_H

#include <stdbool.h>
#include <stddef.h>

#include "fs/node.h"

#define ZKLFS_LIMIT_XATTR "user.zklockfs.limit"

/* zklfs_limit_get() - getxattr of the limit of the lock directory @n:
 * "N", or ENODATA if it sets none. */
void zklfs_limit_get(fuse_req_t req, struct node *n, size_t size);

/*
 * zklfs_limit_set() - setxattr (@value of @len bytes, XATTR_CREATE or
 * XATTR_REPLACE in @flags), or removexattr when @value is NULL.
 * EINVAL for a value that is not 1..1000; EEXIST, ENODATA as the flags
 * say; EPERM for a user who may not.
 */
void zklfs_limit_set(fuse_req_t req, struct node *n, const char *value,
		     size_t len, int flags);

#endif
