/*
 * fs/pool.c - the mount's ZooKeeper sessions (-o sessions=N), and which one
 * the requests about a directory go to.
 *
 * ZooKeeper reads one request of a connection at a time and does a
 * session's requests in order, so one session bounds how many requests a
 * mount gets done per second, whatever the number of locks.  With N
 * sessions, each with its own lock engine and supervisor, each directory
 * is given one session for good (round robin, at first use), and every
 * request about it goes there: its listing, stat, mkdir and rmdir, and
 * everything about its children (lookups, the engine's creates and
 * deletes, reads, writes, unlinks).  So a directory's requests are still
 * done in order: a listing or rmdir right after close() is sent after the
 * release's delete, as with one session.
 *
 * What crosses directories is mkdir and rmdir: a directory made on its
 * session must show in its parent's listing (another session), and its
 * children may be made on a third.  In an ensemble the sessions may be
 * connected to different servers, so after a mkdir or rmdir through this
 * mount each other session sends a sync before its next request (in
 * order on that session, so the request sees the change).
 */
#include "fs/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/slots.h"
#include "zk/log.h"

#define DIRS_MAX 65536		/* beyond: a hash of the path, not stored */

struct zklfs_pool;

/* A sync sent on pool slot @slot (its completion's argument). */
struct pool_sync {
	struct zklfs_pool *pool;
	int slot;
};

/* fs->pool: the mount's sessions. */
struct zklfs_pool {
	int n;					/* conf->sessions, once opened */
	struct zks zks[ZKLFS_SESSIONS_MAX];
	struct zkl_engine *engines[ZKLFS_SESSIONS_MAX];	/* engine i on zks[i] */
	struct zkt_transport t[ZKLFS_SESSIONS_MAX];	/* how fs/ and engine i
							   reach zks[i] */
	struct zkmx mu;			/* slots */
	struct zklfs_slots slots;
	struct pool_sync sync[ZKLFS_SESSIONS_MAX];
	uint64_t links[ZKLFS_SESSIONS_MAX];	/* zks_links() at the last look */
};

int zklfs_pool_open(struct zklfs *fs, zkl_lost_fn lost, zkl_lost_fn revoked)
{
	const struct zklfs_conf *conf = fs->conf;
	struct zklfs_pool *p;
	int err;

	p = fs->pool = calloc(1, sizeof(*fs->pool));
	if (!p)
		return -ENOMEM;
	zkmx_init(&p->mu, ZKMX_RANK_POOL, "pool->mu");
	if (zklfs_slots_init(&p->slots, conf->sessions, DIRS_MAX) != 0)
		return -ENOMEM;
	while (p->n < conf->sessions) {
		/* counted first: zks_close() closes a half-opened one too */
		err = zks_open(&p->zks[p->n++], conf->connect, conf->session_timeout_ms,
			       conf->auth_file, conf->acl);
		if (err)
			return err;
	}
	err = zks_check_root(&p->zks[0], conf->root, conf->create_root, !conf->ro);
	if (err)
		return err;
	for (int i = 0; i < p->n; i++) {
		p->sync[i] = (struct pool_sync){ .pool = p, .slot = i };
		p->links[i] = zks_links(&p->zks[i]);
	}
	for (int i = 0; i < p->n; i++) {
		p->t[i] = zkt_session(&p->zks[i]);
		p->engines[i] = zkl_engine_new(&p->t[i], conf->naming, lost);
		if (!p->engines[i]) {
			zklog(LOG_ERR, "out of memory");
			return -ENOMEM;
		}
		zkl_engine_on_revoke(p->engines[i], revoked);
		zkl_engine_set_linger(p->engines[i], (unsigned)conf->linger_ms);
	}
	return 0;
}

int zklfs_pool_start(struct zklfs *fs, struct zk_heartbeat *hb)
{
	struct zklfs_pool *p = fs->pool;

	for (int i = 0; i < p->n; i++) {
		struct zks_events ev = zkl_engine_events(p->engines[i]);

		if (hb)
			zks_publish(&p->zks[i], &hb[i]);
		if (zks_start(&p->zks[i], &ev) != 0) {
			zklog(LOG_ERR, "cannot start the supervisor of session %d", i);
			return -EAGAIN;
		}
	}
	return 0;
}

struct zks *zklfs_session_at(struct zklfs *fs, int i)
{
	return fs->pool && i >= 0 && i < fs->pool->n ? &fs->pool->zks[i] : NULL;
}

void zklfs_pool_shutdown(struct zklfs *fs)
{
	for (int i = 0; fs->pool && i < fs->pool->n; i++)
		if (fs->pool->engines[i])
			zkl_engine_shutdown(fs->pool->engines[i]);
}

void zklfs_pool_close(struct zklfs *fs)
{
	for (int i = 0; fs->pool && i < fs->pool->n; i++)
		zks_close(&fs->pool->zks[i]);
}

void zklfs_pool_free(struct zklfs *fs)
{
	struct zklfs_pool *p = fs->pool;

	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		if (p->engines[i])
			zkl_engine_free(p->engines[i]);
		p->engines[i] = NULL;
	}
	zklfs_slots_free(&p->slots);
	zkmx_destroy(&p->mu);
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
	for (int i = 0; i < p->n; i++) {
		uint64_t l = zks_links(&p->zks[i]);

		if (l != p->links[i]) {
			p->links[i] = l;
			zklfs_slot_unsynced(&p->slots, i);
		}
	}
}

/* A sync that failed (connection lost, say): the next request syncs again. */
static void sync_done(int rc, const char *value, const void *data)
{
	const struct pool_sync *ps = data;
	struct zklfs_pool *p = ps->pool;

	(void)value;
	if (rc == ZOK)
		return;
	zkmx_lock(&p->mu);
	zklfs_slot_unsynced(&p->slots, ps->slot);
	zkmx_unlock(&p->mu);
}

/* The slot of @dir; sends the sync that slot owes first. */
static int pool_slot(struct zklfs *fs, const char *dir)
{
	struct zklfs_pool *p = fs->pool;
	bool sync;
	int slot;

	if (p->n <= 1)
		return 0;
	/*
	 * The sync is queued under p->mu, so that no request of another
	 * thread that picks this slot next can leave before it.  (zoo_async()
	 * only queues; our completions run on the client's completion thread
	 * without its locks, so p->mu is always taken first.)  A request sent
	 * after a sync that fails fails with it (the client fails its queue in
	 * order when the connection goes); the next one syncs again.
	 */
	zkmx_lock(&p->mu);
	links_check_locked(p);
	slot = zklfs_slot_pick(&p->slots, dir, &sync);
	if (sync && p->t[slot].ops->sync(p->t[slot].ctx, dir, sync_done, &p->sync[slot]) != ZOK)
		zklfs_slot_unsynced(&p->slots, slot);
	zkmx_unlock(&p->mu);
	return slot;
}

struct zks *zklfs_session(struct zklfs *fs, const char *dir)
{
	return &fs->pool->zks[pool_slot(fs, dir)];
}

struct zks *zklfs_session_of(struct zklfs *fs, const char *path, bool is_dir)
{
	size_t len = zkn_parent_len(path);
	char buf[1024], *dir;
	struct zks *s;

	if (is_dir || fs->pool->n <= 1)
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
	return fs->pool->engines[pool_slot(fs, dir)];
}

int zklfs_session_slot(struct zklfs *fs, const struct zks *zks)
{
	return (int)(zks - fs->pool->zks);
}

const struct zkt_transport *zklfs_transport(struct zklfs *fs, const struct zks *zks)
{
	return &fs->pool->t[zklfs_session_slot(fs, zks)];
}

void zklfs_ns_changed(struct zklfs *fs, const char *dir)
{
	struct zklfs_pool *p = fs->pool;

	if (p->n <= 1)
		return;
	zkmx_lock(&p->mu);
	links_check_locked(p);
	zklfs_slots_changed(&p->slots, dir);
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
