/*
 * zk/lock.c - the lock engine (see lock.h): its API and the session's
 * events.  Its insides are shared through zk/engine.h, which lists the
 * engine's files (our own queues, a waiter's machines and answers, failed
 * requests, watches, listings and waiting, semaphores, deletes and
 * hand-offs, creates, lingering) and the order in which they call each
 * other.
 *
 * Every waiter is counted: one reference for its caller, one per ZooKeeper
 * operation in flight, one per watch armed, one while its answer is being
 * delivered.  All waiter and queue fields are protected by engine->lock
 * (zk/engine.h groups a waiter's by the file that writes them);
 * ZooKeeper calls made under it only queue a request and never wait for a
 * completion.  Answers are queued on e->fire under the lock and delivered by
 * zke_unlock_fire() after it is dropped.
 *
 * A request failing with a connection loss (or a closing/expired handle)
 * stalls the waiter (w->sm.stall: what to redo); the session's connected
 * event redoes the step, its expired event starts the waiter over.
 *
 * The mount's own queue.  The entries this engine made in one lock, in
 * sequence order, form a zke_queue.  ZooKeeper never inserts an entry before
 * one that exists (sequence numbers only grow), so what one listing says a
 * waiter must outlive stays true until that entry goes; one listing
 * therefore serves every waiter of ours it shows.  Three rules follow:
 *   - parked: a waiter behind an entry of ours not yet granted cannot be
 *     granted before it (nothing it waits for is gone sooner), so it sends
 *     nothing and waits for that entry's answer;
 *   - local wait: a waiter whose predecessor is an entry of ours needs no
 *     watch, since the delete that removes it is ours;
 *   - hand-off: when we delete an exclusive entry that held the lock (or
 *     an entry a listing showed lowest), the waiters a listing showed right
 *     behind it hold the lock at once; so does a waiter when another
 *     client's entry it watches goes, if that entry was the lowest;
 * Only the first waiter of ours watches an entry of another client.  A grant
 * without a listing also makes sure the waiter's own entry is still there:
 * the hand-off's delete checks it in the same transaction, a grant on a
 * notification looks it up first.
 *
 * The state machine.  A waiter's state (enum wstate, zk/engine.h) changes
 * only through zke_set_state_locked(), which aborts on a move the list in
 * zk/moves.h does not have (sanitizer builds; the simulator checks every
 * schedule).  That list, with when each move happens, is the one table:
 * docs/DESIGN.md §9 prints it.  In short: a waiter is CREATING, then
 * CHECKING (a listing), PARKED behind an entry of ours not yet granted,
 * LOCALWAIT behind one granted, WATCHING another client's entry (then
 * CONFIRMING its own when that one was the lowest), or SEMWAIT (a
 * semaphore's, until poked); HELD once granted; CACHED while its entry
 * lingers; DONE once refused, lost or given back.  Before an answer a
 * connection loss stalls the step (redone when the session is back), an
 * expiry starts it over (CREATING), a cancel answers it (DONE); a grant is
 * withheld while the session is silent (zke_grant_locked()).  The other
 * small machines (stall, answer, entry, own watch, child watch) are listed
 * in zk/moves.h too, and checked by their own zke_set_*_locked().
 */
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

#include <sys/random.h>

/* session events ---------------------------------------------------------- */

/* Redo what @w could not do while the session was away. */
static void resume_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	switch (zke_unstall_locked(w)) {
	case S_NONE:
		break;
	case S_CREATE:
		zke_create_locked(w);
		break;
	case S_RESOLVE:
		zke_resolve_locked(w);
		break;
	case S_CHECK:
		if (!zke_answered(w))
			zke_check_locked(w);
		break;
	case S_OWNWATCH:
		if (w->sm.ans != ANS_LOST && !w->caller.released)
			zke_own_watch_locked(w);
		break;
	case S_DELETE:
		zke_delete_locked(w);
		break;
	}
}

/* Run @step on every waiter, oldest first. */
static void for_each_waiter(struct zkl_engine *e, void (*step)(struct zkl_waiter *))
{
	struct zkl_waiter *w, **v = NULL;
	size_t n = 0, cap = 0;

	zkmx_lock(&e->lock);
	for (w = e->all; w; w = w->next) {
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct zkl_waiter **nv = realloc(v, ncap * sizeof(*nv));

			if (!nv)
				break;
			v = nv;
			cap = ncap;
		}
		w->refs++;		/* keeps it while we walk on */
		v[n++] = w;
	}
	for (size_t i = 0; i < n; i++)
		step(v[i]);
	for (size_t i = 0; i < n; i++)
		zke_put_locked(v[i]);
	zke_unlock_fire(e);
	free(v);
}

/*
 * The session is silent: held locks are presumed lost, and a try that is
 * still undecided fails now with -ETIMEDOUT (its entry is deleted once
 * the session is back): O_NONBLOCK means an answer within the session
 * timeout, and "unknown" is the answer while ZooKeeper says nothing.
 */
static void on_silent_step(struct zkl_waiter *w)
{
	if ((w->caller.flags & ZKL_NONBLOCK) && !zke_answered(w))
		zke_fail_locked(w, -ETIMEDOUT);
	zke_unlinger_locked(w, false);	/* no grant on it now: let it go */
	zke_lose_locked(w, ZKM_LOSS_SILENT,
			"nothing heard from ZooKeeper for the session timeout");
}

static void on_expired_step(struct zkl_waiter *w)
{
	/*
	 * The old session took every entry with it.  A waiter whose create
	 * went out on the new handle (enqueued while it was being replaced)
	 * belongs to the new session: leave it alone, even if that create's
	 * outcome is unknown (S_RESOLVE: the connected event finds it; a
	 * create made afresh would leave it there for good).
	 */
	if (!zke_stale_locked(w) && w->sm.stall != S_CREATE)
		return;
	zke_unlinger_locked(w, true);	/* gone with the session */
	zke_unstall_locked(w);
	if (w->sm.entry == ENTRY_LIVE || w->sm.entry == ENTRY_DELETING)
		zke_set_entry_locked(w, ENTRY_GONE);	/* with the session */
	zke_lose_locked(w, ZKM_LOSS_EXPIRED, "the ZooKeeper session expired");
	zke_queue_unlink_locked(w);
	w->pred.ahead = AHEAD_UNKNOWN;
	w->handoff.cohort = false;
	zke_set_own_locked(w, OWN_OFF);
	zke_set_dirwatch_locked(w, OWN_OFF);	/* that session's watches are gone */
	if (zke_answered(w) || w->caller.released)
		return;
	free(w->ours.path);
	w->ours.path = NULL;
	if (w->sm.entry == ENTRY_GONE)
		zke_set_entry_locked(w, ENTRY_NONE);
	zke_create_locked(w);
}

/* Say whether the session is silent (zke_grant_locked() withholds grants). */
static void set_silent(struct zkl_engine *e, bool silent)
{
	zkmx_lock(&e->lock);
	e->silent = silent;
	zkmx_unlock(&e->lock);
}

static void on_connected(void *arg)
{
	set_silent(arg, false);
	for_each_waiter(arg, resume_locked);
}

static void on_silent(void *arg)
{
	set_silent(arg, true);
	for_each_waiter(arg, on_silent_step);
}

static void on_expired(void *arg)
{
	struct zkl_engine *e = arg;

	set_silent(e, false);	/* the new session's replies are fresh */
	for_each_waiter(e, on_expired_step);
	/* those of the new session may have waited behind old ones */
	zkmx_lock(&e->lock);
	for (size_t i = 0; i < QBUCKETS; i++)
		for (struct zke_queue *q = e->qtab[i]; q; q = q->hnext)
			for (struct zkl_waiter *w = q->head; w; w = w->qnext)
				zke_rewait_locked(w);
	zke_unlock_fire(e);
}

/* The tick's pass over every waiter: redo a stalled step, end a linger, end
 * a try that waited its time behind an entry that may only linger. */
static void tick_step(struct zkl_waiter *w)
{
	resume_locked(w);
	zke_linger_tick_locked(w);
	if ((w->caller.flags & ZKL_NONBLOCK) && w->try.tried && !zke_answered(w) &&
	    w->e->t.ops->now_ms(w->e->t.ctx) >= w->try.until)
		zke_fail_locked(w, -EAGAIN);
}

/*
 * Arm the watch on every entry not watched yet that holds the lock, or that
 * waits for an entry other than one of its own mount's not yet granted: if
 * someone deletes it, the holder must hear of the loss, and the waiter must
 * fail so that ours behind it move on (see zke_own_watch_locked()).
 */
static void on_tick(void *arg)
{
	struct zkl_engine *e = arg;

	/*
	 * A stall waits for a session event to be redone; one that met a
	 * failure no event follows (ZSESSIONMOVED, say) is redone here.
	 */
	for_each_waiter(e, tick_step);
	zkmx_lock(&e->lock);
	for (struct zkl_waiter *w = e->all; w; w = w->next)
		zke_doubt_check_locked(w);	/* one that failed: again */
	for (struct zkl_waiter *w = e->all; w; w = w->next)
		if ((w->sm.state == W_HELD || w->sm.state == W_WATCHING ||
		     w->sm.state == W_LOCALWAIT || w->sm.state == W_SEMWAIT) &&
		    w->sm.entry == ENTRY_LIVE &&
		    w->sm.ans != ANS_LOST && !w->caller.released && w->sm.own == OWN_OFF &&
		    w->sm.stall == S_NONE)
			zke_own_watch_locked(w);
	zke_sem_tick_locked(e);
	zke_unlock_fire(e);
}

/* The session entered doubt: a holder is told, a lingering entry let go
 * (nothing is granted on it now). */
static void doubt_step(struct zkl_waiter *w)
{
	if (w->sm.state == W_CACHED)
		zke_unlinger_locked(w, false);
	else
		zke_doubt_locked(w);
}

/* The session entered doubt (@in) or left it: then each holder's read that
 * ends its doubt (zk/watch.c). */
static void on_doubt(void *arg, bool in)
{
	struct zkl_engine *e = arg;

	zkmx_lock(&e->lock);
	e->doubt = in;
	zkmx_unlock(&e->lock);
	for_each_waiter(e, in ? doubt_step : zke_doubt_check_locked);
}

struct zks_events zkl_engine_events(struct zkl_engine *e)
{
	return (struct zks_events){
		.connected = on_connected, .silent = on_silent,
		.expired = on_expired, .tick = on_tick, .doubt = on_doubt, .arg = e,
	};
}

/* the API ------------------------------------------------------------------ */

void zkl_engine_set_linger(struct zkl_engine *e, unsigned ms)
{
	zkmx_lock(&e->lock);
	e->linger_ms = ms;
	zkmx_unlock(&e->lock);
}

const char *zkl_engine_check(struct zkl_engine *e)
{
#ifdef ZKL_LOCKCHECK
	const char *why;

	zkmx_lock(&e->lock);
	why = zke_invariants_locked(e);
	zkmx_unlock(&e->lock);
	return why;
#else
	(void)e;
	return NULL;
#endif
}

bool zkl_cached(struct zkl_engine *e, const char *dir, const char *path)
{
	struct zkl_waiter *w;
	bool cached;

	zkmx_lock(&e->lock);
	w = zke_cached_locked(e, dir);
	cached = w && strcmp(w->ours.path, path) == 0;
	zkmx_unlock(&e->lock);
	return cached;
}

void zkl_unlinger(struct zkl_engine *e, const char *dir)
{
	struct zkl_waiter *w;

	zkmx_lock(&e->lock);
	w = zke_cached_locked(e, dir);
	if (w)
		zke_unlinger_locked(w, false);
	zke_unlock_fire(e);
}

void zkl_engine_on_dir(struct zkl_engine *e, zkl_dir_fn fn, void *arg)
{
	zkmx_lock(&e->lock);
	e->on_dir = fn;
	e->on_dir_arg = arg;
	zkmx_unlock(&e->lock);
}

void zkl_engine_on_doubt(struct zkl_engine *e, zkl_lost_fn doubted)
{
	zkmx_lock(&e->lock);
	e->doubted = doubted;
	zkmx_unlock(&e->lock);
}

bool zkl_doubt_locked(const struct zkl_waiter *w)
{
	return w->doubt.in;
}

void zkl_engine_on_revoke(struct zkl_engine *e, zkl_lost_fn revoked)
{
	zkmx_lock(&e->lock);
	e->revoked = revoked;
	zkmx_unlock(&e->lock);
}

struct zkl_engine *zkl_engine_new(const struct zkt_transport *t,
				  enum zkn_naming naming, zkl_lost_fn lost)
{
	struct zkl_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->t = *t;
	e->naming = naming;
	e->lost = lost;
	zkmx_init(&e->lock, ZKMX_RANK_ENGINE, "engine->lock");
	return e;
}

int zkl_enqueue(struct zkl_engine *e, const char *dir, const char *name,
		enum zkn_kind kind, int flags, const char *data, int len,
		uint32_t owner, zkl_done_fn done, void *arg,
		struct zkl_waiter **out)
{
	struct zkl_waiter *w;
	uint64_t nonce = 0;
	char *base = NULL, *prefix = NULL;
	int rc;

	if (asprintf(&base, "%s%s", name, zkn_marker(e->naming, kind)) > 0)
		prefix = zkn_join(dir, base);
	free(base);
	if (!prefix)
		return -ENOMEM;
	/* a lingering entry of that name first: nothing else to make then */
	zkmx_lock(&e->lock);
	if (e->shutdown) {		/* stopping: its holders are being ended */
		zkmx_unlock(&e->lock);
		free(prefix);
		return -ESHUTDOWN;
	}
	if ((flags & ZKL_NONBLOCK) && zke_silent_locked(e)) {	/* on_silent_step() */
		zkmx_unlock(&e->lock);
		free(prefix);
		return -ETIMEDOUT;
	}
	w = zke_reuse_locked(e, dir, prefix);
	if (w) {
		zke_regrant_locked(w, flags, data, len, owner, done, arg);
		*out = w;
		free(prefix);
		zke_unlock_fire(e);	/* done runs now: granted */
		return 0;
	}
	/* a linger of another name, let go, may have handed its lock on */
	zke_unlock_fire(e);
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(prefix);
		return -ENOMEM;
	}
	w->req.prefix = prefix;
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		nonce = (uint64_t)(uintptr_t)w ^ (uint64_t)time(NULL);
	snprintf(w->req.nonce, sizeof(w->req.nonce), "zkl=%016" PRIx64 "\n", nonce);
	w->e = e;
	w->req.kind = kind;
	w->caller.flags = flags;
	w->caller.owner = owner;
	w->caller.done = done;
	w->caller.arg = arg;
	w->req.dir = strdup(dir);
	w->caller.len = len + (int)strlen(w->req.nonce);
	w->caller.data = malloc((size_t)w->caller.len + 1);
	if (w->caller.data) {
		memcpy(w->caller.data, data, (size_t)len);
		strcpy(w->caller.data + len, w->req.nonce);
	}
	if (!w->req.dir || !w->caller.data) {
		zke_waiter_free(w);
		return -ENOMEM;
	}
	zkmx_lock(&e->lock);
	w->refs = 1;			/* the caller's */
	w->prev = e->all_tail;
	if (e->all_tail)
		e->all_tail->next = w;
	else
		e->all = w;
	e->all_tail = w;
	if (e->on_dir)
		e->on_dir(e->on_dir_arg, w->req.dir, 1);
	rc = zke_send_create_locked(w);
	if (rc != ZOK) {		/* refused at once: no done, an error */
		zke_put_locked(w);
		zkmx_unlock(&e->lock);
		return zk_errno(rc);
	}
	w->caller.t_enq = zkm_now_us();
	zkm_enqueued();
	*out = w;
	zkmx_unlock(&e->lock);
	return 0;
}

void zkl_cancel(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	if (!zke_answered(w))
		zke_fail_locked(w, -EINTR);
	zke_unlock_fire(e);
}

void zkl_release(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	if (w->sm.ans == ANS_GRANTED && !w->caller.released)
		zkm_released(zkm_now_us() - w->told.t_grant);
	w->caller.released = true;
	if (zke_linger_locked(w)) {	/* kept for the next open: zk/linger.c */
		zke_put_locked(w);
		zke_unlock_fire(e);
		return;
	}
	/*
	 * Delete now, even while the watch on our own entry is being set: the
	 * delete goes behind it on the session, so whatever this mount sends
	 * about the lock after close() (a listing, an rmdir) sees the entry
	 * gone.  Waiting for that reply let a listing overtake the delete.
	 * The watch, set first, then fires once on our own delete and is let
	 * go (zke_own_watcher(): a released waiter loses nothing).  Else the
	 * watch is taken off first, so that the delete notifies nobody of ours.
	 */
	zke_unwatch_locked(w);
	zke_delete_locked(w);
	zke_put_locked(w);
	zke_unlock_fire(e);
}

void zkl_entry_gone(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	zke_lose_locked(w, ZKM_LOSS_DELETED, "a confirmation found its entry gone");
	zke_unlock_fire(e);
}

void zkl_info(struct zkl_waiter *w, struct zkl_info *info, char **path)
{
	struct zkl_engine *e = w->e;

	zkmx_lock(&e->lock);
	info->created = w->ours.path != NULL;
	info->granted = w->sm.ans == ANS_GRANTED || w->sm.ans == ANS_LOST;
	info->lost = w->sm.ans == ANS_LOST;
	info->revoking = w->seen.revoked;
	info->doubt = w->doubt.in;
	info->limit = w->verdict.limit;
	info->seq = w->ours.seq;
	info->grants = w->linger.grants;
	info->czxid = w->ours.czxid;
	info->kind = w->req.kind;
	info->loss = w->told.loss;
	if (path)
		*path = w->ours.path ? strdup(w->ours.path) : NULL;
	zkmx_unlock(&e->lock);
}

enum zkm_loss zkl_loss_locked(const struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	return w->told.loss;
}

bool zkl_owner(struct zkl_engine *e, const char *dir, const char *path,
	       uint32_t *owner)
{
	struct zke_queue *q;
	struct zkl_waiter *w = NULL;

	zkmx_lock(&e->lock);
	q = zke_queue_find_dir_locked(e, dir);
	for (w = q ? q->head : NULL; w && (!w->ours.path || strcmp(w->ours.path, path) != 0);
	     w = w->qnext)
		;
	if (w)
		*owner = w->caller.owner;
	zkmx_unlock(&e->lock);
	return w != NULL;
}

static void on_shutdown_step(struct zkl_waiter *w)
{
	zke_answer_locked(w, -ESHUTDOWN, false);
}

void zkl_engine_shutdown(struct zkl_engine *e)
{
	/* nobody moves on, and nobody new comes: every one is answered */
	zkmx_lock(&e->lock);
	e->shutdown = true;
	zkmx_unlock(&e->lock);
	for_each_waiter(e, on_shutdown_step);
}

void zkl_engine_free(struct zkl_engine *e)
{
	while (e->all) {
		struct zkl_waiter *w = e->all;

		e->all = w->next;
		zke_waiter_free(w);
	}
	for (size_t i = 0; i < QBUCKETS; i++)
		while (e->qtab[i]) {
			struct zke_queue *q = e->qtab[i];

			e->qtab[i] = q->hnext;
			free(q->dir);
			free(q);
		}
	zkmx_destroy(&e->lock);
	free(e);
}
