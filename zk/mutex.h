/*
 * zk/mutex.h - the daemon's mutexes, with their nesting order enforced.
 *
 * The lock map.  A thread may take a mutex only while every mutex it holds
 * has a lower rank; so no two threads can ever wait for each other.  From
 * the outermost in:
 *
 *   ZKL_RANK_WBSEND  fs->wb_send     a holder's data from taking to sending
 *                                    (fs/wbuf.c; FUSE and supervisor threads)
 *   ZKL_RANK_DIRLIST dirlist->lock   an open directory's listing (fs/readdir.c)
 *   ZKL_RANK_ENGINE  engine->lock    every waiter and queue (zk/lock.c); the
 *                                    engine's @lost callback runs under it
 *   ZKL_RANK_FS      fs->lock        the inode table, lock requests and
 *                                    holders' data (fs/mount.h, fs/node.h,
 *                                    fs/lockreq.h, fs/wbuf.h); lockreq_lost()
 *                                    takes it under the engine's lock
 *   ZKL_RANK_OWNERS  fs->owners_mu   the directories made here (fs/attr.c)
 *   ZKL_RANK_POOL    pool->mu        which session a directory has (fs/pool.c)
 *   ZKL_RANK_XCACHE  fs->xc->mu      what one process just read (fs/xcache.c)
 *   ZKL_RANK_OBSERVE fs->obs->mu     observed locks, LOCKDIR/.holders
 *                                    (fs/observe.c)
 *   ZKL_RANK_PENDING fs->pend->mu    requests waiting on ZooKeeper, answered
 *                                    once (fs/pending.c)
 *
 * Below them all, and not ranked here: a session's own locks (zk/session.c:
 * its rwlock is taken by every ZooKeeper call, under any of the above; its
 * mutex only inside session.c) and the log's rate limiter (zk/log.c), which
 * take no other.  A ZooKeeper completion never runs under any of them: the
 * client runs it on its own thread.
 *
 * With -DZKL_LOCKCHECK (the sanitizer builds) each thread records the
 * mutexes it holds: taking one out of order, or a
 * *_locked() function called without its mutex (zkl_mutex_assert_held()),
 * aborts with both names.  Without it these are plain pthread calls.
 * Any thread.
 */
#ifndef ZK_MUTEX_H
#define ZK_MUTEX_H

#include <pthread.h>
#include <stdbool.h>

enum zkl_rank {
	ZKL_RANK_WBSEND = 10,
	ZKL_RANK_DIRLIST = 15,
	ZKL_RANK_ENGINE = 20,
	ZKL_RANK_FS = 30,
	ZKL_RANK_OWNERS = 40,
	ZKL_RANK_POOL = 50,
	ZKL_RANK_XCACHE = 60,
	ZKL_RANK_OBSERVE = 65,
	ZKL_RANK_PENDING = 70,
};

struct zkl_mutex {
	pthread_mutex_t m;
	enum zkl_rank rank;
	const char *name;
};

void zkl_mutex_init(struct zkl_mutex *mu, enum zkl_rank rank, const char *name);
void zkl_mutex_destroy(struct zkl_mutex *mu);
void zkl_mutex_lock(struct zkl_mutex *mu);
void zkl_mutex_unlock(struct zkl_mutex *mu);

#ifdef ZKL_PREEMPT
/*
 * zkl_mutex_preempt - the simulator's scheduling point (tests/sim is built
 * with -DZKL_PREEMPT): called as a thread that holds no ranked mutex is
 * about to take @mu.  Another thread's work may run there, between two
 * steps of this one, as it may in the daemon; the simulator runs it then,
 * on its one thread.  Its own mutexes are not preempted.  NULL: nothing.
 */
extern void (*zkl_mutex_preempt)(const struct zkl_mutex *mu);
#endif

#ifdef ZKL_LOCKCHECK
/* zkl_mutex_assert_held() - abort unless this thread holds @mu. */
void zkl_mutex_assert_held(const struct zkl_mutex *mu, const char *where);
#define ZKL_ASSERT_HELD(mu) zkl_mutex_assert_held((mu), __func__)
#else
#define ZKL_ASSERT_HELD(mu) ((void)(mu))
#endif

#endif
