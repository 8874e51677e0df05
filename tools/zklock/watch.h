// SPDX-License-Identifier: MIT
/*
 * tools/zklock/watch.h - zklock --watch LOCKDIR: who holds a lock, printed
 * now and again at each change, from LOCKDIR/.holders (zklockfs(8)): the
 * "observe" side of leader election.  The mount keeps one ZooKeeper watch
 * per observed lock, whatever the number of watchers; zklock only polls
 * the handle, never the ensemble.
 */
#ifndef TOOLS_ZKLOCK_WATCH_H
#define TOOLS_ZKLOCK_WATCH_H

#include <stdbool.h>
#include <stdio.h>

/*
 * cli_watch() - print who holds @lockdir on stdout: a line now, one at
 * each change, until the mount goes or a signal ends zklock; with @json,
 * one JSON object a line:
 *	{"time":"...","lock":"...","holders":[{"entry":...,"kind":...,
 *	 "host":...,"pid":...,"cmd":...,"since":...}]}
 * Return: the exit status (66: not a zklockfs directory; 69: the mount
 * went away; 71: another error).
 */
int cli_watch(const char *lockdir, bool json);


#endif
