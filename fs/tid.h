/*
 * fs/tid.h - is the thread that asks the one that asked before? (EDEADLK)
 *
 * FUSE tells a request's thread by its id alone, and an id is given again
 * once its thread is gone (pid_max is 32768 on many hosts), while an entry
 * it asked for may live on: a child it forked keeps the descriptor.  So a
 * thread is its id and its start time (field 22 of /proc/TID/stat, clock
 * ticks since boot): no two live threads share an id, so two with the same
 * id and the same start are one, unless the id space wrapped within one
 * clock tick (10 ms at USER_HZ 100) between the first's start and the
 * second's.  Pure: no locks, any thread; inline, so that the daemon and
 * the unit test need no object of it.
 */
#ifndef FS_TID_H
#define FS_TID_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/*
 * zklfs_stat_start() - the start time of a thread from the text of its
 * /proc/TID/stat: field 22, in clock ticks since boot.  Field 2, the name
 * in parentheses, may hold spaces and ')': the fields are counted from the
 * last ')'.  Return: the start; 0 if @stat is not such a text (unknown).
 */
static inline unsigned long long zklfs_stat_start(const char *stat)
{
	const char *p = strrchr(stat, ')');
	unsigned long long start;
	char *end;
	int field;

	for (field = 2; field < 22 && p; field++)	/* p: the space before */
		p = strchr(p + 1, ' ');			/* field + 1 */
	if (!p || p[1] < '0' || p[1] > '9')
		return 0;
	start = strtoull(p + 1, &end, 10);
	if (*end != ' ' && *end != '\n' && *end != '\0')
		return 0;
	return start;
}

/*
 * zklfs_same_thread() - is thread @tid started at @start the one that
 * asked for an entry as @old_tid, started at @old_start?  A start of 0 is
 * unknown (/proc hides the thread, or it was gone); then the id alone
 * decides, as it always did: a false EDEADLK for a recycled id is an
 * error its caller sees, a missed one is a thread waiting on itself
 * until a signal.
 */
static inline bool zklfs_same_thread(pid_t tid, unsigned long long start,
				     pid_t old_tid, unsigned long long old_start)
{
	if (tid != old_tid)
		return false;
	return start == 0 || old_start == 0 || start == old_start;
}

#endif /* FS_TID_H */
