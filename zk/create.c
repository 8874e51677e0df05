/* zk/create.c - creating a waiter's entry, and after a create whose
 * outcome is unknown, finding it again (zk/adopt.h) or giving up. */
#include "zk/engine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/adopt.h"
#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/log.h"

/* creating --------------------------------------------------------------- */

/*
 * @w's create came back: did anyone else create an entry in its lock since
 * the entry of ours right before @w was made?  ZooKeeper numbers a lock's
 * sequential children from a counter of the parent: a 3.8 server advances
 * it at every child create and not at deletes (measured), older ones at
 * deletes too (the parent's cversion).  The queue's chain (cv_from,
 * cv_next) counts our own creates only: a create named cv_next proves no
 * other create came between under either rule (under the older one a
 * delete, anyone's, breaks the chain too: safe, only slower), and a create
 * named anything else, or one whose outcome we never heard, starts the
 * chain again there.  While it holds, the entry of ours right below @w,
 * made within the chain, is the one @w must outlive: no listing needed.
 * Counting our deletes as well was wrong on a 3.8 server: one of ours hid
 * another client's create (a double grant in test_stress.py).
 */
static void chain_locked(struct zkl_waiter *w)
{
	struct zke_queue *q = w->q;
	struct zkl_waiter *p = w->qprev;
	bool chain;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!q)
		return;
	chain = q->cv_known && w->ours.seq == q->cv_next;
	if (!chain)
		q->cv_from = w->ours.seq;
	q->cv_next = (int32_t)((uint32_t)w->ours.seq + 1);
	q->cv_known = true;
	if (!chain || !p || w->req.kind != ZKN_EXCLUSIVE || !q->lknown || q->limit ||
	    zkn_seq_cmp(p->ours.seq, q->cv_from) < 0 || zke_stale_locked(p) ||
	    zke_stale_locked(w) || !p->ours.path ||
	    (p->sm.entry != ENTRY_LIVE && p->sm.entry != ENTRY_DELETING))
		return;
	free(w->pred.path);
	w->pred.path = strdup(p->ours.path);
	if (!w->pred.path)
		return;
	w->pred.seq = p->ours.seq;
	w->pred.ahead = zke_holds_lowest(p) ? AHEAD_OURS_LOWEST : AHEAD_OURS;
}

/* Our entry exists (created or found again): take it as ours. */
static void adopt_locked(struct zkl_waiter *w, const char *path, int64_t czxid,
			 bool prelisted, bool created)
{
	struct zkg_child me;

	ZKMX_ASSERT_HELD(&w->e->lock);
	free(w->ours.path);
	w->ours.path = strdup(path);
	if (w->ours.path)
		zke_set_entry_locked(w, ENTRY_LIVE);
	w->ours.czxid = czxid;
	if (!w->ours.path || !zkn_parse(zkn_base(path), &me)) {
		zklog(LOG_ERR, "created %s but cannot read its sequence", path);
		zke_fail_locked(w, -EIO);
		return;
	}
	w->ours.seq = me.seq;
	w->verdict.limit = 0;			/* a new entry: no listing decided it yet */
	w->seen.dver = 0;
	zke_queue_insert_locked(w);
	if (created)
		chain_locked(w);
	else if (w->q)
		w->q->cv_known = false;	/* made when, we cannot tell */
	if (zke_answered(w) || w->caller.released) {
		zke_delete_locked(w);	/* given up while it was being made */
		return;
	}
	if (prelisted)
		zke_set_state_locked(w, W_CHECKING);	/* its reply comes next: zke_children_done() */
	else
		zke_wait_locked(w);
}

static void create_done(int rc, const char *path, const struct Stat *stat,
			const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	bool pre;

	/*
	 * Even if @w was answered meanwhile (interrupted): an entry made must
	 * be deleted.  No completion of an expired handle comes after the
	 * waiter starts over: zookeeper_close() fires them all first.
	 */
	zkmx_lock(&e->lock);
	pre = w->create.prelisted;
	w->create.prelisted = false;		/* its reply, if any, is ignored but here */
	if (rc == ZOK)
		adopt_locked(w, path, stat->czxid, pre, true);
	else if (zk_rc_unknown(rc))
		zke_stall_locked(w, S_RESOLVE);	/* it may exist: find it, never guess */
	else if (zk_rc_transient(rc))
		zke_stall_locked(w, S_CREATE);	/* never sent */
	else {
		zklog(LOG_WARNING, "cannot enqueue in %s: %s", w->req.dir,
		      rc == ZNONODE ? "the directory is gone" : zerror(rc));
		zke_answer_locked(w, zk_errno(rc), false);
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

int zke_send_create_locked(struct zkl_waiter *w)
{
	struct zke_queue *q;
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_set_state_locked(w, W_CREATING);
	w->refs++;
	rc = w->e->t.ops->create(w->e->t.ctx, w->req.prefix, w->caller.data, w->caller.len,
			 ZOO_EPHEMERAL_SEQUENTIAL, create_done, w, &w->ours.gen);
	if (rc == ZOK) {
		/*
		 * Unless it will be parked, it must list the children: send that
		 * now.  One session's requests are done in order, so the listing
		 * shows the new entry, and the grant costs one round trip.
		 */
		q = zke_queue_find_dir_locked(w->e, w->req.dir);
		if (!q || !q->tail || zke_answered(q->tail) || (w->caller.flags & ZKL_NONBLOCK)) {
			w->refs++;
			w->create.prelisted = w->e->t.ops->children(w->e->t.ctx, w->req.dir,
								    zke_children_done, w) == ZOK;
			if (!w->create.prelisted)
				w->refs--;
		}
		return ZOK;
	}
	w->refs--;
	if (zk_rc_transient(rc)) {
		zke_stall_locked(w, S_CREATE);
		return ZOK;
	}
	zklog(LOG_WARNING, "cannot enqueue %s: %s", w->req.prefix, zerror(rc));
	return rc;
}

void zke_create_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (zke_answered(w) || w->caller.released)
		return;			/* nothing to make any more */
	rc = zke_send_create_locked(w);
	if (rc != ZOK)
		zke_answer_locked(w, zk_errno(rc), false);
}

static void resolve_next_locked(struct zkl_waiter *w);

/* Is @name, in @w's lock, the entry of another waiter of ours? */
static bool taken_locked(struct zkl_waiter *w, const char *name)
{
	size_t dl = strlen(w->req.dir);

	ZKMX_ASSERT_HELD(&w->e->lock);
	for (struct zkl_waiter *x = w->e->all; x; x = x->next)
		if (x != w && x->ours.path && strncmp(x->ours.path, w->req.dir, dl) == 0 &&
		    x->ours.path[dl] == '/' && strcmp(x->ours.path + dl + 1, name) == 0)
			return true;
	return false;
}

static void resolve_get_done(int rc, const char *value, int len,
			     const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	enum zka_verdict v = ZKA_OTHER;

	zkmx_lock(&e->lock);
	/*
	 * Our nonce is world-readable: an entry is ours only if it is also of
	 * the session our create went on, and no other waiter's (zk/adopt.h).
	 */
	if (rc == ZOK && stat)
		v = zka_candidate(value, len, w->req.nonce, stat->ephemeralOwner,
				  w->e->t.ops->session_of(w->e->t.ctx, w->ours.gen),
				  taken_locked(w, w->create.cands[w->create.ci]));
	if (v == ZKA_PLANTED)
		zklog(LOG_WARNING, "%s/%s carries our nonce but is not ours "
		      "(owner 0x%llx): left alone", w->req.dir, w->create.cands[w->create.ci],
		      (unsigned long long)stat->ephemeralOwner);
	if (v == ZKA_OURS) {
		char *path = zkn_join(w->req.dir, w->create.cands[w->create.ci]);

		zklog(LOG_NOTICE, "found %s again after an unknown create", path);
		zke_free_cands(w);
		if (path)
			adopt_locked(w, path, stat->czxid, false, false);
		else
			zke_fail_locked(w, -ENOMEM);
		free(path);
	} else if (zk_rc_transient(rc)) {
		zke_free_cands(w);
		zke_stall_locked(w, S_RESOLVE);
	} else {
		w->create.ci++;
		resolve_next_locked(w);
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/* Look at the next candidate; when none is left, the create never happened. */
static void resolve_next_locked(struct zkl_waiter *w)
{
	char *path;
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (zke_stale_locked(w)) {	/* the entry went with the session */
		zke_free_cands(w);
		zke_fresh_locked(w, S_RESOLVE);
		return;
	}
	if (w->create.ci >= w->create.ncand) {
		zke_free_cands(w);
		zke_create_locked(w);
		return;
	}
	path = zkn_join(w->req.dir, w->create.cands[w->create.ci]);
	if (!path) {
		zke_fail_locked(w, -ENOMEM);
		return;
	}
	w->refs++;
	rc = w->e->t.ops->get(w->e->t.ctx, path, resolve_get_done, w);
	free(path);
	if (rc == ZOK)
		return;
	w->refs--;
	zke_free_cands(w);
	zke_stall_locked(w, S_RESOLVE);
}

static void resolve_children_done(int rc, const struct String_vector *sv,
				  const struct Stat *dir, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	const char *base = zkn_base(w->req.prefix);
	size_t bl = strlen(base);
	struct zkg_child c;

	/* answered meanwhile or not, an entry of ours must be found */
	(void)dir;
	zkmx_lock(&e->lock);
	if (rc != ZOK) {
		zke_call_failed_locked(w, rc, S_RESOLVE, "cannot list the queue of");
	} else {
		zke_free_cands(w);
		w->create.cands = calloc((size_t)sv->count + 1, sizeof(*w->create.cands));
		for (int i = 0; w->create.cands && i < sv->count; i++)
			if (strncmp(sv->data[i], base, bl) == 0 &&
			    zkn_parse(sv->data[i], &c) && strlen(sv->data[i]) <= bl + 11)
				w->create.cands[w->create.ncand++] = strdup(sv->data[i]);
		if (w->create.cands)
			resolve_next_locked(w);
		else
			zke_fail_locked(w, -ENOMEM);
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

void zke_resolve_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_set_state_locked(w, W_RESOLVING);
	if (!zke_fresh_locked(w, S_RESOLVE))
		return;
	w->refs++;
	rc = w->e->t.ops->children(w->e->t.ctx, w->req.dir, resolve_children_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	zke_stall_locked(w, S_RESOLVE);
}
