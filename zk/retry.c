/* zk/retry.c - whether a waiter may send on its session now, and what a
 * failed request does: stall the waiter, to redo the step when the session
 * is back; fail it; or, for a held lock, lose it. */
#include "zk/engine.h"

#include "zk/errno.h"
#include "zk/log.h"

bool zke_stale_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	return w->ours.gen != w->e->t.ops->generation(w->e->t.ctx);
}

bool zke_fresh_locked(struct zkl_waiter *w, enum stall redo)
{
	if (!zke_stale_locked(w))
		return true;
	zke_stall_locked(w, redo);	/* on_expired() starts it over */
	return false;
}

void zke_call_failed_locked(struct zkl_waiter *w, int rc, enum stall redo,
			    const char *what)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (zk_rc_transient(rc)) {
		zke_stall_locked(w, redo);
		return;
	}
	zklog(LOG_WARNING, "%s %s: %s", what, w->ours.path ? w->ours.path : w->req.dir, zerror(rc));
	zke_fail_locked(w, zk_errno(rc));
}

void zke_fail_locked(struct zkl_waiter *w, int err)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_answer_locked(w, err, true);
	zke_unwatch_locked(w);
	zke_delete_locked(w);
}

void zke_lose_locked(struct zkl_waiter *w, enum zkm_loss cause, const char *why)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (w->sm.ans != ANS_GRANTED || w->caller.released)
		return;
	zke_set_lost_locked(w, cause);
	zkm_lost(cause);
	zke_set_state_locked(w, W_DONE);
	zklog(LOG_WARNING, "lock %s lost: %s", w->ours.path ? w->ours.path : w->req.dir, why);
	w->e->lost(w, w->caller.arg);
	zke_delete_locked(w);
}
