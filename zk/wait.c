/* zk/wait.c - how a waiter waits.  A listing of its lock decides
 * (zk/grant.c) who holds and whom each waiter of ours must outlive; then a
 * waiter waits PARKED behind an entry of ours not yet granted, for our own
 * delete of the entry before it, with a watch on another client's, or as a
 * semaphore's waiter (zk/sem.c). */
#include "zk/engine.h"

#include <errno.h>
#include <stdlib.h>

#include "zk/grant.h"
#include "zk/log.h"
#include "zk/naming.h"

/*
 * Remember that @w must outlive @pred (from a listing that showed @w;
 * @first: @pred is the lowest entry there), and whether it is ours.  Out
 * of memory, whom is unknown: @w lists again.
 */
static void learn_pred_locked(struct zkl_waiter *w, const struct zkg_child *pred,
			      bool first)
{
	char *path = zkn_join(w->req.dir, pred->name);

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!path) {
		w->pred.ahead = AHEAD_UNKNOWN;	/* it will list for itself */
		return;
	}
	free(w->pred.path);
	w->pred.path = path;
	w->pred.seq = pred->seq;
	if (zke_queue_find_locked(w, pred->seq))
		w->pred.ahead = first ? AHEAD_OURS_LOWEST : AHEAD_OURS;
	else
		w->pred.ahead = first ? AHEAD_THEIRS_LOWEST : AHEAD_THEIRS;
}

/*
 * A listing of @w's lock came.  It decides for @w, and for every waiter of
 * ours in that lock that it shows and that is parked: each is granted or
 * learns whom it must outlive (one pass over the sorted listing).
 */
static void learn_locked(struct zkl_waiter *w, const struct String_vector *sv)
{
	struct zke_queue *q = w->q;
	bool many = q && q->head != q->tail;
	unsigned limit = q ? q->limit : 0;
	enum zkg_verdict mine = ZKG_MISSING;
	struct zkg_child *kids;
	struct zkl_waiter *x;
	const struct zkg_child *low;
	struct zkg_walk wk;
	size_t n;

	ZKMX_ASSERT_HELD(&w->e->lock);
	kids = zkg_parse_children(sv->data, sv->count, &n);
	if (!kids) {
		zke_fail_locked(w, -ENOMEM);
		return;
	}
	if (many) {
		zkg_sort(kids, n);
		zkg_walk_init(&wk, kids, n);
	}
	low = many && n ? &kids[0] : zkg_lowest(kids, n);
	for (x = many ? q->head : w; x; x = many ? x->qnext : NULL) {
		const struct zkg_child *pred = NULL;
		enum zkg_verdict v;

		if (x != w && (zke_answered(x) ||
			       (x->sm.state != W_PARKED && x->sm.state != W_SEMWAIT)))
			continue;
		x->verdict.limit = limit;
		if (limit) {		/* a semaphore: no one entry to outlive */
			x->pred.ahead = AHEAD_UNKNOWN;
			v = many ? zkg_walk_decide_limit(&wk, x->ours.seq, limit)
				 : zkg_decide_limit(kids, n, x->ours.seq, limit);
		} else {
			v = many ? zkg_walk_decide(&wk, x->ours.seq, x->req.kind, &pred)
				 : zkg_decide(kids, n, x->ours.seq, x->req.kind, &pred);
		}
		if (x == w)
			mine = v;
		if (v == ZKG_GRANTED)
			x->verdict.marked = true;
		else if (v == ZKG_WAIT && !limit)
			learn_pred_locked(x, pred, pred == low);
		if (v == ZKG_WAIT && x != w && x->sm.state == W_SEMWAIT)
			zke_set_state_locked(x, W_PARKED);	/* waits anew below */
	}
	free(kids);

	if (mine == ZKG_MISSING && zke_stale_locked(w)) {
		zke_stall_locked(w, S_CHECK);	/* on_expired() starts it over */
	} else if (mine == ZKG_MISSING) {
		zklog(LOG_WARNING, "%s was deleted while it waited", w->ours.path);
		zke_fail_locked(w, -EIO);
	} else if (mine == ZKG_WAIT && (w->caller.flags & ZKL_NONBLOCK) && !w->try.tried &&
		   w->pred.ahead == AHEAD_THEIRS_LOWEST && !w->verdict.limit) {
		/* one entry of another mount ahead: if it only lingers, the
		 * try waits for it to go (pred_done() reads it) */
		w->try.tried = true;
		w->try.until = w->e->t.ops->now_ms(w->e->t.ctx) + ZKE_TRY_WAIT_MS;
		w->e->t.ops->tick_by(w->e->t.ctx, w->try.until);
		zke_set_state_locked(w, W_PARKED);	/* zke_wait_locked() watches it */
	} else if (mine == ZKG_WAIT && (w->caller.flags & ZKL_NONBLOCK)) {
		zke_fail_locked(w, -EAGAIN);
	} else if (mine == ZKG_WAIT) {
		zke_set_state_locked(w, W_PARKED);	/* zke_wait_locked() below says how */
	}
	for (x = many ? q->head : w; x; x = many ? x->qnext : NULL)
		if (x->verdict.marked) {
			x->verdict.marked = false;
			zke_grant_locked(x, false);
		}
	if (!many) {
		zke_rewait_locked(zke_answered(w) ? w->qnext : w);
		return;
	}
	for (x = q->head; x; x = x->qnext)
		zke_rewait_locked(x);
}

void zke_children_done(int rc, const struct String_vector *strings,
		       const struct Stat *dir, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	if (zke_answered(w) || w->sm.state != W_CHECKING)
		;
	else if (rc != ZOK)
		zke_call_failed_locked(w, rc, S_CHECK, "cannot list the queue of");
	else if (!zke_limit_current_locked(w, dir))
		zke_read_limit_locked(w);	/* then lists again (zk/sem.c) */
	else
		learn_locked(w, strings);
	zke_put_locked(w);
	zke_unlock_fire(e);
}

void zke_check_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_set_state_locked(w, W_CHECKING);
	if (!zke_fresh_locked(w, S_CHECK))
		return;
	w->refs++;
	rc = w->e->t.ops->children(w->e->t.ctx, w->req.dir, zke_children_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	zke_call_failed_locked(w, rc, S_CHECK, "cannot list the queue of");
}

void zke_wait_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (zke_answered(w) || w->e->shutdown)
		return;
	if ((w->caller.flags & ZKL_NONBLOCK) && w->try.tried &&
	    w->pred.ahead == AHEAD_THEIRS_LOWEST &&
	    !(w->qprev && !zke_answered(w->qprev))) {
		zke_watch_locked(w);	/* behind an entry that may only linger */
	} else if (w->caller.flags & ZKL_NONBLOCK) {
		zke_check_locked(w);	/* it must know now */
	} else if (w->qprev && !zke_answered(w->qprev)) {
		zke_set_state_locked(w, W_PARKED);
	} else if (w->verdict.limit) {
		zke_semwait_locked(w);	/* until poked: zk/sem.c */
	} else if (w->pred.ahead == AHEAD_UNKNOWN) {
		zke_check_locked(w);
	} else if (zke_queue_find_locked(w, w->pred.seq)) {
		zke_set_state_locked(w, W_LOCALWAIT);
	} else if (w->pred.ahead == AHEAD_OURS || w->pred.ahead == AHEAD_OURS_LOWEST) {
		zke_check_locked(w);	/* ours, and gone: look again */
	} else {
		zke_watch_locked(w);
	}
}

void zke_rewait_locked(struct zkl_waiter *w)
{
	if (!w)
		return;
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!zke_answered(w) && (w->sm.state == W_PARKED || w->sm.state == W_LOCALWAIT))
		zke_wait_locked(w);
}
