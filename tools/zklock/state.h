// SPDX-License-Identifier: MIT
/*
 * tools/zklock/state.h - zklock --state: print the state a lock's holder
 * published (LOCKDIR/.state, or a lock file's user.zklockfs.statedata), or,
 * run by the command zklock runs, publish one through the descriptor it
 * was left (ZKLOCK_FD: ZKLFS_IOC_SETSTATE, abi/zklockfs.h).  main() calls it;
 * it calls entry.h.
 */
#ifndef ZKLOCK_STATE_H
#define ZKLOCK_STATE_H

/*
 * cli_state() - print @lockdir's state to stdout (as it is into a pipe or
 * a file; escaped for a terminal), or with @set publish @set.  Return:
 * the exit status: 0; 64 without a descriptor of that lock (ZKLOCK_FD);
 * 66 if @lockdir is not a zklockfs lock; 75 if the lock is lost (nothing
 * changed); 77 if the descriptor does not hold it exclusively.
 */
int cli_state(const char *lockdir, const char *set);

#endif
