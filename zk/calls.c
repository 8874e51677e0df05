/*
 * zk/calls.c - the asynchronous calls on a session's current handle
 * (declared in zk/session.h): each holds the handle still, for reading,
 * while the client queues the request, so that an expiry cannot close it
 * under the call.
 */
#include "zk/session.h"

#include <string.h>

/* The wrappers: the current handle, held still while the call queues. */
static zhandle_t *zh_hold(struct zks *s)
{
	pthread_rwlock_rdlock(&s->rw);
	return s->zh;
}

/* A hibernated session (zks_hibernate()) has no handle: the client then
 * refuses the call, unsent, as a bad argument; say why instead. */
static int zh_put(struct zks *s, int rc)
{
	if (!s->zh && rc != ZOK)
		rc = ZINVALIDSTATE;
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

/* ZooKeeper's jute.maxbuffer, the default: the longest request it reads */
#define ZK_REQUEST_MAX 0xfffff
/*
 * What a request has besides its path and data, with room to spare: the
 * header and lengths, a create's flags and ACL list (the mount's
 * credentials' id), a setData's version.
 */
#define ZK_FRAMING 512

/* The most data a request may carry besides @paths bytes of paths. */
static size_t room(size_t paths)
{
	size_t len = paths + ZK_FRAMING;

	if (len >= ZK_REQUEST_MAX)
		return 0;
	len = ZK_REQUEST_MAX - len;
	return len < ZKS_DATA_MAX ? len : ZKS_DATA_MAX;
}

size_t zks_data_max(const char *path)
{
	return room(strlen(path));
}

/* Would the request cost the connection?  Then it is never sent. */
static bool too_big(const char *path, int len)
{
	return len > 0 && (size_t)len > zks_data_max(path);
}

/* The same for a multi: every op's path and framing, and its data. */
static bool multi_too_big(int count, const zoo_op_t *ops)
{
	size_t paths = 0, data = 0;

	for (int i = 0; i < count; i++) {
		/* each op's own header and version (or flags) */
		paths += 16;
		switch (ops[i].type) {
		case ZOO_CREATE_OP:
			paths += strlen(ops[i].create_op.path) + ZK_FRAMING;
			data += ops[i].create_op.datalen > 0 ?
				(size_t)ops[i].create_op.datalen : 0;
			break;
		case ZOO_SETDATA_OP:
			paths += strlen(ops[i].set_op.path);
			data += ops[i].set_op.datalen > 0 ?
				(size_t)ops[i].set_op.datalen : 0;
			break;
		case ZOO_DELETE_OP:
			paths += strlen(ops[i].delete_op.path);
			break;
		default:
			paths += strlen(ops[i].check_op.path);
			break;
		}
	}
	return paths >= ZK_REQUEST_MAX || data > room(paths);
}

int zks_acreate(struct zks *s, const char *path, const char *data, int len,
		int mode, string_stat_completion_t done, const void *arg,
		uint64_t *gen)
{
	zhandle_t *zh = zh_hold(s);

	if (gen)
		*gen = s->gen;
	if (too_big(path, len))
		return zh_put(s, ZMARSHALLINGERROR);
	return zh_put(s, zoo_acreate2(zh, path, data, len, s->acl, mode, done, arg));
}

uint64_t zks_generation(struct zks *s)
{
	uint64_t gen;

	pthread_rwlock_rdlock(&s->rw);
	gen = s->gen;
	pthread_rwlock_unlock(&s->rw);
	return gen;
}

int zks_adelete(struct zks *s, const char *path, void_completion_t done,
		const void *arg)
{
	return zh_put(s, zoo_adelete(zh_hold(s), path, -1, done, arg));
}

int zks_amulti(struct zks *s, int count, const zoo_op_t *ops,
	       zoo_op_result_t *results, void_completion_t done, const void *arg)
{
	zhandle_t *zh = zh_hold(s);
	int state = zoo_state(zh);

	/*
	 * The 3.8 client, when a sub-request cannot be made (its handle
	 * expired), skips making the next ones but still frees their
	 * uninitialised paths.  Do not ask it then; the window left (an expiry
	 * between this test and its own) is microseconds wide.
	 */
	if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
		return zh_put(s, ZINVALIDSTATE);
	if (multi_too_big(count, ops))
		return zh_put(s, ZMARSHALLINGERROR);
	return zh_put(s, zoo_amulti(zh, count, ops, results, done, arg));
}

int zks_aget(struct zks *s, const char *path, data_completion_t done,
	     const void *arg)
{
	return zh_put(s, zoo_aget(zh_hold(s), path, 0, done, arg));
}

int zks_awget(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
	      data_completion_t done, const void *arg)
{
	return zh_put(s, zoo_awget(zh_hold(s), path, watcher, wctx, done, arg));
}

int zks_aexists(struct zks *s, const char *path, stat_completion_t done,
		const void *arg)
{
	return zh_put(s, zoo_aexists(zh_hold(s), path, 0, done, arg));
}

int zks_aset_version(struct zks *s, const char *path, const char *data, int len,
		     int version, stat_completion_t done, const void *arg)
{
	if (too_big(path, len))
		return ZMARSHALLINGERROR;
	return zh_put(s, zoo_aset(zh_hold(s), path, data, len, version, done, arg));
}

int zks_achildren2(struct zks *s, const char *path,
		   strings_stat_completion_t done, const void *arg)
{
	return zh_put(s, zoo_aget_children2(zh_hold(s), path, 0, done, arg));
}

int zks_awchildren2(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
		    strings_stat_completion_t done, const void *arg)
{
	return zh_put(s, zoo_awget_children2(zh_hold(s), path, watcher, wctx, done, arg));
}

uint64_t zks_links(struct zks *s)
{
	return atomic_load(&s->links);
}

int zks_async_sync(struct zks *s, const char *path, string_completion_t done,
		   const void *arg)
{
	return zh_put(s, zoo_async(zh_hold(s), path, done, arg));
}

static int unwatch(struct zks *s, const char *path, watcher_fn watcher, int type,
		   void_completion_t done, const void *arg)
{
	/*
	 * zoo_aremove_watches() only asks the server whether the watch is
	 * there (CHECK_WATCHES) and drops it locally: the server still fires
	 * it.  REMOVE_WATCHES, which the server obeys, is sent only for "all
	 * data watches of this session on @path" (the caller must hold no
	 * other).  The client checks @watcher is among them first.  3.8
	 * declares the completion as void_completion_t * but stores and calls
	 * the pointer it is given: pass the function itself.
	 */
	void_completion_t *as_declared;

	if (!watcher)
		return ZBADARGUMENTS;
	/* ISO C has no cast from a function pointer to an object pointer */
	_Static_assert(sizeof(as_declared) == sizeof(done), "pointer sizes");
	memcpy(&as_declared, &done, sizeof(done));
	return zh_put(s, zoo_aremove_all_watches(zh_hold(s), path, type, 0,
						 as_declared, arg));
}

int zks_aunwatch(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
		 void_completion_t done, const void *arg)
{
	(void)wctx;
	return unwatch(s, path, watcher, ZWATCHTYPE_DATA, done, arg);
}

int zks_aunwatch_children(struct zks *s, const char *path, watcher_fn watcher,
			  void *wctx, void_completion_t done, const void *arg)
{
	(void)wctx;
	return unwatch(s, path, watcher, ZWATCHTYPE_CHILD, done, arg);
}
