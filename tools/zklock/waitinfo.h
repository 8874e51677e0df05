// SPDX-License-Identifier: MIT
/*
 * tools/zklock/waitinfo.h - while zklock waits (with --verbose, or on a
 * terminal): who holds the lock, since when, and our place in the queue,
 * said again each time the holders change.
 *
 * A thread of its own, as the main thread is asleep in open(): it reads
 * LOCKDIR/.holders (fs/observe.h) and polls it, so the mount's one watch
 * on the lock tells it of changes; our place comes from a listing of the
 * lock and the pid in the entries named as ours.  Nothing is said for a
 * wait shorter than a second.  On a terminal the line is rewritten in
 * place; elsewhere each change is a line.
 */
#ifndef TOOLS_ZKLOCK_WAITINFO_H
#define TOOLS_ZKLOCK_WAITINFO_H

#include "tools/zklock/zklock.h"

/* cli_waitinfo_start() - before the waiting open of r's lock (a lock
 * directory; not with -n).  Failures are silent: it is only a display. */
void cli_waitinfo_start(struct cli_run *r);

/* cli_waitinfo_stop() - the wait is over: nothing more is said. */
void cli_waitinfo_stop(void);

#endif
