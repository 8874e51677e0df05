/* zk/waiter.c - a waiter's small machines and the one function that moves
 * each (checked against zk/moves.h), its references, its stalls, and its
 * answer: granted or refused, and the done callback queued to run once the
 * engine's lock is dropped. */
#include "zk/engine.h"

#include <stdio.h>
#include <stdlib.h>

#include "zk/naming.h"

void zke_free_cands(struct zkl_waiter *w)
{
	for (int i = 0; i < w->create.ncand; i++)
		free(w->create.cands[i]);
	free(w->create.cands);
	w->create.cands = NULL;
	w->create.ncand = w->create.ci = 0;
}

void zke_waiter_free(struct zkl_waiter *w)
{
	zke_free_cands(w);
	free(w->req.dir);
	free(w->req.prefix);
	free(w->ours.path);
	free(w->pred.path);
	free(w->caller.data);
	free(w);
}

void zke_put_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (--w->refs > 0)
		return;
	zke_dequeue_locked(w, false, false);	/* normally already out of its queue */
	if (w->prev)
		w->prev->next = w->next;
	else
		e->all = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		e->all_tail = w->prev;
	if (e->on_dir)
		e->on_dir(e->on_dir_arg, w->req.dir, -1);
	zke_waiter_free(w);
}

void zke_unlock_fire(struct zkl_engine *e)
{
	while (e->fire) {
		struct zkl_waiter *list = e->fire, *w, *next;

		e->fire = e->fire_tail = NULL;
		zkmx_unlock(&e->lock);
		for (w = list; w; w = w->fnext)
			w->caller.done(w, w->told.result, w->caller.arg);
		zkmx_lock(&e->lock);
		for (w = list; w; w = next) {
			next = w->fnext;
			zke_put_locked(w);	/* the answer's reference */
		}
	}
	zkmx_unlock(&e->lock);
}

/*
 * The small machines' names and legal moves, made from their lists in
 * zk/moves.h (which docs/DESIGN.md's tables are printed from too).
 */
#define NAME(s, why) #s,
#define W_MOVE(f, t, why) { W_##f, W_##t },
#define S_MOVE(f, t, why) { S_##f, S_##t },
#define ANS_MOVE(f, t, why) { ANS_##f, ANS_##t },
#define ENTRY_MOVE(f, t, why) { ENTRY_##f, ENTRY_##t },
#define OWN_MOVE(f, t, why) { OWN_##f, OWN_##t },
static const char *const state_names[] = { ZKE_WSTATES(NAME) };
static const char *const stall_names[] = { ZKE_STALLS(NAME) };
static const char *const ans_names[] = { ZKE_ANSWERS(NAME) };
static const char *const entry_names[] = { ZKE_ENTRIES(NAME) };
static const char *const own_names[] = { ZKE_WATCHES(NAME) };
static const struct zke_move state_moves[] = { ZKE_WSTATE_MOVES(W_MOVE) };
static const struct zke_move stall_moves[] = { ZKE_STALL_MOVES(S_MOVE) };
static const struct zke_move ans_moves[] = { ZKE_ANSWER_MOVES(ANS_MOVE) };
static const struct zke_move entry_moves[] = { ZKE_ENTRY_MOVES(ENTRY_MOVE) };
static const struct zke_move own_moves[] = { ZKE_WATCH_MOVES(OWN_MOVE) };
#undef NAME
#undef W_MOVE
#undef S_MOVE
#undef ANS_MOVE
#undef ENTRY_MOVE
#undef OWN_MOVE

/* A move of one of @w's small machines: listed, or (sanitizer builds) abort. */
static void check_move(const struct zkl_waiter *w, const char *what,
		       const struct zke_move *moves, size_t n, const char *const *names,
		       int from, int to)
{
	zke_check_move(moves, n, names, what, from, to, "waiter %s",
		       w->ours.path ? w->ours.path : w->req.prefix);
}

/*
 * What ties a waiter's fields together, beyond each machine's own moves.
 * Return: the first that does not hold, or NULL.
 */
static const char *broken_locked(const struct zkl_waiter *w)
{
	bool waiting = w->sm.state == W_PARKED || w->sm.state == W_LOCALWAIT ||
		       w->sm.state == W_WATCHING || w->sm.state == W_CONFIRMING ||
		       w->sm.state == W_SEMWAIT;

	if ((w->sm.state == W_HELD || w->sm.state == W_CACHED) && w->sm.ans != ANS_GRANTED)
		return "HELD or CACHED, but not answered granted";
	if (w->sm.ans == ANS_NONE && (w->sm.state == W_HELD || w->sm.state == W_CACHED ||
				   w->sm.state == W_DONE))
		return "HELD, CACHED or DONE without an answer";
	if (w->sm.ans == ANS_LOST && w->sm.state != W_DONE)
		return "lost, but not DONE";
	if (w->sm.state == W_CACHED && (!w->caller.released || w->sm.entry != ENTRY_LIVE))
		return "CACHED, but not given back with its entry there";
	if (waiting && (w->sm.ans != ANS_NONE || w->sm.entry != ENTRY_LIVE || !w->ours.path))
		return "waits, but answered or without its entry";
	if (w->sm.state == W_LOCALWAIT && (w->pred.ahead == AHEAD_UNKNOWN ||
					!zke_queue_find_locked((struct zkl_waiter *)w, w->pred.seq)))
		return "LOCALWAIT, but not behind an entry of ours";
	if (w->sm.state == W_WATCHING && (!w->pred.path || w->pred.ahead == AHEAD_UNKNOWN))
		return "WATCHING, but nothing to watch";
	if ((w->sm.own != OWN_OFF || w->sm.dirwatch != OWN_OFF) && !w->ours.path)
		return "a watch on an entry it does not know";
	if (w->sm.entry == ENTRY_NONE && w->q)
		return "in a queue without an entry";
	if (w->verdict.marked)
		return "marked outside a pass";
	if (w->q && ((w->qprev ? w->qprev->qnext : w->q->head) != w ||
		     (w->qnext ? w->qnext->qprev : w->q->tail) != w))
		return "its queue's links do not lead to it";
	if (w->q && w->qnext && zkn_seq_cmp(w->qnext->ours.seq, w->ours.seq) <= 0)
		return "its queue is out of order";
	return NULL;
}

const char *zke_invariants_locked(struct zkl_engine *e)
{
	static char why[512];

	ZKMX_ASSERT_HELD(&e->lock);
	for (struct zkl_waiter *w = e->all; w; w = w->next) {
		const char *broken = broken_locked(w);

		if (broken) {
			snprintf(why, sizeof(why), "waiter %s (%s, answer %s, entry %s): %s",
				 w->ours.path ? w->ours.path : w->req.prefix,
				 state_names[w->sm.state],
				 ans_names[w->sm.ans], entry_names[w->sm.entry], broken);
			return why;
		}
	}
	return NULL;
}

void zke_set_state_locked(struct zkl_waiter *w, enum wstate to)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	check_move(w, "state", ZKE_MOVES(state_moves), state_names, w->sm.state, to);
	w->sm.state = to;
}

void zke_set_own_locked(struct zkl_waiter *w, enum own to)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	check_move(w, "own watch", ZKE_MOVES(own_moves), own_names, w->sm.own, to);
	w->sm.own = to;
}

void zke_set_dirwatch_locked(struct zkl_waiter *w, enum own to)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	check_move(w, "child watch", ZKE_MOVES(own_moves), own_names, w->sm.dirwatch, to);
	w->sm.dirwatch = to;
}

/* The one way the answer moves: NONE -> GRANTED or REFUSED, GRANTED -> LOST. */
static void set_answer_locked(struct zkl_waiter *w, enum answer to)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	check_move(w, "answer", ZKE_MOVES(ans_moves), ans_names, w->sm.ans, to);
	w->sm.ans = to;
}

void zke_set_lost_locked(struct zkl_waiter *w, enum zkm_loss why)
{
	set_answer_locked(w, ANS_LOST);
	w->told.loss = why;
}

void zke_set_entry_locked(struct zkl_waiter *w, enum entry to)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	check_move(w, "entry", ZKE_MOVES(entry_moves), entry_names, w->sm.entry, to);
	w->sm.entry = to;
}

void zke_stall_locked(struct zkl_waiter *w, enum stall what)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	/* a listing redone arms the own watch a waiter needs (zk/sem.c):
	 * the watch's stall gives way to the listing's, not the other way */
	if (w->sm.stall == S_CHECK && what == S_OWNWATCH)
		return;
	/* a stalled step stalls again, or gives way to the delete */
	check_move(w, "stall", ZKE_MOVES(stall_moves), stall_names, w->sm.stall, what);
	if (w->sm.stall == S_NONE)
		w->refs++;
	w->sm.stall = what;
}

enum stall zke_unstall_locked(struct zkl_waiter *w)
{
	enum stall what = w->sm.stall;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (what != S_NONE) {
		check_move(w, "stall", ZKE_MOVES(stall_moves), stall_names, what, S_NONE);
		w->sm.stall = S_NONE;
		zke_put_locked(w);		/* the caller holds another reference */
	}
	return what;
}


void zke_answer_locked(struct zkl_waiter *w, int err, bool advance)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (zke_answered(w))
		return;
	set_answer_locked(w, err ? ANS_REFUSED : ANS_GRANTED);
	w->told.result = err;
	if (err) {
		zkm_refused(err);
	} else {
		w->told.t_grant = zkm_now_us();
		zkm_granted(w->told.t_grant - w->caller.t_enq);
	}
	zke_set_state_locked(w, err ? W_DONE : W_HELD);
	zke_fire_locked(w);
	if (advance)
		zke_rewait_locked(w->qnext);
}

void zke_fire_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	ZKMX_ASSERT_HELD(&w->e->lock);
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
	ZKMX_ASSERT_HELD(&w->e->lock);
	if (zke_answered(w))
		return false;		/* cancelled meanwhile */
	if (zke_silent_locked(w->e)) {
		zke_set_state_locked(w, W_CHECKING);
		zke_stall_locked(w, S_CHECK);
		return false;
	}
	w->doubt.in = w->e->doubt;	/* a round trip after the doubt says */
	zke_answer_locked(w, 0, advance);
	return true;
}
