// SPDX-License-Identifier: MIT
/*
 * tools/zklock/bound.h - -n's and -w's bound kept from outside the calls
 * the kernel may hold.
 *
 * zklock's timer (signals.h) interrupts a call into the mount that waits
 * for ZooKeeper.  It cannot interrupt one that waits in the kernel for the
 * directory's lock: a lookup or a create in a directory where another
 * process's mkdir or rmdir waits for ZooKeeper sleeps until that request
 * ends (a session timeout, while ZooKeeper is away), and not even SIGKILL
 * ends the sleep.  So with -n or -w, the process the caller started
 * (whose exit status the shell waits for) forks the zklock that does the
 * work, and keeps the bound itself:
 *
 *   - it waits until that child says the lock is held (cli_bound_held(),
 *     just before the command starts) or exits;
 *   - past the bound (CLI_NONBLOCK_BUDGET + CLI_BOUND_GRACE for -n,
 *     SECONDS + CLI_PROBE_BUDGET + CLI_BOUND_GRACE for -w, from zklock's
 *     start) it sends the child SIGKILL (a child still in the kernel dies
 *     when the kernel lets it go: it has started no command, and the mount
 *     gives back whatever it asked for), says in one line how long it
 *     waited, and exits with -E's status;
 *   - it passes on SIGINT, SIGTERM and SIGHUP sent to it, while the child
 *     waits and once it holds (not those the kernel sends to the whole
 *     process group, a terminal's: the child got them too; a kill of the
 *     group by a process reaches the child twice), and exits as the child
 *     does (the same status, or the same signal).  Any other signal acts
 *     on it as on a zklock alone, and the child dies with it.
 *   - if the child's standard descriptors cannot be handed over, it ends
 *     the child (which holds the lock but has started nothing) and exits
 *     71.
 *
 * The child dies with the parent (PR_SET_PDEATHSIG: SIGKILL), as a
 * zklock killed alone would.  The entry's holder lines (pid=) name the
 * child: the zklock that holds the lock and runs the command.  Without -n and -w nothing is forked.
 * Called by main() once, after cli_sig_install() and before the timer is
 * armed.
 */
#ifndef TOOLS_ZKLOCK_BOUND_H
#define TOOLS_ZKLOCK_BOUND_H

#include "tools/zklock/zklock.h"

#define CLI_BOUND_GRACE	0.15	/* seconds: the child's own answer first */

/*
 * cli_bound_split() - fork the child that does the work, if -n or -w asks
 * for a bound; @bound is that bound in seconds from @t0 (cli_now()).
 * Returns only in the child (or without a fork, if none is needed or
 * fork() failed: then the bound is the timer's alone).
 */
void cli_bound_split(const struct cli_opts *o, double t0, double bound);

/* cli_bound_held() - tell the parent the lock is held (the command starts
 * next); nothing without a split.  Once. */
void cli_bound_held(void);

#endif
