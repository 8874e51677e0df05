/* zk/release.c - giving an entry back: the delete, the hand-off to the
 * waiters of ours right behind it that the delete checks, and the entry
 * leaving our queue, which moves those behind it on. */
#include "zk/engine.h"

#include <errno.h>
#include <stdlib.h>

#include "zk/log.h"

/* Our delete of @w's entry came back with @rc. */
static void deleted_locked(struct zkl_waiter *w, int rc)
{
	bool held;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (w->sm.entry != ENTRY_DELETING)
		return;		/* gone with its session meanwhile (on_expired()) */
	if (zk_rc_transient(rc)) {
		zke_set_entry_locked(w, ENTRY_LIVE);
		zke_stall_locked(w, S_DELETE);	/* the session may live: delete later */
		return;
	}
	zke_set_entry_locked(w, ENTRY_GONE);
	if (rc != ZOK && rc != ZNONODE)
		zklog(LOG_WARNING, "cannot delete %s: %s", w->ours.path, zerror(rc));
	held = rc == ZOK && zke_holds_lowest(w);
	zke_dequeue_locked(w, rc == ZOK, held);
	/* a semaphore's holder, or a waiter let in, went: let the next one in */
	if (rc == ZOK && w->verdict.limit && (w->sm.ans == ANS_GRANTED || w->seen.dver > 0))
		zke_poke_locked(w);
}

static void delete_done(int rc, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	deleted_locked(w, rc);
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/*
 * A release that can hand the lock over: one transaction deletes @l's entry
 * and checks that each waiter to be granted still has its own (someone may
 * have deleted it while it waited).  All or nothing, one write like a plain
 * delete.
 */
#define HANDOFF_MAX 16
struct handoff {
	struct zkl_waiter *l;
	int n;
	struct zkl_waiter *x[HANDOFF_MAX];
	zoo_op_t ops[HANDOFF_MAX + 1];
	zoo_op_result_t res[HANDOFF_MAX + 1];
};

/* @x was granted by a cohort hand-off, and its check did not pass: why. */
static void cohort_failed_locked(struct zkl_waiter *x, bool deleted)
{
	ZKMX_ASSERT_HELD(&x->e->lock);
	x->handoff.cohort = false;
	if (deleted)
		zke_lose_locked(x, ZKM_LOSS_DELETED,
				"its entry was deleted by someone else before the lock came to it");
	else
		zke_own_watch_locked(x);	/* unchecked: its watch says soon */
}

static void handoff_done(int rc, const void *data)
{
	struct handoff *h = (struct handoff *)data;
	struct zkl_waiter *l = h->l;
	struct zkl_engine *e = l->e;
	int bad = 0;

	zkmx_lock(&e->lock);
	for (int i = 0; rc != ZOK && !zk_rc_transient(rc) && i <= h->n; i++)
		if (h->res[i].err != ZOK && h->res[i].err != ZRUNTIMEINCONSISTENCY) {
			bad = i;	/* the op that failed it */
			break;
		}
	if (rc == ZOK || zk_rc_transient(rc)) {
		for (int i = 0; rc == ZOK && i < h->n; i++) {
			h->x[i]->verdict.marked = !zke_answered(h->x[i]);
			h->x[i]->handoff.cohort = false;	/* checked */
		}
		deleted_locked(l, rc);	/* a stall redoes it all */
		for (int i = 0; i < h->n; i++)
			h->x[i]->verdict.marked = false;
	} else if (bad == 0) {
		/* our delete failed (someone deleted it): nothing was checked */
		deleted_locked(l, h->res[0].err ? h->res[0].err : rc);
		for (int i = 0; i < h->n; i++)
			if (h->x[i]->handoff.cohort)
				cohort_failed_locked(h->x[i], false);
	} else {
		struct zkl_waiter *x = h->x[bad - 1];

		/* a waiter's entry is gone: it fails or is lost; the others
		 * go in the delete again */
		if (x->handoff.cohort)
			cohort_failed_locked(x, true);
		else if (!zke_answered(x))
			zke_fail_locked(x, -EIO);
		if (l->sm.entry == ENTRY_DELETING) {
			zke_set_entry_locked(l, ENTRY_LIVE);
			zke_delete_locked(l);
		}
	}
	for (int i = 0; i < h->n; i++)
		zke_put_locked(h->x[i]);
	zke_put_locked(l);
	zke_unlock_fire(e);
	free(h);
}

/*
 * Cohort hand-off: may @l's release grant @x, a waiter of ours a listing
 * showed right behind it, before the delete is done?  @l must hold the
 * lock exclusively (so it is the lowest entry) and be given back, not lost;
 * both must be of the current session, and the session neither silent nor
 * in doubt (zke_unsure_locked()), nor @l granted in a doubt not yet
 * cleared.  Then
 * no entry of any other client is before @x, nor can one come before it,
 * and until the delete that checks @x's entry is done, @l's entry keeps
 * every other client out.  docs/DESIGN.md §12 has the whole argument.
 */
static bool cohort_locked(struct zkl_waiter *l, struct zkl_waiter *x)
{
	ZKMX_ASSERT_HELD(&l->e->lock);
	return l->caller.released && zke_holds_lowest(l) && !zke_unsure_locked(l->e) &&
	       !l->doubt.in &&
	       !zke_stale_locked(l) && !zke_answered(x) && x->sm.entry == ENTRY_LIVE &&
	       !x->verdict.limit && zke_rule_current(x) && !zke_stale_locked(x);
}

/* The waiters of ours a hand-off on @l's delete could grant (zke_dequeue_locked()),
 * or has granted (cohort): the delete checks each one's entry. */
static struct handoff *handoff_new_locked(struct zkl_waiter *l)
{
	bool held = zke_holds_lowest(l);
	struct handoff *h = NULL;

	ZKMX_ASSERT_HELD(&l->e->lock);
	for (struct zkl_waiter *x = l->qnext; x && x->pred.ahead != AHEAD_UNKNOWN &&
	     x->pred.seq == l->ours.seq; x = x->qnext) {
		if (!x->handoff.cohort && (zke_answered(x) || !x->ours.path ||
				   !(held || zke_ahead_lowest(x))))
			continue;
		if (!h && !(h = calloc(1, sizeof(*h))))
			return NULL;
		if (h->n == HANDOFF_MAX)
			break;		/* the others list the children */
		if (cohort_locked(l, x))
			x->handoff.cohort = true;	/* granted once the delete is out */
		h->x[h->n++] = x;
	}
	return h;
}

static void send_delete_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	w->refs++;
	rc = w->e->t.ops->remove(w->e->t.ctx, w->ours.path, delete_done, w);
	if (rc != ZOK) {
		w->refs--;
		zke_set_entry_locked(w, ENTRY_LIVE);
		zke_stall_locked(w, S_DELETE);
	}
}

void zke_delete_locked(struct zkl_waiter *w)
{
	struct handoff *h;
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (w->sm.entry != ENTRY_LIVE)
		return;
	zke_set_entry_locked(w, ENTRY_DELETING);
	h = handoff_new_locked(w);
	if (!h) {
		send_delete_locked(w);
		return;
	}
	h->l = w;
	zoo_delete_op_init(&h->ops[0], w->ours.path, -1);
	for (int i = 0; i < h->n; i++)
		zoo_check_op_init(&h->ops[i + 1], h->x[i]->ours.path, -1);
	rc = w->e->t.ops->multi(w->e->t.ctx, h->n + 1, h->ops, h->res, handoff_done, h);
	if (rc != ZOK) {
		/* not sent: the session's return redoes the delete, checks and
		 * all (the waiters not granted by it list then) */
		zke_set_entry_locked(w, ENTRY_LIVE);
		zke_stall_locked(w, S_DELETE);
	} else {
		w->refs++;
		for (int i = 0; i < h->n; i++)
			h->x[i]->refs++;
	}
	/*
	 * cohort: granted now, behind a delete that checks their entries; not
	 * when the delete could not be sent (ZINVALIDSTATE: the handle knows
	 * its session expired, and the entry it would have kept others out
	 * with is gone): they wait, and start over with the session
	 */
	for (int i = 0; i < h->n; i++)
		if (h->x[i]->handoff.cohort && rc != ZOK && !zke_answered(h->x[i]))
			h->x[i]->handoff.cohort = false;	/* not granted: not checked */
		else if (h->x[i]->handoff.cohort && !zke_answered(h->x[i]) &&
			 zke_grant_locked(h->x[i], true))
			zkm_local_grant(ZKM_LOCAL_COHORT);
	if (rc != ZOK)
		free(h);
}


void zke_dequeue_locked(struct zkl_waiter *l, bool deleted, bool handoff)
{
	struct zkl_waiter *first = l->qnext, *x;
	int32_t seq = l->ours.seq;

	ZKMX_ASSERT_HELD(&l->e->lock);
	if (!l->q)
		return;
	zke_queue_unlink_locked(l);
	for (x = first; x && x->pred.ahead != AHEAD_UNKNOWN && x->pred.seq == seq; x = x->qnext)
		if (deleted && (handoff || zke_ahead_lowest(x)) && x->verdict.marked &&
		    zke_rule_current(x))
			zke_grant_locked(x, false);	/* else it lists: rewait */
	/*
	 * Those behind @l need not come right after it: shared waiters of
	 * ours between may be listing again, and an entry of ours gone at the
	 * server before the listing that showed them behind @l may still be
	 * queued (its delete out).  So every waiter of ours after @l waits anew:
	 * only those free to move do anything.
	 */
	for (x = first; x; x = x->qnext) {
		bool behind = x->pred.ahead != AHEAD_UNKNOWN && x->pred.seq == seq;

		if (behind && !zke_answered(x) && x->sm.state == W_WATCHING)
			zke_check_locked(x);	/* watched it before it was ours */
		else
			zke_rewait_locked(x);
	}
}
