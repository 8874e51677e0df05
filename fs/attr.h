/*
 * fs/attr.h - what stat says of znodes, and who owns them.
 *
 * Who opened an entry is the engine's record.  Its state, fs->owners, is
 * under fs->owners_mu; nothing here takes fs->lock.
 */
#ifndef FS_ATTR_H
#define FS_ATTR_H

#include <sys/stat.h>

#include "fs/node.h"

struct Stat;

/*
 * zklfs_fill_attr() - the stat of a znode: a directory (mode 01777, like
 * /tmp) or an entry (0644, times = creation), owned by @uid (zklfs_owner()).
 * Any thread.
 */
void zklfs_fill_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino,
		     enum node_type type, const struct Stat *zs, uid_t uid);

/*
 * Who owns a znode (docs/SPEC.md, "Users and permissions"): an entry made
 * through this mount, the uid that opened it (the engine's record); a
 * directory made through this mount (zklfs_dir_made(), until
 * zklfs_dir_gone(): its rmdir, or any request of the mount that finds its
 * path gone, such as a container the server reaped; a table nearly full
 * also checks two kept paths at each zklfs_dir_made()), its maker, as
 * long as its czxid is the one made;
 * anything else, the mount's owner.  Never the uid= line of an entry's
 * data.  Any thread; fs->owners_mu and the engine's lock, briefly.
 * zklfs_owners_init() and zklfs_owners_free(): main thread, start and exit.
 */
int zklfs_owners_init(struct zklfs *fs);
void zklfs_owners_free(struct zklfs *fs);
void zklfs_dir_made(struct zklfs *fs, const char *path, int64_t czxid, uid_t uid);
void zklfs_dir_gone(struct zklfs *fs, const char *path);
uid_t zklfs_owner(struct zklfs *fs, const char *path, enum node_type type,
		  const struct Stat *zs);
/* zklfs_may_own() - may @uid do what only an owner does to @path (unlink,
 * rmdir, set a limit, ask its holder to let go)?  The sticky-bit rule of
 * /tmp: the znode's owner, the mount's owner, root. */
bool zklfs_may_own(struct zklfs *fs, uid_t uid, const char *path,
		   enum node_type type, const struct Stat *zs);

/* zklfs_pending_attr() - the stat of lock node @ino whose entry is not made
 * yet, owned by its opener @uid.  Any thread. */
void zklfs_pending_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino,
			uid_t uid);

/* zklfs_hidden() - is @name under @dir not shown (/zookeeper at ROOT "/")? */
bool zklfs_hidden(struct zklfs *fs, const char *dir, const char *name);

#endif
