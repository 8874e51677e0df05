/*
 * tests/sim/simfs.h - the FUSE side of each simulated mount (simfs.c):
 * lock requests made, interrupted, converted and released through fs/,
 * as the kernel makes them.  One thread.
 */
#ifndef SIM_SIMFS_H
#define SIM_SIMFS_H

#include <sys/types.h>

#include "fs/signals.h"
#include "tests/sim/sim.h"

/* An entry's pid= line is SIM_PID_BASE + its waiter (check.c). */
#define SIM_PID_BASE 100000

/* A descriptor of a lock node: MKNOD, OPEN, then flock requests on it. */
struct sfd {
	struct node *n;			/* its lock node (fs/node.h) */
	int mount, dir;
	int driven;				/* the waiter it stands for now, -1: none */
	struct fuse_req *req;		/* its latest request that waits */
	bool opened;			/* its OPEN was answered with the lock */
	bool closed;			/* RELEASE done, or the OPEN failed */
	bool forgotten;			/* FORGET done: the node may be freed */
	/* a lock file's descriptor (-o lockfiles): @n is the lock node of
	 * its record, made by fs/lockfile.c; one lock owner per descriptor */
	bool lockfile;
	bool posix;			/* a POSIX owner: given back at FLUSH,
					   else at RELEASE (flock(2)) */
	struct node *file;		/* the lock file */
	struct fuse_file_info *lfi;	/* its OPEN's answer (fh), its owner;
					   freed at its close */
};

/* simfs_init(), simfs_free() - each mount's fs/ state, with the world */
void simfs_init(struct world *wd);
void simfs_free(struct world *wd);

/* simfs_open() - MKNOD and OPEN (@flags: ZKL_NONBLOCK is O_NONBLOCK) of a
 * lock of @kind in lock @dir on mount @m.  Return: its driven id, or -1. */
int simfs_open(struct world *wd, int m, int dir, enum zkn_kind kind, int flags);


/* simfs_open_lockfile() - OPEN of lock @dir as a lock file on mount @m
 * (never waits), then flock(LOCK_SH/LOCK_EX per @kind, LOCK_NB per @flags)
 * by its one lock owner.  Return: the driven id of that request, or -1. */
int simfs_open_lockfile(struct world *wd, int m, int dir, enum zkn_kind kind, int flags);

/* simfs_flush() - FLUSH of lock-file descriptor @fd (a close() of a copy,
 * the description staying open): by its POSIX owner if it is one (whose
 * lock goes), else by another process (the description's lock stays) */
void simfs_flush(struct world *wd, int fd);

/* simfs_interrupt() - FUSE_INTERRUPT of the request @d waits in; with
 * @gone its caller dies of the signal (an OPEN's reply then finds nobody) */
void simfs_interrupt(struct world *wd, struct driven *d, bool gone);

/* simfs_release() - RELEASE of one of the descriptors that stand for @d's
 * entry, at random (and maybe FORGET); simfs_close() - of descriptor @fd */
void simfs_release(struct world *wd, struct driven *d);
void simfs_close(struct world *wd, int fd, struct driven *d);

/* simfs_end() - the end: every descriptor still open is closed, every
 * node forgotten */
void simfs_end(struct world *wd);

/* simfs_check_joins() - after the end: every flock that joined a wait was
 * answered, exactly once */
void simfs_check_joins(struct world *wd);

/* simfs_believes() - does @d's descriptor say its lock holds (its read
 * would succeed: lockreq_holder_errno() is 0)? */
bool simfs_believes(struct world *wd, const struct driven *d);

/* simfs_lost() - the engine's lost callback, if @arg is a lock node of
 * fs/: lockreq_lost(), then the loss checked.  Return: whether it was. */
bool simfs_lost(struct world *wd, struct zkl_waiter *w, void *arg);
/* simfs_doubted() - the engine's doubt callback, if @arg is a lock node of
 * fs/: passed on to it. */
void simfs_doubted(struct world *wd, struct zkl_waiter *w, void *arg);

/* simfs_stands_for() - does @f still stand for the entry of waiter @old
 * (-1: none)?  Its node holds a waiter, and its path is that entry's. */
bool simfs_stands_for(struct world *wd, const struct sfd *f, int old);

/* act_fdlock() - a driver action: flock(2) on an open holder's descriptor */
bool act_fdlock(struct world *wd);

/*
 * The holder's data (fs/wbuf.c) through descriptor @fd (a lock file's:
 * through the record that holds): simfs_write() - WRITE of @size bytes of
 * @buf at @off; simfs_truncate() - SETATTR of the size to @size; each
 * answered at once.  Return: its errno (0: done), -1 if not made (a lock
 * file's descriptor that holds nothing).  simfs_fsync() - FSYNC, answered
 * later.  act_fsdata() - a driver action: one of them, at random.
 */
int simfs_write(struct world *wd, int fd, off_t off, const char *buf, size_t size);
int simfs_truncate(struct world *wd, int fd, off_t size);
void simfs_fsync(struct world *wd, int fd);
bool act_fsdata(struct world *wd);

/* simfs_check_data() - after the end: every WRITE, SETATTR and FSYNC was
 * answered, exactly once */
void simfs_check_data(struct world *wd);

/*
 * An entry's data (fs/read.c: one FUSE request waiting for one ZooKeeper
 * call, fs/zop.h).  simfs_read() - LOOKUP of the entry @path on mount @m,
 * then a READ of @size bytes at @off by a reader (not through its
 * holder's descriptor), due @deadline ms from now (fs/pending.h).
 * Return: its index in world.zops.  simfs_read_interrupt() -
 * FUSE_INTERRUPT of READ #@k, whose caller's signal does @sig to it.
 * act_fsread() - a driver action: a READ on any mount (not a lockfiles
 * one) of an entry the server has or had, due in 20 to 400 steps; or,
 * one time in four, the interrupt of one that waits.
 */
int simfs_read(struct world *wd, int m, const char *path, off_t off, size_t size,
	       int deadline);
void simfs_read_interrupt(struct world *wd, int k, enum zklfs_signal sig);
bool act_fsread(struct world *wd);

/*
 * A lock file made (fs/lfns.c: a create, one zop, never sent twice):
 * simfs_mknod() - MKNOD of @name in the root of the lockfiles mount @m,
 * due @deadline ms from now.  Return: its index in world.zops.
 * act_fsmknod() - a driver action: a MKNOD of a new name on the seed's
 * lockfiles mount (none: nothing), due in 20 to 400 steps.
 */
int simfs_mknod(struct world *wd, int m, const char *name, int deadline);
bool act_fsmknod(struct world *wd);

/*
 * The observers, LOCKDIR/.holders and .state (fs/observe.c; simobs.c).
 * simobs_open() - LOOKUP and OPEN of lock @dir's .state (@state) or
 * .holders on mount @m; the OPEN answered once the observer has its first
 * text.  Return: the descriptor's index.  act_observe() - a driver action:
 * such an OPEN, or a READ, POLL or RELEASE of an open one, or another
 * client publishes a lock's state.  simobs_check() - the world quiet:
 * each open descriptor reads what the server holds.  simobs_end() - every
 * open descriptor released.  simobs_check_end() - every request answered
 * once.
 */
int simobs_open(struct world *wd, int m, int dir, bool state);
bool act_observe(struct world *wd);
/* For a script: simobs_read() - READ from offset 0 of descriptor @k into
 * @buf (@size bytes, NUL-terminated); false if not open.  simobs_poll() -
 * POLL of @k (its poller kept if nothing changed since its last READ);
 * simobs_wakes() - its pollers woken so far.  simobs_publish() - another
 * client publishes @state as lock @dir's. */
bool simobs_read(struct world *wd, int k, char *buf, size_t size);
void simobs_poll(struct world *wd, int k);
int simobs_wakes(const struct world *wd, int k);
void simobs_publish(struct world *wd, int dir, const char *state);
void simobs_check(struct world *wd);
void simobs_end(struct world *wd);
void simobs_check_end(struct world *wd);

#endif
