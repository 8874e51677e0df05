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

/* Whom a listing showed we must outlive: zke_learn_pred_locked(). */
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
		enum wstate state;	/* the table of zk/lock.c */
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
	 * shows it (zke_learn_pred_locked()); by zk/create.c, from our own
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

static inline bool zke_answered(const struct zkl_waiter *w)
{
	return w->sm.ans != ANS_NONE;
}

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
struct zke_queue *zke_queue_find_dir_locked(struct zkl_engine *e, const char *dir);
void zke_queue_insert_locked(struct zkl_waiter *w);
void zke_queue_unlink_locked(struct zkl_waiter *w);
struct zkl_waiter *zke_queue_find_locked(struct zkl_waiter *w, int32_t seq);

/* zk/waiter.c: the small machines, references, stalls, answers */
void zke_free_cands(struct zkl_waiter *w);
void zke_waiter_free(struct zkl_waiter *w);
void zke_put_locked(struct zkl_waiter *w);
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
/* zke_set_answer_locked(): NONE -> GRANTED or REFUSED, GRANTED -> LOST. */
void zke_set_answer_locked(struct zkl_waiter *w, enum answer to);
/* zke_set_lost_locked() - answer @w LOST (GRANTED -> LOST, moved as by
 * zke_set_answer_locked()), for @why: zke_lose_locked() of zk/retry.c. */
void zke_set_lost_locked(struct zkl_waiter *w, enum zkm_loss why);
/* zke_set_entry_locked(): NONE -> LIVE -> DELETING -> GONE -> NONE (made
 * afresh after an expiry), DELETING -> LIVE (the delete to be redone),
 * LIVE -> GONE (its session expired). */
void zke_set_entry_locked(struct zkl_waiter *w, enum entry to);
void zke_stall_locked(struct zkl_waiter *w, enum stall what);
enum stall zke_unstall_locked(struct zkl_waiter *w);
void zke_answer_locked(struct zkl_waiter *w, int err, bool advance);
/* zke_fire_locked() - queue @w's done to run at zke_unlock_fire() */
void zke_fire_locked(struct zkl_waiter *w);
/* zke_set_dirwatch_locked(): the child watch's state, moved as the own watch's */
void zke_set_dirwatch_locked(struct zkl_waiter *w, enum own to);
/*
 * zke_grant_locked() - answer @w granted, unless the session is silent: a
 * reply read after the mount declared its holders lost may be older than
 * the session (the server may have expired it and granted the next one),
 * so the grant is withheld and @w lists again once the session is back or
 * starts over after its expiry.  Return: whether @w was answered.
 */
bool zke_grant_locked(struct zkl_waiter *w, bool advance);

/* zk/retry.c: whether a waiter may send now; what a failed request does */
bool zke_stale_locked(struct zkl_waiter *w);
/* zke_fresh_locked() - may @w send on the session?  A stale waiter stalls
 * with @redo instead, and on_expired() starts it over: false. */
bool zke_fresh_locked(struct zkl_waiter *w, enum stall redo);
void zke_call_failed_locked(struct zkl_waiter *w, int rc, enum stall redo,
			    const char *what);
void zke_fail_locked(struct zkl_waiter *w, int err);
void zke_lose_locked(struct zkl_waiter *w, enum zkm_loss cause, const char *why);

/* zk/watch.c: the watch on our own entry, and on the one we must outlive */
struct zkl_waiter *zke_watcher_enter(int type, int state, void *ctx);
void zke_own_watcher(zhandle_t *zh, int type, int state, const char *path,
		     void *ctx);
void zke_own_watch_done(int rc, const char *value, int len,
			const struct Stat *stat, const void *data);
void zke_own_watch_locked(struct zkl_waiter *w);
/* zke_unwatch_locked() - take our watch off @w's entry before its delete */
void zke_unwatch_locked(struct zkl_waiter *w);
/* zke_read_revoke_locked() - @w's entry's data, just read, is @value
 * (@len bytes): if it asks the holder to let go ("__REVOKE__"), remember it
 * and tell the holder (once), or end its linger. */
void zke_read_revoke_locked(struct zkl_waiter *w, const char *value, int len);
void zke_watch_locked(struct zkl_waiter *w);
/*
 * zke_doubt_locked() - @w's session entered doubt: a holder says so (the
 * doubted callback).  zke_doubt_check_locked()
 * - the doubt is over: read @w's entry, and leave doubt (the callback
 * again) once the read shows it; a read that shows it gone loses the lock,
 * one that fails is asked again at the next tick.
 */
void zke_doubt_locked(struct zkl_waiter *w);
void zke_doubt_check_locked(struct zkl_waiter *w);

/* zk/wait.c: a listing and its decision; how a waiter waits */
void zke_children_done(int rc, const struct String_vector *strings,
		       const struct Stat *dir, const void *data);
void zke_check_locked(struct zkl_waiter *w);
void zke_learn_pred_locked(struct zkl_waiter *w, const struct zkg_child *pred,
			   bool first);
void zke_wait_locked(struct zkl_waiter *w);
void zke_rewait_locked(struct zkl_waiter *w);

/* zk/sem.c: semaphores (a limit of N holders) */
bool zke_limit_current_locked(struct zkl_waiter *w, const struct Stat *dir);
void zke_read_limit_locked(struct zkl_waiter *w);
void zke_semwait_locked(struct zkl_waiter *w);
void zke_poke_locked(struct zkl_waiter *l);
void zke_sem_tick_locked(struct zkl_engine *e);

/* zk/release.c: the delete, the hand-off it checks, leaving our queue */
void zke_delete_locked(struct zkl_waiter *w);
void zke_dequeue_locked(struct zkl_waiter *l, bool deleted, bool handoff);

/* zk/create.c: creating an entry, finding it again after an unknown create */
int zke_send_create_locked(struct zkl_waiter *w);
void zke_create_locked(struct zkl_waiter *w);
void zke_resolve_locked(struct zkl_waiter *w);

/* zk/linger.c: lingering locks */
bool zke_linger_locked(struct zkl_waiter *w);
struct zkl_waiter *zke_reuse_locked(struct zkl_engine *e, const char *dir,
				    const char *prefix);
struct zkl_waiter *zke_cached_locked(struct zkl_engine *e, const char *dir);
void zke_regrant_locked(struct zkl_waiter *w, int flags, const char *data, int len,
			uint32_t owner, zkl_done_fn done, void *arg);
void zke_unlinger_locked(struct zkl_waiter *w, bool already_deleted);
void zke_unmark_locked(struct zkl_waiter *w);
void zke_linger_tick_locked(struct zkl_waiter *w);

#endif
