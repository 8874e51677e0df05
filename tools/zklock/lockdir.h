// SPDX-License-Identifier: MIT
/*
 * tools/zklock/lockdir.h - the lock directory: proving that it is on a
 * zklockfs mount, creating it there (and nowhere else), reading the
 * user.zklockfs.* xattrs of it and of its entries.
 *
 * zklock speaks only to the mount, never to ZooKeeper: the xattrs below are
 * all it learns about a lock beyond its open descriptor. Errors are negative
 * errnos; cli_lockdir_failed() alone turns one into a message and an exit
 * status.
 */
#ifndef TOOLS_ZKLOCK_LOCKDIR_H
#define TOOLS_ZKLOCK_LOCKDIR_H

#include <errno.h>
#include <sys/types.h>

/* The xattrs zklockfs answers (see zklockfs(8)). */
#define XATTR_SEQ	"user.zklockfs.seq"	/* of an entry */
#define XATTR_KIND	"user.zklockfs.kind"	/* of an entry */
#define XATTR_STATE	"user.zklockfs.state"	/* of an entry */
#define XATTR_TOKEN	"user.zklockfs.token"	/* of an entry */
#define XATTR_HOLDERS	"user.zklockfs.holders"	/* of a lock directory */
#define XATTR_LIMIT	"user.zklockfs.limit"	/* of a lock directory */
#define XATTR_METRICS	"user.zklockfs.metrics"	/* of a mount point */
#define XATTR_QUEUE	"user.zklockfs.queue"	/* of a lock: its queue, as text */
#define XATTR_LOCKFILES	"user.zklockfs.lockfiles" /* "1": a folder of a
						   lockfiles mount */

/* "Not a zklockfs directory", as an errno that nothing else here returns. */
#define ENOTZKLOCKFS	EMEDIUMTYPE

/*
 * cli_lockdir_xattr() - the value of xattr @xname of @fd (if @path is NULL)
 * or of @path, NUL-terminated, in *@out (to free). A value that grows
 * between the size query and the read is asked for again.
 * Return: its length, or a negative errno (-ENODATA: no such xattr).
 */
ssize_t cli_lockdir_xattr(int fd, const char *path, const char *xname,
			  char **out);

/*
 * cli_lockdir_check() - whether the existing directory @dir is on a
 * zklockfs mount: a FUSE file system whose directory answers
 * user.zklockfs.holders (a local file system answers ENODATA or ENOTSUP;
 * that xattr copied onto one is no proof).
 * Return: 0; -ENOTZKLOCKFS; another negative errno (cannot tell).
 */
int cli_lockdir_check(const char *dir);

/*
 * cli_lockdir_is_dir() - whether @path exists as a directory.
 * Return: 0, -ENOTDIR or another negative errno (-ENOENT: missing).
 */
int cli_lockdir_is_dir(const char *path);

/*
 * cli_lockdir_make() - mkdir -p @dir on zklockfs: find the deepest existing
 * ancestor, insist that it is a zklockfs directory, then create the rest
 * (EEXIST from a racing zklock is fine). Nothing is created on any other
 * file system. An existing @dir is only checked, unless zklockfs says it
 * is gone (then cli_lockdir_remake()).
 * Return: 0, -ENOTZKLOCKFS or another negative errno.
 */
int cli_lockdir_make(const char *dir);

/* How many levels up cli_lockdir_remake() makes again (zklockfs's depth). */
#define CLI_LOCKDIR_LEVELS	64

/*
 * cli_lockdir_remake() - make @dir again after it went behind our back (a
 * ZooKeeper container that the server deleted once its last entry was
 * gone, with zklockfs -o containers), and its ancestors that went with it,
 * each only in a directory proven on zklockfs. mkdir() is always asked,
 * whatever stat() says: the kernel remembers a directory for a second
 * after the server deleted it. EEXIST (another zklock was first) is fine.
 * Return: 0, -ENOTZKLOCKFS or another negative errno.
 */
int cli_lockdir_remake(const char *dir);

/*
 * cli_lockdir_limit() - make @dir a semaphore of @limit holders (-L): set
 * its limit if it has none; one that it has already must be @limit.
 * Return: 0; -EEXIST (another limit, said on stderr); another negative
 * errno (-EPERM: not the directory's owner).
 */
int cli_lockdir_limit(const char *dir, unsigned limit);

/*
 * cli_lockdir_no_limit() - without -L, @dir must be a plain lock: a
 * directory name someone else made first (or made again after the server
 * reaped it) could carry a limit that lets several "exclusive" holders in
 * at once.  Return: 0 (also when @dir is gone meanwhile: the server
 * reaped it, and the enqueue makes it again); -EEXIST (it has a limit,
 * said on stderr, with the -L that would share it); another negative errno.
 */
int cli_lockdir_no_limit(const char *dir);

/*
 * cli_lockdir_failed() - say on stderr why @dir cannot be used (@err, a
 * negative errno from the functions above or from the caller's own use of
 * @dir). Return: the exit status for it: CLI_EXIT_NODIR (66), or for
 * -ETIMEDOUT (ZooKeeper silent for the mount's session timeout)
 * CLI_EXIT_UNAVAILABLE (69).
 */
int cli_lockdir_failed(const char *dir, int err);

/*
 * cli_lockdir_lockfile() - is @path a lock file (zklockfs -o lockfiles): an
 * existing regular file, or a missing one in a folder of a lockfiles
 * mount?  Return: 1, 0 (a lock directory, or none yet), or a negative
 * errno: -EISDIR for a folder of a lockfiles mount, which is no lock.
 */
int cli_lockdir_lockfile(const char *path);

#endif
