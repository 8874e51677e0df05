// SPDX-License-Identifier: MIT
/*
 * tools/zklock/once.h - zklock --once-per PERIOD: the cluster's cron runs
 * a job once a period, not once a host.  Holding the lock, zklock asks the
 * mount (ZKLFS_IOC_RUN, abi/zklockfs.h) to record this run in the lock znode's
 * data unless a run recorded there started less than PERIOD ago, on the
 * times the ensemble stamps, never a clock of this host's.  main() calls
 * it; it calls lockdir.h.
 */
#ifndef ZKLOCK_ONCE_H
#define ZKLOCK_ONCE_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/zklock/zklock.h"

/*
 * cli_once_claim() - with the lock held through r->lockfd: does this run
 * count?  Return: -1 if so (r->run_start_ms is its stamp: the command
 * runs), else the exit status of a skip (--skipped-exit, 0 by default),
 * told in one line naming the run that counts; 75 if the lock is lost.
 */
int cli_once_claim(struct cli_run *r);

/* cli_once_done() - record the command's exit @status as the run's (a
 * status of 128+N for a signal N is recorded as it is).  Best effort. */
void cli_once_done(struct cli_run *r, int status);

/*
 * cli_once_busy() - -n found the lock busy: is a run of this lock still
 * running (its exit not yet recorded), the run of this period?  Return:
 * the exit status of a skip, told in one line, or -1 (busy, as without
 * --once-per).
 */
int cli_once_busy(struct cli_run *r);

/*
 * cli_once_last() - the last run of the lock @path, in words ("started
 * 2026-12-06T21:00:03.120Z by web1 4242, exit 0" or "..., running"), into
 * @buf.  Return: false if none is recorded.
 */
bool cli_once_last(const char *path, char *buf, size_t size);

#endif
