/* zk/mutex.c - ranked mutexes (see mutex.h for the lock map). */
#include "zk/mutex.h"

#include <stdio.h>
#include <stdlib.h>

void zkmx_init(struct zkmx *mu, enum zkmx_rank rank, const char *name)
{
	pthread_mutex_init(&mu->m, NULL);
	mu->rank = rank;
	mu->name = name;
}

void zkmx_destroy(struct zkmx *mu)
{
	pthread_mutex_destroy(&mu->m);
}

#ifdef ZKL_PREEMPT
void (*zkmx_preempt)(const struct zkmx *mu);

/* The ranked mutexes this thread holds, and the preempted work's. */
static _Thread_local int depth;

static void preempt(const struct zkmx *mu)
{
	if (depth++ == 0 && zkmx_preempt)
		zkmx_preempt(mu);
}

static void unpreempt(void)
{
	depth--;
}
#else
#define preempt(mu) ((void)(mu))
#define unpreempt() ((void)0)
#endif

#ifndef ZKL_LOCKCHECK

void zkmx_lock(struct zkmx *mu)
{
	preempt(mu);
	pthread_mutex_lock(&mu->m);
}

void zkmx_unlock(struct zkmx *mu)
{
	pthread_mutex_unlock(&mu->m);
	unpreempt();
}

#else

#define HELD_MAX 8

/* The ranked mutexes this thread holds, in the order taken. */
static _Thread_local const struct zkmx *held[HELD_MAX];
static _Thread_local int nheld;

static void die(const char *what, const struct zkmx *mu,
		const struct zkmx *other, const char *where)
{
	fprintf(stderr, "zklockfs: lock map violated: %s %s (rank %d)%s%s%s%s\n",
		what, mu->name, (int)mu->rank, other ? " while holding " : "",
		other ? other->name : "", where ? " in " : "", where ? where : "");
	abort();
}

void zkmx_lock(struct zkmx *mu)
{
	for (int i = 0; i < nheld; i++)
		if (held[i]->rank >= mu->rank)
			die("taking", mu, held[i], NULL);
	if (nheld == HELD_MAX)
		die("taking too many:", mu, NULL, NULL);
	preempt(mu);
	pthread_mutex_lock(&mu->m);
	held[nheld++] = mu;
}

void zkmx_unlock(struct zkmx *mu)
{
	int i;

	for (i = nheld - 1; i >= 0 && held[i] != mu; i--)
		;
	if (i < 0)
		die("releasing, not holding,", mu, NULL, NULL);
	for (; i < nheld - 1; i++)
		held[i] = held[i + 1];
	nheld--;
	pthread_mutex_unlock(&mu->m);
	unpreempt();
}

void zkmx_assert_held(const struct zkmx *mu, const char *where)
{
	for (int i = 0; i < nheld; i++)
		if (held[i] == mu)
			return;
	die("needing, not holding,", mu, NULL, where);
}

#endif
