/* zk/transport.c - the real transport: the engine's calls on a struct zks. */
#include "zk/transport.h"

#include "zk/session.h"

static int t_create(void *ctx, const char *path, const char *data, int len,
		    int mode, string_stat_completion_t done, const void *arg,
		    uint64_t *gen)
{
	return zks_acreate(ctx, path, data, len, mode, done, arg, gen);
}

static int t_remove(void *ctx, const char *path, void_completion_t done,
		    const void *arg)
{
	return zks_adelete(ctx, path, done, arg);
}

static int t_multi(void *ctx, int count, const zoo_op_t *ops,
		   zoo_op_result_t *results, void_completion_t done,
		   const void *arg)
{
	return zks_amulti(ctx, count, ops, results, done, arg);
}

static int t_children(void *ctx, const char *path,
		      strings_stat_completion_t done, const void *arg)
{
	return zks_achildren2(ctx, path, done, arg);
}

static int t_get(void *ctx, const char *path, data_completion_t done,
		 const void *arg)
{
	return zks_aget(ctx, path, done, arg);
}

static int t_wget(void *ctx, const char *path, watcher_fn watcher, void *wctx,
		  data_completion_t done, const void *arg)
{
	return zks_awget(ctx, path, watcher, wctx, done, arg);
}

static int t_exists(void *ctx, const char *path, stat_completion_t done,
		    const void *arg)
{
	return zks_aexists(ctx, path, done, arg);
}

static int t_set(void *ctx, const char *path, const char *data, int len,
		 int version, stat_completion_t done, const void *arg)
{
	return zks_aset_version(ctx, path, data, len, version, done, arg);
}

static int t_unwatch(void *ctx, const char *path, watcher_fn watcher,
		     void *wctx, void_completion_t done, const void *arg)
{
	return zks_aunwatch(ctx, path, watcher, wctx, done, arg);
}

static int t_wchildren(void *ctx, const char *path, watcher_fn watcher, void *wctx,
		       strings_stat_completion_t done, const void *arg)
{
	return zks_awchildren2(ctx, path, watcher, wctx, done, arg);
}

static int t_unwatch_children(void *ctx, const char *path, watcher_fn watcher,
			      void *wctx, void_completion_t done, const void *arg)
{
	return zks_aunwatch_children(ctx, path, watcher, wctx, done, arg);
}

static uint64_t t_now_ms(void *ctx)
{
	(void)ctx;
	return zks_now_ms();
}

static int t_sync(void *ctx, const char *path, string_completion_t done,
		  const void *arg)
{
	return zks_async_sync(ctx, path, done, arg);
}

static bool t_quiet(void *ctx)
{
	return zks_quiet(ctx);
}

static bool t_doubtful(void *ctx)
{
	return zks_doubtful(ctx);
}

static int t_later(void *ctx, void (*fn)(void *arg, bool go), void *arg)
{
	return zks_later(ctx, fn, arg);
}

static int t_timeout_ms(void *ctx)
{
	return zks_timeout_ms(ctx);
}

static size_t t_data_max(void *ctx, const char *path)
{
	(void)ctx;
	return zks_data_max(path);
}

static void t_tick_by(void *ctx, uint64_t at_ms)
{
	zks_tick_by(ctx, at_ms);
}

static uint64_t t_generation(void *ctx)
{
	return zks_generation(ctx);
}

static int64_t t_session_of(void *ctx, uint64_t gen)
{
	return zks_session_of(ctx, gen);
}

static const struct zkt_ops session_ops = {
	.create = t_create,
	.remove = t_remove,
	.multi = t_multi,
	.children = t_children,
	.get = t_get,
	.wget = t_wget,
	.exists = t_exists,
	.unwatch = t_unwatch,
	.set = t_set,
	.wchildren = t_wchildren,
	.unwatch_children = t_unwatch_children,
	.sync = t_sync,
	.now_ms = t_now_ms,
	.quiet = t_quiet,
	.doubtful = t_doubtful,
	.tick_by = t_tick_by,
	.later = t_later,
	.timeout_ms = t_timeout_ms,
	.data_max = t_data_max,
	.generation = t_generation,
	.session_of = t_session_of,
};

struct zkt_transport zkt_session(struct zks *s)
{
	return (struct zkt_transport){ &session_ops, s };
}
