/*
 * tests/sim/simfs_int.h - what simfs.c (the seam, the mounts) and
 * simfsact.c (the kernel's requests) share; nothing else includes it.
 */
#ifndef SIM_SIMFS_INT_H
#define SIM_SIMFS_INT_H

#include "tests/sim/simfs.h"

#include "fs/lockreq.h"

/* What a request asks: a lock (OPEN, flock, FLUSH, RELEASE), of the
 * holder's data (fs/wbuf.c), of an observer (fs/observe.c: LOOKUP,
 * OPEN, READ, POLL, RELEASE of LOCKDIR/.holders or .state), or one zop
 * (fs/zop.h): an entry's data (fs/read.c: READ), a lock file made
 * (fs/lfns.c: MKNOD). */
enum sreq_op { SR_LOCK, SR_WRITE, SR_SETATTR, SR_FSYNC, SR_OBS, SR_READ, SR_MKNOD };

/* A FUSE request, as the sim's kernel keeps it: until the world ends, so
 * that an answer to one already answered is found, not a use after free. */
struct fuse_req {
	enum sreq_op op;
	int driven;				/* the waiter it asks for (-1: none) */
	int joined;			/* a flock that joined the wait of this
					   waiter (-1: none), answered with it */
	int fd;				/* on this descriptor */
	bool fdreq;			/* a flock request, not the OPEN */
	int old;			/* flock: the waiter its descriptor stood
					   for when asked (-1: none) */
	int replies;
	int result;			/* the first answer's errno */
	fuse_interrupt_func_t intr;	/* registered by on_interrupt() */
	void *intr_arg;
	bool interrupted;		/* FUSE_INTERRUPT came */
	enum zklfs_signal sig;		/* what its signal does to its caller */
	struct fuse_ctx ctx;		/* its caller, as fuse_req_ctx() says */
	bool gone;			/* its caller is gone: open() -ENOENT */
	bool lfopen;			/* the OPEN of a lock file: no lock */
	size_t size;			/* WRITE: its bytes, once answered; SETATTR:
					   the size it asked, once answered */
	int holder;			/* FSYNC: the waiter its descriptor stood
					   for (-1: none) ... */
	int version;			/* ... and the versions that one had
					   written when it asked */
	int obs;			/* SR_OBS: its observer descriptor */
	struct node *node;		/* SR_OBS: a LOOKUP's answer */
	char *text;			/* SR_OBS: a READ's answer, @size bytes */
	unsigned revents;		/* SR_OBS: a POLL's answer */
	int zop;			/* SR_READ, SR_MKNOD: its index in world.zops */
};

/* A descriptor of LOCKDIR/.holders or .state (simobs.c). */
struct sobs {
	int mount, dir;
	bool state;			/* .state, else .holders */
	struct node *lock, *n;		/* the lock's node and the handle's: one
					   LOOKUP each, forgotten at RELEASE */
	struct fuse_file_info fi;	/* its OPEN's answer */
	bool opened;			/* its OPEN answered with a descriptor */
	bool closed;			/* RELEASE done, or the OPEN failed */
	int wakes;			/* its pollers woken */
};

struct fuse_pollhandle {
	int fd;
	int obs;			/* an observer descriptor's poller: its
					   index + 1; 0: the lock's (@fd) */
};

/* A mount's fs/ state: one per simulated mount. */
struct simfs {
	struct zklfs fs;
	struct zklfs_conf conf;
	int m;
	struct zks zks;			/* the mount's one session, as fs/ names
					   it (zklfs_session()): its address only */
	struct zkt_transport t;		/* its transport (zklfs_transport()) */
};

/* simfs_new_req() - a new request of the kernel's about descriptor @fd,
 * for waiter @driven (-1: none); @fdreq a flock request, else the OPEN */
struct fuse_req *simfs_new_req(struct world *wd, int fd, int driven, bool fdreq);

/* simfs_fuse_thread() - a call into fs/ on the FUSE thread begins (@on) or
 * ends: the ZooKeeper thread may preempt it where it takes a mutex */
void simfs_fuse_thread(struct world *wd, bool on);

/* simfs_after_ask() - @d was just asked for on @f: its waiter, if any */
void simfs_after_ask(struct driven *d, struct sfd *f);

/* simobs.c: an observer's request @r answered @err, or (its OPEN) with
 * the descriptor @fi; a woken poller of observer descriptor @obs. */
void simobs_answered(struct world *wd, struct fuse_req *r, const struct fuse_file_info *fi,
		   int err);
void simobs_woken(struct world *wd, int obs);

#endif
