/*
 * tests/sim/sim.h - the simulator's world: engines over simulated mounts,
 * the waiters the driver made, and the invariants checked on them.
 *
 * One run (one seed) builds a world: a simulated ZooKeeper (simzk), a few
 * mounts each with an engine (zk/lock.c) over its own simulated session
 * (simnet), a few lock directories, and a foreign client.  The driver
 * (sim.c) takes steps chosen by the seeded PRNG; after each one, and inside
 * the engine's callbacks, check.c tests the invariants.  A violated one
 * records its message in the world and ends the run.  One thread.
 */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "zk/lock.h"
#include "tests/sim/rng.h"
#include "tests/sim/simnet.h"

#define SIM_MOUNTS	3
#define SIM_DIRS	2
#define SIM_MAX_LIVE	16	/* waiters not yet released, at most */

/* A waiter of the driver's: one zkl_enqueue(). */
struct driven {
	int id, mount, dir;
	enum zkn_kind kind;
	int flags;
	struct zkl_waiter *w;	/* valid until released */
	int ndone;		/* done calls seen: must end at exactly 1 */
	int result;
	bool lost, released, cancelled;
	bool asleep;		/* it held on a host that slept past the
				   session timeout: beyond any client's
				   reach, only the fencing token protects */
	bool unlinked;		/* its entry was deleted by another client
				   (or was, when a linger granted it) */
	char path[64];		/* its entry, once granted */
	long granted_at, lost_at;	/* world.events at its grant and loss (0: not) */
	unsigned glimit;	/* the rule its grant followed: the limit
				   (0: a plain lock) world.rule gave then */
	unsigned mark;		/* its mount's silents + expiries at the grant */
	int fd;			/* through fs/: its descriptor (simfs.h); -1:
				   the driver called the engine itself */
	struct fuse_req *req;	/* through fs/: the request it waits in */
	bool lost_early;	/* through fs/: lost while its grant was on its
				   way to its request (lockreq.lost_early) */
	/* through fs/: the data written on its descriptor while it held
	 * (WRITE, SETATTR of the size: simfsact.c), and what the server did
	 * with it (check.c) */
	char *wbuf;		/* its latest version, as fs/wbuf.c must keep it */
	int wlen;
	int wversions;		/* versions written (0: none) */
	unsigned wdrops;	/* its mount's connection losses at the last one */
	int wapplied;		/* the latest of them the server applied */
	bool wother;		/* a set not of its data changed its entry since */
	bool wdeleted;		/* a delete of its entry by its mount was applied */
};

/* A set fs/wbuf.c made: request #@id, the holder @driven's @version. */
struct wset {
	uint64_t id;
	int driven, version;
};

struct node;

/* A value the server held for a path: its data, or none (@gone). */
struct sval {
	bool gone;
	int len;
	char *data;
};

/*
 * A FUSE request waiting for one ZooKeeper call (fs/zop.h): a READ of an
 * entry's data (fs/read.c), or the MKNOD of a lock file (@mknod,
 * fs/lfns.c: a create, never sent twice), made on mount @mount at @since
 * (the clock), due at @due (its deadline, fs/pending.h); for a READ, the
 * values its entry @path had on the server from then until it was
 * answered (check.c: invariant 12).
 */
struct szop {
	bool mknod;
	int mount;
	char path[64];
	off_t off;
	size_t size;
	uint64_t since, due;
	unsigned losses;		/* its mount's connection losses and
					   expiries when asked */
	struct node *node;		/* a READ's, looked up for it; a MKNOD's
					   answer: each forgotten once answered */
	bool interrupted;		/* FUSE_INTERRUPT came */
	int sig;			/* what its signal did (enum zklfs_signal) */
	int creates;			/* a MKNOD's creates sent */
	int replies;
	int result;			/* its first answer's errno */
	char *text;			/* ... or a READ's @len bytes */
	size_t len;
	struct sval *vals;
	int nvals, valcap;
};

/* Notifications that reached exclusive waiters per deleted path (herd). */
struct herd {
	char *path;
	int count;
};

struct world {
	uint64_t seed;
	bool verbose;
	struct sim_rng rng;		/* every choice */
	struct sim_rng nonce_rng;	/* the engine's getrandom() */
	struct simnet net;
	struct zkl_engine *eng[SIM_MOUNTS];
	enum zkn_naming naming[SIM_MOUNTS];
	char dirs[SIM_DIRS][32];
	bool semaphore;			/* d0 is one, and its limit changes */
	unsigned limit[SIM_DIRS];	/* a semaphore's (0: a plain lock) */
	/*
	 * The rule in force for each mount's grants: the limit d0 had when
	 * the server applied the last listing that mount's engine decided
	 * from (zke_children_done()) and has read.  A change reaches a mount
	 * with its next listing (SPEC: holders keep their lock, and grants
	 * follow the new limit from the next listing on), so a grant must
	 * be right under what its mount last listed, whatever path it takes.
	 */
	unsigned rule[SIM_MOUNTS][SIM_DIRS];
	struct lrule { int32_t version; unsigned limit; } *lhist;
	int nlhist, lhcap;		/* d0's limit at each data version */
	int64_t foreign;		/* the other client's session */
	struct driven *driven;
	int ndriven, drivencap;
	struct herd *herd;
	int nherd, hcap;
	int fault_rate;			/* per 1000 steps, of each fault kind */
	bool ending;			/* the end phase: no faults */
	long step;

	bool lingers;			/* its mounts linger (zk/linger.c) */
	int lockfiles;			/* the mount whose fs/ opens are of lock
					   files (-o lockfiles), -1: none */
	int last_released;		/* the driven released last, + 1 (0: none) */
	char (*gone)[64];		/* entries other clients deleted */
	int ngone, gcap;
	long steps_total;
	long events;			/* grants and losses so far */
	struct simfs *fs[SIM_MOUNTS];	/* each mount's fs/ (simfs.c) */
	struct sfd *fds;		/* the descriptors of lock nodes */
	int nfd, fdcap;
	struct fuse_req *asker;		/* the request being made now */
	struct fuse_req **reqs;		/* every FUSE request made, kept */
	int nreq, reqcap;
	struct wset *wsets;		/* the sets of the holders' data */
	int nwsets, wscap;
	struct sobs *obs;		/* the observers' descriptors (simobs.c) */
	int nobs, obscap;
	struct szop *zops;		/* the requests of one zop (simfsact.c) */
	int nzops, zopcap;
	/*
	 * The FUSE thread runs a call into fs/ (simfs.c): where it takes a
	 * mutex holding none, the ZooKeeper thread may run first
	 * (zkmx_preempt): one delivery, one time in four; or, set by a
	 * script, @preempt_run at a mutex of rank @preempt_rank, once
	 * @preempt_skip of them have been passed.  The next @calm points are
	 * left alone (an action whose outcome the driver foretells).
	 */
	bool fuse_thread;
	int preempt_rank, preempt_skip, calm;
	void (*preempt_run)(struct world *wd);
	char fail[1024];		/* the first violation, "" if none */
};

/* sim.c: a world, for a seed or a scenario ------------------------------- */

/* sim_world_init() - the world of @seed (its choices: sim.c); sim_world is it */
void sim_world_init(struct world *wd, uint64_t seed, bool verbose);
void sim_world_free(struct world *wd);
/* sim_world_bury() - keep a failed world reachable (no leak report) */
void sim_world_bury(struct world *wd);
/* sim_set_limit() - mount @m sets d0's limit to @now (0: removes it) */
void sim_set_limit(struct world *wd, int m, unsigned now);
/* sim_end_phase() - heal, release everything, drain; the end's invariants */
void sim_end_phase(struct world *wd);

/* scenarios.c: sim_scenarios() - run every scripted scenario, or replay
 * the one named @name with a trace.  Return: whether all passed. */
bool sim_scenarios(const char *name);

/* The world of the running seed: the engine's callbacks find it here. */
extern struct world *sim_world;
/* check.c: grants that passed over an entry their mount gave back,
 * grants on a lingering entry, sets of the holders' data, READs of
 * entries, and those of them answered a value (or ENOENT) after their
 * mount lost its connection or session while they waited (sent again) */
extern long sim_cohort_grants, sim_linger_grants, sim_data_sets, sim_reads, sim_reads_again;
/* simfs.c: FUSE requests made to fs/, and the FUSE thread's preemptions */
extern long sim_fs_requests, sim_preemptions;

/* actions.c: each returns false if it found nothing to act on ------------- */

bool act_enqueue(struct world *wd);	/* a new waiter: random mount, dir, kind,
					   through fs/ or the engine */
/* sim_new_driven() - a new waiter's record, not yet enqueued.  Return: its
 * id, or -1 if too many live (SIM_MAX_LIVE). */
int sim_new_driven(struct world *wd, int m, int dir, enum zkn_kind kind, int flags);
/* act_enqueue_on() - a new waiter of @kind and @flags on mount @m, lock
 * @dir.  Return: its driven id, or -1 if too many live (SIM_MAX_LIVE). */
int act_enqueue_on(struct world *wd, int m, int dir, enum zkn_kind kind, int flags);
bool act_cancel(struct world *wd);	/* an unanswered waiter is interrupted */
bool act_release(struct world *wd);	/* an answered waiter is given back */
bool act_unlink(struct world *wd);	/* another client deletes an entry */
/* act_unlink_path() - another client deletes @path, the entry of driven @id (-1: none) */
void act_unlink_path(struct world *wd, const char *path, int id);
bool act_foreign_enqueue(struct world *wd);
bool act_foreign_release(struct world *wd);
bool act_setdata(struct world *wd);	/* a holder (or the other client) writes */
void foreign_leaves(struct world *wd);	/* the other client deletes all it has */
/* act_release_driven() - zkl_release() of @d, and the release-order check */
void act_release_driven(struct world *wd, struct driven *d);
bool act_is_answered(const struct driven *d);

/* check.c ------------------------------------------------------------------ */

/* sim_failf() - record a violation (the first one wins). */
void sim_failf(struct world *wd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The engine's done and lost callbacks (arg: the driven's id, or for lost a
 * lock node of fs/). */
void sim_done(struct zkl_waiter *w, int err, void *arg);
void sim_lost(struct zkl_waiter *w, void *arg);
/* The engine's doubt callback: told to fs/ for its waiters. */
void sim_doubted(struct zkl_waiter *w, void *arg);
/* sim_was_doubtful() - may mount @m's engine know its session in doubt? */
bool sim_was_doubtful(struct world *wd, int m);
/* sim_answered(), sim_lost_driven() - @d answered @err, @d lost: checked, as
 * the engine's callbacks check its own waiters (simfs.c: through fs/) */
void sim_answered(struct world *wd, struct driven *d, int err);
bool sim_was_silent(struct world *wd, int m);
void sim_lost_driven(struct world *wd, struct driven *d);

/* simnet's listing hook: a listing of @path read by @m's engine. */
void sim_list_hook(void *ctx, struct sn_mount *m, const char *path,
		   const struct Stat *dir, void (*done)(void));

/* sim_limit_at() - record that d0's data version @version sets @limit. */
void sim_limit_at(struct world *wd, int32_t version, unsigned limit);

/* simnet's hook: a DELETED/CHANGED event reaches the watcher @wctx. */
void sim_watch_hook(void *ctx, struct sn_mount *m, int type, const char *path,
		    void *wctx);

/* sim_check_step() - exclusion, over the server's entries, after a step. */
void sim_check_step(struct world *wd);

/* sim_check_release() - after zkl_release() of @d whose entry was @path. */
void sim_check_release(struct world *wd, struct driven *d, const char *path);

/*
 * The holders' data (fs/wbuf.c), checked as it goes: sim_data_sent() - a
 * set of @path (@data, @len) made on mount @m as request #@id;
 * sim_applied() - simnet's hook as the server applies a set or a delete;
 * sim_fsync_done() - an FSYNC of descriptor @fd answered 0, asked while
 * it stood for waiter @holder (-1: none), which had written @version
 * versions then.
 */
void sim_data_sent(struct world *wd, int m, const char *path, const char *data, int len,
		   uint64_t id);
void sim_applied(void *ctx, struct sn_mount *m, uint64_t id, enum sn_applied what,
		 const char *path, int rc);
void sim_fsync_done(struct world *wd, int fd, int holder, int version);

/*
 * The requests of one zop (fs/zop.c; invariant 12): sim_zop_asked() -
 * #@k is made now (a READ: the value its entry has); sim_zk_changed() -
 * simzk's hook: @path now holds @n's data (NULL: gone);
 * sim_read_answered() - READ #@k answered @err, or (0) the @len bytes
 * @buf; sim_mknod_sent() - MKNOD #@k sends its create;
 * sim_mknod_answered() - it is answered @err, or (0) the lock file @n;
 * sim_check_zops() - after the end phase: each answered once.
 */
void sim_zop_asked(struct world *wd, int k);
void sim_zk_changed(void *ctx, const char *path, const struct szk_node *n);
void sim_read_answered(struct world *wd, int k, int err, const char *buf, size_t len);
void sim_mknod_sent(struct world *wd, int k);
void sim_mknod_answered(struct world *wd, int k, int err, struct node *n);
void sim_check_zops(struct world *wd);

/* sim_check_end() - after the end phase: answered once, no orphan. */
void sim_check_end(struct world *wd);

/* sim_entry_owner() - the driven id an entry's data names, or -1 (foreign). */
int sim_entry_owner(const struct szk_node *n);

/* sim_dir_of() - is @path a child of @dir? */
bool sim_dir_of(const char *path, const char *dir);

#endif
