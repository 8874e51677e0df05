/*
 * tests/sim/simzk.h - a small in-memory ZooKeeper server for the simulator.
 *
 * What it keeps is what the lock recipe touches: znodes (path, data, data
 * version, czxid, mzxid, ephemeralOwner, cversion, children), one global
 * zxid, sessions (alive or expired), and one-shot data watches, at most one
 * per (session, path) as the server's WatchManager keeps them.  Each call is
 * one request applied atomically, as the leader applies one transaction,
 * and answers as ZooKeeper's documentation says:
 *   - create: ZNONODE (no parent), ZNOCHILDRENFOREPHEMERALS, ZNODEEXISTS;
 *     a sequential name is the parent's count of child creates printed
 *     "%010d" (signed 32 bits, so it wraps to "-2147483648"), as a 3.8
 *     server names them (measured: deletes do not advance it); every create
 *     and delete of a child bumps the parent's cversion;
 *   - delete: ZNONODE, ZBADVERSION, ZNOTEMPTY; fires DELETED watches;
 *   - set: ZNONODE, ZBADVERSION; version+1; fires CHANGED watches;
 *   - get with a watch on a missing node: ZNONODE and no watch is left;
 *   - remove watches: ZNOWATCHER if the session has none on the path;
 *   - multi of delete and check ops: all or nothing; results before the
 *     failing op ZOK, the failing op its error, those after it
 *     ZRUNTIMEINCONSISTENCY; the multi's rc is the first error;
 *   - expiry: the session's ephemerals are deleted (firing others'
 *     watches) and its watches dropped.
 * Children come back in an order chosen by the run's PRNG: ZooKeeper
 * promises none.  A watch that fires is handed to @notify (simnet routes it
 * to the session's connection).  One thread; no locks.
 */
#ifndef SIM_SIMZK_H
#define SIM_SIMZK_H

#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "tests/sim/rng.h"

struct szk_node {
	char *path;
	char *data;
	int len;
	int32_t version;
	int32_t cversion;
	int32_t seqctr;			/* the next sequential child's number */
	int64_t czxid, mzxid, pzxid;
	int64_t owner;			/* ephemeralOwner: 0 if persistent */
};

struct szk_watch {
	int64_t sid;
	char *path;
	bool child;		/* a child watch (fires ZOO_CHILD_EVENT) */
};

/* A fired watch: @type ZOO_DELETED_EVENT, ZOO_CHANGED_EVENT or
 * ZOO_CHILD_EVENT on @path. */
typedef void (*szk_notify_fn)(void *ctx, int64_t sid, int type,
			      const char *path);

struct szk {
	struct szk_node *nodes;
	int nnodes, cap;
	struct szk_watch *watches;
	int nwatches, wcap;
	int64_t zxid;
	int64_t next_sid;
	int64_t *dead;			/* expired session ids */
	int ndead, dcap;
	struct sim_rng *rng;		/* the order of children listings */
	szk_notify_fn notify;
	void *notify_ctx;
	/* if set, after every change of a znode, whoever made it: @path
	 * holds @n's data now, or (@n NULL) is gone */
	void (*changed)(void *ctx, const char *path, const struct szk_node *n);
	void *changed_ctx;
};

/* szk_init() - an empty tree holding "/" only. */
void szk_init(struct szk *z, struct sim_rng *rng, szk_notify_fn notify,
	      void *ctx);
void szk_free(struct szk *z);

/* szk_session_new() - a new live session id. */
int64_t szk_session_new(struct szk *z);
bool szk_session_alive(const struct szk *z, int64_t sid);
/* szk_session_expire() - delete its ephemerals, drop its watches. */
void szk_session_expire(struct szk *z, int64_t sid);

/* szk_find() - the node at @path, or NULL (borrowed). */
struct szk_node *szk_find(struct szk *z, const char *path);

/*
 * szk_create() - as zoo_create2(): @mode ZOO_EPHEMERAL, ZOO_SEQUENCE or
 * both.  *@out_path (malloc'ed) and *@stat on ZOK.
 */
int szk_create(struct szk *z, int64_t sid, const char *path, const char *data,
	       int len, int mode, char **out_path, struct Stat *stat);
int szk_delete(struct szk *z, const char *path, int version);
int szk_set(struct szk *z, const char *path, const char *data, int len,
	    int version);
/* szk_get() - data (borrowed) and stat; @watch_sid, if not 0, watches. */
int szk_get(struct szk *z, const char *path, int64_t watch_sid,
	    const char **data, int *len, struct Stat *stat);
int szk_exists(struct szk *z, const char *path, struct Stat *stat);
/* szk_children() - names (malloc'ed vector), shuffled. */
int szk_children(struct szk *z, const char *path, struct String_vector *out);
/* szk_watch_children() - a child watch of @sid on @path (once per session) */
void szk_watch_children(struct szk *z, int64_t sid, const char *path);
/* remove @sid's data (or @child) watch on @path: ZNOWATCHER if none */
int szk_unwatch(struct szk *z, int64_t sid, const char *path, bool child);
bool szk_watched(const struct szk *z, int64_t sid, const char *path, bool child);
/*
 * szk_multi() - delete and check ops (@types ZOO_DELETE_OP/ZOO_CHECK_OP,
 * @paths, @versions); fills @errs.  Return: ZOK or the first error.
 */
int szk_multi(struct szk *z, int count, const int *types, char *const *paths,
	      const int *versions, int *errs);

/* szk_free_strings() - free a vector szk_children() filled. */
void szk_free_strings(struct String_vector *sv);

#endif
