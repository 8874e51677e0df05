/*
 * zk/clock.h - the deadline of a timed wait: now on a clock, plus some
 * milliseconds, as pthread_cond_timedwait() and a poll loop take it; and a
 * condition variable whose waits run on CLOCK_MONOTONIC (a wall clock set
 * back must not stretch them).
 *
 * Inline, no other header of ours: zk/session.c, zk/connect.c,
 * fs/pool.c and fs/ender.c include it.  Any thread.
 */
#ifndef ZK_CLOCK_H
#define ZK_CLOCK_H

#include <pthread.h>
#include <time.h>

/* zk_deadline_in() - *@ts = now on @clock, plus @ms milliseconds. */
static inline void zk_deadline_in(struct timespec *ts, clockid_t clock, long ms)
{
	clock_gettime(clock, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* zk_cond_init_monotonic() - @cond, its timed waits on CLOCK_MONOTONIC
 * (deadlines from zk_deadline_in(..., CLOCK_MONOTONIC, ...)). */
static inline void zk_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

#endif
