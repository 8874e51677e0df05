/*
 * fs/watchdog.h - the daemon's side of zklock's watchdog: a file of this
 * host's memory (tmpfs) where the mount's sessions publish until when the
 * server surely keeps them (abi/zklockfs.h), for a zklock that must end
 * its command in time even if this daemon stops answering.
 *
 * The file is /run/zklockfs/zklockfs-hb-PID-XXXXXX for a daemon run by
 * root, else in /dev/shm (or /tmp), where every user of the mount can
 * read it; mode 0644, written by the daemon alone, its blocks allocated at
 * start (never a SIGBUS later), removed at exit (and, for root, when a
 * later daemon finds the file of one that died).  A holder learns its
 * path, its owner, its lock's slot and the session's generation through
 * ZKLFS_IOC_WATCHDOG (abi/zklockfs.h).
 *
 * zklfs_watchdog_open() and _close() on the main thread at start and
 * exit; zklfs_watchdog_info() on any thread: the file's slots are
 * atomics, its path read only.
 */
#ifndef FS_WATCHDOG_H
#define FS_WATCHDOG_H

#include "abi/zklockfs.h"
#include "fs/mount.h"

/*
 * zklfs_watchdog_open() - make and map the file, for @slots sessions.
 * Return: its slots, to give each session (zks_publish()); NULL if it
 * could not be made (one line on stderr: the mount fails, since zklock
 * would refuse to run a command it could not watch).
 */
struct zk_heartbeat *zklfs_watchdog_open(struct zklfs *fs, int slots);
void zklfs_watchdog_close(struct zklfs *fs);

/*
 * zklfs_watchdog_info() - what a holder's zklock needs to watch the lock
 * of session slot @slot: the file's path, the slot, its generation now.
 * Return: 0, or -EOPNOTSUPP without a file.
 */
int zklfs_watchdog_info(struct zklfs *fs, int slot, struct zklfs_ioc_watchdog *out);

#endif
