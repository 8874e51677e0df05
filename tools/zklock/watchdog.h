// SPDX-License-Identifier: MIT
/*
 * tools/zklock/watchdog.h - the command never outlives its lock, even when
 * the daemon that holds it stops answering (stopped, frozen, swapped out).
 *
 * A frozen daemon can neither say that the lock is lost nor answer a
 * question: the poll() of the lock's descriptor would hang with it.  So a
 * thread of zklock watches without calling into the mount: it maps the
 * daemon's heartbeat file (abi/zklockfs.h; its path from the holder's
 * descriptor, ZKLFS_IOC_WATCHDOG) and reads until when the server surely
 * keeps the lock's session.  At that instant, on CLOCK_BOOTTIME (it runs
 * through a suspend), or as soon as the session was replaced (expired), it
 * SIGKILLs the command's tree, says why in one line and exits 75.  That
 * instant is a margin (a tenth of the session timeout, 20 ms to 1 s)
 * before the server can expire the session and grant the lock elsewhere,
 * and the one at which a running daemon declares the lock lost itself.
 *
 * Its instants are the daemon's CLOCK_BOOTTIME: a zklock in another time
 * namespace adds the difference of the two namespaces' offsets, which the
 * file and /proc/self/timens_offsets give.  It trusts only a regular file
 * of the daemon's uid (the mount says which) that no one else may write,
 * opened without blocking.
 *
 * Called from main.c: cli_watchdog_arm() once the lock is held and before
 * the command starts (a command that could not be watched never starts),
 * cli_watchdog_child() once it has, cli_watchdog_stop() before the lock
 * is given back.
 */
#ifndef TOOLS_ZKLOCK_WATCHDOG_H
#define TOOLS_ZKLOCK_WATCHDOG_H

#include "tools/zklock/zklock.h"

/*
 * cli_watchdog_arm() - watch the lock held through r->lockfd, for the
 * tree of zklock's children (none yet).  A daemon without the file, or a
 * file that is not the daemon's, is said once on stderr.
 * Return: 0 if watching, else a negative errno (said): do not start the
 * command.
 */
int cli_watchdog_arm(struct cli_run *r);

/* cli_watchdog_child() - the command started: its pid, for the message
 * and for a tree zklock cannot scan. */
void cli_watchdog_child(pid_t child);

/* cli_watchdog_stop() - from now on the watchdog acts no more. */
void cli_watchdog_stop(void);

#endif
