/*
 * zk/engine.h - the lock engine's insides, shared by its files (see
 * zk/lock.h for the contract and zk/lock.c for how a waiter lives).
 *
 * Not an API: only the engine's ten files (listed below, each with what
 * it exports) and the simulator's checker (tests/sim/check.c) include it,
 * as the ZooKeeper C client's zk_adaptor.h is shared by its own files.
 * Every zke_*_locked() function runs with engine->lock held (asserted in
 * the sanitizer builds).  Of the others, the completions and watchers take
 * it; zke_unlock_fire() drops it; zke_free_cands() and zke_waiter_free()
 * need none (the waiter is no one else's by then).
 */
#ifndef ZK_ENGINE_H
#define ZK_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "zk/errno.h"
#include "zk/lock.h"
#include "zk/metrics.h"
#include "zk/moves.h"
#include "zk/mutex.h"

/* The small machines' states, and their legal moves: zk/moves.h. */
#define ZKE_ENUM_W(s, why) W_##s,
#define ZKE_ENUM_S(s, why) S_##s,
#define ZKE_ENUM_ANS(s, why) ANS_##s,
#define ZKE_ENUM_ENTRY(s, why) ENTRY_##s,
#define ZKE_ENUM_OWN(s, why) OWN_##s,
enum wstate { ZKE_WSTATES(ZKE_ENUM_W) };	/* where it is */
enum stall { ZKE_STALLS(ZKE_ENUM_S) };	/* what to redo when the session is back */
enum answer { ZKE_ANSWERS(ZKE_ENUM_ANS) };	/* what the caller was told */
enum entry { ZKE_ENTRIES(ZKE_ENUM_ENTRY) };	/* our entry; its path names it but in NONE */
enum own { ZKE_WATCHES(ZKE_ENUM_OWN) };	/* the own watch, and the child watch */

/* Whom a listing showed we must outlive: learn_pred_locked() of zk/wait.c. */
enum ahead {
	AHEAD_UNKNOWN,		/* no listing yet, or it went */
	AHEAD_THEIRS,		/* another client's entry */
	AHEAD_THEIRS_LOWEST,	/* ... the lowest: once it goes, ours holds */
	AHEAD_OURS,		/* an entry of this engine's */
	AHEAD_OURS_LOWEST,
};

#define QBUCKETS 1024

/* Our entries in one lock, in sequence order. */
struct zke_queue {
	char *dir;
	struct zke_queue *hnext;	/* e->qtab chain */
	struct zkl_waiter *head, *tail;
	/* the limit (0: none) and the linger the lock znode's data sets, as
	 * read at its creation zxid and data version (zk/sem.c) */
	unsigned limit;
	long linger;			/* "linger=MS" there, -1: none */
	/* the lock's sequence counter as our own replies account for it:
	 * every child created since the create of sequence cv_from was ours,
	 * and the next create is named cv_next (zk/create.c, chain_locked()) */
	bool cv_known;
	int32_t cv_from, cv_next;
	bool lknown;
	int64_t lczxid;
	int32_t lversion;
};

struct zkl_engine {
	struct zkt_transport t;		/* how we reach ZooKeeper */
	enum zkn_naming naming;
	zkl_lost_fn lost;
	zkl_lost_fn revoked;		/* zkl_engine_on_revoke(), or NULL */
	zkl_lost_fn doubted;		/* zkl_engine_on_doubt(), or NULL */
	zkl_dir_fn on_dir;		/* zkl_engine_on_dir(), or NULL */
	void *on_dir_arg;
	struct zkmx lock;
	struct zkl_waiter *all, *all_tail;	/* every live waiter, oldest first */
	struct zkl_waiter *fire, *fire_tail;	/* answered, done not yet run */
	struct zke_queue *qtab[QBUCKETS];
	bool shutdown;
	unsigned linger_ms;	/* -o linger=MS: zkl_engine_set_linger() */
	bool silent;		/* heard nothing for the session timeout, and
				   neither connected nor expired since: no
				   grant (zke_grant_locked()); read through
				   zke_silent_locked() */
	bool doubt;		/* the session said it is in doubt and has not
				   said since that it is out: no grant without
				   a round trip (zke_unsure_locked()) */
};

struct zkl_waiter {
	/*
	 * Each group below says which files write it, and which only read
	 * it.  zk/waiter.c frees the strings with the waiter.
	 *
	 * The links: e, and prev and next as it joins e->all, are set at its
	 * creation by zk/lock.c (zkl_enqueue()); prev and next as it leaves,
	 * and fnext, by zk/waiter.c; q, qprev and qnext by zk/queue.c.  refs
	 * by every file that sends a request or sets a watch for it, one
	 * reference each (zk/lock.c says whose).
	 */
	struct zkl_engine *e;
	struct zkl_waiter *prev, *next;	/* e->all */
	struct zkl_waiter *fnext;	/* e->fire */
	struct zke_queue *q;		/* once our entry exists, until it is gone */
	struct zkl_waiter *qprev, *qnext;
	int refs;
	/*
	 * Where it is, as six small machines, each moved only by its one
	 * function of zk/waiter.c (zke_set_*_locked(), zke_stall_locked() and
	 * zke_unstall_locked()), which checks the move against zk/moves.h in
	 * the sanitizer builds.  Every file but zk/queue.c reads them.
	 */
	struct {
		enum wstate state;	/* where it is: zk/moves.h's list */
		enum stall stall;	/* what to redo when the session is back */
		enum answer ans;	/* what the caller was told */
		enum entry entry;	/* our entry at the server */
		enum own own;		/* the watch on our own entry */
		enum own dirwatch;	/* the child watch on its lock, while it
					   lingers or may (zk/linger.c) */
	} sm;
	/*
	 * What done is told, and when: written by zk/waiter.c as it answers,
	 * and by zk/linger.c's zke_regrant_locked(), which grants a lingering
	 * entry again to a new caller, its answer GRANTED already.  zk/lock.c
	 * reads them (zkl_release(), zkl_info()).
	 */
	struct {
		int result;		/* what done is told */
		uint64_t t_grant;	/* zkm_now_us() at the grant */
		enum zkm_loss loss;	/* why, once ANS_LOST */
	} told;
	/* What it asks for: set at its creation by zk/lock.c (zkl_enqueue()),
	 * then only read, by most files. */
	struct {
		enum zkn_kind kind;
		char *dir;
		char *prefix;		/* DIR/NAME<marker>, what we create */
		char nonce[24];		/* "zkl=XXXXXXXXXXXXXXXX\n" */
	} req;
	/*
	 * Its caller, and the data its entry carries: set by zk/lock.c (at its
	 * creation; released by zkl_release()), and again by zk/linger.c for
	 * the next caller of a lingering entry (zke_regrant_locked()), whose
	 * data it also writes with the mark in or out.  The others read it.
	 */
	struct {
		int flags;
		uint32_t owner;		/* the caller's tag: zkl_owner() */
		zkl_done_fn done;
		void *arg;
		char *data;		/* its data, ending in our nonce line */
		int len;
		uint64_t t_enq;		/* zkm_now_us() at the enqueue */
		bool released;		/* the caller gave its reference back */
	} caller;
	/*
	 * Our entry: written by zk/create.c (gen as the create is sent, the
	 * rest once the entry is created or found again); zk/lock.c forgets
	 * its path when an expiry starts the waiter over.  Most files read it.
	 */
	struct {
		char *path;		/* our entry, once created */
		int32_t seq;
		uint64_t gen;		/* t.ops->generation() of its create */
		int64_t czxid;
	} ours;
	/*
	 * What our entry's data said, last read: written by zk/watch.c (the own
	 * watch reads it); dver also by zk/create.c (0: a new entry) and by
	 * zk/linger.c (the version its own write of the data made).  Read by
	 * zk/linger.c, zk/release.c (a poked entry) and zk/lock.c (zkl_info()).
	 */
	struct {
		bool revoked;		/* its data asked it to let go; only set */
		int32_t dver;		/* our entry's data version, last seen:
					   a poke raises it (zk/sem.c) */
	} seen;
	/*
	 * A holder's doubt: written by zk/watch.c, and by zk/waiter.c's
	 * zke_grant_locked(), which starts a grant made in a doubt in it.
	 * Read by zk/linger.c and zk/release.c (no grant on it without a round
	 * trip) and zk/lock.c (zkl_info()).
	 */
	struct {
		bool in;		/* granted, and its session in doubt since
					   (or at) the grant: until a read after
					   the doubt shows its entry */
		bool asking;		/* that read is out */
	} doubt;
	/*
	 * Whom it must outlive: written by zk/wait.c, from the listing that
	 * shows it; by zk/create.c, from our own
	 * creates, with no listing (chain_locked()); and by zk/lock.c, which
	 * forgets it when an expiry takes every entry.  ahead is a cache of
	 * that listing, not a machine: any value may follow any.  Read by
	 * zk/watch.c (the entry it watches), zk/release.c (whom an entry's
	 * going moves on) and zk/waiter.c (its invariants).
	 */
	struct {
		enum ahead ahead;	/* whose it is, and whether the lowest */
		char *path;		/* the entry we must outlive, if known */
		int32_t seq;
	} pred;
	/*
	 * What a listing decided: written by zk/wait.c; limit also by
	 * zk/create.c (0: a new entry, decided by no listing yet), marked also
	 * by zk/release.c (the hand-off's delete checked its entry).  Read by
	 * zk/sem.c, zk/linger.c, zk/lock.c and zk/waiter.c.
	 */
	struct {
		unsigned limit;		/* the semaphore's, as its last listing
					   was decided (0: a plain lock) */
		bool marked;		/* within one locked pass only: to be
					   granted (a listing's verdict, or the
					   hand-off checked its entry) */
	} verdict;
	/* O_NONBLOCK's one wait: written by zk/wait.c only; zk/lock.c's tick
	 * reads it, to end the wait. */
	struct {
		bool tried;		/* it waits, once and for at most
					   ZKE_TRY_WAIT_MS, behind an entry
					   that may only linger */
		uint64_t until;		/* then (t.ops->now_ms()) */
	} try;
	/*
	 * The create, and finding our entry again after one whose outcome is
	 * unknown: written by zk/create.c; zk/waiter.c's zke_free_cands()
	 * empties the candidates, for it and for zke_waiter_free().  No other
	 * file reads it.
	 */
	struct {
		bool prelisted;		/* a listing follows the create (pipelined) */
		char **cands;		/* W_RESOLVING: entries that may be ours */
		int ncand, ci;
	} create;
	/* Written by zk/release.c; zk/lock.c clears it when an expiry starts
	 * the waiter over.  The simulator's checker reads it. */
	struct {
		bool cohort;		/* granted by the release of the entry of
					   ours right before it, whose delete
					   (not yet done) checks ours is there */
	} handoff;
	/* Lingering: written by zk/linger.c only; zk/lock.c reads grants. */
	struct {
		uint64_t until;		/* W_CACHED: until then (t.ops->now_ms()) */
		uint32_t grants;	/* grants of its entry after the first:
					   lingering reuses (the token's third
					   field) */
		uint8_t dtries;		/* the reuse's data sets met a newer
					   version */
		bool mark;		/* its data says it may only linger
					   (ZKE_LINGER_MARK) */
		bool contended;		/* another entry joined its lock while it
					   held: it does not linger; only set */
	} linger;
};

/* zke_answered() - has @w an answer: granted, refused, or lost since? */
static inline bool zke_answered(const struct zkl_waiter *w)
{
	return w->sm.ans != ANS_NONE;
}

/* zke_ahead_lowest() - is the entry @w must outlive known to be the lowest
 * of its lock? */
static inline bool zke_ahead_lowest(const struct zkl_waiter *w)
{
	return w->pred.ahead == AHEAD_THEIRS_LOWEST || w->pred.ahead == AHEAD_OURS_LOWEST;
}

/*
 * zke_holds_lowest() - does @w hold (or did it, until its release) as the
 * lowest entry of its lock?  An exclusive entry granted under the plain
 * rule had no entry before it, and none can come before it: only then may
 * its going hand the lock to the entry behind it, or a new entry of ours
 * take it as the one it must outlive.  One granted as a semaphore's holder
 * need not be the lowest, even when the limit is gone since.
 */
static inline bool zke_holds_lowest(const struct zkl_waiter *w)
{
	return w->sm.ans == ANS_GRANTED && w->req.kind == ZKN_EXCLUSIVE && !w->verdict.limit;
}

/*
 * zke_rule_current() - was @w decided under the rule its queue knows now?
 * A limit set, changed or removed reaches a waiter with its next listing;
 * a grant made without a listing (a hand-off, a confirmation, a cohort
 * hand-off) must follow the rule in force too, so a waiter decided under
 * another one, or while the limit is being read again, lists instead.
 */
static inline bool zke_rule_current(const struct zkl_waiter *w)
{
	return w->q && w->q->lknown && w->q->limit == w->verdict.limit;
}

/*
 * zke_silent_locked() - may the server have expired @e's session?  The
 * silent event says so once the supervisor looks; the transport's clock
 * says so at once (a host resumed from suspend past the session timeout
 * runs on before that look).  Every grant asks, and every grant made
 * without a round trip (a cohort hand-off, a linger) relies on it.
 */
static inline bool zke_silent_locked(struct zkl_engine *e)
{
	return e->silent || e->t.ops->quiet(e->t.ctx);
}

/*
 * zke_unsure_locked() - may @e's session have lost its entries without
 * the mount knowing yet: silent, or in doubt (the session's event, or the
 * transport when asked)?  A grant made without a round trip (a cohort
 * hand-off, a lingering reuse) needs the answer no: a holder the mount
 * only presumes it has could hand on a lock another client holds by now.
 */
static inline bool zke_unsure_locked(struct zkl_engine *e)
{
	return e->doubt || zke_silent_locked(e) || e->t.ops->doubtful(e->t.ctx);
}

/*
 * An entry that lingers (zk/linger.c) says so in its data, a line before
 * the nonce, from the first time it lingers until its lock is contended
 * while it is held again: another mount's try-lock that finds it the only
 * entry ahead waits, up to ZKE_TRY_WAIT_MS, for the lingering mount to give
 * it back (its child watch sees the try's entry join) or to take the line
 * out (held: then the try is refused at once).  Anyone who can write the
 * entry can plant the line: it delays a try by at most that bound, and
 * grants nothing.
 */
#define ZKE_LINGER_MARK "lingers=yes\n"
#define ZKE_TRY_WAIT_MS 1000

/*
 * The engine's files, each one job, bottom up: queue, waiter, retry, watch,
 * wait, sem, release, create, linger, lock.  A file calls those below it,
 * and calls back up only where one step of the machine starts another
 * (tools/check-engine-calls, run by make check-docs, reads the objects'
 * symbols and holds them to that):
 *   zke_put_locked()    -> zke_dequeue_locked()  the last reference of a
 *                                                 waiter still queued
 *   zke_answer_locked() -> zke_rewait_locked()   the next waiter of ours
 *   zke_fail_locked()   -> zke_unwatch_locked(), zke_delete_locked()
 *   zke_lose_locked()   -> zke_delete_locked()
 *   a watch that fires  -> zke_check_locked(), zke_unlinger_locked()
 *   a listing of a semaphore -> zk/sem.c
 * docs/DESIGN.md section 9 says why.
 */

/* zk/queue.c: the mount's own queue of entries in each lock */

/* zke_queue_find_dir_locked() - the queue of our entries in the lock @dir,
 * or NULL if none. */
struct zke_queue *zke_queue_find_dir_locked(struct zkl_engine *e, const char *dir);
/*
 * zke_queue_insert_locked() - put @w, whose entry now exists, among our
 * entries in its lock, in sequence order (the first one there makes the
 * queue).  Out of memory, @w stays out of every queue and lists for itself.
 * zk/create.c calls it as it takes the entry as ours.
 */
void zke_queue_insert_locked(struct zkl_waiter *w);
/* zke_queue_unlink_locked() - take @w out of its queue, if it is in one;
 * the last one out frees the queue. */
void zke_queue_unlink_locked(struct zkl_waiter *w);
/* zke_queue_find_locked() - the entry of ours with sequence number @seq
 * before @w in its queue, or NULL. */
struct zkl_waiter *zke_queue_find_locked(struct zkl_waiter *w, int32_t seq);

/* zk/waiter.c: the small machines, references, stalls, answers */

/* zke_free_cands() - free the entries that may be @w's (w->create.cands,
 * zk/create.c) and empty the list. */
void zke_free_cands(struct zkl_waiter *w);
/* zke_waiter_free() - free @w and all it owns, once it is in no list
 * (zke_put_locked(), zkl_enqueue() out of memory, zkl_engine_free()). */
void zke_waiter_free(struct zkl_waiter *w);
/*
 * zke_put_locked() - drop a reference to @w.  The last one takes it out of
 * its queue (zke_dequeue_locked()) and of e->all, tells on_dir (if set)
 * that its lock has one waiter less, and frees it.
 */
void zke_put_locked(struct zkl_waiter *w);
/*
 * zke_unlock_fire() - drop @e's lock, then run the done callbacks answered
 * under it (zke_fire_locked()), and drop their answers' references (under
 * the lock again, until no answer is left); it returns with the lock
 * dropped.  Whoever may have answered a waiter ends with it, instead of
 * zkmx_unlock().
 */
void zke_unlock_fire(struct zkl_engine *e);
/*
 * zke_set_state_locked() - the one way a waiter's state changes; a move the
 * table of zk/lock.c does not allow aborts in the sanitizer builds
 * (ZKL_LOCKCHECK).
 */
void zke_set_state_locked(struct zkl_waiter *w, enum wstate to);
/*
 * zke_invariants_locked() - what ties each waiter's fields together (HELD
 * or CACHED only when answered granted, a waiting state only with its
 * entry there, a queue's links and order, ...): the first that does not
 * hold, as a line naming the waiter (a static buffer), or NULL.
 */
const char *zke_invariants_locked(struct zkl_engine *e);
/* zke_set_own_locked() - the one way the own watch's state changes:
 * OFF -> SETTING -> ARMED or OFF, ARMED -> OFF, and anything -> OFF when
 * the session's watches are gone; other moves abort (sanitizer builds). */
void zke_set_own_locked(struct zkl_waiter *w, enum own to);
/* zke_set_lost_locked() - answer @w LOST (GRANTED -> LOST, the answer's one
 * move after a grant), for @why: zke_lose_locked() of zk/retry.c. */
void zke_set_lost_locked(struct zkl_waiter *w, enum zkm_loss why);
/* zke_set_entry_locked(): NONE -> LIVE -> DELETING -> GONE -> NONE (made
 * afresh after an expiry), DELETING -> LIVE (the delete to be redone),
 * LIVE -> GONE (its session expired). */
void zke_set_entry_locked(struct zkl_waiter *w, enum entry to);
/*
 * zke_stall_locked() - stall @w until the session is back, to redo @what
 * (zke_unstall_locked() takes it out).  A stalled waiter holds a reference
 * of its own: its caller may have given it up (an interrupted open whose
 * create is unresolved), and the redo must still happen.
 */
void zke_stall_locked(struct zkl_waiter *w, enum stall what);
/* zke_unstall_locked() - end @w's stall, dropping its reference (the
 * caller holds another).  Return: what was to be redone (S_NONE: none). */
enum stall zke_unstall_locked(struct zkl_waiter *w);
/*
 * zke_answer_locked() - decide @w's answer, unless it has one: granted
 * (HELD) if @err is 0, else refused with @err (DONE); done runs at
 * zke_unlock_fire().  With @advance, the next waiter of ours, which may
 * have been parked behind @w, moves on.
 */
void zke_answer_locked(struct zkl_waiter *w, int err, bool advance);
/* zke_fire_locked() - queue @w's done to run at zke_unlock_fire(), with a
 * reference held across it */
void zke_fire_locked(struct zkl_waiter *w);
/* zke_set_dirwatch_locked(): the child watch's state, moved as the own watch's */
void zke_set_dirwatch_locked(struct zkl_waiter *w, enum own to);
/*
 * zke_grant_locked() - answer @w granted, unless the session is silent: a
 * reply read after the mount declared its holders lost may be older than
 * the session (the server may have expired it and granted the next one),
 * so the grant is withheld and @w lists again once the session is back or
 * starts over after its expiry.  A grant made in a doubt starts in it.
 * Return: whether @w was answered (false too if it had been already).
 */
bool zke_grant_locked(struct zkl_waiter *w, bool advance);

/* zk/retry.c: whether a waiter may send now; what a failed request does */

/*
 * zke_stale_locked() - was @w's entry made by a handle replaced since (its
 * session expired, and the entry with it)?  Then on_expired() is about to
 * start @w over: until it does, a request of @w's on the new session finds
 * its entry missing.  So a stale waiter sends nothing on the new session
 * (it stalls, and on_expired() unstalls it): a listing or watch sent then
 * would answer after the waiter was started over, and drive it down a
 * second path (a grant out of order, or two entries for one waiter).
 */
bool zke_stale_locked(struct zkl_waiter *w);
/* zke_fresh_locked() - may @w send on the session?  A stale waiter stalls
 * with @redo instead, and on_expired() starts it over: false. */
bool zke_fresh_locked(struct zkl_waiter *w, enum stall redo);
/* zke_call_failed_locked() - a request of @w's (@what, for the log) failed
 * with @rc: stall it if the session may come back (to redo @redo then),
 * else fail it. */
void zke_call_failed_locked(struct zkl_waiter *w, int rc, enum stall redo,
			    const char *what);
/* zke_fail_locked() - refuse @w with @err, unless it is answered already
 * (the next waiter of ours moves on), and let its entry go: our watch off
 * it, then its delete. */
void zke_fail_locked(struct zkl_waiter *w, int err);
/*
 * zke_lose_locked() - a held lock is gone, for @cause (@why, for the log):
 * tell the caller once (the lost callback, under the lock), and make sure
 * the entry goes.  Nothing for a waiter not granted, or given back.
 */
void zke_lose_locked(struct zkl_waiter *w, enum zkm_loss cause, const char *why);

/* zk/watch.c: the watch on our own entry, and on the one we must outlive */

/*
 * zke_watcher_enter() - the start of each of our watchers: the waiter @ctx,
 * with its engine's lock taken; or NULL for a session event that leaves the
 * watch armed (all but the expiry, which ends every watch).  The watcher
 * ends with zke_put_locked() (the watch's reference) and zke_unlock_fire().
 */
struct zkl_waiter *zke_watcher_enter(int type, int state, void *ctx);
/*
 * zke_own_watcher() - the watch on our own entry, while it waits for a
 * grant without a listing, and held (zke_own_watch_locked()): a deletion
 * not ours loses a holder or fails a waiter; a change of its data is read
 * again, and a waiter poked lists.
 */
void zke_own_watcher(zhandle_t *zh, int type, int state, const char *path,
		     void *ctx);
/*
 * zke_own_watch_locked() - watch our own entry, to hear if someone else
 * deletes it (or writes it: a poke, a revocation), unless it is watched
 * already, not LIVE, or stalled.  Armed on the supervisor's tick
 * (on_tick()), not at the grant or when the wait begins: most locks are
 * given back and most waits end sooner, and then cost neither the watch
 * nor its removal.  A semaphore's waiter and a lingering entry arm it at
 * once.
 */
void zke_own_watch_locked(struct zkl_waiter *w);
/* zke_unwatch_locked() - take our watch off @w's entry before its delete,
 * so that the delete notifies nobody but a waiter of another client: at
 * most one notification per release. */
void zke_unwatch_locked(struct zkl_waiter *w);
/* zke_read_revoke_locked() - @w's entry's data, just read, is @value
 * (@len bytes): if it asks the holder to let go ("__REVOKE__"), remember it
 * and tell the holder (once), or end its linger. */
void zke_read_revoke_locked(struct zkl_waiter *w, const char *value, int len);
/*
 * zke_watch_locked() - @w waits (W_WATCHING) with a watch on w->pred.path,
 * another client's entry: only we watch it (no herd).  Its going lists
 * again, or, if it was the lowest, confirms that our own entry is still
 * there; a try (O_NONBLOCK) behind an entry whose data does not say it
 * lingers is refused -EAGAIN.
 */
void zke_watch_locked(struct zkl_waiter *w);
/* zke_doubt_locked() - @w's session entered doubt: a holder not given back
 * says so (the doubted callback, if set), once. */
void zke_doubt_locked(struct zkl_waiter *w);
/*
 * zke_doubt_check_locked() - the doubt is over: read @w's entry, and leave
 * doubt (the callback again) once the read shows it; a read that shows it
 * gone loses the lock, one that fails is asked again at the next tick.
 */
void zke_doubt_check_locked(struct zkl_waiter *w);

/* zk/wait.c: a listing and its decision; how a waiter waits */

/*
 * zke_children_done() - the reply to a listing of the lock of the waiter
 * @data (zke_check_locked(), or the one a create sends behind it): it
 * decides for that waiter, and for every waiter of ours it shows that is
 * parked or waits to be poked, once the limit is known (zk/sem.c).  A
 * waiter answered or no longer CHECKING meanwhile ignores it.
 */
void zke_children_done(int rc, const struct String_vector *strings,
		       const struct Stat *dir, const void *data);
/* zke_check_locked() - list @w's lock (W_CHECKING), to decide @w: a stale
 * waiter, or a request that cannot be sent, stalls instead (S_CHECK). */
void zke_check_locked(struct zkl_waiter *w);
/*
 * zke_wait_locked() - how @w (created, not answered, no request in flight)
 * waits now: parked behind an entry of ours not yet granted; else, knowing
 * whom it must outlive, for our own delete of it or with a watch on
 * another's; else it lists the children.  A semaphore's waiter waits to be
 * poked; a try (O_NONBLOCK) lists, or watches the one entry ahead that may
 * only linger.
 */
void zke_wait_locked(struct zkl_waiter *w);
/* zke_rewait_locked() - something @w (or NULL) waited for locally changed:
 * a PARKED or LOCALWAIT waiter waits anew. */
void zke_rewait_locked(struct zkl_waiter *w);

/* zk/sem.c: semaphores (a limit of N holders) */

/*
 * zke_limit_current_locked() - is what @w's queue knows of the limit
 * current, given the lock znode's Stat @dir from a listing?  A znode
 * without data sets none; without a queue or a Stat, @w is decided as a
 * plain lock.  After a false, nothing is granted without a listing until
 * the limit is read again (zke_read_limit_locked()).
 */
bool zke_limit_current_locked(struct zkl_waiter *w, const struct Stat *dir);
/* zke_read_limit_locked() - the limit changed, or was never read: read it,
 * then list again. */
void zke_read_limit_locked(struct zkl_waiter *w);
/* zke_semwait_locked() - @w (created, not answered, nothing of ours before
 * it waiting) waits to be poked (W_SEMWAIT): its own watch, armed now, is
 * how a poke arrives. */
void zke_semwait_locked(struct zkl_waiter *w);
/*
 * zke_poke_locked() - @l's entry, which held a semaphore, is deleted: wake
 * the waiter its going lets in.  Nothing of @l is kept: it may be freed
 * meanwhile.
 */
void zke_poke_locked(struct zkl_waiter *l);
/*
 * zke_sem_tick_locked() - on the supervisor's tick, the first waiter of
 * ours in each semaphore lists: a holder may be gone unpoked.  In every
 * lock, not only those a limit is known for now: a waiter that went to
 * wait for a poke under a limit since removed waits for nothing else
 * (nobody pokes in a plain lock).
 */
void zke_sem_tick_locked(struct zkl_engine *e);

/* zk/release.c: the delete, the hand-off it checks, leaving our queue */

/*
 * zke_delete_locked() - delete @w's entry, if it is LIVE (DELETING until
 * the reply).  The same transaction checks the entries of the waiters of
 * ours its going hands the lock to; those a cohort hand-off allows are
 * granted at once.  A delete that cannot be sent stalls (S_DELETE).
 */
void zke_delete_locked(struct zkl_waiter *w);
/*
 * zke_dequeue_locked() - @l leaves our queue.  The waiters that had to
 * outlive it move on.  If our delete removed its entry (@deleted) and it was
 * the lowest (@handoff: an exclusive entry that held the lock; or a listing
 * showed it lowest), those a listing showed right behind it hold the lock
 * now, provided the delete checked their own entries were still there
 * (struct handoff); the others look again.
 */
void zke_dequeue_locked(struct zkl_waiter *l, bool deleted, bool handoff);

/* zk/create.c: creating an entry, finding it again after an unknown create */

/*
 * zke_send_create_locked() - send @w's create (W_CREATING) and, unless it
 * will be parked behind an entry of ours, the listing that decides it.
 * Return: ZOK (sent, or stalled to redo), else why not.
 */
int zke_send_create_locked(struct zkl_waiter *w);
/* zke_create_locked() - create @w's entry, unless it was answered or given
 * back meanwhile; a create refused at once answers it refused. */
void zke_create_locked(struct zkl_waiter *w);
/*
 * zke_resolve_locked() - after a create whose outcome is unknown, find
 * @w's entry (W_RESOLVING): list its lock and read each entry that may be
 * ours, until one has our nonce and our session (zk/adopt.h); none has:
 * create it again.
 */
void zke_resolve_locked(struct zkl_waiter *w);

/* zk/linger.c: lingering locks */

/*
 * zke_linger_locked() - zkl_release() of @w: keep its entry instead of
 * deleting it?  Only an entry that holds the lock, alone of ours in it, on
 * a session neither silent, in doubt nor replaced, in a lock no one else
 * asked for while it held.  Return: whether it lingers (W_CACHED), with a
 * reference of its own.
 */
bool zke_linger_locked(struct zkl_waiter *w);
/*
 * zke_reuse_locked() - the lingering entry of @dir that an enqueue of
 * @prefix may have, or NULL.  One of another name, or out of time, is let
 * go now: its delete goes before that enqueue's create.
 */
struct zkl_waiter *zke_reuse_locked(struct zkl_engine *e, const char *dir,
				    const char *prefix);
/* zke_cached_locked() - the lingering entry of the lock @dir (one at most:
 * zke_linger_locked()), or NULL. */
struct zkl_waiter *zke_cached_locked(struct zkl_engine *e, const char *dir);
/*
 * zke_regrant_locked() - grant the lingering @w again, to a new caller (as
 * zkl_enqueue()'s arguments) whose entry data is @data (@len bytes, w's
 * nonce line follows): done runs at zke_unlock_fire().  The caller's
 * reference is the linger's.
 */
void zke_regrant_locked(struct zkl_waiter *w, int flags, const char *data, int len,
			uint32_t owner, zkl_done_fn done, void *arg);
/*
 * zke_unlinger_locked() - end @w's linger, if it lingers: delete its entry,
 * or, if it is @already_deleted (by someone, or with its session), only
 * forget it.  Drops the linger's reference: @w may be freed unless the
 * caller holds one.
 */
void zke_unlinger_locked(struct zkl_waiter *w, bool already_deleted);
/* zke_linger_tick_locked() - the supervisor's tick: end @w's linger if its
 * time is up, else ask for a tick then. */
void zke_linger_tick_locked(struct zkl_waiter *w);

#endif
