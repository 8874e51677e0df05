// SPDX-License-Identifier: MIT
/*
 * tools/zklock/why.h - the one line that says why zklock did not run the
 * command: the lock was held, or ZooKeeper did not answer in time.
 *
 * The bounds (docs/zklock.1): -n gives up within 1 s and -w SECONDS within
 * SECONDS + 1 s, whatever ZooKeeper does.  zklock's own timer (signals.h)
 * ends every call into the mount that takes longer: the mount answers
 * EINTR to a signal at once, even while ZooKeeper is away.  -n's timer
 * runs CLI_NONBLOCK_BUDGET from the start; once -w's has run out, telling
 * "held" from "ZooKeeper silent" takes at most CLI_PROBE_BUDGET more.
 */
#ifndef TOOLS_ZKLOCK_WHY_H
#define TOOLS_ZKLOCK_WHY_H

#include "tools/zklock/zklock.h"

#define CLI_NONBLOCK_BUDGET	0.8	/* seconds, from zklock's start */
#define CLI_PROBE_BUDGET	0.5	/* seconds, after -w's ran out */

/*
 * cli_why_not() - say why the lock of @r was not taken, on stderr, in one
 * line: @err is -EAGAIN (-n found it held) or -ETIMEDOUT (the timer of -n
 * or -w ran out, while waiting in the queue or before).  Asks the mount
 * who holds the lock, within the bounds above: a holder named means
 * ZooKeeper answered; no answer in time means it is silent.
 * Return: the exit status, -E's code (1 by default).
 */
int cli_why_not(struct cli_run *r, int err);

/*
 * cli_why_lost() - why the lock held through r->lockfd was lost, as the
 * mount says (ZKLFS_IOC_LOSS), in words: its entry deleted, ZooKeeper
 * silent, the session expired, or the mount gone (unmounted, its daemon
 * ended).  Asked once the mount said the lock is lost (so it answers).
 * Return: a static string.
 */
const char *cli_why_lost(struct cli_run *r);

#endif
