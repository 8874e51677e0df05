/*
 * zk/lock.h - the lock engine: ZooKeeper's lock recipe as an asynchronous
 * state machine fed by ZooKeeper completions and watches.
 *
 * A waiter is a small struct, never a thread.  Its life:
 *
 *   zkl_enqueue()  create DIR/NAME<marker>NNNNNNNNNN (ephemeral, sequential)
 *        |         (parked, sending nothing, while an entry of ours
 *        |         before it is not yet granted)
 *        |         list DIR's children, zkg_decide()
 *        |-- granted ------------------------------> done(0)
 *        |-- must wait: for an entry of ours, until our delete of it; for
 *        |   another client's, watch only that entry (no herd effect);
 *        |   then list the children again, or, if that entry was the
 *        |   lowest, be granted at once (a hand-off).  In a semaphore
 *        |   (a limit of N holders in DIR's data) wait to be poked by
 *        |   the release that lets it in (zk/sem.c)
 *        |-- O_NONBLOCK and not granted: delete ---> done(-EAGAIN)
 *        |-- O_NONBLOCK, the session silent: delete -> done(-ETIMEDOUT)
 *        '-- zkl_cancel(): delete ------------------> done(-EINTR)
 *   zkl_release()  delete the entry (if any) and drop the caller's reference
 *
 * One listing decides for every waiter of ours in that lock that it shows,
 * so a queue the engine already tracks costs one create per enqueue, not a
 * listing of all its entries.
 *
 * A grant without a listing first makes sure the waiter's own entry is
 * there (deleted by someone else while it waited: done(-EIO)).  Entries
 * held, or waiting for an entry, are watched from the next supervisor tick
 * on.  If a granted entry is deleted by anyone else, or the session is presumed lost (nothing heard
 * for the session timeout) or has expired, the waiter is lost: the engine's
 * @lost callback runs once.
 * Faults: a request that fails with a connection loss is redone when the
 * session reconnects; a create whose outcome is unknown is resolved by
 * finding our entry again (its data carries a nonce line "zkl=...") and
 * adopting or deleting it; after an expiry every waiter not yet granted is
 * enqueued again on the new session, oldest first.
 *
 * Threads: @done runs exactly once per waiter, never with the engine's lock
 * held: on the thread that drives ZooKeeper (zk/drive.h), or on the thread of a call
 * into the engine (zkl_cancel(), zkl_release(), or the supervisor's events)
 * whose work answered it.  No function here blocks.
 */
#ifndef ZK_LOCK_H
#define ZK_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "zk/metrics.h"
#include "zk/naming.h"
#include "zk/session.h"
#include "zk/transport.h"

struct zkl_engine;
struct zkl_waiter;

typedef void (*zkl_done_fn)(struct zkl_waiter *w, int err, void *arg);

/*
 * A granted lock was lost.  Runs once per waiter, with the engine's lock
 * held (so it cannot race zkl_release()): it must only record the fact and
 * wake whoever polls, never call back into the engine.
 */
typedef void (*zkl_lost_fn)(struct zkl_waiter *w, void *arg);

/*
 * zkl_engine_on_revoke() - run @revoked (as the lost callback runs: once,
 * under the engine's lock, only to record and wake) when a granted entry's
 * data becomes "__REVOKE__": someone asks its holder to let go (Curator's
 * convention; user.zklockfs.revoke).  A request that came while it waited
 * is reported by zkl_info() at the grant instead.  Call before the first
 * enqueue.
 */
void zkl_engine_on_revoke(struct zkl_engine *e, zkl_lost_fn revoked);

/*
 * zkl_engine_on_doubt() - run @doubted (as the lost callback runs: under
 * the engine's lock, only to record and wake) when a granted entry's
 * session enters doubt, and again when a read after the doubt showed the
 * entry there (see zk/watch.c); zkl_doubt_locked() says which.  A doubt
 * that ends in a loss runs the lost callback instead.  A grant made in
 * doubt is reported by zkl_info() at the grant.  Call before the first
 * enqueue.
 */
void zkl_engine_on_doubt(struct zkl_engine *e, zkl_lost_fn doubted);
/* zkl_doubt_locked() - is @w in doubt?  For the doubted callback. */
bool zkl_doubt_locked(const struct zkl_waiter *w);

/*
 * zkl_engine_on_dir() - run @fn(@arg, dir, +1) when a waiter in the lock
 * @dir is made and @fn(@arg, dir, -1) when it is freed, which is after its
 * entry's delete completed (a lingering entry, and one whose hand-off is
 * under way, are still waiters): while the count is above zero, something
 * of the lock lives on this engine's session (fs/pool.c keeps the lock
 * there).  Runs under the engine's lock: it may only count, never call
 * back into the engine.  Call before the first enqueue.
 */
typedef void (*zkl_dir_fn)(void *arg, const char *dir, int delta);
void zkl_engine_on_dir(struct zkl_engine *e, zkl_dir_fn fn, void *arg);

/* The data of a revocation request: Curator's LockInternals.REVOKE_MESSAGE. */
#define ZKL_REVOKE_DATA "__REVOKE__"

/*
 * zkl_engine_set_linger() - lingering locks (zk/linger.c): after the last
 * release of an entry that holds its lock, keep it up to @ms milliseconds
 * (0: never) and grant the next zkl_enqueue() of the same name and kind at
 * once, on it.  Any thread.
 */
void zkl_engine_set_linger(struct zkl_engine *e, unsigned ms);

/*
 * zkl_engine_check() - in the sanitizer builds (ZKL_LOCKCHECK), the first
 * broken invariant that ties a waiter's fields together, as a line naming
 * it (valid until the next call), else NULL; NULL always in other builds.
 * For the simulator, after each step.  Any thread but a done callback's.
 */
const char *zkl_engine_check(struct zkl_engine *e);

/* zkl_cached() - is @path, an entry of the lock @dir, lingering?  Any thread. */
bool zkl_cached(struct zkl_engine *e, const char *dir, const char *path);

/* zkl_unlinger() - end the linger in the lock @dir (its delete is queued on
 * the session when this returns: an rmdir sent next sees it gone).  Any
 * thread but a done callback's. */
void zkl_unlinger(struct zkl_engine *e, const char *dir);

/* Flags for zkl_enqueue(). */
#define ZKL_NONBLOCK	0x1	/* fail with -EAGAIN rather than wait */

/*
 * zkl_engine_new() - an engine that reaches ZooKeeper through @t (copied;
 * zkt_session() for a real session).  Return: NULL on ENOMEM.
 */
struct zkl_engine *zkl_engine_new(const struct zkt_transport *t,
				  enum zkn_naming naming, zkl_lost_fn lost);

/*
 * zkl_engine_events() - the session events the engine must hear, for
 * zks_start(): connected (redo what failed), silent (presume held locks
 * lost), expired (re-enqueue waiters on the new session), doubt (tell
 * holders; no grant without a round trip meanwhile).
 */
struct zks_events zkl_engine_events(struct zkl_engine *e);

/*
 * zkl_engine_shutdown() - answer every waiter not yet granted with
 * -ESHUTDOWN (their entries go with the session), and from now on grant
 * nothing and refuse every zkl_enqueue() (-ESHUTDOWN): a stop may still
 * serve releases for a while (fs/main.c ends the holders first), and no
 * lock may be granted meanwhile.  Before zks_close().
 */
void zkl_engine_shutdown(struct zkl_engine *e);

/* zkl_engine_free() - after zks_close(): frees every waiter left. */
void zkl_engine_free(struct zkl_engine *e);

/*
 * zkl_enqueue() - ask for the lock whose znode is @dir, with an entry named
 * @name plus the engine's marker for @kind, holding @data (@len bytes).
 * @owner is the caller's tag for the entry (its uid), for zkl_owner().
 * @done(w, 0 or -errno, @arg) runs exactly once later (see above).
 * Return: 0 and the waiter in *@out (the caller holds a reference, to give
 * back with zkl_release()); or a negative errno (-ESHUTDOWN once
 * zkl_engine_shutdown() ran; -ETIMEDOUT for ZKL_NONBLOCK while the session
 * is silent), and @done never runs.
 * A lingering entry of the same name and kind is granted again at once:
 * then *@out may be a waiter released before, and @done(0) has already
 * run, on this thread, when this returns.
 */
int zkl_enqueue(struct zkl_engine *e, const char *dir, const char *name,
		enum zkn_kind kind, int flags, const char *data, int len,
		uint32_t owner, zkl_done_fn done, void *arg,
		struct zkl_waiter **out);

/*
 * zkl_owner() - is @path, a child of the lock @dir, an entry of this
 * engine's (created, not yet gone)?  Then *@owner gets the tag it was
 * enqueued with.  Unlike the entry's data,
 * which its holder or any client may rewrite, the tag is what this daemon
 * recorded.  Any thread; takes the engine's lock.
 */
bool zkl_owner(struct zkl_engine *e, const char *dir, const char *path,
	       uint32_t *owner);

/*
 * zkl_limit_changed() - this mount just set the limit of the lock @dir
 * from @before to @now (0: none, a plain lock): wake the waiters a larger
 * limit lets in (a poke each: zk/sem.c); the others see it at their next
 * listing, and none of this mount's is granted without one (a hand-off, a
 * confirmation) until the limit is read again.  Any thread but a done callback's; does not block.
 */
void zkl_limit_changed(struct zkl_engine *e, const char *dir, unsigned before,
		       unsigned now);

/*
 * zkl_cancel() - stop waiting: if @w is not yet answered, its entry is
 * deleted (now, or as soon as its create completes) and done(-EINTR) runs
 * before this returns.  A granted waiter is left alone.  Any thread.
 */
void zkl_cancel(struct zkl_waiter *w);

/*
 * zkl_entry_gone() - the server showed @w's entry gone (an exists after a
 * sync on its session answered "no node": fs/confirm.c): a granted waiter
 * not given back is lost, as its own watch would say later; anything else
 * is left alone.  Any thread but a done or lost callback's.
 */
void zkl_entry_gone(struct zkl_waiter *w);

/*
 * zkl_release() - the caller is finished with @w: the entry, if it exists,
 * is deleted, and the caller's reference is dropped.  Call it after done
 * has run (or instead of waiting for it after zkl_cancel()).  Any thread.
 */
void zkl_release(struct zkl_waiter *w);

/* What a caller may read of a waiter; copies, taken under the engine lock. */
struct zkl_info {
	bool created, granted, lost;
	bool revoking;			/* asked to let go (zkl_engine_on_revoke()) */
	bool doubt;			/* in doubt (zkl_engine_on_doubt()) */
	unsigned limit;			/* the semaphore's limit it was granted
					   under (0: a plain lock) */
	uint32_t grants;		/* grants of its entry before this one
					   (lingering): the fencing token's
					   third field */
	int32_t seq;
	int64_t czxid;
	enum zkn_kind kind;
	enum zkm_loss loss;		/* why, if lost */
};

/*
 * zkl_info() - the state of @w. If @path is not NULL and the entry exists,
 * a malloc'ed copy of its path goes there (else NULL).
 */
void zkl_info(struct zkl_waiter *w, struct zkl_info *info, char **path);

/*
 * zkl_loss_locked() - why @w's lock was lost: for the lost callback, which
 * runs under the engine's lock (a caller outside it reads zkl_info()).
 */
enum zkm_loss zkl_loss_locked(const struct zkl_waiter *w);

#endif
