/*
 * fs/obsmoves.h - an observer's two small state machines (struct
 * observer, fs/observe.c: LOCKDIR/.holders and .state): its fetch of the
 * lock's text, and the watch that says the text changed; their states and
 * every legal move, one list each.
 *
 * As zk/moves.h's lists for a waiter, these are the one source of the
 * enums, the names a failed check prints, the check itself (in the
 * sanitizer builds an unlisted move aborts: set_fetch_locked(),
 * set_watch_locked()) and docs/DESIGN.md's tables (build/moves).  A state
 * repeated is no move.  Any thread.
 */
#ifndef FS_OBSMOVES_H
#define FS_OBSMOVES_H

/* The fetch of the text: enum obs_fetch. */
#define OBS_FETCHES(X)							\
	X(IDLE,     "no fetch under way")					\
	X(FETCHING, "a fetch is under way")				\
	X(AGAIN,    "a fetch is under way, and the watch fired since it listed: another follows")

#define OBS_FETCH_MOVES(X)						\
	X(IDLE,     FETCHING, "the watch fired, or an OPEN found no current text") \
	X(FETCHING, AGAIN,    "the watch fired during the fetch")	\
	X(FETCHING, IDLE,     "the fetch ended (its text published, or it failed), or could not start") \
	X(AGAIN,    FETCHING, "the fetch ended with a text: the next one starts") \
	X(AGAIN,    IDLE,     "the fetch failed: the next change or OPEN fetches again")

/* The child watch (or, for .state, the data watch) on the lock: enum obs_watch. */
#define OBS_WATCHES(X)							\
	X(OFF,   "no watch of ours may fire")				\
	X(ARMED, "the fetch's listing set it: it fires at the next change, and holds the observer")

#define OBS_WATCH_MOVES(X)						\
	X(OFF,   ARMED, "the fetch's listing (or read) answered, its watch set") \
	X(ARMED, OFF,   "the watch fired (a change, or the session expired)")

#endif
