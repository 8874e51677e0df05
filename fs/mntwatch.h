/*
 * fs/mntwatch.h - the mount gone from the daemon's own namespace: end the
 * FUSE session as a SIGTERM would.
 *
 * The kernel sends a FUSE daemon nothing when its mount is unmounted while
 * another mount namespace still holds a copy of it (systemd's PrivateTmp=,
 * a container, `unshare -m`): the superblock lives on, and so would the
 * daemon, its sessions and every lock taken through the mount, after an
 * umount the operator was told succeeded.  So a thread watches the
 * daemon's own /proc/self/mountinfo (poll(2) reports POLLPRI on every
 * change to the namespace's mounts) for the mount's device number, never
 * its path (`mount --move` and bind mounts change paths), and once no
 * mount of that device is left, it stops the FUSE loop with the SIGTERM
 * of an orderly stop (libfuse's handler ends the loop and interrupts its
 * read).  The daemon then closes its sessions and its FUSE connection,
 * which the copies in other namespaces see as ENOTCONN.
 *
 * Main thread: zklfs_mntwatch_start() once the mount is made and before
 * the FUSE loop runs, zklfs_mntwatch_gone() and zklfs_mntwatch_stop() when
 * the loop has ended.  The thread only reads /proc and signals the main
 * thread; it takes no lock of the mount's.
 */
#ifndef FS_MNTWATCH_H
#define FS_MNTWATCH_H

#include <stdbool.h>

#include "fs/mount.h"

/*
 * zklfs_mntwatch_start() - find the mount at fs->mountpoint that this
 * daemon just made (the newest mount there in /proc/self/mountinfo) and
 * start watching for the last mount of its device to go.  Return: 0, or
 * a negative errno (not found, or no thread: one log line; the mount
 * runs unwatched, as before).
 */
int zklfs_mntwatch_start(struct zklfs *fs);

/*
 * zklfs_mntwatch_may_unmount() - may fuse_session_unmount() run, which
 * closes the FUSE connection and frees libfuse's copy of the path, and
 * detaches whatever is mounted at fs->mountpoint?  Yes, unless the watch
 * ended the loop and something is mounted there now: another mount's,
 * since ours is gone from this namespace.  Main thread, after
 * zklfs_mntwatch_stop().
 */
bool zklfs_mntwatch_may_unmount(struct zklfs *fs);

/* zklfs_mntwatch_stop() - stop the thread and wait for it. */
void zklfs_mntwatch_stop(void);

#endif
