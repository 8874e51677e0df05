/*
 * fs/ready.h - telling systemd how the mount is (Type=notify, through
 * libsystemd's sd_notify(3)): READY=1 once the mount answers, STATUS= with
 * the session's state and the locks held and waited for as they change,
 * STOPPING=1 when it goes.  A unit ordered After= this one starts only
 * once a file written into the mount point is a lock, not a local file in
 * an empty directory.  Without $NOTIFY_SOCKET nothing is sent and no
 * thread runs.
 *
 * Main thread: zklfs_ready_start() once the mount is made and before the
 * FUSE loop runs (its thread asks the mount, which only the loop answers),
 * zklfs_ready_stopping() when the loop ends, zklfs_ready_join() after the
 * unmount.
 */
#ifndef FS_READY_H
#define FS_READY_H

#include "fs/mount.h"

/* Return: 0, or a negative errno (the thread could not start: one log line). */
int zklfs_ready_start(struct zklfs *fs);
void zklfs_ready_stopping(struct zklfs *fs);
void zklfs_ready_join(struct zklfs *fs);

#endif
