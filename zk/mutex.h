/*
 * zk/mutex.h - the daemon's mutexes, with their nesting order enforced.
 *
 * The lock map.  A thread may take a mutex only while every mutex it holds
 * has a lower rank; so no two threads can ever wait for each other.  From
 * the outermost in:
 *
 *   ZKMX_RANK_WBSEND  fs->wb_send     a holder's data from taking to sending
 *                                    (fs/wbuf.c; FUSE and supervisor threads)
 *   ZKMX_RANK_DIRLIST dirlist->lock   an open directory's listing (fs/readdir.c)
 *   ZKMX_RANK_ENGINE  engine->lock    every waiter and queue (zk/lock.c); the
 *                                    engine's @lost callback runs under it
 *   ZKMX_RANK_FS      fs->lock        the inode table, lock requests and
 *                                    holders' data (fs/mount.h, fs/node.h,
 *                                    fs/lockreq.h, fs/wbuf.h); lockreq_lost()
 *                                    takes it under the engine's lock
 *   ZKMX_RANK_OWNERS  fs->owners_mu   the directories made here (fs/attr.c)
 *   ZKMX_RANK_XCACHE  fs->xc->mu      what one process just read (fs/xcache.c)
 *   ZKMX_RANK_OBSERVE fs->obs->mu     observed locks, LOCKDIR/.holders
 *                                    (fs/observe.c)
 *   ZKMX_RANK_PENDING fs->pend->mu    requests waiting on ZooKeeper, answered
 *                                    once (fs/pending.c)
 *   ZKMX_RANK_POOL    pool->mu        which session a directory has, and its
 *                                    pins (fs/pool.c); an engine's waiters
 *                                    pin under the engine's lock, observers
 *                                    under fs->obs->mu
 *
 * Below them all, and not ranked here: a session's own locks (zk/session.c:
 * its rwlock is taken by every ZooKeeper call, under any of the above; its
 * mutex only inside session.c) and the log's rate limiter (zk/log.c), which
 * take no other.  A ZooKeeper completion never runs under any of them: the
 * client runs it on its own thread.
 *
 * With -DZKL_LOCKCHECK (the sanitizer builds) each thread records the
 * mutexes it holds: taking one out of order, or a
 * *_locked() function called without its mutex (zkmx_assert_held()),
 * aborts with both names.  Without it these are plain pthread calls.
 * Any thread.
 */
#ifndef ZK_MUTEX_H
#define ZK_MUTEX_H

#include <pthread.h>
#include <stdbool.h>

enum zkmx_rank {
	ZKMX_RANK_WBSEND = 10,
	ZKMX_RANK_DIRLIST = 15,
	ZKMX_RANK_ENGINE = 20,
	ZKMX_RANK_FS = 30,
	ZKMX_RANK_OWNERS = 40,
	ZKMX_RANK_XCACHE = 60,
	ZKMX_RANK_OBSERVE = 65,
	ZKMX_RANK_PENDING = 70,
	ZKMX_RANK_POOL = 80,
};

struct zkmx {
	pthread_mutex_t m;
	enum zkmx_rank rank;
	const char *name;
};

void zkmx_init(struct zkmx *mu, enum zkmx_rank rank, const char *name);
void zkmx_destroy(struct zkmx *mu);
void zkmx_lock(struct zkmx *mu);
void zkmx_unlock(struct zkmx *mu);

#ifdef ZKL_PREEMPT
/*
 * zkmx_preempt - the simulator's scheduling point (tests/sim is built
 * with -DZKL_PREEMPT): called as a thread that holds no ranked mutex is
 * about to take @mu.  Another thread's work may run there, between two
 * steps of this one, as it may in the daemon; the simulator runs it then,
 * on its one thread.  Its own mutexes are not preempted.  NULL: nothing.
 */
extern void (*zkmx_preempt)(const struct zkmx *mu);
#endif

#ifdef ZKL_LOCKCHECK
/* zkmx_assert_held() - abort unless this thread holds @mu. */
void zkmx_assert_held(const struct zkmx *mu, const char *where);
#define ZKMX_ASSERT_HELD(mu) zkmx_assert_held((mu), __func__)
#else
#define ZKMX_ASSERT_HELD(mu) ((void)(mu))
#endif

#endif
