/*
 * zk/moves.h - a waiter's small state machines (struct zkl_waiter,
 * zk/engine.h): their states and every legal move, one list each.
 *
 * The lists are the one source of both the checker and the documentation:
 * the enums of zk/engine.h and the names the checker prints are made from
 * the state lists; zke_set_*_locked() (zk/waiter.c) allows, in the
 * sanitizer builds, exactly the moves listed (any other aborts, naming
 * it); and docs/DESIGN.md's tables of moves are printed from them by
 * build/moves (tools/moves.c), which `make check-docs` compares with the
 * document.  A move is added here, with why it happens, or not at all.
 *
 * X(STATE, "what it means") for states; X(FROM, TO, "when") for moves.
 * zke_move_listed() looks a move up in such a list, and zke_check_move()
 * checks one (fs/lrmoves.h's, zk/sessmoves.h's and fs/obsmoves.h's too).
 * Any thread.
 */
#ifndef ZK_MOVES_H
#define ZK_MOVES_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* One listed move, as the lists' X(FROM, TO, ...) give them. */
struct zke_move {
	int from, to;
};

/* zke_move_listed() - is @from -> @to among @moves (@n of them)? */
static inline bool zke_move_listed(const struct zke_move *moves, size_t n, int from,
				   int to)
{
	for (size_t i = 0; i < n; i++)
		if (moves[i].from == from && moves[i].to == to)
			return true;
	return false;
}

/* ZKE_MOVES() - a list's moves and how many, as zke_check_move() takes them */
#define ZKE_MOVES(a) (a), sizeof(a) / sizeof((a)[0])

/*
 * zke_check_move() - in the sanitizer builds (ZKL_LOCKCHECK), abort on a
 * move of the machine @what, @from -> @to, that @moves (@n of them) does
 * not list, saying whose machine it is (@fmt, as printf's) and the move
 * by its states' @names; elsewhere, nothing.  The one setter of each
 * machine calls it before it moves.
 */
static inline void zke_check_move(const struct zke_move *moves, size_t n,
				  const char *const *names, const char *what, int from,
				  int to, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static inline void zke_check_move(const struct zke_move *moves, size_t n,
				  const char *const *names, const char *what, int from,
				  int to, const char *fmt, ...)
{
#ifdef ZKL_LOCKCHECK
	va_list ap;

	if (zke_move_listed(moves, n, from, to))
		return;
	fputs("zklockfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": illegal move of its %s: %s -> %s\n", what, names[from], names[to]);
	abort();
#else
	(void)moves, (void)n, (void)names, (void)what, (void)from, (void)to, (void)fmt;
#endif
}

/* Where a waiter is: enum wstate, W_<STATE>. */
#define ZKE_WSTATES(X)							\
	X(CREATING,   "create in flight")				\
	X(RESOLVING,  "create outcome unknown: looking for our entry")	\
	X(CHECKING,   "listing the children")				\
	X(PARKED,     "behind an entry of ours not yet granted: no request") \
	X(LOCALWAIT,  "must outlive an entry of ours: waits for our delete") \
	X(WATCHING,   "watching another client's entry before ours")	\
	X(CONFIRMING, "the entry it watched went and was the lowest: is ours there?") \
	X(SEMWAIT,    "a semaphore's: waits to be poked (zk/sem.c)")	\
	X(HELD,       "granted")						\
	X(CACHED,     "given back, its entry kept for the next open (zk/linger.c)") \
	X(DONE,       "answered with an error, or lost")

/* Every state before an answer may start over, list, or be answered. */
#define ZKE_STARTS_OVER(X, FROM)					\
	X(FROM, CREATING, "its session expired: made afresh")		\
	X(FROM, CHECKING, "it lists (a watch fired, a step redone, a limit changed)") \
	X(FROM, DONE,     "answered: refused, cancelled, EAGAIN, its entry deleted")

#define ZKE_WSTATE_MOVES(X)						\
	ZKE_STARTS_OVER(X, CREATING)					\
	X(CREATING,   RESOLVING,  "create outcome unknown (connection loss), redone") \
	X(CREATING,   PARKED,     "created behind an entry of ours not yet granted") \
	X(CREATING,   LOCALWAIT,  "created right behind an entry of ours (the chain)") \
	ZKE_STARTS_OVER(X, RESOLVING)					\
	X(RESOLVING,  RESOLVING,  "the search redone after a connection loss") \
	X(RESOLVING,  PARKED,     "found again, behind an entry of ours")	\
	ZKE_STARTS_OVER(X, CHECKING)					\
	X(CHECKING,   PARKED,     "the listing says wait (PARKED until it waits anew)") \
	X(CHECKING,   HELD,       "the listing grants it")		\
	ZKE_STARTS_OVER(X, PARKED)					\
	X(PARKED,     PARKED,     "waits anew behind ours")		\
	X(PARKED,     LOCALWAIT,  "must outlive an entry of ours")	\
	X(PARKED,     WATCHING,   "must outlive another client's entry; or a try behind one that may only linger") \
	X(PARKED,     SEMWAIT,    "a semaphore's listing said wait")	\
	X(PARKED,     HELD,       "a listing of another of ours, or a hand-off, grants it") \
	ZKE_STARTS_OVER(X, LOCALWAIT)					\
	X(LOCALWAIT,  PARKED,     "the entry of ours before it was answered") \
	X(LOCALWAIT,  LOCALWAIT,  "waits anew behind ours")		\
	X(LOCALWAIT,  WATCHING,   "the entry it outlived went; another client's is next") \
	X(LOCALWAIT,  HELD,       "hand-off, or cohort hand-off (zk/release.c)") \
	ZKE_STARTS_OVER(X, WATCHING)					\
	X(WATCHING,   CONFIRMING, "the watched entry went, and was the lowest") \
	X(WATCHING,   HELD,       "hand-off: the entry it watched became ours and went") \
	ZKE_STARTS_OVER(X, CONFIRMING)					\
	X(CONFIRMING, HELD,       "its own entry is there")		\
	ZKE_STARTS_OVER(X, SEMWAIT)					\
	X(SEMWAIT,    PARKED,     "a listing of another of ours says wait") \
	X(SEMWAIT,    HELD,       "a listing of another of ours grants it") \
	X(HELD,       DONE,       "lost, or given back")			\
	X(HELD,       CACHED,     "given back, its entry kept (lingering)") \
	X(CACHED,     HELD,       "an open of the same name and kind reuses it") \
	X(CACHED,     DONE,       "the linger ends")			\
	X(DONE,       RESOLVING,  "its create is still unresolved: find the orphan to delete it")

/* What to redo once the session is back: enum stall, S_<STEP>. */
#define ZKE_STALLS(X)							\
	X(NONE,     "nothing")						\
	X(CREATE,   "the create (never sent)")				\
	X(RESOLVE,  "the search for an entry whose create is unknown")	\
	X(CHECK,    "the listing")					\
	X(OWNWATCH, "the watch on its own entry")			\
	X(DELETE,   "the delete")

#define ZKE_STALL_TO(X, FROM)						\
	X(FROM, DELETE, "the delete comes first")			\
	X(FROM, NONE,   "redone (zke_unstall_locked())")

#define ZKE_STALL_MOVES(X)						\
	X(NONE,     CREATE,   "a step failed with a connection loss")	\
	X(NONE,     RESOLVE,  "a create's outcome is unknown")		\
	X(NONE,     CHECK,    "a step failed with a connection loss")	\
	X(NONE,     OWNWATCH, "a step failed with a connection loss")	\
	X(NONE,     DELETE,   "a step failed with a connection loss")	\
	X(CREATE,   CREATE,   "failed again")				\
	ZKE_STALL_TO(X, CREATE)						\
	X(RESOLVE,  RESOLVE,  "failed again")				\
	ZKE_STALL_TO(X, RESOLVE)					\
	X(CHECK,    CHECK,    "failed again")				\
	ZKE_STALL_TO(X, CHECK)						\
	X(OWNWATCH, OWNWATCH, "failed again")				\
	X(OWNWATCH, CHECK,    "a listing failed too: redone, it arms the watch a waiter needs") \
	ZKE_STALL_TO(X, OWNWATCH)					\
	X(DELETE,   DELETE,   "failed again")				\
	X(DELETE,   NONE,     "redone (zke_unstall_locked())")

/* What the caller was told: enum answer, ANS_<ANSWER>. */
#define ZKE_ANSWERS(X)							\
	X(NONE,    "nothing yet")					\
	X(GRANTED, "it holds the lock")					\
	X(REFUSED, "an errno (result)")					\
	X(LOST,    "granted, then told the lock is lost")

#define ZKE_ANSWER_MOVES(X)						\
	X(NONE,    GRANTED, "granted")					\
	X(NONE,    REFUSED, "refused, cancelled, or its entry deleted")	\
	X(GRANTED, LOST,    "its entry deleted, the session silent or expired")

/* Our entry at the server: enum entry, ENTRY_<STATE>. */
#define ZKE_ENTRIES(X)							\
	X(NONE,     "not made, or not known to be")			\
	X(LIVE,     "there, ours to delete")				\
	X(DELETING, "our delete is out")				\
	X(GONE,     "deleted, or gone with its session")

#define ZKE_ENTRY_MOVES(X)						\
	X(NONE,     LIVE,     "created, or found again")		\
	X(LIVE,     DELETING, "our delete is sent")			\
	X(LIVE,     GONE,     "its session expired, or someone deleted it") \
	X(DELETING, LIVE,     "the delete failed with a connection loss: redone") \
	X(DELETING, GONE,     "deleted")					\
	X(GONE,     NONE,     "made afresh after an expiry")

/* A watch of ours (on our own entry, or the child watch on the lock of a
 * lingering entry): enum own, OWN_<STATE>. */
#define ZKE_WATCHES(X)							\
	X(OFF,     "none")						\
	X(SETTING, "a get (or listing) with a watch is out: its reply is due") \
	X(ARMED,   "set: it fires once, or is removed")

#define ZKE_WATCH_MOVES(X)						\
	X(OFF,     OFF,     "the session's watches are gone (an expiry)") \
	X(OFF,     SETTING, "set it")					\
	X(SETTING, OFF,     "the call failed, or the session's watches are gone") \
	X(SETTING, ARMED,   "its reply came")				\
	X(ARMED,   OFF,     "it fired, was removed, or the session's watches are gone")

#endif
