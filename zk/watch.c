/* zk/watch.c - the watches: on our own entry (a deletion not ours loses a
 * holder or fails a waiter; its data may ask the holder to let go), and on
 * the other client's entry a waiter must outlive; and the read that ends a
 * holder's doubt, which a deletion not ours ends as the watch does. */
#include "zk/engine.h"

#include <errno.h>
#include <string.h>

#include "zk/log.h"

struct zkl_waiter *zke_watcher_enter(int type, int state, void *ctx)
{
	struct zkl_waiter *w = ctx;

	if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE)
		return NULL;
	zkmx_lock(&w->e->lock);
	return w;
}

/* Our own entry was deleted, not by us: a holder lost it, a waiter fails. */
static void deleted_by_other_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (w->sm.state == W_CACHED) {
		zke_unlinger_locked(w, true);	/* its next open creates anew */
	} else if (zke_answered(w)) {
		zke_lose_locked(w, ZKM_LOSS_DELETED, "its entry was deleted by someone else");
	} else if (w->sm.entry == ENTRY_LIVE && zke_stale_locked(w)) {
		zke_stall_locked(w, S_CHECK);	/* on_expired() starts it over */
	} else if (w->sm.entry == ENTRY_LIVE) {
		zklog(LOG_WARNING, "%s was deleted while it waited", w->ours.path);
		zke_fail_locked(w, -EIO);
	}
}

/*
 * A change of the data of @w's own entry, while it waits with nothing in
 * flight, is a poke (zk/sem.c): list again.  A waiter of a plain lock too:
 * the lock may have just become a semaphore.
 */
static bool poked_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	return !zke_answered(w) && (w->sm.state == W_SEMWAIT || w->sm.state == W_WATCHING ||
				    w->sm.state == W_LOCALWAIT);
}

void zke_read_revoke_locked(struct zkl_waiter *w, const char *value, int len)
{
	struct zkl_engine *e = w->e;

	ZKMX_ASSERT_HELD(&e->lock);
	if (w->seen.revoked || len != (int)strlen(ZKL_REVOKE_DATA) || !value ||
	    memcmp(value, ZKL_REVOKE_DATA, (size_t)len) != 0)
		return;
	w->seen.revoked = true;	/* asked to let go; its own writes do not undo it */
	if (w->sm.ans == ANS_GRANTED && !w->caller.released && e->revoked)
		e->revoked(w, w->caller.arg);
	zke_unlinger_locked(w, false);	/* let go now, if lingering */
}

void zke_own_watcher(zhandle_t *zh, int type, int state, const char *path,
		     void *ctx)
{
	struct zkl_waiter *w = zke_watcher_enter(type, state, ctx);
	struct zkl_engine *e;

	(void)zh;
	(void)path;
	if (!w)
		return;			/* the watch stays armed */
	e = w->e;
	if (w->sm.own == OWN_ARMED)	/* else removed, and maybe set again */
		zke_set_own_locked(w, OWN_OFF);
	if (type == ZOO_DELETED_EVENT) {
		deleted_by_other_locked(w);
	} else if (type == ZOO_CHANGED_EVENT && w->sm.ans != ANS_LOST &&
		   (!w->caller.released || w->sm.state == W_CACHED)) {
		if (poked_locked(w))
			zke_check_locked(w);	/* a holder went, or the limit grew */
		zke_own_watch_locked(w);	/* data written: watch on */
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/*
 * The reply to the read that sets the own watch: it is armed, or off.  The
 * data may ask the holder to let go (zke_read_revoke_locked()); a version
 * not seen before is a poke (a waiter lists); no entry is a deletion not
 * ours; a holder's transient failure stalls (S_OWNWATCH).
 */
static void own_watch_done(int rc, const char *value, int len,
			   const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	zke_set_own_locked(w, rc == ZOK ? OWN_ARMED : OWN_OFF);
	if (rc == ZOK)
		zke_read_revoke_locked(w, value, len);
	if (rc == ZOK && stat->version != w->seen.dver) {
		w->seen.dver = stat->version;
		/* poked before the watch was set: no event will say so */
		if (poked_locked(w))
			zke_check_locked(w);
	}
	if (rc != ZOK) {
		w->refs--;		/* no watch was left */
		if (rc == ZNONODE)
			deleted_by_other_locked(w);
		else if (zk_rc_transient(rc) && w->sm.ans == ANS_GRANTED && !w->caller.released)
			zke_stall_locked(w, S_OWNWATCH);	/* a waiter's own path redoes it */
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

void zke_own_watch_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	/* a stalled waiter redoes its step first; the tick sets it after */
	if (w->sm.own != OWN_OFF || w->sm.entry != ENTRY_LIVE || w->sm.stall != S_NONE)
		return;
	if (!zke_fresh_locked(w, S_OWNWATCH))
		return;
	w->refs += 2;			/* the completion and the watch */
	zke_set_own_locked(w, OWN_SETTING);
	if (w->e->t.ops->wget(w->e->t.ctx, w->ours.path, zke_own_watcher, w,
			      own_watch_done, w) != ZOK) {
		w->refs -= 2;
		zke_set_own_locked(w, OWN_OFF);
		zke_stall_locked(w, S_OWNWATCH);
	}
}

static void confirm_done(int rc, const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	(void)stat;
	zkmx_lock(&e->lock);
	if (zke_answered(w) || w->sm.state != W_CONFIRMING)
		;
	else if (rc == ZOK && !zke_rule_current(w))
		zke_check_locked(w);	/* a limit changed since it was decided */
	else if (rc == ZOK)
		zke_grant_locked(w, true);
	else if (rc == ZNONODE)
		deleted_by_other_locked(w);
	else
		zke_call_failed_locked(w, rc, S_CHECK, "cannot look up");
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/*
 * The entry @w outlived was the lowest: @w holds the lock if its own entry
 * is still there (someone may have deleted it while it waited).
 */
static void confirm_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_set_state_locked(w, W_CONFIRMING);
	if (!zke_fresh_locked(w, S_CHECK))
		return;
	w->refs++;
	rc = w->e->t.ops->exists(w->e->t.ctx, w->ours.path, confirm_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	zke_call_failed_locked(w, rc, S_CHECK, "cannot look up");
}

static void pred_watcher(zhandle_t *zh, int type, int state, const char *path,
			 void *ctx)
{
	struct zkl_waiter *w = zke_watcher_enter(type, state, ctx);
	struct zkl_engine *e;

	(void)zh;
	(void)path;
	if (!w)
		return;			/* the watch stays armed */
	e = w->e;
	if (type == ZOO_SESSION_EVENT || zke_answered(w) || w->sm.state != W_WATCHING)
		;
	else if (type == ZOO_DELETED_EVENT && zke_ahead_lowest(w))
		confirm_locked(w);	/* it held the lock: nothing before us */
	else
		zke_check_locked(w);
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/* Does the entry data @value (@len bytes) carry ZKE_LINGER_MARK? */
static bool data_lingers(const char *value, int len)
{
	size_t ml = strlen(ZKE_LINGER_MARK);

	for (int i = 0; value && i + (int)ml <= len; i++)
		if ((i == 0 || value[i - 1] == '\n') &&
		    memcmp(value + i, ZKE_LINGER_MARK, ml) == 0)
			return true;
	return false;
}

static void pred_done(int rc, const char *value, int len,
		      const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	(void)stat;
	zkmx_lock(&e->lock);
	if (rc == ZOK && (w->caller.flags & ZKL_NONBLOCK) && !zke_answered(w) &&
	    w->sm.state == W_WATCHING && !data_lingers(value, len))
		zke_fail_locked(w, -EAGAIN);	/* held, not lingering: busy */
	if (rc != ZOK) {
		w->refs--;		/* no watch was left */
		if (zke_answered(w) || w->sm.state != W_WATCHING)
			;
		else if (rc == ZNONODE)
			zke_check_locked(w);	/* it went before we looked */
		else
			zke_call_failed_locked(w, rc, S_CHECK, "cannot watch before");
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

void zke_watch_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_set_state_locked(w, W_WATCHING);
	if (!zke_fresh_locked(w, S_CHECK))
		return;
	w->refs += 2;			/* the completion and the watch */
	rc = w->e->t.ops->wget(w->e->t.ctx, w->pred.path, pred_watcher, w, pred_done, w);
	if (rc == ZOK)
		return;
	w->refs -= 2;
	zke_call_failed_locked(w, rc, S_CHECK, "cannot watch before");
}

static void unwatch_done(int rc, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	if (rc == ZOK)
		zke_put_locked(w);		/* the watch's: it will never fire now */
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/*
 * Does a waiter of ours watch @w's entry as another client's?  It can, if it
 * began to before @w found that entry again after an unknown create.
 */
static bool watched_by_another_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	for (struct zkl_waiter *x = w->q ? w->qnext : NULL; x; x = x->qnext)
		if (x->sm.state == W_WATCHING && x->pred.ahead != AHEAD_UNKNOWN &&
		    x->pred.seq == w->ours.seq)
			return true;
	return false;
}

/*
 * No other watch of this session is on our entry (waiters of ours wait for
 * it locally; see also zke_dequeue_locked()) but in the case above, so
 * removing every one is removing ours.  Requests of one session are done in
 * order, so the removal comes first.  The client knows a watch only once
 * the reply that set it is in, so a release that comes sooner waits for it
 * (zkl_release(), own_watch_done()).
 */
void zke_unwatch_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	/*
	 * Removing every watch on the path would take that waiter's too, and
	 * with it the one event that gives its reference back: let both fire.
	 */
	if (w->sm.own != OWN_ARMED || w->sm.entry != ENTRY_LIVE || watched_by_another_locked(w))
		return;
	zke_set_own_locked(w, OWN_OFF);
	w->refs++;
	if (w->e->t.ops->unwatch(w->e->t.ctx, w->ours.path, zke_own_watcher, w,
				 unwatch_done, w) != ZOK)
		w->refs--;		/* not there (it fired): nothing to undo */
}

/*
 * Doubt.  While the session is in doubt (zks_doubtful()) a holder cannot
 * know that the server still keeps its entry, nor that it does not: it
 * reads "doubt", neither held nor lost.  When the session says the doubt
 * is over (a ping sent after it began was answered on a connected
 * session), each holder reads its own entry on that session: the read is
 * ordered after everything the session heard, so an entry it shows was
 * there after the doubt, and the lock held all along (only its deletion
 * ends a hold, and a deletion not ours is a loss).  A read that shows it
 * gone loses the lock; a read that fails (the connection went again) is
 * asked again at the next tick or the next end of a doubt.
 */
void zke_doubt_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	ZKMX_ASSERT_HELD(&e->lock);
	if (w->sm.state != W_CACHED && w->sm.ans == ANS_GRANTED && !w->caller.released &&
	    !w->doubt.in) {
		w->doubt.in = true;
		if (e->doubted)
			e->doubted(w, w->caller.arg);
	}
}

static void doubt_check_done(int rc, const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	(void)stat;
	zkmx_lock(&e->lock);
	w->doubt.asking = false;
	if (!w->doubt.in || w->sm.ans != ANS_GRANTED || w->caller.released || e->doubt)
		;		/* lost, given back, or in doubt again */
	else if (rc == ZOK) {
		w->doubt.in = false;
		if (e->doubted)
			e->doubted(w, w->caller.arg);
	} else if (rc == ZNONODE)
		deleted_by_other_locked(w);
	zke_put_locked(w);
	zke_unlock_fire(e);
}

void zke_doubt_check_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;
	int rc;

	ZKMX_ASSERT_HELD(&e->lock);
	if (!w->doubt.in || w->doubt.asking || e->doubt || w->sm.ans != ANS_GRANTED ||
	    w->caller.released || w->sm.entry != ENTRY_LIVE || !w->ours.path || zke_stale_locked(w))
		return;		/* an expiry loses a stale one: on_expired() */
	w->refs++;
	w->doubt.asking = true;
	rc = e->t.ops->exists(e->t.ctx, w->ours.path, doubt_check_done, w);
	if (rc == ZOK)
		return;
	w->doubt.asking = false;
	w->refs--;
}
