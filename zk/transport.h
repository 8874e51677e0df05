/*
 * zk/transport.h - everything the lock engine asks of ZooKeeper: the seam.
 *
 * The engine (zk/lock.c) never calls the ZooKeeper client or zk/session.c
 * directly, only these operations, and neither does fs/ (fs/pool.h,
 * zklfs_transport()), as the C client's core talks to its world through
 * zk_adaptor.h; only fs/pool.c, which opens, starts and closes the
 * sessions, calls zk/session.h.  zkt_session() is the real one, over
 * a struct zks; a test may give the engine a fake that records each call and
 * answers it later, in any order, from any schedule it likes.
 *
 * The contract every implementation keeps, the one ZooKeeper's C client
 * keeps and the engine relies on:
 *   - a call never runs its completion (or a watcher) before it returns,
 *     and never blocks: the engine calls with its own lock held;
 *   - a call that returns ZOK runs its completion exactly once, later; a
 *     call that returns anything else never runs it;
 *   - the completions of one session run one at a time, in the order the
 *     calls were made (ZooKeeper's per-session FIFO order), a watch
 *     notification before the completion of any later call that could
 *     observe the change that fired it;
 *   - after a connection loss, pending calls complete with
 *     ZCONNECTIONLOSS (their effect unknown) and armed watches stay armed;
 *     after an expiry they complete with ZSESSIONEXPIRED (or ZCLOSING), the
 *     session's ephemeral znodes are gone, and generation() has grown.
 * The session's events (connected again, silent, expired, tick, doubt) come the
 * other way, through zkl_engine_events().
 *
 * Each operation is as the zoo_a*() call of the same name, on the handle of
 * the current generation; @ctx is the transport's own.
 */
#ifndef ZK_TRANSPORT_H
#define ZK_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

struct zks;

struct zkt_ops {
	/* @gen, if not NULL, gets the generation of the handle used */
	int (*create)(void *ctx, const char *path, const char *data, int len,
		      int mode, string_stat_completion_t done, const void *arg,
		      uint64_t *gen);
	int (*remove)(void *ctx, const char *path, void_completion_t done,
		      const void *arg);
	/* @ops are copied at once; @results must live until @done */
	int (*multi)(void *ctx, int count, const zoo_op_t *ops,
		     zoo_op_result_t *results, void_completion_t done,
		     const void *arg);
	/* as zoo_aget_children2(): the names, and the Stat of @path itself
	 * (its dataLength says whether a limit may be set: zk/settings.h) */
	int (*children)(void *ctx, const char *path,
			strings_stat_completion_t done, const void *arg);
	int (*get)(void *ctx, const char *path, data_completion_t done,
		   const void *arg);
	/* a one-shot data watch: @watcher(NULL, type, state, path, @wctx) */
	int (*wget)(void *ctx, const char *path, watcher_fn watcher, void *wctx,
		    data_completion_t done, const void *arg);
	int (*exists)(void *ctx, const char *path, stat_completion_t done,
		      const void *arg);
	/* setData at @version (-1: any) */
	int (*set)(void *ctx, const char *path, const char *data, int len,
		   int version, stat_completion_t done, const void *arg);
	/* remove every data watch of this session on @path, at the server */
	int (*unwatch)(void *ctx, const char *path, watcher_fn watcher,
		       void *wctx, void_completion_t done, const void *arg);
	/* children() with a one-shot watch on @path's children */
	int (*wchildren)(void *ctx, const char *path, watcher_fn watcher, void *wctx,
			 strings_stat_completion_t done, const void *arg);
	/* ZooKeeper's sync: later calls on this session see what the ensemble
	 * had committed when it reached the leader (fs/pool.c's and
	 * fs/confirm.c's; the engine makes none, and the simulator's transport
	 * has none) */
	int (*sync)(void *ctx, const char *path, string_completion_t done,
		    const void *arg);
	/* unwatch() for the child watches */
	int (*unwatch_children)(void *ctx, const char *path, watcher_fn watcher,
				void *wctx, void_completion_t done, const void *arg);
	/* a clock in milliseconds that runs through a suspend, and a tick
	 * (zkl_engine_events()) asked for no later than @at_ms on it */
	uint64_t (*now_ms)(void *ctx);
	/* may the server have expired the session by now (nothing heard for
	 * the session timeout less the margin, on now_ms()'s clock, or the
	 * handle knows it expired)?  Read when asked, so it is true at once
	 * after a resume from suspend, before the silent event comes */
	bool (*quiet)(void *ctx);
	/* is the session in doubt (zks_doubtful(): the connection lost, or a
	 * ping unanswered for two periods, and no round trip since)?  Read
	 * when asked, as quiet() is */
	bool (*doubtful)(void *ctx);
	void (*tick_by)(void *ctx, uint64_t at_ms);
	/* run @fn(@arg, true) at the supervisor's next look, to redo what met a
	 * connection loss, or @fn(@arg, false) if the session closes first
	 * (zks_later(): 0, or -ESHUTDOWN/-ENOMEM and @fn never runs); fs/'s
	 * (the engine stalls instead, and the simulator's transport refuses) */
	int (*later)(void *ctx, void (*fn)(void *arg, bool go), void *arg);
	/* the session timeout the server gave (else the one asked for) */
	int (*timeout_ms)(void *ctx);
	/* the most data one request on @path may carry (zks_data_max()) */
	size_t (*data_max)(void *ctx, const char *path);
	/* how many times the session expired and was replaced */
	uint64_t (*generation)(void *ctx);
	/* the session id of generation @gen if current and connected once, else 0 */
	int64_t (*session_of)(void *ctx, uint64_t gen);
};

struct zkt_transport {
	const struct zkt_ops *ops;
	void *ctx;
};

/* zkt_session() - the real transport, over the session @s. */
struct zkt_transport zkt_session(struct zks *s);

#endif
