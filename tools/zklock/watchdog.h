// SPDX-License-Identifier: MIT
/*
 * tools/zklock/watchdog.h - the command never outlives its lock, even when
 * the daemon that holds it stops answering (stopped, frozen, swapped out).
 *
 * A frozen daemon can neither say that the lock is lost nor answer a
 * question: the poll() of the lock's descriptor would hang with it.  So a
 * thread of zklock watches without calling into the mount: it maps the
 * daemon's heartbeat file (zk/heartbeat.h; its path from the holder's
 * descriptor, ZKLFS_IOC_WATCHDOG) and reads until when the server surely
 * keeps the lock's session.  At that instant, on CLOCK_BOOTTIME (it runs
 * through a suspend), or as soon as the session was replaced (expired), it
 * SIGKILLs the command's tree, says why in one line and exits 75.  That
 * instant is a margin (a tenth of the session timeout, 20 ms to 1 s)
 * before the server can expire the session and grant the lock elsewhere,
 * and the one at which a running daemon declares the lock lost itself.
 *
 * Called from main.c: cli_watchdog_start() once the command runs,
 * cli_watchdog_stop() before the lock is given back.
 */
#ifndef TOOLS_ZKLOCK_WATCHDOG_H
#define TOOLS_ZKLOCK_WATCHDOG_H

#include "tools/zklock/zklock.h"

/*
 * cli_watchdog_start() - watch the lock held through r->lockfd, for the
 * tree of r->child.  A daemon without the file, or a file that cannot be
 * read, is said once on stderr: the command runs unwatched.
 * Return: 0 if watching, else a negative errno (said).
 */
int cli_watchdog_start(struct cli_run *r);

/* cli_watchdog_stop() - from now on the watchdog acts no more. */
void cli_watchdog_stop(void);

#endif
