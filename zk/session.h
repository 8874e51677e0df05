/*
 * zk/session.h - the mount's ZooKeeper session, kept alive across faults.
 *
 * A session of the mount (fs/pool.c keeps one or more).  zks_open()
 * connects and waits (bounded by the session timeout).  zks_start() then
 * starts the supervisor, a thread of ours that:
 *   - pings every timeout/10 and tracks when ZooKeeper was last heard,
 *     and calls ev->tick() after each ping (work that may wait that long);
 *   - calls ev->silent() once nothing was heard for the session timeout
 *     less a margin (a tenth of it, 20 ms to 1 s: zks_quiet()), at that
 *     time: the server may expire us a margin later, so held locks must be
 *     presumed lost from then on (Curator's LOST);
 *   - calls ev->doubt(true) once the session is in doubt: a ping out
 *     unanswered for two periods (zks_doubt_after_ms()), or the client
 *     reports the connection lost; and ev->doubt(false) once a ping sent after that
 *     is answered on a connected session (a round trip on it);
 *   - calls ev->connected() after a reconnection within the same session
 *     (requests that failed with a connection loss can be redone), and
 *     and after a silence that ends while connected (a ping answered
 *     shows the server heard us within the timeout less the margin);
 *   - on expiry closes the dead handle, opens a new session, and calls
 *     ev->expired() once the new handle exists (requests may be queued on it
 *     at once; ZooKeeper sends them when connected).
 * The callbacks run on the supervisor thread, never on ZooKeeper's threads,
 * one at a time.
 *
 * Every asynchronous call goes through the zks_a*() wrappers, which use the
 * current handle (zk/calls.c): the single-threaded client, driven by the
 * loop of zk/drive.h; completions and watchers run on the thread that
 * drives it (the FUSE thread, fs/main.c), one at a time.  A handle is
 * replaced and closed by that thread too (zks_replace()), so a wrapper
 * never uses a closed handle.
 */
#ifndef ZK_SESSION_H
#define ZK_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zk/acl.h"
#include "zk/drive.h"
#include "zk/sessmoves.h"
#include "abi/zklockfs.h"

struct zks_events {
	void (*connected)(void *arg);
	void (*silent)(void *arg);
	void (*expired)(void *arg);
	void (*tick)(void *arg);
	void (*doubt)(void *arg, bool in);	/* or NULL */
	void *arg;
};

struct zks_later;
struct zks_call;

#define ZKS_RECENT 8	/* answered pings remembered: periods ping_done() looks back */
#define ZKS_PINGS_OUT 64	/* pings out at once, at most */

/* The session's two small machines, made from zk/sessmoves.h's lists. */
#define ZKS_ENUM_LINK(s, why) ZKS_LINK_##s,
#define ZKS_ENUM_NEWS(s, why) ZKS_NEWS_##s,
enum zks_link { ZKS_LINKS(ZKS_ENUM_LINK) };
enum zks_news { ZKS_NEWS(ZKS_ENUM_NEWS) };
#undef ZKS_ENUM_LINK
#undef ZKS_ENUM_NEWS

struct zks {
	pthread_rwlock_t rw;		/* zh, gen: written by the token's
					   holder (zk/drive.h) under write,
					   read elsewhere under read */
	zhandle_t *zh;
	uint64_t gen;			/* handles replaced so far; rw */
	struct zkd_client client;	/* the loop's (zk/calls.c) */
	zhandle_t *turn_zh;		/* the token's: the handle of this turn */
	pthread_mutex_t qlock;		/* the calls queued for the driver: */
	struct zks_call *qhead, **qtail;
	zhandle_t *qzh;			/* qlock: the handle they will meet */
	uint64_t qgen;			/* qlock: its generation */
	pthread_mutex_t lock;		/* the fields below */
	pthread_cond_t cond;
	int state;			/* last session state seen */
	zhandle_t *dead;		/* expired, being replaced: ignored */
	enum zks_link link;		/* the handle's connection, as its
					   events said (zk/sessmoves.h) */
	enum zks_news news;		/* what the supervisor tells the
					   engine next (zk/sessmoves.h) */
	_Atomic uint64_t links;		/* connection changes seen: zks_links() */
	bool stop;
	uint64_t tick_at;		/* lock: zks_tick_by()'s earliest, 0: none */
	uint64_t last_heard_ms;		/* zks_now_ms(): the server had
					   heard us by then (a ping's send,
					   see ping_done(); zks_start() or
					   zks_renew(): before the session) */
	uint64_t recent[ZKS_RECENT];	/* sends of the pings answered last */
	unsigned nrecent;		/* recent[] written so far */
	/* pings complete in the order sent: ping ids [ping_done, ping_next)
	 * are out, each sent at pings_out[id % ZKS_PINGS_OUT] */
	uint64_t ping_next, ping_done;
	uint64_t pings_out[ZKS_PINGS_OUT];
	uint64_t ping_answered;		/* 1 + the id of the latest ping
					   answered (0: none) */
	bool doubt;			/* in doubt since ping doubt_ping was
					   next (zks_doubtful()); what the
					   supervisor last told ev->doubt() */
	uint64_t doubt_ping;
	uint64_t doubt_began_us;	/* supervisor's: zkm_doubt_began() */
	int timeout_ms;			/* asked for */
	int negotiated_ms;		/* the server's (it clamps what we ask) */
	char *connect;
	char *auth;			/* "user:password" or NULL */
	struct ACL_vector *acl;		/* of every znode we create */
	struct zks_events ev;
	struct zks_later *later;	/* lock: zks_later() calls to run */
	struct zk_heartbeat *hb;	/* published to, or NULL: set before
					   zks_start(), then read only */
	uint64_t hb_gen;		/* lock: handles replaced, as published */
	pthread_t supervisor;
	bool started;
	bool inited;			/* zks_open() ran: zks_close() has work */
};

/*
 * zks_open() - connect to @connect and wait until the session is
 * established, at most @timeout_ms.  Main thread, before any other use.
 * @auth_file, if not NULL, holds "user:password" for digest auth; it must
 * be a regular file of the daemon's user, closed to group and others
 * (-EACCES otherwise).  Every znode made through @s then gets @acl (see
 * zk/acl.h); without @auth_file, the open ACL.
 * Return: 0, or a negative errno with one log line saying why.
 */
int zks_open(struct zks *s, const char *connect, int timeout_ms,
	     const char *auth_file, enum zkacl acl);

/*
 * zks_publish() - from now on keep @hb (abi/zklockfs.h: shared memory)
 * up to date: until when the server surely keeps this session, the
 * handle's generation, the supervisor's last look.  Main thread, between
 * zks_open() and zks_start().
 */
void zks_publish(struct zks *s, struct zk_heartbeat *hb);

/* zks_start() - start the supervisor with @ev. Return: 0 or -errno. */
int zks_start(struct zks *s, const struct zks_events *ev);

/*
 * zks_check_root() - is the ROOT @path a usable znode: it exists (with
 * @create, it and its missing ancestors are made, persistent), none of its
 * components is ephemeral, it can be listed (a mount that cannot list
 * its ROOT is of no use: wrong credentials), and, for a mount that will
 * @write, may its credentials create in it (zkcred_may_create(); without
 * credentials a tree closed to world:anyone is only said)?  A missing ROOT is refused
 * without @create: a mistyped one must not give one host a lock namespace
 * of its own.  Synchronous: only at start-up, never from a callback.
 * Return: 0, -ENOENT (missing), -ENOTDIR (a component is ephemeral),
 * -EACCES (ZooKeeper refuses), or a negative errno; one log line says why.
 */
int zks_check_root(struct zks *s, const char *path, bool create, bool write);

/* zks_session_id() - the current session's id (0 before connected). */
int64_t zks_session_id(struct zks *s);

/*
 * zks_session_of() - the session id of the handle of generation @gen
 * (zks_generation()), if that handle is the current one and connected
 * once; else 0.
 */
int64_t zks_session_of(struct zks *s, uint64_t gen);

/*
 * zks_later() - run @fn(@arg, true) on the supervisor's thread at its next
 * look (within a tenth of the session timeout, at most 1 s), to redo a
 * request that met a connection loss; or @fn(@arg, false) from zks_close(),
 * if the session closes first.  Any thread, never blocks.
 * Return: 0; -ESHUTDOWN (closing) or -ENOMEM, and then @fn never runs.
 */
int zks_later(struct zks *s, void (*fn)(void *arg, bool go), void *arg);

/*
 * zks_tick_by() - have the supervisor's next tick (ev->tick) come no later
 * than @at_ms on zks_now_ms()'s clock (a lingering lock's end: zk/linger.c).
 * Any thread, never blocks.
 */
void zks_tick_by(struct zks *s, uint64_t at_ms);
/* zks_now_ms() - the clock of zks_tick_by() and of silence, in
 * milliseconds: CLOCK_BOOTTIME, which runs through a suspend. */
uint64_t zks_now_ms(void);

/*
 * zks_quiet() - may the server have expired the session by now?  True once
 * nothing was heard for the session timeout less the margin (a tenth of
 * the timeout, 20 ms to 1 s) on zks_now_ms()'s clock, once silence was
 * declared, or once the handle knows it expired; until the server is
 * heard again.  Asked when it matters (a grant made without a round trip),
 * so a resume from suspend is seen at once, not at the supervisor's next
 * look.  Any thread; takes s->lock.
 */
bool zks_quiet(struct zks *s);

/*
 * zks_settled() - connected, heard from within the timeout less the
 * margin, not in doubt, and no zks_later() call waiting for the session to come back:
 * nothing waits on it but what is in flight.  Any thread; takes s->lock.
 */
bool zks_settled(struct zks *s);

/*
 * zks_doubtful() - is the session in doubt: the client reports the
 * connection lost (or the session expired), a ping has been out
 * unanswered for zks_doubt_after_ms(), or, since either, no ping sent after it began
 * was answered on a connected session?  Until then a holder cannot know
 * whether the server still keeps its entry, nor that it does not: the
 * mount grants nothing without a round trip (no cohort hand-off, no
 * lingering reuse).  Read when asked, as zks_quiet() is.  Any thread;
 * takes s->lock.
 */
bool zks_doubtful(struct zks *s);

/*
 * zks_doubt_after_ms() - how long a ping goes unanswered before the
 * session is in doubt: two ping periods, a period being a tenth of the
 * session timeout @timeout_ms (20 ms to 1 s).  A ping answered within two
 * periods never starts a doubt, so a session whose pings wait a moment
 * behind its own writes does not flap.  Pure.
 */
uint64_t zks_doubt_after_ms(int timeout_ms);

/* zks_timeout_ms() - the session timeout the server gave (else asked for). */
int zks_timeout_ms(struct zks *s);

/*
 * zks_hibernate() - a session the mount no longer needs (fs/pool.c): stop
 * the supervisor (zks_later() refuses from now on), wait for every request
 * sent so far to complete, and close the session; the struct stays, so a
 * call that still comes fails at once, unsent, with ZINVALIDSTATE, and a
 * reader of its heartbeat sees another generation.  zks_wake() - open a
 * new session on it, wait for it (at most the session timeout), start
 * the supervisor again with the same events and call their connected()
 * (a silence told before the session closed is over); on failure it stays
 * hibernated.  Both after zks_start(), from one thread of the caller's
 * (the pool's), never in a callback: they block.  Return: 0 or -errno.
 */
void zks_hibernate(struct zks *s);
int zks_wake(struct zks *s);

/*
 * zks_close() - stop the supervisor and close the session: the server
 * deletes our ephemeral entries at once.  Fires pending completions with
 * ZCLOSING; may block for seconds, so never call it holding a lock a
 * completion takes.
 */
void zks_close(struct zks *s);

/*
 * The most data one request may carry: ZooKeeper's reply to a read of it
 * must fit the 1 MiB its clients take too.
 */
#define ZKS_DATA_MAX (1024 * 1024 - 1024)

/*
 * zks_data_max() - the most data a create or setData of the znode @path
 * may carry: ZKS_DATA_MAX, and less under a long path.  ZooKeeper closes
 * the connection on a request longer than its jute.maxbuffer (1 MiB less
 * one byte by default; data, path and framing together), and the client
 * sends it again after every reconnect: so zks_acreate(), zks_aset_version() and
 * zks_amulti() never send more (they return ZMARSHALLINGERROR unsent, which
 * zk_errno() makes -EFBIG), and the mount answers a write past it with
 * EFBIG.  Pure.
 */
size_t zks_data_max(const char *path);

/*
 * zks_calls_init() - the call queue and the loop's client of @s, whose
 * handle is @zh; zks_calls_destroy() - its end, once the loop no longer
 * drives it (zk/calls.c).  zks_open() and zks_close().
 */
void zks_calls_init(struct zks *s, zhandle_t *zh);
void zks_calls_destroy(struct zks *s);

/*
 * zks_replace() - make @nzh (NULL: none, hibernated) the handle of @s and
 * close the one it had, on the calling thread, whose pending completions
 * then run there with ZCLOSING;
 * with @bump, what the old one made is of an older generation.  The calls
 * queued before go to the old handle, those after to @nzh.  Waits until
 * done (driving meanwhile if nobody does): never from a completion, nor
 * holding a lock a completion takes.
 */
void zks_replace(struct zks *s, zhandle_t *nzh, bool bump);

/*
 * Asynchronous calls on the current handle; as zoo_a*(), same returns.
 * Any thread, never blocks: made on the thread that drives the loop, the
 * call goes to the client at once; on another, it is queued for the
 * driver, which is woken, and ZOK returned unless the handle it will meet
 * is gone or expired (ZINVALIDSTATE) or memory ran out (ZSYSTEMERROR).  A
 * queued call the client refuses later completes with the refusal.
 */
/* @gen, if not NULL, gets the generation of the handle used (zks_generation()). */
int zks_acreate(struct zks *s, const char *path, const char *data, int len,
		int mode, string_stat_completion_t done, const void *arg,
		uint64_t *gen);
/*
 * zks_generation() - how many times the handle was replaced after an
 * expiry.  What was made with an older generation went with its session.
 */
uint64_t zks_generation(struct zks *s);
/*
 * zks_links() - how many times the connection went or came (a new handle
 * included).  Each may put this session on a server that is behind what
 * another session of ours did.  Any thread, no lock.
 */
uint64_t zks_links(struct zks *s);
int zks_adelete(struct zks *s, const char *path, void_completion_t done,
		const void *arg);
/* @ops are copied at once; @results must live until @done.  Bounded as
 * zks_aset_version() is, over all the ops' paths and data. */
int zks_amulti(struct zks *s, int count, const zoo_op_t *ops,
	       zoo_op_result_t *results, void_completion_t done, const void *arg);
int zks_aget(struct zks *s, const char *path, data_completion_t done,
	     const void *arg);
int zks_awget(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
	      data_completion_t done, const void *arg);
int zks_aexists(struct zks *s, const char *path, stat_completion_t done,
		const void *arg);
int zks_aget_acl(struct zks *s, const char *path, acl_completion_t done,
		 const void *arg);
/* No more data than zks_data_max(@path), else ZMARSHALLINGERROR unsent;
 * at @version (-1: any). */
int zks_aset_version(struct zks *s, const char *path, const char *data, int len,
		     int version, stat_completion_t done, const void *arg);
int zks_achildren2(struct zks *s, const char *path,
		   strings_stat_completion_t done, const void *arg);
/* zoo_awget_children2(): the listing, and a one-shot watch on @path's children */
int zks_awchildren2(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
		    strings_stat_completion_t done, const void *arg);
/*
 * zks_async_sync() - ZooKeeper's sync: the requests sent after it on this
 * session see every change the ensemble had committed when it reached the
 * leader (what another session of ours did, say).
 */
int zks_async_sync(struct zks *s, const char *path, string_completion_t done,
		   const void *arg);
/*
 * Remove our data watch (@watcher, @wctx) on @path at the server, so that
 * it never fires there.  It removes every data watch this session holds on
 * @path: the caller must hold no other.
 */
int zks_aunwatch(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
		 void_completion_t done, const void *arg);
/* The same for the child watches of this session on @path. */
int zks_aunwatch_children(struct zks *s, const char *path, watcher_fn watcher,
			  void *wctx, void_completion_t done, const void *arg);

#endif
