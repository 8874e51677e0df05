/*
 * fs/pool.h - the mount's ZooKeeper sessions (one, and more while busy;
 * or -o sessions=N), and which one the requests about a directory go to.
 *
 * Knows nothing of nodes or lock requests: the engines' lost callback is
 * given to zklfs_pool_open().
 *
 * Its state, fs->pool, is its own (struct zklfs_pool is private to
 * fs/pool.c), guarded by pool->mu, the innermost mutex of the lock map.
 */
#ifndef FS_POOL_H
#define FS_POOL_H

#include "fs/mount.h"
#include "zk/lock.h"
#include "zk/session.h"

/*
 * Start-up, main thread: zklfs_pool_open() (every session, the root,
 * every engine, whose lost, revoke and doubt callbacks are @lost, @revoked
 * and @doubted),
 * zklfs_pool_start() (the supervisors, and the pool's thread that opens
 * and closes sessions; session i publishes to @hb[i], abi/zklockfs.h,
 * unless @hb is NULL: zklfs_pool_max() slots).  Shutdown:
 * zklfs_pool_shutdown() (no session opens or closes any more; every engine
 * answers its waiters), then zklfs_pool_close() (the server drops our
 * entries), zklfs_pool_free().  Each may follow a failed or partial
 * earlier step.  Return: 0 or -errno.
 */
int zklfs_pool_open(struct zklfs *fs, zkl_lost_fn lost, zkl_lost_fn revoked,
		    zkl_lost_fn doubted);
int zklfs_pool_start(struct zklfs *fs, struct zk_heartbeat *hb);
void zklfs_pool_shutdown(struct zklfs *fs);
void zklfs_pool_close(struct zklfs *fs);
void zklfs_pool_free(struct zklfs *fs);
int zklfs_pool_max(struct zklfs *fs);

/*
 * zklfs_session() - the session every request about the directory @dir
 * (or about a child of it) goes to; zklfs_engine() - its lock engine.
 * Any thread; takes pool->mu.
 */
struct zks *zklfs_session(struct zklfs *fs, const char *dir);

/*
 * zklfs_session_hold() - zklfs_session(), and @dir stays on that session
 * until zklfs_session_unhold(): for what keeps a watch or asks again
 * after a loss (an observer, an F_GETLK).  zklfs_engine_hold(),
 * zklfs_engine_unhold(): the same for an enqueue, from the pick of the
 * engine until the engine's own waiter holds the directory.  Any thread;
 * take pool->mu.
 */
struct zks *zklfs_session_hold(struct zklfs *fs, const char *dir);
void zklfs_session_unhold(struct zklfs *fs, const char *dir, const struct zks *zks);
struct zkl_engine *zklfs_engine_hold(struct zklfs *fs, const char *dir);
void zklfs_engine_unhold(struct zklfs *fs, const char *dir, const struct zkl_engine *e);

/* zklfs_session_at() - session @i of the mount's, NULL past the last one
 * ever opened (a closed one is still there: zks_hibernate()). */
struct zks *zklfs_session_at(struct zklfs *fs, int i);
struct zkl_engine *zklfs_engine(struct zklfs *fs, const char *dir);

/* zklfs_session_of() - the session of requests about the znode @path: a
 * directory's (@is_dir) own, a file's its directory's. */
struct zks *zklfs_session_of(struct zklfs *fs, const char *path, bool is_dir);

/* zklfs_session_slot() - the index (0 .. zklfs_pool_max()-1) of @zks, one of the
 * mount's sessions.  Any thread; no lock. */
int zklfs_session_slot(struct zklfs *fs, const struct zks *zks);

/*
 * zklfs_transport() - how fs/ reaches ZooKeeper on @zks, one of the mount's
 * sessions: the seam its lock engine goes through too (zk/transport.h),
 * so every ZooKeeper call of the mount has one door.  Any thread; no lock.
 */
const struct zkt_transport *zklfs_transport(struct zklfs *fs, const struct zks *zks);

/*
 * The calls of fs/ on session @zs, through zklfs_transport(): each as the
 * transport's operation of the same name (zklfs_zset() at @version, -1:
 * any).  Any thread; no lock.
 */
int zklfs_zget(struct zklfs *fs, struct zks *zs, const char *path,
	       data_completion_t done, const void *arg);
int zklfs_zexists(struct zklfs *fs, struct zks *zs, const char *path,
		  stat_completion_t done, const void *arg);
int zklfs_zsync(struct zklfs *fs, struct zks *zs, const char *path,
		string_completion_t done, const void *arg);
int zklfs_zchildren(struct zklfs *fs, struct zks *zs, const char *path,
		    strings_stat_completion_t done, const void *arg);
int zklfs_zset(struct zklfs *fs, struct zks *zs, const char *path, const char *data,
	       int len, int version, stat_completion_t done, const void *arg);
int zklfs_zcreate(struct zklfs *fs, struct zks *zs, const char *path,
		  const char *data, int len, int mode,
		  string_stat_completion_t done, const void *arg);
int zklfs_zdelete(struct zklfs *fs, struct zks *zs, const char *path,
		  void_completion_t done, const void *arg);
int zklfs_zlater(struct zklfs *fs, struct zks *zs, void (*fn)(void *arg, bool go),
		 void *arg);
bool zklfs_zquiet(struct zklfs *fs, struct zks *zs);
int zklfs_ztimeout_ms(struct zklfs *fs, struct zks *zs);
/* zklfs_data_max() - the most data a request on @path may carry (the same
 * on every session). */
size_t zklfs_data_max(struct zklfs *fs, const char *path);

/*
 * zklfs_ns_changed() - a mkdir or rmdir of @dir through this mount is done
 * (or its outcome unknown): the other sessions sync before their next
 * request.  Call it before replying.  Any thread.
 */
void zklfs_ns_changed(struct zklfs *fs, const char *dir);

/*
 * zklfs_now_ms() - CLOCK_MONOTONIC in milliseconds: the clock of the
 * requests' deadlines (fs/pending.h) and of the caches.  Here, with the
 * calls to the sessions, because the simulator links neither and gives
 * its own (tests/sim/simfs.c: its step).  Any thread.
 */
uint64_t zklfs_now_ms(void);

#endif
