/*
 * zk/lock.c - the lock engine (see lock.h).
 *
 * Every waiter is counted: one reference for its caller, one per ZooKeeper
 * operation in flight, one per watch armed, one while its answer is being
 * delivered.  All waiter and queue fields are protected by engine->lock;
 * ZooKeeper calls made under it only queue a request and never wait for a
 * completion.  Answers are queued on e->fire under the lock and delivered by
 * unlock_fire() after it is dropped.
 *
 * A request failing with a connection loss (or a closing/expired handle)
 * parks the waiter in @stall; the session's connected event redoes the
 * step, its expired event starts the waiter over.
 *
 * The mount's own queue.  The entries this engine made in one lock, in
 * sequence order, form a zkl_queue.  ZooKeeper never inserts an entry before
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
 */
#include "zk/lock.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "zk/adopt.h"
#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/log.h"
#include "zk/mutex.h"

enum wstate {
	W_CREATING,	/* create in flight */
	W_RESOLVING,	/* create outcome unknown: looking for our entry */
	W_CHECKING,	/* listing the children */
	W_PARKED,	/* behind an entry of ours not yet granted: no request */
	W_LOCALWAIT,	/* must outlive an entry of ours: waits for our delete */
	W_WATCHING,	/* watching another client's entry before ours */
	W_CONFIRMING,	/* it went and was the lowest: is our entry there? */
	W_HELD,		/* granted */
	W_DONE,		/* answered with an error, or lost */
};

/* What to redo once the session is back. */
enum stall { S_NONE, S_CREATE, S_RESOLVE, S_CHECK, S_OWNWATCH, S_DELETE };

#define QBUCKETS 1024

/* Our entries in one lock, in sequence order. */
struct zkl_queue {
	char *dir;
	struct zkl_queue *hnext;	/* e->qtab chain */
	struct zkl_waiter *head, *tail;
};

struct zkl_engine {
	struct zkl_transport t;		/* how we reach ZooKeeper */
	enum zkl_naming naming;
	zkl_lost_fn lost;
	struct zkl_mutex lock;
	struct zkl_waiter *all, *all_tail;	/* every live waiter, oldest first */
	struct zkl_waiter *fire, *fire_tail;	/* answered, done not yet run */
	struct zkl_queue *qtab[QBUCKETS];
	bool shutdown;
};

struct zkl_waiter {
	struct zkl_engine *e;
	struct zkl_waiter *prev, *next;	/* e->all */
	struct zkl_waiter *fnext;	/* e->fire */
	struct zkl_queue *q;		/* once our entry exists, until it is gone */
	struct zkl_waiter *qprev, *qnext;
	int refs;
	enum wstate state;
	enum stall stall;
	bool answered;			/* done has run or is about to */
	bool released;			/* the caller gave its reference back */
	bool deleting;
	bool lost;
	bool own_armed;			/* the watch on our own entry is set */
	bool own_inflight;		/* ... is being set: its reply is due */
	bool pred_known;		/* a listing showed whom we must outlive */
	bool pred_local;		/* ... and it was an entry of ours */
	bool pred_first;		/* ... and the lowest: once it is gone, ours holds */
	bool grant_now;			/* learn_locked(): granted by this listing */
	bool confirmed;			/* handoff_done(): its entry is there */
	bool prelisted;			/* a listing follows the create (pipelined) */
	int flags;
	uint32_t owner;			/* the caller's tag: zkl_owner() */
	int result;			/* what done is told */
	enum zkl_kind kind;
	int32_t seq;
	int32_t pred_seq;
	uint64_t gen;			/* t.ops->generation() of its create */
	int64_t czxid;
	char *dir;
	char *prefix;			/* DIR/NAME<marker>, what we create */
	char *path;			/* our entry, once created */
	char *pred;			/* the entry we must outlive, if known */
	char *data;			/* its data, ending in our nonce line */
	int len;
	char nonce[24];			/* "zkl=XXXXXXXXXXXXXXXX\n" */
	char **cands;			/* W_RESOLVING: entries that may be ours */
	int ncand, ci;
	zkl_done_fn done;
	void *arg;
};

/* The transport's operations, for a waiter's calls. */
#define T(w) ((w)->e->t.ops)

/* Failures after which the step can be redone when the session is back. */
static bool rc_stalls(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
	       rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING ||
	       rc == ZSESSIONMOVED;
}

/* queues ------------------------------------------------------------------ */

static struct zkl_queue **qslot(struct zkl_engine *e, const char *dir)
{
	return &e->qtab[zkn_hash(dir) % QBUCKETS];
}

/* Our entries in the lock @dir, or NULL if none. */
static struct zkl_queue *queue_find_dir_locked(struct zkl_engine *e, const char *dir)
{
	struct zkl_queue *q;

	ZKL_ASSERT_HELD(&e->lock);
	for (q = *qslot(e, dir); q && strcmp(q->dir, dir) != 0; q = q->hnext)
		;
	return q;
}

/* Put @w, whose entry now exists, among our entries in its lock. */
static void queue_insert_locked(struct zkl_waiter *w)
{
	struct zkl_queue **slot = qslot(w->e, w->dir);
	struct zkl_queue *q = queue_find_dir_locked(w->e, w->dir);
	struct zkl_waiter *x;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (q)
			q->dir = strdup(w->dir);
		if (!q || !q->dir) {
			free(q);
			return;		/* it lists for itself: slower, not wrong */
		}
		q->hnext = *slot;
		*slot = q;
	}
	/* one session's creates complete in order: almost always the tail */
	for (x = q->tail; x && zkn_seq_cmp(x->seq, w->seq) > 0; x = x->qprev)
		;
	w->q = q;
	w->qprev = x;
	w->qnext = x ? x->qnext : q->head;
	if (w->qnext)
		w->qnext->qprev = w;
	else
		q->tail = w;
	if (x)
		x->qnext = w;
	else
		q->head = w;
}

static void queue_unlink_locked(struct zkl_waiter *w)
{
	struct zkl_queue *q = w->q, **pp;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (!q)
		return;
	if (w->qprev)
		w->qprev->qnext = w->qnext;
	else
		q->head = w->qnext;
	if (w->qnext)
		w->qnext->qprev = w->qprev;
	else
		q->tail = w->qprev;
	w->q = NULL;
	w->qprev = w->qnext = NULL;
	if (q->head)
		return;
	for (pp = qslot(w->e, q->dir); *pp != q; pp = &(*pp)->hnext)
		;
	*pp = q->hnext;
	free(q->dir);
	free(q);
}

/* The entry of ours with sequence number @seq before @w, or NULL. */
static struct zkl_waiter *queue_find_locked(struct zkl_waiter *w, int32_t seq)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	for (struct zkl_waiter *x = w->qprev; x; x = x->qprev) {
		int c = zkn_seq_cmp(x->seq, seq);

		if (c == 0)
			return x;
		if (c < 0)
			break;
	}
	return NULL;
}

/* waiters ----------------------------------------------------------------- */

static void free_cands(struct zkl_waiter *w)
{
	for (int i = 0; i < w->ncand; i++)
		free(w->cands[i]);
	free(w->cands);
	w->cands = NULL;
	w->ncand = w->ci = 0;
}

static void waiter_free(struct zkl_waiter *w)
{
	free_cands(w);
	free(w->dir);
	free(w->prefix);
	free(w->path);
	free(w->pred);
	free(w->data);
	free(w);
}

static void gone_locked(struct zkl_waiter *l, bool deleted, bool handoff);

static void put_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (--w->refs > 0)
		return;
	gone_locked(w, false, false);	/* normally already out of its queue */
	if (w->prev)
		w->prev->next = w->next;
	else
		e->all = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		e->all_tail = w->prev;
	waiter_free(w);
}

/* Drop the engine's lock, then run the done callbacks answered under it. */
static void unlock_fire(struct zkl_engine *e)
{
	while (e->fire) {
		struct zkl_waiter *list = e->fire, *w, *next;

		e->fire = e->fire_tail = NULL;
		zkl_mutex_unlock(&e->lock);
		for (w = list; w; w = w->fnext)
			w->done(w, w->result, w->arg);
		zkl_mutex_lock(&e->lock);
		for (w = list; w; w = next) {
			next = w->fnext;
			put_locked(w);	/* the answer's reference */
		}
	}
	zkl_mutex_unlock(&e->lock);
}

/*
 * Park @w until the session is back, to redo @what.  A parked waiter holds a
 * reference of its own: its caller may have given it up (an interrupted
 * open whose create is unresolved), and the redo must still happen.
 */
static void stall_locked(struct zkl_waiter *w, enum stall what)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->stall == S_NONE)
		w->refs++;
	w->stall = what;
}

/* Take @w out of the parked state. Return: what was to be redone. */
static enum stall unstall_locked(struct zkl_waiter *w)
{
	enum stall what = w->stall;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (what != S_NONE) {
		w->stall = S_NONE;
		put_locked(w);		/* the caller holds another reference */
	}
	return what;
}

static void settle_locked(struct zkl_waiter *w);

/*
 * Decide @w's answer; done runs at unlock_fire().  With @advance, the next
 * waiter of ours, which may have been parked behind @w, moves on.
 */
static void answer_locked(struct zkl_waiter *w, int err, bool advance)
{
	struct zkl_engine *e = w->e;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->answered)
		return;
	w->answered = true;
	w->result = err;
	w->state = err ? W_DONE : W_HELD;
	w->refs++;			/* held across done */
	w->fnext = NULL;
	if (e->fire_tail)
		e->fire_tail->fnext = w;
	else
		e->fire = w;
	e->fire_tail = w;
	if (advance)
		settle_locked(w->qnext);
}

/* Our delete of @w's entry came back with @rc. */
static void deleted_locked(struct zkl_waiter *w, int rc)
{
	bool held;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (rc_stalls(rc)) {
		w->deleting = false;
		stall_locked(w, S_DELETE);	/* the session may live: delete later */
		return;
	}
	if (rc != ZOK && rc != ZNONODE)
		zkl_log(LOG_WARNING, "cannot delete %s: %s", w->path, zerror(rc));
	held = rc == ZOK && w->answered && w->result == 0 && !w->lost &&
	       w->kind == ZKL_EXCLUSIVE;
	gone_locked(w, rc == ZOK, held);
}

static void delete_done(int rc, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkl_mutex_lock(&e->lock);
	deleted_locked(w, rc);
	put_locked(w);
	unlock_fire(e);
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

static void send_delete_locked(struct zkl_waiter *w);

static void handoff_done(int rc, const void *data)
{
	struct handoff *h = (struct handoff *)data;
	struct zkl_waiter *l = h->l;
	struct zkl_engine *e = l->e;
	int bad = 0;

	zkl_mutex_lock(&e->lock);
	for (int i = 0; rc != ZOK && i <= h->n; i++)
		if (h->res[i].err != ZOK && h->res[i].err != ZRUNTIMEINCONSISTENCY) {
			bad = i;	/* the op that failed it */
			break;
		}
	if (rc == ZOK || bad == 0) {
		for (int i = 0; rc == ZOK && i < h->n; i++)
			h->x[i]->confirmed = true;
		deleted_locked(l, rc == ZOK ? ZOK : (h->res[0].err ? h->res[0].err : rc));
		for (int i = 0; i < h->n; i++)
			h->x[i]->confirmed = false;
	} else {
		send_delete_locked(l);	/* a waiter lost its entry: plain delete */
	}
	for (int i = 0; i < h->n; i++)
		put_locked(h->x[i]);
	put_locked(l);
	unlock_fire(e);
	free(h);
}

/* The waiters of ours a hand-off on @l's delete could grant (gone_locked()). */
static struct handoff *handoff_new_locked(struct zkl_waiter *l)
{
	bool held = l->answered && l->result == 0 && !l->lost &&
		    l->kind == ZKL_EXCLUSIVE;
	struct handoff *h = NULL;

	ZKL_ASSERT_HELD(&l->e->lock);
	for (struct zkl_waiter *x = l->qnext; x && x->pred_known &&
	     x->pred_seq == l->seq; x = x->qnext) {
		if (x->answered || !x->path || !(held || x->pred_first))
			continue;
		if (!h && !(h = calloc(1, sizeof(*h))))
			return NULL;
		if (h->n == HANDOFF_MAX)
			break;		/* the others list the children */
		h->x[h->n++] = x;
	}
	return h;
}

static void send_delete_locked(struct zkl_waiter *w)
{
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	w->refs++;
	rc = T(w)->remove(w->e->t.ctx, w->path, delete_done, w);
	if (rc != ZOK) {
		w->refs--;
		w->deleting = false;
		stall_locked(w, S_DELETE);
	}
}

static void delete_locked(struct zkl_waiter *w)
{
	struct handoff *h;
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (!w->path || w->deleting)
		return;
	w->deleting = true;
	h = handoff_new_locked(w);
	if (!h) {
		send_delete_locked(w);
		return;
	}
	h->l = w;
	zoo_delete_op_init(&h->ops[0], w->path, -1);
	for (int i = 0; i < h->n; i++)
		zoo_check_op_init(&h->ops[i + 1], h->x[i]->path, -1);
	rc = T(w)->multi(w->e->t.ctx, h->n + 1, h->ops, h->res, handoff_done, h);
	if (rc != ZOK) {
		free(h);
		send_delete_locked(w);
		return;
	}
	w->refs++;
	for (int i = 0; i < h->n; i++)
		h->x[i]->refs++;
}

static void unwatch_locked(struct zkl_waiter *w);

static void fail_locked(struct zkl_waiter *w, int err)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	answer_locked(w, err, true);
	unwatch_locked(w);
	delete_locked(w);
}

/* A held lock is gone: tell the caller once, and make sure the entry goes. */
static void lose_locked(struct zkl_waiter *w, const char *why)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->lost || w->released || !w->answered || w->result != 0)
		return;
	w->lost = true;
	w->state = W_DONE;
	zkl_log(LOG_WARNING, "lock %s lost: %s", w->path ? w->path : w->dir, why);
	w->e->lost(w, w->arg);
	delete_locked(w);
}

static void check_locked(struct zkl_waiter *w);
static void create_locked(struct zkl_waiter *w);
static void resolve_locked(struct zkl_waiter *w);
static void own_watch_locked(struct zkl_waiter *w);
static void watch_locked(struct zkl_waiter *w);

/* A request of @w's failed with @rc: park it if the session may come back. */
static void trouble_locked(struct zkl_waiter *w, int rc, enum stall redo,
			   const char *what)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (rc_stalls(rc)) {
		stall_locked(w, redo);
		return;
	}
	zkl_log(LOG_WARNING, "%s %s: %s", what, w->path ? w->path : w->dir, zerror(rc));
	fail_locked(w, zk_errno(rc));
}

/*
 * How @w (created, not answered, no request in flight) waits now: parked
 * behind an entry of ours not yet granted; else, knowing whom it must
 * outlive, for our own delete of it or with a watch on another's; else it
 * lists the children.
 */
static void wait_locked(struct zkl_waiter *w)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->answered || w->e->shutdown)
		return;
	if (w->flags & ZKL_NONBLOCK) {
		check_locked(w);	/* it must know now */
	} else if (w->qprev && !w->qprev->answered) {
		w->state = W_PARKED;
	} else if (!w->pred_known) {
		check_locked(w);
	} else if (queue_find_locked(w, w->pred_seq)) {
		w->state = W_LOCALWAIT;
	} else if (w->pred_local) {
		check_locked(w);	/* ours, and gone: look again */
	} else {
		watch_locked(w);
	}
}

/* Something @w waited for locally changed: wait anew. */
static void settle_locked(struct zkl_waiter *w)
{
	if (!w)
		return;
	ZKL_ASSERT_HELD(&w->e->lock);
	if (!w->answered && (w->state == W_PARKED || w->state == W_LOCALWAIT))
		wait_locked(w);
}

/*
 * @l leaves our queue.  The waiters that had to outlive it move on.  If our
 * delete removed its entry (@deleted) and it was the lowest (@handoff: an
 * exclusive entry that held the lock; or a listing showed it lowest), those
 * a listing showed right behind it hold the lock now, provided the delete
 * checked their own entries were still there (struct handoff); the others
 * look again.
 */
static void gone_locked(struct zkl_waiter *l, bool deleted, bool handoff)
{
	struct zkl_waiter *first = l->qnext, *x;
	int32_t seq = l->seq;

	ZKL_ASSERT_HELD(&l->e->lock);
	if (!l->q)
		return;
	queue_unlink_locked(l);
	for (x = first; x && x->pred_known && x->pred_seq == seq; x = x->qnext)
		if (deleted && (handoff || x->pred_first) && x->confirmed)
			answer_locked(x, 0, false);	/* else it lists: settle */
	for (x = first; x; x = x->qnext) {
		bool behind = x->pred_known && x->pred_seq == seq;

		if (behind && !x->answered && x->state == W_WATCHING)
			check_locked(x);	/* watched it before it was ours */
		else
			settle_locked(x);
		if (!behind)
			break;
	}
}

/* Remember that @w must outlive @pred (from a listing that showed @w). */
static void learn_pred_locked(struct zkl_waiter *w, const struct zkl_child *pred,
			      bool first)
{
	char *path = zkn_join(w->dir, pred->name);

	ZKL_ASSERT_HELD(&w->e->lock);
	if (!path) {
		w->pred_known = false;	/* it will list for itself */
		return;
	}
	free(w->pred);
	w->pred = path;
	w->pred_known = true;
	w->pred_seq = pred->seq;
	w->pred_local = queue_find_locked(w, pred->seq) != NULL;
	w->pred_first = first;
}

/* watches ---------------------------------------------------------------- */

/*
 * Was @w's entry made by a handle replaced since (its session expired, and
 * the entry with it)?  Then on_expired() is about to start @w over: until
 * it does, a request of @w's on the new session finds its entry missing.
 */
static bool stale_locked(struct zkl_waiter *w)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	return w->gen != T(w)->generation(w->e->t.ctx);
}

/* Our own entry was deleted, not by us: a holder lost it, a waiter fails. */
static void gone_self_locked(struct zkl_waiter *w)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->answered) {
		lose_locked(w, "its entry was deleted by someone else");
	} else if (w->path && !w->deleting && stale_locked(w)) {
		stall_locked(w, S_CHECK);	/* on_expired() starts it over */
	} else if (w->path && !w->deleting) {
		zkl_log(LOG_WARNING, "%s was deleted while it waited", w->path);
		fail_locked(w, -EIO);
	}
}

/* The watch on our own entry: while it waits for a grant without a listing, and held. */
static void own_watcher(zhandle_t *zh, int type, int state, const char *path,
			void *ctx)
{
	struct zkl_waiter *w = ctx;
	struct zkl_engine *e = w->e;

	(void)zh;
	(void)path;
	if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE)
		return;			/* the watch stays armed */
	zkl_mutex_lock(&e->lock);
	w->own_armed = false;
	if (type == ZOO_DELETED_EVENT)
		gone_self_locked(w);
	else if (type == ZOO_CHANGED_EVENT && !w->lost && !w->released)
		own_watch_locked(w);	/* data written: watch on */
	put_locked(w);
	unlock_fire(e);
}

static void own_watch_done(int rc, const char *value, int len,
			   const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	(void)value, (void)len, (void)stat;
	zkl_mutex_lock(&e->lock);
	w->own_inflight = false;
	if (rc == ZOK) {
		w->own_armed = true;
	} else {
		w->refs--;		/* no watch was left */
		if (rc == ZNONODE)
			gone_self_locked(w);
		else if (rc_stalls(rc) && w->answered && w->result == 0 &&
			 !w->lost && !w->released)
			stall_locked(w, S_OWNWATCH);	/* a waiter's own path redoes it */
	}
	put_locked(w);
	unlock_fire(e);
}

/*
 * Watch our own entry, to hear if someone else deletes it.  Armed on the
 * supervisor's tick (on_tick()), not at the grant or when the wait begins:
 * most locks are given back and most waits end sooner, and then cost
 * neither the watch nor its removal.
 */
static void own_watch_locked(struct zkl_waiter *w)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->own_armed || w->own_inflight || !w->path || w->deleting)
		return;
	w->refs += 2;			/* the completion and the watch */
	w->own_inflight = true;
	if (T(w)->wget(w->e->t.ctx, w->path, own_watcher, w, own_watch_done, w) != ZOK) {
		w->refs -= 2;
		w->own_inflight = false;
		stall_locked(w, S_OWNWATCH);
	}
}

static void confirm_done(int rc, const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	(void)stat;
	zkl_mutex_lock(&e->lock);
	if (w->answered || w->state != W_CONFIRMING)
		;
	else if (rc == ZOK)
		answer_locked(w, 0, true);
	else if (rc == ZNONODE)
		gone_self_locked(w);
	else
		trouble_locked(w, rc, S_CHECK, "cannot look up");
	put_locked(w);
	unlock_fire(e);
}

/*
 * The entry @w outlived was the lowest: @w holds the lock if its own entry
 * is still there (someone may have deleted it while it waited).
 */
static void confirm_locked(struct zkl_waiter *w)
{
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	w->state = W_CONFIRMING;
	w->refs++;
	rc = T(w)->exists(w->e->t.ctx, w->path, confirm_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	trouble_locked(w, rc, S_CHECK, "cannot look up");
}

static void pred_watcher(zhandle_t *zh, int type, int state, const char *path,
			 void *ctx)
{
	struct zkl_waiter *w = ctx;
	struct zkl_engine *e = w->e;

	(void)zh;
	(void)path;
	if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE)
		return;			/* the watch stays armed */
	zkl_mutex_lock(&e->lock);
	if (type == ZOO_SESSION_EVENT || w->answered || w->state != W_WATCHING)
		;
	else if (type == ZOO_DELETED_EVENT && w->pred_first)
		confirm_locked(w);	/* it held the lock: nothing before us */
	else
		check_locked(w);
	put_locked(w);
	unlock_fire(e);
}

static void pred_done(int rc, const char *value, int len,
		      const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	(void)value, (void)len, (void)stat;
	zkl_mutex_lock(&e->lock);
	if (rc != ZOK) {
		w->refs--;		/* no watch was left */
		if (w->answered || w->state != W_WATCHING)
			;
		else if (rc == ZNONODE)
			check_locked(w);	/* it went before we looked */
		else
			trouble_locked(w, rc, S_CHECK, "cannot watch before");
	}
	put_locked(w);
	unlock_fire(e);
}

/* Watch w->pred, another client's entry: only we watch it (no herd). */
static void watch_locked(struct zkl_waiter *w)
{
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	w->state = W_WATCHING;
	w->refs += 2;			/* the completion and the watch */
	rc = T(w)->wget(w->e->t.ctx, w->pred, pred_watcher, w, pred_done, w);
	if (rc == ZOK)
		return;
	w->refs -= 2;
	trouble_locked(w, rc, S_CHECK, "cannot watch before");
}

/* listing ---------------------------------------------------------------- */

/*
 * A listing of @w's lock came.  It decides for @w, and for every waiter of
 * ours in that lock that it shows and that is parked: each is granted or
 * learns whom it must outlive (one pass over the sorted listing).
 */
static void learn_locked(struct zkl_waiter *w, const struct String_vector *sv)
{
	struct zkl_queue *q = w->q;
	bool many = q && q->head != q->tail;
	enum zkl_verdict mine = ZKL_MISSING;
	struct zkl_child *kids;
	struct zkl_waiter *x;
	const struct zkl_child *low;
	struct zkl_walk wk;
	size_t n;

	ZKL_ASSERT_HELD(&w->e->lock);
	kids = zkl_parse_children(sv->data, sv->count, &n);
	if (!kids) {
		fail_locked(w, -ENOMEM);
		return;
	}
	if (many) {
		zkl_sort(kids, n);
		zkl_walk_init(&wk, kids, n);
	}
	low = many && n ? &kids[0] : zkl_lowest(kids, n);
	for (x = many ? q->head : w; x; x = many ? x->qnext : NULL) {
		const struct zkl_child *pred = NULL;
		enum zkl_verdict v;

		if (x != w && (x->answered || x->state != W_PARKED))
			continue;
		v = many ? zkl_walk_decide(&wk, x->seq, x->kind, &pred)
			 : zkl_decide(kids, n, x->seq, x->kind, &pred);
		if (x == w)
			mine = v;
		if (v == ZKL_GRANTED)
			x->grant_now = true;
		else if (v == ZKL_WAIT)
			learn_pred_locked(x, pred, pred == low);
	}
	free(kids);

	if (mine == ZKL_MISSING && stale_locked(w)) {
		stall_locked(w, S_CHECK);	/* on_expired() starts it over */
	} else if (mine == ZKL_MISSING) {
		zkl_log(LOG_WARNING, "%s was deleted while it waited", w->path);
		fail_locked(w, -EIO);
	} else if (mine == ZKL_WAIT && (w->flags & ZKL_NONBLOCK)) {
		fail_locked(w, -EAGAIN);
	} else if (mine == ZKL_WAIT) {
		w->state = W_PARKED;	/* wait_locked() below says how */
	}
	for (x = many ? q->head : w; x; x = many ? x->qnext : NULL)
		if (x->grant_now) {
			x->grant_now = false;
			answer_locked(x, 0, false);
		}
	if (!many) {
		settle_locked(w->answered ? w->qnext : w);
		return;
	}
	for (x = q->head; x; x = x->qnext)
		settle_locked(x);
}

static void children_done(int rc, const struct String_vector *strings,
			  const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkl_mutex_lock(&e->lock);
	if (w->answered || w->state != W_CHECKING)
		;
	else if (rc != ZOK)
		trouble_locked(w, rc, S_CHECK, "cannot list the queue of");
	else
		learn_locked(w, strings);
	put_locked(w);
	unlock_fire(e);
}

static void check_locked(struct zkl_waiter *w)
{
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	w->state = W_CHECKING;
	w->refs++;
	rc = T(w)->children(w->e->t.ctx, w->dir, children_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	trouble_locked(w, rc, S_CHECK, "cannot list the queue of");
}

/* creating --------------------------------------------------------------- */

/* Our entry exists (created or found again): take it as ours. */
static void adopt_locked(struct zkl_waiter *w, const char *path, int64_t czxid,
			 bool prelisted)
{
	struct zkl_child me;

	ZKL_ASSERT_HELD(&w->e->lock);
	free(w->path);
	w->path = strdup(path);
	w->czxid = czxid;
	if (!w->path || !zkn_parse(zkn_base(path), &me)) {
		zkl_log(LOG_ERR, "created %s but cannot read its sequence", path);
		fail_locked(w, -EIO);
		return;
	}
	w->seq = me.seq;
	queue_insert_locked(w);
	if (w->answered || w->released) {
		delete_locked(w);	/* given up while it was being made */
		return;
	}
	if (prelisted)
		w->state = W_CHECKING;	/* its reply comes next: children_done() */
	else
		wait_locked(w);
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
	zkl_mutex_lock(&e->lock);
	pre = w->prelisted;
	w->prelisted = false;		/* its reply, if any, is ignored but here */
	if (rc == ZOK)
		adopt_locked(w, path, stat->czxid, pre);
	else if (zk_rc_unknown(rc))
		stall_locked(w, S_RESOLVE);	/* it may exist: find it, never guess */
	else if (rc_stalls(rc))
		stall_locked(w, S_CREATE);	/* never sent */
	else {
		zkl_log(LOG_WARNING, "cannot enqueue in %s: %s", w->dir, zerror(rc));
		answer_locked(w, zk_errno(rc), false);
	}
	put_locked(w);
	unlock_fire(e);
}

/* Send @w's create. Return: ZOK (sent, or parked to redo), else why not. */
static int send_create_locked(struct zkl_waiter *w)
{
	struct zkl_queue *q;
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	w->state = W_CREATING;
	w->refs++;
	rc = T(w)->create(w->e->t.ctx, w->prefix, w->data, w->len,
			 ZOO_EPHEMERAL_SEQUENTIAL, create_done, w, &w->gen);
	if (rc == ZOK) {
		/*
		 * Unless it will be parked, it must list the children: send that
		 * now.  One session's requests are done in order, so the listing
		 * shows the new entry, and the grant costs one round trip.
		 */
		q = queue_find_dir_locked(w->e, w->dir);
		if (!q || !q->tail || q->tail->answered || (w->flags & ZKL_NONBLOCK)) {
			w->refs++;
			w->prelisted = T(w)->children(w->e->t.ctx, w->dir, children_done, w) == ZOK;
			if (!w->prelisted)
				w->refs--;
		}
		return ZOK;
	}
	w->refs--;
	if (rc_stalls(rc)) {
		stall_locked(w, S_CREATE);
		return ZOK;
	}
	zkl_log(LOG_WARNING, "cannot enqueue %s: %s", w->prefix, zerror(rc));
	return rc;
}

static void create_locked(struct zkl_waiter *w)
{
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->answered || w->released)
		return;			/* nothing to make any more */
	rc = send_create_locked(w);
	if (rc != ZOK)
		answer_locked(w, zk_errno(rc), false);
}

static void resolve_next_locked(struct zkl_waiter *w);

static void resolve_get_done(int rc, const char *value, int len,
			     const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	enum zka_verdict v = ZKA_OTHER;

	zkl_mutex_lock(&e->lock);
	/*
	 * Our nonce is world-readable: an entry is ours only if it is also
	 * unchanged since its create and of the session our create went on.
	 */
	if (rc == ZOK && stat)
		v = zka_candidate(value, len, w->nonce, stat->version,
				  stat->ephemeralOwner,
				  T(w)->session_of(w->e->t.ctx, w->gen));
	if (v == ZKA_PLANTED)
		zkl_log(LOG_WARNING, "%s/%s carries our nonce but is not ours "
			"(version %d, owner 0x%llx): left alone", w->dir,
			w->cands[w->ci], (int)stat->version,
			(unsigned long long)stat->ephemeralOwner);
	if (v == ZKA_OURS) {
		char *path = zkn_join(w->dir, w->cands[w->ci]);

		zkl_log(LOG_NOTICE, "found %s again after an unknown create", path);
		free_cands(w);
		if (path)
			adopt_locked(w, path, stat->czxid, false);
		else
			fail_locked(w, -ENOMEM);
		free(path);
	} else if (rc_stalls(rc)) {
		free_cands(w);
		stall_locked(w, S_RESOLVE);
	} else {
		w->ci++;
		resolve_next_locked(w);
	}
	put_locked(w);
	unlock_fire(e);
}

/* Look at the next candidate; when none is left, the create never happened. */
static void resolve_next_locked(struct zkl_waiter *w)
{
	char *path;
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (w->ci >= w->ncand) {
		free_cands(w);
		create_locked(w);
		return;
	}
	path = zkn_join(w->dir, w->cands[w->ci]);
	if (!path) {
		fail_locked(w, -ENOMEM);
		return;
	}
	w->refs++;
	rc = T(w)->get(w->e->t.ctx, path, resolve_get_done, w);
	free(path);
	if (rc == ZOK)
		return;
	w->refs--;
	free_cands(w);
	stall_locked(w, S_RESOLVE);
}

static void resolve_children_done(int rc, const struct String_vector *sv,
				  const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	const char *base = zkn_base(w->prefix);
	size_t bl = strlen(base);
	struct zkl_child c;

	/* answered meanwhile or not, an entry of ours must be found */
	zkl_mutex_lock(&e->lock);
	if (rc != ZOK) {
		trouble_locked(w, rc, S_RESOLVE, "cannot list the queue of");
	} else {
		free_cands(w);
		w->cands = calloc((size_t)sv->count + 1, sizeof(*w->cands));
		for (int i = 0; w->cands && i < sv->count; i++)
			if (strncmp(sv->data[i], base, bl) == 0 &&
			    zkn_parse(sv->data[i], &c) && strlen(sv->data[i]) <= bl + 11)
				w->cands[w->ncand++] = strdup(sv->data[i]);
		if (w->cands)
			resolve_next_locked(w);
		else
			fail_locked(w, -ENOMEM);
	}
	put_locked(w);
	unlock_fire(e);
}

static void resolve_locked(struct zkl_waiter *w)
{
	int rc;

	ZKL_ASSERT_HELD(&w->e->lock);
	w->state = W_RESOLVING;
	w->refs++;
	rc = T(w)->children(w->e->t.ctx, w->dir, resolve_children_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	stall_locked(w, S_RESOLVE);
}

/* session events ---------------------------------------------------------- */

/* Redo what @w could not do while the session was away. */
static void resume_locked(struct zkl_waiter *w)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	switch (unstall_locked(w)) {
	case S_NONE:
		break;
	case S_CREATE:
		create_locked(w);
		break;
	case S_RESOLVE:
		resolve_locked(w);
		break;
	case S_CHECK:
		if (!w->answered)
			check_locked(w);
		break;
	case S_OWNWATCH:
		if (!w->lost && !w->released)
			own_watch_locked(w);
		break;
	case S_DELETE:
		delete_locked(w);
		break;
	}
}

/* Run @step on every waiter, oldest first. */
static void for_each_waiter(struct zkl_engine *e, void (*step)(struct zkl_waiter *))
{
	struct zkl_waiter *w, **v = NULL;
	size_t n = 0, cap = 0;

	zkl_mutex_lock(&e->lock);
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
		put_locked(v[i]);
	unlock_fire(e);
	free(v);
}

static void on_silent_step(struct zkl_waiter *w)
{
	lose_locked(w, "nothing heard from ZooKeeper for the session timeout");
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
	if (!stale_locked(w) && w->stall != S_CREATE)
		return;
	unstall_locked(w);
	w->deleting = true;
	lose_locked(w, "the ZooKeeper session expired");
	queue_unlink_locked(w);
	w->pred_known = w->pred_local = w->pred_first = false;
	w->own_armed = w->own_inflight = false;	/* that session's watches are gone */
	if (w->answered || w->released)
		return;
	free(w->path);
	w->path = NULL;
	w->deleting = false;
	create_locked(w);
}

static void on_connected(void *arg)
{
	for_each_waiter(arg, resume_locked);
}

static void on_silent(void *arg)
{
	for_each_waiter(arg, on_silent_step);
}

static void on_expired(void *arg)
{
	struct zkl_engine *e = arg;

	for_each_waiter(e, on_expired_step);
	/* those of the new session may have waited behind old ones */
	zkl_mutex_lock(&e->lock);
	for (size_t i = 0; i < QBUCKETS; i++)
		for (struct zkl_queue *q = e->qtab[i]; q; q = q->hnext)
			for (struct zkl_waiter *w = q->head; w; w = w->qnext)
				settle_locked(w);
	unlock_fire(e);
}

/*
 * Arm the watch on every entry not watched yet that holds the lock, or that
 * waits for an entry other than one of its own mount's not yet granted: if
 * someone deletes it, the holder must hear of the loss, and the waiter must
 * fail so that ours behind it move on (see own_watch_locked()).
 */
static void on_tick(void *arg)
{
	struct zkl_engine *e = arg;

	/*
	 * A stall waits for a session event to be redone; one that met a
	 * failure no event follows (ZSESSIONMOVED, say) is redone here.
	 */
	for_each_waiter(e, resume_locked);
	zkl_mutex_lock(&e->lock);
	for (struct zkl_waiter *w = e->all; w; w = w->next)
		if ((w->state == W_HELD || w->state == W_WATCHING ||
		     w->state == W_LOCALWAIT) && w->path && !w->lost && !w->released &&
		    !w->deleting && !w->own_armed && !w->own_inflight &&
		    w->stall == S_NONE)
			own_watch_locked(w);
	unlock_fire(e);
}

struct zks_events zkl_engine_events(struct zkl_engine *e)
{
	return (struct zks_events){ on_connected, on_silent, on_expired, on_tick, e };
}

/* the API ------------------------------------------------------------------ */

struct zkl_engine *zkl_engine_new(const struct zkl_transport *t,
				  enum zkl_naming naming, zkl_lost_fn lost)
{
	struct zkl_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->t = *t;
	e->naming = naming;
	e->lost = lost;
	zkl_mutex_init(&e->lock, ZKL_RANK_ENGINE, "engine->lock");
	return e;
}

int zkl_enqueue(struct zkl_engine *e, const char *dir, const char *name,
		enum zkl_kind kind, int flags, const char *data, int len,
		uint32_t owner, zkl_done_fn done, void *arg,
		struct zkl_waiter **out)
{
	struct zkl_waiter *w = calloc(1, sizeof(*w));
	uint64_t nonce = 0;
	char *base = NULL;
	int rc;

	if (!w)
		return -ENOMEM;
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		nonce = (uint64_t)(uintptr_t)w ^ (uint64_t)time(NULL);
	snprintf(w->nonce, sizeof(w->nonce), "zkl=%016" PRIx64 "\n", nonce);
	w->e = e;
	w->kind = kind;
	w->flags = flags;
	w->owner = owner;
	w->done = done;
	w->arg = arg;
	w->dir = strdup(dir);
	w->len = len + (int)strlen(w->nonce);
	w->data = malloc((size_t)w->len + 1);
	if (w->data) {
		memcpy(w->data, data, (size_t)len);
		strcpy(w->data + len, w->nonce);
	}
	if (asprintf(&base, "%s%s", name, zkn_marker(e->naming, kind)) > 0)
		w->prefix = zkn_join(dir, base);
	free(base);
	if (!w->dir || !w->data || !w->prefix) {
		waiter_free(w);
		return -ENOMEM;
	}
	zkl_mutex_lock(&e->lock);
	w->refs = 1;			/* the caller's */
	w->prev = e->all_tail;
	if (e->all_tail)
		e->all_tail->next = w;
	else
		e->all = w;
	e->all_tail = w;
	rc = send_create_locked(w);
	if (rc != ZOK) {		/* refused at once: no done, an error */
		put_locked(w);
		zkl_mutex_unlock(&e->lock);
		return zk_errno(rc);
	}
	*out = w;
	zkl_mutex_unlock(&e->lock);
	return 0;
}

void zkl_cancel(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	zkl_mutex_lock(&e->lock);
	if (!w->answered)
		fail_locked(w, -EINTR);
	unlock_fire(e);
}

static void unwatch_done(int rc, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	zkl_mutex_lock(&e->lock);
	if (rc == ZOK)
		put_locked(w);		/* the watch's: it will never fire now */
	put_locked(w);
	unlock_fire(e);
}

/*
 * Does a waiter of ours watch @w's entry as another client's?  It can, if it
 * began to before @w found that entry again after an unknown create.
 */
static bool watched_by_another_locked(struct zkl_waiter *w)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	for (struct zkl_waiter *x = w->q ? w->qnext : NULL; x; x = x->qnext)
		if (x->state == W_WATCHING && x->pred_known && x->pred_seq == w->seq)
			return true;
	return false;
}

/*
 * Before we delete our own entry, take our watch off it, so that the delete
 * notifies nobody but a waiter of another client: at most one notification
 * per release.  No other watch of this session is on it (waiters of ours
 * wait for it locally; see also gone_locked()) but in the case above, so
 * removing every one is removing ours.  Requests of one session are done in
 * order, so the removal comes first.  The client knows a watch only once
 * the reply that set it is in, so a release that comes sooner waits for it
 * (zkl_release(), own_watch_done()).
 */
static void unwatch_locked(struct zkl_waiter *w)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	/*
	 * Removing every watch on the path would take that waiter's too, and
	 * with it the one event that gives its reference back: let both fire.
	 */
	if (!w->own_armed || !w->path || w->deleting || watched_by_another_locked(w))
		return;
	w->own_armed = false;
	w->refs++;
	if (T(w)->unwatch(w->e->t.ctx, w->path, own_watcher, w, unwatch_done, w) != ZOK)
		w->refs--;		/* not there (it fired): nothing to undo */
}

void zkl_release(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	zkl_mutex_lock(&e->lock);
	w->released = true;
	/*
	 * Delete now, even while the watch on our own entry is being set: the
	 * delete goes behind it on the session, so whatever this mount sends
	 * about the lock after close() (a listing, an rmdir) sees the entry
	 * gone.  Waiting for that reply let a listing overtake the delete.
	 * The watch, set first, then fires once on our own delete and is let
	 * go (own_watcher(): a released waiter loses nothing).  Else the
	 * watch is taken off first, so that the delete notifies nobody of ours.
	 */
	unwatch_locked(w);
	delete_locked(w);
	put_locked(w);
	unlock_fire(e);
}

void zkl_info(struct zkl_waiter *w, struct zkl_info *info, char **path)
{
	struct zkl_engine *e = w->e;

	zkl_mutex_lock(&e->lock);
	info->created = w->path != NULL;
	info->granted = w->answered && w->result == 0;
	info->lost = w->lost;
	info->seq = w->seq;
	info->czxid = w->czxid;
	info->kind = w->kind;
	if (path)
		*path = w->path ? strdup(w->path) : NULL;
	zkl_mutex_unlock(&e->lock);
}

bool zkl_owner(struct zkl_engine *e, const char *path, uint32_t *owner)
{
	const char *slash = strrchr(path, '/');
	struct zkl_queue *q;
	struct zkl_waiter *w = NULL;
	char *dir;

	if (!slash)
		return false;
	dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!dir)
		return false;
	zkl_mutex_lock(&e->lock);
	q = queue_find_dir_locked(e, dir);
	for (w = q ? q->head : NULL; w && (!w->path || strcmp(w->path, path) != 0);
	     w = w->qnext)
		;
	if (w)
		*owner = w->owner;
	zkl_mutex_unlock(&e->lock);
	free(dir);
	return w != NULL;
}

static void on_shutdown_step(struct zkl_waiter *w)
{
	w->e->shutdown = true;		/* nobody moves on: every one is answered */
	answer_locked(w, -ESHUTDOWN, false);
}

void zkl_engine_shutdown(struct zkl_engine *e)
{
	for_each_waiter(e, on_shutdown_step);
}

void zkl_engine_free(struct zkl_engine *e)
{
	while (e->all) {
		struct zkl_waiter *w = e->all;

		e->all = w->next;
		waiter_free(w);
	}
	for (size_t i = 0; i < QBUCKETS; i++)
		while (e->qtab[i]) {
			struct zkl_queue *q = e->qtab[i];

			e->qtab[i] = q->hnext;
			free(q->dir);
			free(q);
		}
	zkl_mutex_destroy(&e->lock);
	free(e);
}
