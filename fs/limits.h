/*
 * fs/limits.h - how long and how deep a path the mount lets users make
 * (docs/SPEC.md, "Users and permissions"): each node keeps its full path,
 * and ZooKeeper keeps every directory, so without a bound one user's
 * `mkdir -p` of long names costs the daemon and the ensemble without end.
 */
#ifndef FS_LIMITS_H
#define FS_LIMITS_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* The path below ROOT ("/a/b/NAME") at most this many bytes... */
#define ZKLFS_PATH_MAX 4096
/* ...and at most this many components ("/a/b/NAME": 3). */
#define ZKLFS_DEPTH_MAX 64

/*
 * zklfs_path_check() - may @name be made (or looked up) in the directory
 * whose znode path is @dir, at or below the mount's ROOT @root?  Its path
 * below ROOT is @dir without ROOT, "/" and @name; its depth, its
 * directory's + 1.  Return: 0 or -ENAMETOOLONG.
 */
static inline int zklfs_path_check(const char *root, const char *dir,
				   const char *name)
{
	const char *below;
	size_t depth = 1;

	if (strcmp(dir, root) == 0)
		below = "";
	else
		below = dir + (strcmp(root, "/") == 0 ? 0 : strlen(root));
	for (const char *c = below; *c; c++)
		depth += *c == '/';
	if (depth > ZKLFS_DEPTH_MAX ||
	    strlen(below) + 1 + strlen(name) > ZKLFS_PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

#endif
