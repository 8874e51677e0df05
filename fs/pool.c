/*
 * fs/pool.c - the mount's ZooKeeper sessions, and which one the requests
 * about a directory go to.
 *
 * ZooKeeper applies a session's requests one after another, so one
 * session bounds how many requests a mount gets done per second, whatever
 * the number of locks: 32 processes each cycling its own lock behind one
 * session take turns.  So the mount opens more sessions (up to 8, or
 * exactly -o sessions=N), each with its own lock engine and supervisor,
 * while requests for different locks wait behind one session's pace, and
 * gives them back when they are idle (fs/slots.h decides, this file does).
 *
 * Every request about a directory goes to the session it is bound to: its
 * listing, stat, mkdir and rmdir, and everything about its children
 * (lookups, the engine's creates and deletes, reads, writes, unlinks).  A
 * directory stays bound while anything of its lock lives there, which the
 * pins count: every waiter of the engine, from its enqueue to the
 * completed delete of its entry (zkl_engine_on_dir()), a lock request from
 * the pick of its engine to the enqueue (zklfs_engine_hold()), and the
 * mount's observers and F_GETLK queries, which keep a watch or ask again
 * after a loss (zklfs_session_hold()).  A read of several calls, each
 * sent from the last one's completion, pins nothing: each call counts as
 * a use of its session, which is closed only after none for the idle
 * time.  So a lock's entries and hand-offs are all on one session, and its
 * requests are done in order: a listing or rmdir right after close() is
 * sent after the release's delete, on the same session.  A directory without pins
 * may move to a less busy session; the new one then sends a sync first,
 * as its server may not have seen what the old one did.
 *
 * What crosses directories is mkdir and rmdir: a directory made on its
 * session must show in its parent's listing (another session), and its
 * children may be made on a third.  In an ensemble the sessions may be
 * connected to different servers, so after a mkdir or rmdir through this
 * mount each other session sends a sync before its next request (in
 * order on that session, so the request sees the change).
 *
 * The pool's own thread opens and closes sessions, since both block
 * (connecting; draining the requests in flight).  It opens one when every
 * open session has ZKLFS_SLOTS_GROW_AT locks in use, and closes one
 * (never the first) that has no pins and was neither picked nor called
 * through for -o sessions_idle (the session timeout at least), while
 * settled (zks_settled()).  A closed session is hibernated, not freed
 * (zks_hibernate()): a thread that picked it that long ago and calls only
 * now gets an error, never a freed struct; its engine, idle, stays too.
 */
#include "fs/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/slots.h"
#include "zk/clock.h"
#include "zk/log.h"
#include "zk/metrics.h"

#define DIRS_MAX 65536		/* beyond: slot 0, not stored */
#define RETRY_MS 1000		/* after a session that could not be opened */

struct zklfs_pool;

/* Slot @slot of the pool: a sync's completion's argument, and its
 * engine's pin callback's. */
struct pool_ref {
	struct zklfs_pool *pool;
	int slot;
};

/* fs->pool: the mount's sessions. */
struct zklfs_pool {
	int max;				/* sessions at most */
	int keep;				/* always open: 0 .. keep-1 */
	uint64_t idle_ms;			/* -o sessions_idle */
	const struct zklfs_conf *conf;
	struct zk_heartbeat *hb;		/* session i publishes to hb[i] */
	_Atomic int inited;			/* zks[0 .. inited-1] were opened once */
	struct zks zks[ZKLFS_SESSIONS_MAX];
	struct zkl_engine *engines[ZKLFS_SESSIONS_MAX];	/* engine i on zks[i] */
	struct zkt_transport t[ZKLFS_SESSIONS_MAX];	/* how fs/ and engine i
							   reach zks[i] */
	struct zkmx mu;			/* slots, links */
	struct zklfs_slots slots;
	struct pool_ref ref[ZKLFS_SESSIONS_MAX];
	_Atomic uint64_t called[ZKLFS_SESSIONS_MAX];	/* the last call of fs/ */
	uint64_t links[ZKLFS_SESSIONS_MAX];	/* zks_links() at the last look */
	/* the pool's thread; mmu guards kick and stop (a leaf: nothing is
	   taken under it) */
	pthread_t thread;
	atomic_bool running;
	pthread_mutex_t mmu;
	pthread_cond_t mcond;
	bool kick, stop;
};

/* A pin of an engine's waiter (zkl_engine_on_dir()); under its lock. */
static void engine_pin(void *arg, const char *dir, int delta)
{
	struct pool_ref *r = arg;

	zkmx_lock(&r->pool->mu);
	zklfs_slot_pin(&r->pool->slots, dir, r->slot, delta, zks_now_ms());
	zkmx_unlock(&r->pool->mu);
}

int zklfs_pool_open(struct zklfs *fs, zkl_lost_fn lost, zkl_lost_fn revoked,
		    zkl_lost_fn doubted)
{
	const struct zklfs_conf *conf = fs->conf;
	struct zklfs_pool *p;
	int err;

	p = fs->pool = calloc(1, sizeof(*fs->pool));
	if (!p)
		return -ENOMEM;
	p->conf = conf;
	p->max = conf->sessions ? conf->sessions : ZKLFS_SESSIONS_MAX;
	p->keep = conf->sessions ? conf->sessions : 1;
	p->idle_ms = (uint64_t)(conf->sessions_idle_ms > conf->session_timeout_ms ?
				conf->sessions_idle_ms : conf->session_timeout_ms);
	zkmx_init(&p->mu, ZKMX_RANK_POOL, "pool->mu");
	pthread_mutex_init(&p->mmu, NULL);
	zk_cond_init_monotonic(&p->mcond);
	if (zklfs_slots_init(&p->slots, p->max, p->keep, DIRS_MAX) != 0)
		return -ENOMEM;
	while (p->inited < p->keep) {
		/* counted first: zks_close() closes a half-opened one too */
		err = zks_open(&p->zks[p->inited++], conf->connect, conf->session_timeout_ms,
			       conf->auth_file, conf->acl);
		if (err)
			return err;
		zkm_session_opened(1);
	}
	err = zks_check_root(&p->zks[0], conf->root, conf->create_root, !conf->ro);
	if (err)
		return err;
	for (int i = 0; i < p->max; i++) {
		p->ref[i] = (struct pool_ref){ .pool = p, .slot = i };
		p->t[i] = zkt_session(&p->zks[i]);
		p->engines[i] = zkl_engine_new(&p->t[i], conf->naming, lost);
		if (!p->engines[i]) {
			zklog(LOG_ERR, "out of memory");
			return -ENOMEM;
		}
		zkl_engine_on_revoke(p->engines[i], revoked);
		zkl_engine_on_doubt(p->engines[i], doubted);
		zkl_engine_on_dir(p->engines[i], engine_pin, &p->ref[i]);
		zkl_engine_set_linger(p->engines[i], (unsigned)conf->linger_ms);
	}
	for (int i = 0; i < p->keep; i++)
		p->links[i] = zks_links(&p->zks[i]);
	return 0;
}

/* Start session @i's supervisor, its events its engine's. */
static int start_one(struct zklfs_pool *p, int i)
{
	struct zks_events ev = zkl_engine_events(p->engines[i]);

	if (p->hb)
		zks_publish(&p->zks[i], &p->hb[i]);
	if (zks_start(&p->zks[i], &ev) != 0) {
		zklog(LOG_ERR, "cannot start the supervisor of session %d", i);
		return -EAGAIN;
	}
	return 0;
}

/* Open session @i (the lowest closed one): the first time, or again. */
static int open_one(struct zklfs_pool *p, int i)
{
	const struct zklfs_conf *conf = p->conf;
	int err;

	if (i < p->inited)
		return zks_wake(&p->zks[i]);
	err = zks_open(&p->zks[i], conf->connect, conf->session_timeout_ms,
		       conf->auth_file, conf->acl);
	if (!err)
		err = start_one(p, i);
	if (err) {
		zks_close(&p->zks[i]);
		return err;
	}
	atomic_store(&p->inited, i + 1);
	return 0;
}

/*
 * The pool's thread: opens a session when the slots want one, and closes
 * the idle ones, looking at least every quarter of the idle time (a
 * second at most: the load's sweep too) and whenever a hold kicks it.
 */
static void *pool_thread(void *arg)
{
	struct zklfs_pool *p = arg;
	uint64_t look = p->idle_ms / 4 < 1000 ? p->idle_ms / 4 : 1000, retry_at = 0;

	for (;;) {
		struct timespec ts;
		uint64_t now;
		int want, idle;

		zk_deadline_in(&ts, CLOCK_MONOTONIC, (long)look);
		pthread_mutex_lock(&p->mmu);
		while (!p->stop && !p->kick)
			if (pthread_cond_timedwait(&p->mcond, &p->mmu, &ts) != 0)
				break;
		p->kick = false;
		if (p->stop) {
			pthread_mutex_unlock(&p->mmu);
			break;
		}
		pthread_mutex_unlock(&p->mmu);

		now = zks_now_ms();
		zkmx_lock(&p->mu);
		zklfs_slots_sweep(&p->slots, now, ZKLFS_SLOTS_RECENT_MS);
		want = now >= retry_at ? zklfs_slots_want(&p->slots) : -1;
		zkmx_unlock(&p->mu);
		if (want >= 0) {
			if (open_one(p, want) == 0) {
				zkmx_lock(&p->mu);
				p->links[want] = zks_links(&p->zks[want]);
				zklfs_slot_opened(&p->slots, want, zks_now_ms());
				zkmx_unlock(&p->mu);
				zkm_session_opened(1);
				zklog(LOG_INFO, "opened ZooKeeper session %d: locks wait behind "
				      "the others' pace", want);
				pthread_mutex_lock(&p->mmu);
				p->kick = true;		/* another, maybe */
				pthread_mutex_unlock(&p->mmu);
			} else {
				retry_at = zks_now_ms() + RETRY_MS;
			}
			continue;
		}
		/*
		 * Idle: no pins, and neither picked nor called through for
		 * the idle time (a query of several calls, each sent from the
		 * last one's completion, is not idle), connected and heard
		 * from, with nothing waiting for the session to come back
		 * (zks_settled()).  The idle time is at least the session
		 * timeout: a call's answer takes less, or the session is not
		 * heard from.  The clock is read under p->mu, so no pick is
		 * later than it.
		 */
		zkmx_lock(&p->mu);
		now = zks_now_ms();
		for (int i = 0; i < p->max; i++) {
			uint64_t c = atomic_load(&p->called[i]);

			if (c > p->slots.s[i].used_ms)
				p->slots.s[i].used_ms = c;
		}
		idle = zklfs_slots_idle(&p->slots, p->keep, now, p->idle_ms);
		if (idle >= 0 && zks_settled(&p->zks[idle]))
			zklfs_slot_close(&p->slots, idle);
		else
			idle = -1;
		zkmx_unlock(&p->mu);
		if (idle >= 0) {
			zks_hibernate(&p->zks[idle]);
			zkm_session_opened(-1);
			zklog(LOG_INFO, "closed ZooKeeper session %d: idle", idle);
		}
	}
	return NULL;
}

int zklfs_pool_start(struct zklfs *fs, struct zk_heartbeat *hb)
{
	struct zklfs_pool *p = fs->pool;

	p->hb = hb;
	for (int i = 0; i < p->inited; i++)
		if (start_one(p, i) != 0)
			return -EAGAIN;
	if (p->max > 1) {		/* sessions=N too: the load's sweep */
		if (pthread_create(&p->thread, NULL, pool_thread, p) != 0) {
			zklog(LOG_ERR, "cannot start the session pool's thread");
			return -EAGAIN;
		}
		atomic_store(&p->running, true);
	}
	return 0;
}

int zklfs_pool_max(struct zklfs *fs)
{
	return fs->pool->max;
}

struct zks *zklfs_session_at(struct zklfs *fs, int i)
{
	return fs->pool && i >= 0 && i < atomic_load(&fs->pool->inited) ?
	       &fs->pool->zks[i] : NULL;
}

void zklfs_pool_shutdown(struct zklfs *fs)
{
	struct zklfs_pool *p = fs->pool;

	if (!p)
		return;
	if (atomic_load(&p->running)) {	/* no session opens or closes from now on */
		pthread_mutex_lock(&p->mmu);
		p->stop = true;
		pthread_cond_signal(&p->mcond);
		pthread_mutex_unlock(&p->mmu);
		pthread_join(p->thread, NULL);
		atomic_store(&p->running, false);
	}
	for (int i = 0; i < p->max; i++)
		if (p->engines[i])
			zkl_engine_shutdown(p->engines[i]);
}

void zklfs_pool_close(struct zklfs *fs)
{
	zklfs_pool_shutdown(fs);
	for (int i = 0; fs->pool && i < fs->pool->inited; i++)
		zks_close(&fs->pool->zks[i]);
}

void zklfs_pool_free(struct zklfs *fs)
{
	struct zklfs_pool *p = fs->pool;

	if (!p)
		return;
	for (int i = 0; i < p->max; i++) {
		if (p->engines[i])
			zkl_engine_free(p->engines[i]);
		p->engines[i] = NULL;
	}
	zklfs_slots_free(&p->slots);
	zkmx_destroy(&p->mu);
	pthread_cond_destroy(&p->mcond);
	pthread_mutex_destroy(&p->mmu);
	free(p);
	fs->pool = NULL;
}

/*
 * A session whose connection went or came since we last looked may be on
 * a server behind what the others did: it owes a sync.  Under p->mu.
 */
static void links_check_locked(struct zklfs_pool *p)
{
	ZKMX_ASSERT_HELD(&p->mu);
	for (int i = 0; i < p->max; i++) {
		uint64_t l;

		if (!p->slots.s[i].open)
			continue;
		l = zks_links(&p->zks[i]);
		if (l != p->links[i]) {
			p->links[i] = l;
			zklfs_slot_unsynced(&p->slots, i);
		}
	}
}

/* A sync that failed (connection lost, say): the next request syncs again. */
static void sync_done(int rc, const char *value, const void *data)
{
	const struct pool_ref *r = data;
	struct zklfs_pool *p = r->pool;

	(void)value;
	if (rc == ZOK)
		return;
	zkmx_lock(&p->mu);
	zklfs_slot_unsynced(&p->slots, r->slot);
	zkmx_unlock(&p->mu);
}

/* The slot of @dir, pinned if @hold; sends the sync that slot owes first. */
static int pool_slot(struct zklfs *fs, const char *dir, bool hold)
{
	struct zklfs_pool *p = fs->pool;
	bool sync, kick = false, moved;
	uint64_t moves;
	int slot;

	if (p->max <= 1)
		return 0;
	/*
	 * The sync is queued under p->mu, so that no request of another
	 * thread that picks this slot next can leave before it.  (A call
	 * sends or queues, and runs no completion; completions run at the
	 * loop's turns, without its locks, so p->mu is always taken first.)  A request sent
	 * after a sync that fails fails with it (the client fails its queue in
	 * order when the connection goes); the next one syncs again.
	 */
	zkmx_lock(&p->mu);
	links_check_locked(p);
	moves = p->slots.moves;
	if (hold) {
		slot = zklfs_slot_hold(&p->slots, dir, zks_now_ms(), &sync);
		kick = atomic_load(&p->running) && zklfs_slots_want(&p->slots) >= 0;
	} else {
		slot = zklfs_slot_pick(&p->slots, dir, zks_now_ms(), &sync);
	}
	if (sync && p->t[slot].ops->sync(p->t[slot].ctx, dir, sync_done, &p->ref[slot]) != ZOK)
		zklfs_slot_unsynced(&p->slots, slot);
	moved = p->slots.moves != moves;
	zkmx_unlock(&p->mu);
	if (moved)
		zkm_lock_moved();
	if (kick) {
		pthread_mutex_lock(&p->mmu);
		p->kick = true;
		pthread_cond_signal(&p->mcond);
		pthread_mutex_unlock(&p->mmu);
	}
	return slot;
}

struct zks *zklfs_session_hold(struct zklfs *fs, const char *dir)
{
	return &fs->pool->zks[pool_slot(fs, dir, true)];
}

struct zkl_engine *zklfs_engine_hold(struct zklfs *fs, const char *dir)
{
	return fs->pool->engines[pool_slot(fs, dir, true)];
}

void zklfs_session_unhold(struct zklfs *fs, const char *dir, const struct zks *zks)
{
	struct zklfs_pool *p = fs->pool;

	if (p->max <= 1)
		return;
	zkmx_lock(&p->mu);
	zklfs_slot_pin(&p->slots, dir, zklfs_session_slot(fs, zks), -1, zks_now_ms());
	zkmx_unlock(&p->mu);
}

void zklfs_engine_unhold(struct zklfs *fs, const char *dir, const struct zkl_engine *e)
{
	struct zklfs_pool *p = fs->pool;

	for (int i = 0; i < p->max; i++)
		if (p->engines[i] == e)
			zklfs_session_unhold(fs, dir, &p->zks[i]);
}

struct zks *zklfs_session(struct zklfs *fs, const char *dir)
{
	return &fs->pool->zks[pool_slot(fs, dir, false)];
}

struct zks *zklfs_session_of(struct zklfs *fs, const char *path, bool is_dir)
{
	size_t len = zkn_parent_len(path);
	char buf[1024], *dir;
	struct zks *s;

	if (is_dir || fs->pool->max <= 1)
		return zklfs_session(fs, path);
	dir = len < sizeof(buf) ? buf : malloc(len + 1);
	if (!dir)
		return zklfs_session(fs, "/");	/* out of memory: order not kept */
	memcpy(dir, path, len);
	dir[len] = '\0';
	s = zklfs_session(fs, dir);
	if (dir != buf)
		free(dir);
	return s;
}

struct zkl_engine *zklfs_engine(struct zklfs *fs, const char *dir)
{
	return fs->pool->engines[pool_slot(fs, dir, false)];
}

int zklfs_session_slot(struct zklfs *fs, const struct zks *zks)
{
	return (int)(zks - fs->pool->zks);
}

const struct zkt_transport *zklfs_transport(struct zklfs *fs, const struct zks *zks)
{
	int slot = zklfs_session_slot(fs, zks);

	atomic_store_explicit(&fs->pool->called[slot], zks_now_ms(), memory_order_relaxed);
	return &fs->pool->t[slot];
}

void zklfs_ns_changed(struct zklfs *fs, const char *dir)
{
	struct zklfs_pool *p = fs->pool;

	if (p->max <= 1)
		return;
	zkmx_lock(&p->mu);
	links_check_locked(p);
	zklfs_slots_changed(&p->slots, dir, zks_now_ms());
	zkmx_unlock(&p->mu);
}

int zklfs_zget(struct zklfs *fs, struct zks *zs, const char *path,
	       data_completion_t done, const void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->get(t->ctx, path, done, arg);
}

int zklfs_zexists(struct zklfs *fs, struct zks *zs, const char *path,
		  stat_completion_t done, const void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->exists(t->ctx, path, done, arg);
}

int zklfs_zsync(struct zklfs *fs, struct zks *zs, const char *path,
		string_completion_t done, const void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->sync(t->ctx, path, done, arg);
}

int zklfs_zchildren(struct zklfs *fs, struct zks *zs, const char *path,
		    strings_stat_completion_t done, const void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->children(t->ctx, path, done, arg);
}

int zklfs_zset(struct zklfs *fs, struct zks *zs, const char *path, const char *data,
	       int len, int version, stat_completion_t done, const void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->set(t->ctx, path, data, len, version, done, arg);
}

int zklfs_zcreate(struct zklfs *fs, struct zks *zs, const char *path,
		  const char *data, int len, int mode,
		  string_stat_completion_t done, const void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->create(t->ctx, path, data, data ? len : -1, mode, done, arg, NULL);
}

int zklfs_zdelete(struct zklfs *fs, struct zks *zs, const char *path,
		  void_completion_t done, const void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->remove(t->ctx, path, done, arg);
}

int zklfs_zlater(struct zklfs *fs, struct zks *zs, void (*fn)(void *arg, bool go),
		 void *arg)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->later(t->ctx, fn, arg);
}

bool zklfs_zquiet(struct zklfs *fs, struct zks *zs)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->quiet(t->ctx);
}

int zklfs_ztimeout_ms(struct zklfs *fs, struct zks *zs)
{
	const struct zkt_transport *t = zklfs_transport(fs, zs);

	return t->ops->timeout_ms(t->ctx);
}

size_t zklfs_data_max(struct zklfs *fs, const char *path)
{
	const struct zkt_transport *t = zklfs_transport(fs, zklfs_session_at(fs, 0));

	return t->ops->data_max(t->ctx, path);
}

uint64_t zklfs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
