/*
 * zk/linger.c - lingering locks (-o linger=MS, zkl_engine_set_linger(), or
 * a "linger=MS" line in the lock znode's data: user.zklockfs.linger).
 *
 * After the last close of an entry that holds its lock, the mount may keep
 * the entry (state W_CACHED, "cached" to users) for up to MS milliseconds;
 * an open of the same name and kind on this mount meanwhile is granted at
 * once on that entry, with no request to ZooKeeper (zke_reuse_locked()).
 *
 * Why that is safe: the entry held the lock, so no entry of anyone is
 * before it, and none can come before it (sequence numbers only grow).
 * While it exists, nobody else can be granted; it exists until our delete,
 * its session's end, or someone deleting it.  Our delete is ours to time;
 * a session that may have ended is one the mount has declared silent
 * (zk/session.c: a period before the server can expire it), and then
 * nothing is granted again on it; nor while the session is in doubt
 * (zke_unsure_locked()), which lets the entry go; a delete by someone else is breaking the
 * lock, which the own watch reports as for any holder: the reused grant is
 * lost (zke_lose_locked()) as soon as the mount hears it.
 *
 * What ends it, each at once: MS elapsed (the supervisor's tick, asked for
 * at that time: t.ops->tick_by()); any change among the lock's children (a
 * child watch, the only one on that lock: another client's entry joining
 * notifies this one mount, never a herd); an open of another name there;
 * the entry deleted, or asked to let go ("__REVOKE__"); the session in
 * doubt, silent or expired; rmdir (zkl_unlinger()).  An entry that saw the lock contended
 * while it held it does not linger.
 *
 * Costs: the child watch, set once with a listing and left armed while the
 * lock stays uncontended, and the own watch; a reuse whose data differs
 * (another process) writes it, without waiting, at the data version last
 * seen: a revocation request written meanwhile fails that write, is read,
 * and is kept (a write at any version would erase it unseen).  All under
 * engine->lock.
 */
#include "zk/engine.h"

#include <stdlib.h>
#include <string.h>

#include "zk/log.h"

static uint64_t now_ms(struct zkl_engine *e)
{
	return e->t.ops->now_ms(e->t.ctx);
}

/* the entry's data ------------------------------------------------------ */

#define DATA_TRIES 3		/* sets of a reuse's data met a newer version */

/*
 * Make @w's data @data (@len bytes, the caller's part), then the mark if
 * @mark, then its nonce line.  Return: whether it changed (false also when
 * out of memory: the old data stays, and who holds is stale).
 */
static bool compose_locked(struct zkl_waiter *w, const char *data, int len, bool mark)
{
	int nlen = (int)strlen(w->req.nonce), mlen = mark ? (int)strlen(ZKE_LINGER_MARK) : 0;
	char *copy;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (len + mlen + nlen == w->caller.len && memcmp(data, w->caller.data, (size_t)len) == 0 &&
	    memcmp(w->caller.data + len, ZKE_LINGER_MARK, (size_t)mlen) == 0 &&
	    memcmp(w->caller.data + len + mlen, w->req.nonce, (size_t)nlen) == 0)
		return false;
	copy = malloc((size_t)(len + mlen + nlen) + 1);
	if (!copy)
		return false;
	memcpy(copy, data, (size_t)len);
	memcpy(copy + len, ZKE_LINGER_MARK, (size_t)mlen);
	strcpy(copy + len + mlen, w->req.nonce);
	free(w->caller.data);
	w->caller.data = copy;
	w->caller.len = len + mlen + nlen;
	w->linger.mark = mark;
	return true;
}

/* The caller's part of @w's data: what comes before the mark and the nonce. */
static int caller_len(const struct zkl_waiter *w)
{
	return w->caller.len - (int)strlen(w->req.nonce) -
	       (w->linger.mark ? (int)strlen(ZKE_LINGER_MARK) : 0);
}

static void send_data_locked(struct zkl_waiter *w, int32_t version);

/*
 * The entry's data changed since the version the reuse's set was made at:
 * someone else wrote it (the holder through the mount, or another client:
 * perhaps a revocation request whose notification is still on its way).
 * Read it, so that a request is seen, never overwritten; then write ours
 * at the version read.
 */
static void reread_done(int rc, const char *value, int len, const struct Stat *stat,
			const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	if (rc == ZOK) {
		zke_read_revoke_locked(w, value, len);
		if (!w->seen.revoked && w->sm.entry == ENTRY_LIVE)
			send_data_locked(w, stat->version);
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

static void set_done(int rc, const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	if (rc == ZOK) {
		w->seen.dver = stat->version;
	} else if (rc == ZBADVERSION && ++w->linger.dtries < DATA_TRIES &&
		   w->sm.entry == ENTRY_LIVE) {
		w->refs++;
		if (w->e->t.ops->get(e->t.ctx, w->ours.path, reread_done, w) != ZOK)
			w->refs--;
	} else if (rc != ZNONODE && !zk_rc_transient(rc)) {
		zklog(LOG_WARNING, "cannot write %s: %s", w->ours.path, zerror(rc));
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/* Write w->caller.data to @w's entry, at @version: never over a newer one. */
static void send_data_locked(struct zkl_waiter *w, int32_t version)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	w->refs++;
	if (w->e->t.ops->set(w->e->t.ctx, w->ours.path, w->caller.data, w->caller.len, version,
			     set_done, w) != ZOK)
		w->refs--;
}

/*
 * Someone else joined @w's lock while it is held again after a linger:
 * take the mark out of its data, so that a try waiting on it is refused at
 * once rather than at the end of ZKE_TRY_WAIT_MS.  (A lingering entry is
 * deleted instead.)
 */
static void unmark_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!w->linger.mark || w->sm.state != W_HELD || w->caller.released ||
	    w->sm.entry != ENTRY_LIVE)
		return;
	if (compose_locked(w, w->caller.data, caller_len(w), false)) {
		w->linger.dtries = 0;
		send_data_locked(w, w->seen.dver);
	}
}

/* the child watch and the linger ------------------------------------------- */

/* The child watch fired: someone joined or left the lock. */
static void dir_watcher(zhandle_t *zh, int type, int state, const char *path,
			void *ctx)
{
	struct zkl_waiter *w = zke_watcher_enter(type, state, ctx);
	struct zkl_engine *e;

	(void)zh;
	(void)path;
	if (!w)
		return;			/* the watch stays armed */
	e = w->e;
	if (w->sm.dirwatch == OWN_ARMED)
		zke_set_dirwatch_locked(w, OWN_OFF);
	if (type != ZOO_SESSION_EVENT) {
		w->linger.contended = true;
		unmark_locked(w);
		zke_unlinger_locked(w, false);
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/* The listing that set the child watch: is anyone else in the lock? */
static void dir_listed(int rc, const struct String_vector *sv,
		       const struct Stat *dir, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	bool others = rc != ZOK;

	(void)dir;
	zkmx_lock(&e->lock);
	if (w->sm.dirwatch == OWN_SETTING)
		zke_set_dirwatch_locked(w, rc == ZOK ? OWN_ARMED : OWN_OFF);
	if (rc != ZOK)
		w->refs--;		/* no watch was left */
	for (int i = 0; rc == ZOK && w->ours.path && i < sv->count; i++)
		others |= strcmp(sv->data[i], zkn_base(w->ours.path)) != 0;
	if (others) {
		if (rc == ZOK)
			w->linger.contended = true;	/* only set */
		unmark_locked(w);
		zke_unlinger_locked(w, false);
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

static void dir_watch_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (w->sm.dirwatch != OWN_OFF)
		return;
	w->refs += 2;			/* the completion and the watch */
	zke_set_dirwatch_locked(w, OWN_SETTING);
	if (w->e->t.ops->wchildren(w->e->t.ctx, w->req.dir, dir_watcher, w, dir_listed, w) != ZOK) {
		w->refs -= 2;
		zke_set_dirwatch_locked(w, OWN_OFF);
		zke_unlinger_locked(w, false);
	}
}

bool zke_linger_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;
	unsigned ms = w->q && w->q->lknown && w->q->linger >= 0 ? (unsigned)w->q->linger
							       : e->linger_ms;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!ms || zke_unsure_locked(e) || w->doubt.in || e->shutdown || w->sm.state != W_HELD ||
	    w->sm.ans != ANS_GRANTED || w->sm.entry != ENTRY_LIVE || w->sm.stall != S_NONE ||
	    w->seen.revoked || w->linger.contended || w->verdict.limit || zke_stale_locked(w) ||
	    !w->q || w->q->head != w || w->q->tail != w)
		return false;
	zke_set_state_locked(w, W_CACHED);
	zkm_lingering(1);
	w->refs++;			/* the linger's: zke_unlinger_locked() */
	w->linger.until = now_ms(e) + ms;
	w->e->t.ops->tick_by(e->t.ctx, w->linger.until);
	/* the first time: say so in its data, before the own watch reads it */
	if (!w->linger.mark && compose_locked(w, w->caller.data, caller_len(w), true)) {
		w->linger.dtries = 0;
		send_data_locked(w, w->seen.dver);
	}
	zke_own_watch_locked(w);	/* its delete by anyone ends it */
	dir_watch_locked(w);
	return w->sm.state == W_CACHED;
}

struct zkl_waiter *zke_cached_locked(struct zkl_engine *e, const char *dir)
{
	struct zke_queue *q = zke_queue_find_dir_locked(e, dir);
	struct zkl_waiter *x;

	ZKMX_ASSERT_HELD(&e->lock);
	for (x = q ? q->head : NULL; x && x->sm.state != W_CACHED; x = x->qnext)
		;
	return x;
}

struct zkl_waiter *zke_reuse_locked(struct zkl_engine *e, const char *dir,
				    const char *prefix)
{
	struct zkl_waiter *x = zke_cached_locked(e, dir);

	if (!x)
		return NULL;
	if (strcmp(x->req.prefix, prefix) == 0 && !zke_unsure_locked(e) &&
	    now_ms(e) < x->linger.until && !zke_stale_locked(x))
		return x;
	zke_unlinger_locked(x, false);
	return NULL;
}

void zke_regrant_locked(struct zkl_waiter *w, int flags, const char *data, int len,
			uint32_t owner, zkl_done_fn done, void *arg)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	w->caller.done = done;
	w->caller.arg = arg;
	w->caller.owner = owner;
	w->caller.flags = flags;
	w->caller.t_enq = zkm_now_us();
	zkm_enqueued();
	zke_set_state_locked(w, W_HELD);
	zkm_lingering(-1);
	zkm_local_grant(ZKM_LOCAL_LINGER);
	w->caller.released = false;
	w->linger.grants++;
	w->told.result = 0;
	w->told.t_grant = w->caller.t_enq;
	zkm_granted(0);
	zke_fire_locked(w);
	/* the mark stays while it is held: its child watch takes it out */
	if (!compose_locked(w, data, len, w->linger.mark))
		return;
	w->linger.dtries = 0;
	send_data_locked(w, w->seen.dver);
}

void zke_unlinger_locked(struct zkl_waiter *w, bool already_deleted)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (w->sm.state != W_CACHED)
		return;
	zke_set_state_locked(w, W_DONE);
	zkm_lingering(-1);
	if (already_deleted) {
		if (w->sm.entry == ENTRY_LIVE || w->sm.entry == ENTRY_DELETING)
			zke_set_entry_locked(w, ENTRY_GONE);
		zke_dequeue_locked(w, false, false);
	} else {
		zke_unwatch_locked(w);
		zke_delete_locked(w);
	}
	zke_put_locked(w);
}

void zke_linger_tick_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (w->sm.state != W_CACHED)
		return;
	if (now_ms(e) >= w->linger.until)
		zke_unlinger_locked(w, false);
	else
		w->e->t.ops->tick_by(e->t.ctx, w->linger.until);
}
