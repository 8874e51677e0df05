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
	chain = q->cv_known && w->seq == q->cv_next;
	if (!chain)
		q->cv_from = w->seq;
	q->cv_next = (int32_t)((uint32_t)w->seq + 1);
	q->cv_known = true;
	if (!chain || !p || w->kind != ZKN_EXCLUSIVE || !q->lknown || q->limit ||
	    zkn_seq_cmp(p->seq, q->cv_from) < 0 || zke_stale_locked(p) ||
	    zke_stale_locked(w) || !p->path ||
	    (p->entry != ENTRY_LIVE && p->entry != ENTRY_DELETING))
		return;
	free(w->pred);
	w->pred = strdup(p->path);
	if (!w->pred)
		return;
	w->pred_seq = p->seq;
	w->ahead = zke_holds_lowest(p) ? AHEAD_OURS_LOWEST : AHEAD_OURS;
}

/* Our entry exists (created or found again): take it as ours. */
static void adopt_locked(struct zkl_waiter *w, const char *path, int64_t czxid,
			 bool prelisted, bool created)
{
	struct zkg_child me;

	ZKMX_ASSERT_HELD(&w->e->lock);
	free(w->path);
	w->path = strdup(path);
	if (w->path)
		zke_set_entry_locked(w, ENTRY_LIVE);
	w->czxid = czxid;
	if (!w->path || !zkn_parse(zkn_base(path), &me)) {
		zklog(LOG_ERR, "created %s but cannot read its sequence", path);
		zke_fail_locked(w, -EIO);
		return;
	}
	w->seq = me.seq;
	w->limit = 0;			/* a new entry: no listing decided it yet */
	w->dver = 0;
	zke_queue_insert_locked(w);
	if (created)
		chain_locked(w);
	else if (w->q)
		w->q->cv_known = false;	/* made when, we cannot tell */
	if (zke_answered(w) || w->released) {
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
	pre = w->prelisted;
	w->prelisted = false;		/* its reply, if any, is ignored but here */
	if (rc == ZOK)
		adopt_locked(w, path, stat->czxid, pre, true);
	else if (zk_rc_unknown(rc))
		zke_stall_locked(w, S_RESOLVE);	/* it may exist: find it, never guess */
	else if (zk_rc_transient(rc))
		zke_stall_locked(w, S_CREATE);	/* never sent */
	else {
		zklog(LOG_WARNING, "cannot enqueue in %s: %s", w->dir,
		      rc == ZNONODE ? "the directory is gone" : zerror(rc));
		zke_answer_locked(w, zk_errno(rc), false);
	}
	zke_put_locked(w);
	zke_unlock_fire(e);
}

/* Send @w's create. Return: ZOK (sent, or stalled to redo), else why not. */
int zke_send_create_locked(struct zkl_waiter *w)
{
	struct zke_queue *q;
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_set_state_locked(w, W_CREATING);
	w->refs++;
	rc = w->e->t.ops->create(w->e->t.ctx, w->prefix, w->data, w->len,
			 ZOO_EPHEMERAL_SEQUENTIAL, create_done, w, &w->gen);
	if (rc == ZOK) {
		/*
		 * Unless it will be parked, it must list the children: send that
		 * now.  One session's requests are done in order, so the listing
		 * shows the new entry, and the grant costs one round trip.
		 */
		q = zke_queue_find_dir_locked(w->e, w->dir);
		if (!q || !q->tail || zke_answered(q->tail) || (w->flags & ZKL_NONBLOCK)) {
			w->refs++;
			w->prelisted = w->e->t.ops->children(w->e->t.ctx, w->dir, zke_children_done, w) == ZOK;
			if (!w->prelisted)
				w->refs--;
		}
		return ZOK;
	}
	w->refs--;
	if (zk_rc_transient(rc)) {
		zke_stall_locked(w, S_CREATE);
		return ZOK;
	}
	zklog(LOG_WARNING, "cannot enqueue %s: %s", w->prefix, zerror(rc));
	return rc;
}

void zke_create_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (zke_answered(w) || w->released)
		return;			/* nothing to make any more */
	rc = zke_send_create_locked(w);
	if (rc != ZOK)
		zke_answer_locked(w, zk_errno(rc), false);
}

static void resolve_next_locked(struct zkl_waiter *w);

/* Is @name, in @w's lock, the entry of another waiter of ours? */
static bool taken_locked(struct zkl_waiter *w, const char *name)
{
	size_t dl = strlen(w->dir);

	ZKMX_ASSERT_HELD(&w->e->lock);
	for (struct zkl_waiter *x = w->e->all; x; x = x->next)
		if (x != w && x->path && strncmp(x->path, w->dir, dl) == 0 &&
		    x->path[dl] == '/' && strcmp(x->path + dl + 1, name) == 0)
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
		v = zka_candidate(value, len, w->nonce, stat->ephemeralOwner,
				  w->e->t.ops->session_of(w->e->t.ctx, w->gen),
				  taken_locked(w, w->cands[w->ci]));
	if (v == ZKA_PLANTED)
		zklog(LOG_WARNING, "%s/%s carries our nonce but is not ours "
		      "(owner 0x%llx): left alone", w->dir, w->cands[w->ci],
		      (unsigned long long)stat->ephemeralOwner);
	if (v == ZKA_OURS) {
		char *path = zkn_join(w->dir, w->cands[w->ci]);

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
		w->ci++;
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
	if (w->ci >= w->ncand) {
		zke_free_cands(w);
		zke_create_locked(w);
		return;
	}
	path = zkn_join(w->dir, w->cands[w->ci]);
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
	const char *base = zkn_base(w->prefix);
	size_t bl = strlen(base);
	struct zkg_child c;

	/* answered meanwhile or not, an entry of ours must be found */
	(void)dir;
	zkmx_lock(&e->lock);
	if (rc != ZOK) {
		zke_call_failed_locked(w, rc, S_RESOLVE, "cannot list the queue of");
	} else {
		zke_free_cands(w);
		w->cands = calloc((size_t)sv->count + 1, sizeof(*w->cands));
		for (int i = 0; w->cands && i < sv->count; i++)
			if (strncmp(sv->data[i], base, bl) == 0 &&
			    zkn_parse(sv->data[i], &c) && strlen(sv->data[i]) <= bl + 11)
				w->cands[w->ncand++] = strdup(sv->data[i]);
		if (w->cands)
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
	rc = w->e->t.ops->children(w->e->t.ctx, w->dir, resolve_children_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	zke_stall_locked(w, S_RESOLVE);
}
