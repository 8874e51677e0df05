/*
 * tests/sim/simnet.h - simulated mounts' connections to the simulated
 * ZooKeeper: the engine's transport (zk/transport.h) without a network.
 *
 * Each mount has one handle at a time (one session; a new one, with the
 * generation + 1, after an expiry).  A handle has three queues, as the C
 * client has:
 *   outbound  requests made and not yet applied by the server (sent, or
 *             made while disconnected and sent at the reconnection);
 *   wire      replies and watch notifications the server sent, not yet
 *             read by the client (its IO thread);
 *   inbound   what the client read, not yet delivered (its completion
 *             thread): completions, watch and session events.
 * A transport call only appends to outbound and returns ZOK (ZINVALIDSTATE
 * once the client knows its session expired, until it is replaced; an
 * unwatch of a watcher the client does not hold returns ZNOWATCHER), so no
 * completion or watcher ever runs inside it.  Everything else happens in a
 * step, one of the sn_*() below, called by the scheduler (sim.c):
 *   - the server applies one session's requests in order; a watch fires
 *     into the wire at the moment of the change, before the replies to
 *     later requests; a client watch registration is made when the reply
 *     of its wget is read, and collected (one-shot) when its event is read,
 *     as the C client's activateWatcher()/collectWatchers() do;
 *   - a connection loss reads some prefix of the wire, lets the server
 *     apply some prefix of outbound (their effect happens, the client will
 *     never know), and fails everything else pending with ZCONNECTIONLOSS;
 *     watches stay armed; changes while disconnected fire at the
 *     reconnection (SetWatches);
 *   - the server may expire a disconnected session once the mount was
 *     told it is silent (the session timeout's timing: the supervisor
 *     presumes locks lost a period before the server can expire it); the
 *     client learns it at its next reconnection: pending calls fail with
 *     ZSESSIONEXPIRED and every watcher gets ZOO_EXPIRED_SESSION_STATE;
 *     the replacement makes a new handle; the engine's expired event runs
 *     once the old handle's completions are all delivered (zookeeper_close()).
 * Session events to watchers (CONNECTING, CONNECTED, EXPIRED) go to every
 * registered watcher, as the C client does.  fs/'s calls (fs/wbuf.c's sets,
 * fs/confirm.c's sync and exists, fs/observe.c's watched listings and
 * reads) go on the same queues; its zklfs_zlater() calls wait for the
 * supervisor's look (sn_look()).  One thread; no locks.
 */
#ifndef SIM_SIMNET_H
#define SIM_SIMNET_H

#include <stdbool.h>
#include <stdint.h>

#include "zk/session.h"
#include "zk/transport.h"
#include "tests/sim/simzk.h"

enum sn_state { SN_CONNECTED, SN_DISCONNECTED, SN_EXPIRED };

struct sn_req;
struct sn_item;
struct sn_later;

struct sn_queue {
	void *head, *tail;		/* struct sn_req or struct sn_item */
	int n;
};

/* A client watch registration: @fn(@ctx) on @path. */
struct sn_reg {
	char *path;
	watcher_fn fn;
	void *ctx;
	bool child;		/* a child watch */
};

struct sn_handle {
	struct sn_mount *m;
	int64_t sid;
	uint64_t gen;
	enum sn_state state;
	bool connected_once;
	struct sn_queue out, wire, in;
	struct sn_reg *regs;
	int nregs, rcap;
	struct sn_missed { int type; char *path; } *missed;
	int nmissed, mcap;
	struct sn_handle *next;		/* m->old */
};

struct simnet;

struct sn_mount {
	struct simnet *net;
	int id;
	struct sn_handle *cur;
	struct sn_handle *old;		/* replaced, still delivering */
	uint64_t gen;
	bool silent_done;		/* silent ran since the last CONNECTED */
	bool connected_due, expired_due;	/* supervisor events owed */
	struct zks_events ev;		/* the engine's */
	unsigned silents, expiries;	/* events delivered so far */
	bool engine_silent;		/* the engine was told silent, and
					   not yet connected or expired */
	uint64_t last_heard;		/* net->now when it last read the
					   server, or connected */
	bool engine_doubt;		/* the engine was told it is in doubt,
					   and not yet out */
	unsigned doubts;		/* doubts told so far */
	unsigned drops;			/* connection losses so far */
	struct sn_later *later;		/* fs/'s zklfs_zlater() calls, run at
					   the supervisor's next look */
};

/* The session timeout less the margin, on the clock (t_quiet()). */
#define SN_QUIET_MS	(1ULL << 30)

/* Called before a watch event's watcher runs (for the herd count). */
typedef void (*sn_watch_hook)(void *ctx, struct sn_mount *m, int type,
			      const char *path, void *wctx);

/*
 * Called before a listing's completion @done runs with ZOK: the children of
 * @path and its Stat @dir as the server had them when it applied the
 * listing (for the rule a grant follows: sim.h, struct world's rule).
 */
typedef void (*sn_list_hook)(void *ctx, struct sn_mount *m, const char *path,
			     const struct Stat *dir, void (*done)(void));

/*
 * Called as the server applies request #@id of @m's session: a set of
 * @path, once applied (SN_SET, @rc its answer); a delete of @path (one of
 * a multi's), just before it is applied (SN_DELETING, @rc -1, the node
 * still there) and once applied (SN_DELETED, @rc the request's answer).
 */
enum sn_applied { SN_SET, SN_DELETING, SN_DELETED };
typedef void (*sn_apply_hook)(void *ctx, struct sn_mount *m, uint64_t id,
			      enum sn_applied what, const char *path, int rc);

struct simnet {
	struct szk zk;
	struct sim_rng *rng;
	struct sn_mount *mounts;
	int nmounts;
	uint64_t next_req;
	uint64_t now;			/* the clock of now_ms(): the step + skip */
	uint64_t skip;			/* the clock's jumps: sn_clock_jump() */
	bool verbose;
	sn_watch_hook hook;
	sn_list_hook listed;
	sn_apply_hook applied;
	void *hook_ctx;
	/* the trace's name of a call's @arg (a waiter: "w7"), or "" */
	const char *(*name_of)(void *ctx, const void *arg);
};

/* sn_init() - @n mounts, each with a connected session. */
void sn_init(struct simnet *net, struct sim_rng *rng, int n, bool verbose);
void sn_free(struct simnet *net);

/* sn_transport() - the transport of mount @m, for zkl_engine_new(). */
struct zkt_transport sn_transport(struct sn_mount *m);

/* sn_trace() - one line of the replay trace (verbose runs only). */
void sn_trace(struct simnet *net, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The steps; each returns false if it had nothing to do. */
bool sn_apply(struct sn_mount *m);		/* server applies head of outbound */
bool sn_read(struct sn_handle *h);		/* client reads head of wire */
bool sn_deliver(struct sn_handle *h);		/* client delivers head of inbound */
bool sn_drop(struct sn_mount *m);		/* connection loss */
/* sn_drop_n() - a connection loss after the client read @read more of the
 * wire and the server applied @applied more requests, unseen */
bool sn_drop_n(struct sn_mount *m, int read, int applied);
bool sn_reconnect(struct sn_mount *m);
bool sn_expire(struct sn_mount *m);		/* server expires the session */
bool sn_replace(struct sn_mount *m);		/* new handle after an expiry */
bool sn_ev_expired(struct sn_mount *m);
bool sn_ev_connected(struct sn_mount *m);
bool sn_ev_silent(struct sn_mount *m);
bool sn_ev_tick(struct sn_mount *m);
/* The supervisor's look: every zklfs_zlater() call queued on @m runs
 * (zks_later(): connected or not). */
bool sn_look(struct sn_mount *m);
/* The supervisor says the session entered doubt, or, connected, left it
 * (a ping answered): whichever it is not in now. */
bool sn_ev_doubt(struct sn_mount *m);

/*
 * sn_clock_jump() - the clock moves @dt on at once.  Mounts other than
 * @suspended (-1: none) that are connected kept hearing the server
 * meanwhile.  sn_suspend() - the host of @m sleeps @dt (past the session
 * timeout): the server expires its session and closes its connection, and
 * its supervisor ran none of that time, so no silent event came.
 */
void sn_clock_jump(struct simnet *net, uint64_t dt, int suspended);
bool sn_suspend(struct sn_mount *m, uint64_t dt);

/* sn_next_request() - the name of the request @m's server applies next
 * ("set", "delete", ...), its path in *@path; NULL if none is queued */
const char *sn_next_request(const struct sn_mount *m, const char **path);

/* sn_busy() - does @m have anything queued or owed? */
bool sn_busy(const struct sn_mount *m);

/*
 * sn_pending_delete() - is a delete of @path (or a multi deleting it) made
 * on @m's current handle and not yet delivered: queued, applied but its
 * reply unread, or its reply (or failure) not yet delivered?
 */
bool sn_pending_delete(const struct sn_mount *m, const char *path);

#endif
