/*
 * fs/pending.h - a request that waits on ZooKeeper, answered exactly once:
 * by the completion that ends its work, by a signal of its caller
 * (FUSE_INTERRUPT: EINTR) or by its deadline (ETIMEDOUT, the session
 * timeout after it came).  So no read, mkdir, rmdir, xattr, F_GETLK or
 * fsync blocks longer than the session timeout while ZooKeeper is away,
 * and a signal ends any of them (docs/SPEC.md, "When ZooKeeper is away").
 * A wait for a lock is not one of these: it waits as long as it takes,
 * and its own interrupt handshake is fs/lockreq.c's.
 *
 * A signal that ends the caller (kill, ^C on most programs) is answered
 * at once.  One it catches (a handler, Go's preemption) is answered only
 * once the request has waited ZPEND_PATIENCE_MS, at the next sweep: a
 * healthy ZooKeeper answers within it, and the caller gets that answer,
 * never the EINTR a local disk would not give (fs/signals.h).  One that
 * only stops it (^Z) leaves the request to its answer or its deadline.
 *
 * The request is embedded in its owner (a zop, F_GETLK's question, an
 * fsync's wait).  Its owner starts it, keeps it until its own work is
 * done, and answers through zpend_claim(): true means the answer is the
 * owner's to give; false means an interrupt or the deadline gave it
 * already, and the owner only lets go of its memory.  The interrupt and
 * the sweep reach only requests not yet claimed, under the list's mutex,
 * and copy what they answer before they let it go: so an owner may free
 * its memory once its zpend_claim() has returned, whatever it said.
 *
 * The answers and the interrupt go through fs->reply, so the simulator
 * drives them too.  Every function may be called on any thread, holding
 * any ranked mutex (the list's is the innermost, ZKMX_RANK_PENDING),
 * except zpend_start(), which registers the interrupt: without fs->lock.
 */
#ifndef FS_PENDING_H
#define FS_PENDING_H

#include <stdint.h>

#include "fs/mount.h"

/* How long a request whose caller caught a signal may still wait for
 * ZooKeeper's answer: many round trips of a healthy ensemble. */
#define ZPEND_PATIENCE_MS 500

struct zpend {
	fuse_req_t req;
	uint64_t since_ms;		/* when it started (zklfs_now_ms()) */
	uint64_t due_ms;		/* answered ETIMEDOUT then */
	const void *zks;		/* the session it needs, if known: fs->pend->mu */
	struct zpend *prev, *next;	/* fs->pend's list while unanswered */
	bool answered;			/* fs->pend->mu */
	bool interrupted;		/* a signal came: fs->pend->mu */
	bool started;			/* by its owner's thread, before any other sees it */
};

/*
 * zpend_init() - the mount's list, empty; @arm is called (without any
 * lock, on the thread of a zpend_start()) when the list stops being empty
 * and no sweep is due: it must have zpend_sweep() called within the
 * session timeout's tenth, and again while it returns true.  NULL: no
 * deadlines are kept (the simulator).  Return: 0 or -ENOMEM.
 * zpend_timeout() - set the deadline's length: the session timeout
 * in ms (from the server, once known).
 */
int zpend_init(struct zklfs *fs, void (*arm)(struct zklfs *fs));
void zpend_timeout(struct zklfs *fs, int timeout_ms);
void zpend_free(struct zklfs *fs);

/*
 * zpend_start() - @p (zeroed, or claimed before) now waits for @req: it is
 * due a session timeout from now, and a FUSE_INTERRUPT of @req answers it
 * EINTR as said above (maybe inside this call: FUSE_INTERRUPT may have
 * come already).
 */
void zpend_start(struct zklfs *fs, struct zpend *p, fuse_req_t req);

/*
 * zpend_claim() - is the answer to @p's request still to give?  True once:
 * the caller answers it (or lets it go unanswered: then nobody does).
 * A @p never started is always the caller's.
 */
bool zpend_claim(struct zklfs *fs, struct zpend *p);

/* zpend_answered() - has @p been answered already (an interrupt, the
 * deadline)?  Its work may stop there. */
bool zpend_answered(struct zklfs *fs, struct zpend *p);

/*
 * zpend_session() - @p's request needs the session @zks (a struct zks):
 * zpend_silent() answers it once that session is silent.
 * zpend_silent() - the mount declared the session @zks silent: answer
 * ETIMEDOUT (EINTR if interrupted) now every request that needs it,
 * rather than at its deadline, so that a command of several requests
 * waits out one outage once, not once a request.  Return: how many
 * were answered ETIMEDOUT.
 */
void zpend_session(struct zklfs *fs, struct zpend *p, const void *zks);
unsigned zpend_silent(struct zklfs *fs, const void *zks);

/*
 * zpend_sweep() - answer ETIMEDOUT every request due by @now_ms, with
 * one log line for them all, and EINTR every interrupted one that has
 * waited ZPEND_PATIENCE_MS.  Return: whether any request still waits
 * (sweep again later).  @stop: the mount is going; then nothing is armed
 * again.
 */
bool zpend_sweep(struct zklfs *fs, uint64_t now_ms, bool stop);

#endif
