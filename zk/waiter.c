/* zk/waiter.c - a waiter's references and answers, its stalls, and the
 * mount's own queue of entries in each lock (see zk/lock.c). */
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

/* queues ------------------------------------------------------------------ */

static struct zkl_queue **qslot(struct zkl_engine *e, const char *dir)
{
	return &e->qtab[zkn_hash(dir) % QBUCKETS];
}

/* Our entries in the lock @dir, or NULL if none. */
struct zkl_queue *zke_queue_find_dir_locked(struct zkl_engine *e, const char *dir)
{
	struct zkl_queue *q;

	ZKL_ASSERT_HELD(&e->lock);
	for (q = *qslot(e, dir); q && strcmp(q->dir, dir) != 0; q = q->hnext)
		;
	return q;
}

/* Put @w, whose entry now exists, among our entries in its lock. */
void zke_queue_insert_locked(struct zkl_waiter *w)
{
	struct zkl_queue **slot = qslot(w->e, w->dir);
	struct zkl_queue *q = zke_queue_find_dir_locked(w->e, w->dir);
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

void zke_queue_unlink_locked(struct zkl_waiter *w)
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
struct zkl_waiter *zke_queue_find_locked(struct zkl_waiter *w, int32_t seq)
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

void zke_free_cands(struct zkl_waiter *w)
{
	for (int i = 0; i < w->ncand; i++)
		free(w->cands[i]);
	free(w->cands);
	w->cands = NULL;
	w->ncand = w->ci = 0;
}

void zke_waiter_free(struct zkl_waiter *w)
{
	zke_free_cands(w);
	free(w->dir);
	free(w->prefix);
	free(w->path);
	free(w->pred);
	free(w->data);
	free(w);
}


void zke_put_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (--w->refs > 0)
		return;
	zke_gone_locked(w, false, false);	/* normally already out of its queue */
	if (w->prev)
		w->prev->next = w->next;
	else
		e->all = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		e->all_tail = w->prev;
	zke_waiter_free(w);
}

/* Drop the engine's lock, then run the done callbacks answered under it. */
void zke_unlock_fire(struct zkl_engine *e)
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
			zke_put_locked(w);	/* the answer's reference */
		}
	}
	zkl_mutex_unlock(&e->lock);
}

/*
 * The legal moves of a waiter's state (see the table in zk/lock.c): bit
 * @to of legal[@from].  Observed in 30,000 simulated schedules and derived
 * from the code: every state before an answer may start over (CREATING,
 * after an expiry), list (CHECKING) or be answered (DONE); a grant (HELD)
 * comes only from a listing, a hand-off or a confirmation; HELD only ends
 * (DONE, lost) or lingers (CACHED), and CACHED is granted again (HELD) or
 * ends; DONE only resolves an orphan entry of an unknown create.
 */
#define B(s) (1u << (s))
#define STARTS_OVER (B(W_CREATING) | B(W_CHECKING) | B(W_DONE))
static const unsigned legal[] = {
	[W_CREATING]	= STARTS_OVER | B(W_RESOLVING) | B(W_PARKED) | B(W_LOCALWAIT),
	[W_RESOLVING]	= STARTS_OVER | B(W_RESOLVING) | B(W_PARKED),
	[W_CHECKING]	= STARTS_OVER | B(W_PARKED) | B(W_HELD),
	[W_PARKED]	= STARTS_OVER | B(W_PARKED) | B(W_LOCALWAIT) | B(W_WATCHING) |
			  B(W_SEMWAIT) | B(W_HELD),
	[W_LOCALWAIT]	= STARTS_OVER | B(W_PARKED) | B(W_LOCALWAIT) | B(W_WATCHING) |
			  B(W_HELD),
	[W_WATCHING]	= STARTS_OVER | B(W_CONFIRMING) | B(W_HELD),
	[W_CONFIRMING]	= STARTS_OVER | B(W_HELD),
	[W_SEMWAIT]	= STARTS_OVER | B(W_PARKED) | B(W_HELD),
	[W_HELD]	= B(W_DONE) | B(W_CACHED),
	[W_CACHED]	= B(W_HELD) | B(W_DONE),
	[W_DONE]	= B(W_RESOLVING),
};
#undef STARTS_OVER
#undef B

static const char *const state_names[] = {
	"CREATING", "RESOLVING", "CHECKING", "PARKED", "LOCALWAIT",
	"WATCHING", "CONFIRMING", "SEMWAIT", "HELD", "CACHED", "DONE",
};

/*
 * A move of one of @w's small state machines: allowed if @ok (its
 * table's row has it).  The sanitizer builds abort on any other, naming it.
 */
static void check_move(const struct zkl_waiter *w, const char *what, bool ok,
		       const char *from, const char *to)
{
#ifdef ZKL_LOCKCHECK
	if (!ok) {
		fprintf(stderr, "zklockfs: waiter %s: illegal move of its %s: %s -> %s\n",
			w->path ? w->path : w->prefix, what, from, to);
		abort();
	}
#else
	(void)w, (void)what, (void)ok, (void)from, (void)to;
#endif
}

void zke_set_state_locked(struct zkl_waiter *w, enum wstate to)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	check_move(w, "state", legal[w->state] & (1u << to), state_names[w->state],
		   state_names[to]);
	w->state = to;
}

static const unsigned legal_own[] = {
	[OWN_OFF] = 1u << OWN_OFF | 1u << OWN_SETTING,
	[OWN_SETTING] = 1u << OWN_OFF | 1u << OWN_ARMED,
	[OWN_ARMED] = 1u << OWN_OFF,
};
static const char *const own_names[] = { "OFF", "SETTING", "ARMED" };

void zke_set_own_locked(struct zkl_waiter *w, enum own to)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	check_move(w, "own watch", legal_own[w->own] & (1u << to), own_names[w->own],
		   own_names[to]);
	w->own = to;
}

void zke_set_dwatch_locked(struct zkl_waiter *w, enum own to)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	check_move(w, "child watch", legal_own[w->dwatch] & (1u << to),
		   own_names[w->dwatch], own_names[to]);
	w->dwatch = to;
}

void zke_set_answer_locked(struct zkl_waiter *w, enum answer to)
{
	static const unsigned legal_ans[] = {
		[ANS_NONE] = 1u << ANS_GRANTED | 1u << ANS_REFUSED,
		[ANS_GRANTED] = 1u << ANS_LOST,
	};
	static const char *const ans_names[] = { "NONE", "GRANTED", "REFUSED", "LOST" };

	ZKL_ASSERT_HELD(&w->e->lock);
	check_move(w, "answer", legal_ans[w->ans] & (1u << to), ans_names[w->ans],
		   ans_names[to]);
	w->ans = to;
}

void zke_set_entry_locked(struct zkl_waiter *w, enum entry to)
{
	static const unsigned legal_entry[] = {
		[ENTRY_NONE] = 1u << ENTRY_LIVE,
		[ENTRY_LIVE] = 1u << ENTRY_DELETING | 1u << ENTRY_GONE,
		[ENTRY_DELETING] = 1u << ENTRY_LIVE | 1u << ENTRY_GONE,
		[ENTRY_GONE] = 1u << ENTRY_NONE,
	};
	static const char *const entry_names[] = { "NONE", "LIVE", "DELETING", "GONE" };

	ZKL_ASSERT_HELD(&w->e->lock);
	check_move(w, "entry", legal_entry[w->entry] & (1u << to), entry_names[w->entry],
		   entry_names[to]);
	w->entry = to;
}

/*
 * Park @w until the session is back, to redo @what (zke_unstall_locked()
 * takes it out).  A parked waiter holds a reference of its own: its caller
 * may have given it up (an interrupted open whose create is unresolved),
 * and the redo must still happen.
 */
void zke_stall_locked(struct zkl_waiter *w, enum stall what)
{
	static const char *const stall_names[] = {
		"NONE", "CREATE", "RESOLVE", "CHECK", "OWNWATCH", "DELETE",
	};

	ZKL_ASSERT_HELD(&w->e->lock);
	/* a stalled step stalls again, or gives way to the delete */
	check_move(w, "stall", what != S_NONE && (w->stall == S_NONE ||
		   w->stall == what || what == S_DELETE),
		   stall_names[w->stall], stall_names[what]);
	if (w->stall == S_NONE)
		w->refs++;
	w->stall = what;
}

/* Take @w out of the parked state. Return: what was to be redone. */
enum stall zke_unstall_locked(struct zkl_waiter *w)
{
	enum stall what = w->stall;

	ZKL_ASSERT_HELD(&w->e->lock);
	if (what != S_NONE) {
		w->stall = S_NONE;
		zke_put_locked(w);		/* the caller holds another reference */
	}
	return what;
}


/*
 * Decide @w's answer; done runs at zke_unlock_fire().  With @advance, the next
 * waiter of ours, which may have been parked behind @w, moves on.
 */
void zke_answer_locked(struct zkl_waiter *w, int err, bool advance)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (zke_answered(w))
		return;
	zke_set_answer_locked(w, err ? ANS_REFUSED : ANS_GRANTED);
	w->result = err;
	if (err) {
		zkl_metrics_refused(err);
	} else {
		w->t_grant = zkl_metrics_now_us();
		zkl_metrics_granted(w->t_grant - w->t_enq);
	}
	zke_set_state_locked(w, err ? W_DONE : W_HELD);
	zke_fire_locked(w);
	if (advance)
		zke_settle_locked(w->qnext);
}

void zke_fire_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	ZKL_ASSERT_HELD(&w->e->lock);
	w->refs++;			/* held across done */
	w->fnext = NULL;
	if (e->fire_tail)
		e->fire_tail->fnext = w;
	else
		e->fire = w;
	e->fire_tail = w;
}

bool zke_grant_locked(struct zkl_waiter *w, bool advance)
{
	ZKL_ASSERT_HELD(&w->e->lock);
	if (zke_answered(w))
		return false;		/* cancelled meanwhile */
	if (zke_silent_locked(w->e)) {
		zke_set_state_locked(w, W_CHECKING);
		zke_stall_locked(w, S_CHECK);
		return false;
	}
	zke_answer_locked(w, 0, advance);
	return true;
}
