/*
 * zk/sessmoves.h - a session's two small state machines (struct zks,
 * zk/session.c): what its handle's events said of the connection, and
 * what the supervisor has to tell the engine of it; their states and
 * every legal move, one list each.
 *
 * As zk/moves.h's lists for a waiter, these are the one source of the
 * enums, the names a failed check prints, the check itself (in the
 * sanitizer builds an unlisted move aborts: set_link_locked(),
 * set_news_locked()) and docs/DESIGN.md's tables (build/moves).  A
 * state repeated (a second CONNECTING) is no move.  Any thread.
 */
#ifndef ZK_SESSMOVES_H
#define ZK_SESSMOVES_H

/* The connection as the current handle's events said: enum zks_link. */
#define ZKS_LINKS(X)							\
	X(NEW,     "a handle not connected yet: its first CONNECTED is no reconnect") \
	X(UP,      "connected")						\
	X(DOWN,    "the connection went and the client reconnects, or a renewed handle before its first CONNECTED") \
	X(EXPIRED, "the server expired the session: the supervisor renews the handle")

#define ZKS_LINK_MOVES(X)						\
	X(NEW,     UP,      "CONNECTED: the handle's first session")	\
	X(NEW,     DOWN,    "CONNECTING before the first CONNECTED")	\
	X(NEW,     EXPIRED, "EXPIRED_SESSION")				\
	X(UP,      DOWN,    "CONNECTING: the connection went")		\
	X(UP,      EXPIRED, "EXPIRED_SESSION")				\
	X(DOWN,    UP,      "CONNECTED: the client reconnected")	\
	X(DOWN,    EXPIRED, "EXPIRED_SESSION: the server expired it meanwhile") \
	X(EXPIRED, DOWN,    "zks_renew(): a new handle; its CONNECTED redoes what failed") \
	X(UP,      NEW,     "zks_wake(): a hibernated session's new handle") \
	X(DOWN,    NEW,     "zks_wake()")					\
	X(EXPIRED, NEW,     "zks_wake()")

/* What the supervisor tells the engine at its next look: enum zks_news. */
#define ZKS_NEWS(X)							\
	X(NONE,   "nothing")							\
	X(BACK,   "the session is back (reconnected, or heard again after a silence): ev->connected()") \
	X(SILENT, "nothing heard for the session timeout less the margin: ev->silent() was called, and BACK follows once the server surely hears us again")

#define ZKS_NEWS_MOVES(X)						\
	X(NONE,   BACK,   "CONNECTED after the connection went")	\
	X(NONE,   SILENT, "the supervisor finds nothing heard for the timeout less the margin") \
	X(BACK,   NONE,   "the supervisor told the engine; or a renewal, whose expiry the engine is told instead") \
	X(BACK,   SILENT, "the look that tells the reconnect finds the session quiet: ev->silent() first, then ev->connected()") \
	X(SILENT, BACK,   "a ping answered, or CONNECTED after the connection went, and the server heard us within the timeout less the margin") \
	X(SILENT, NONE,   "CONNECTED with no connection lost since, heard within the margin; or zks_wake()")

#endif
