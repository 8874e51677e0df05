/*
 * fs/mountpoint.h - the mount point while nothing is mounted on it: never
 * a place where a lock is taken on this host alone.
 *
 * With the filesystem absent (not yet mounted, unmounted, the daemon gone,
 * an fstab `nofail` mount that failed), the mount point is a directory of
 * the host like any other: `exec 9>MP/x.lock` or `flock MP/x.lock cmd`
 * would make a local file there and lock this host alone, and nothing
 * would tell the script.  So lock files live one folder down
 * (MP/cluster/x.lock: ENOENT while unmounted, for root too), and a mount
 * by root also makes the directory immutable (FS_IMMUTABLE_FL, as
 * `chattr +i` does), so that nothing, not even root, makes a file or a
 * folder in it while unmounted.  The flag is never cleared at unmount:
 * that is when it guards.  A mount by another user cannot set it (that
 * takes CAP_LINUX_IMMUTABLE), and has no such guard.
 *
 * Every mount point the daemon made immutable is listed, one path a line,
 * in ZKLFS_MP_LIST under the state directory ($ZKLOCKFS_STATE_DIR, else
 * ZKLFS_STATE_DIR), so that the package's removal can clear the flag
 * (debian/postrm): an admin would otherwise meet an rmdir that fails for
 * root with EPERM, and no hint why.
 *
 * Main thread only, before fuse_session_mount().
 */
#ifndef FS_MOUNTPOINT_H
#define FS_MOUNTPOINT_H

#define ZKLFS_STATE_DIR		"/var/lib/zklockfs"
#define ZKLFS_STATE_DIR_ENV	"ZKLOCKFS_STATE_DIR"
#define ZKLFS_MP_LIST		"immutable"

/*
 * zklfs_mp_guard() - make the directory @mp (a real path: no symlink in
 * it) immutable, if the daemon runs as root, and list it in the state
 * file when this call set the flag; warn (one log line) when @mp is not
 * empty, since what is in it stays reachable, and writable, while
 * nothing is mounted.  Never fails the mount.
 * Return: 0 if @mp is immutable now (made so, or already); -EPERM when
 * not run by root; -EOPNOTSUPP where its filesystem has no such flag (a
 * debug line only); another negative errno otherwise (one log line).  A
 * state file that cannot be written is one log line and still 0.
 */
int zklfs_mp_guard(const char *mp);

#endif
