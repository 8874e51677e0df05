/*
 * zk/calls.c - a session's handle (declared in zk/session.h): the
 * asynchronous calls made on it, and its part in the loop (zk/drive.h).
 *
 * Only the thread that holds the loop's token touches a handle.  A call
 * made there goes to the client at once: the single-threaded client
 * sends it before it returns, if the connection takes it.  A call made on
 * any other thread is copied into a struct zks_call, queued on the
 * session and the driver woken; the driver sends the queue, in order,
 * before it next polls, and before any call of its own on that session
 * (so a thread's calls keep their order, as they would in the client's
 * own queue).  A queued call the client then refuses gets its completion
 * at once, on the driver, with the refusal (ZINVALIDSTATE as
 * ZSESSIONEXPIRED: the handle expired since it was queued).
 *
 * Replacing or closing a handle is a queued call too (zks_replace()): the
 * calls queued before it go to the old handle, those after to the new.
 */
#include "zk/session.h"

#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "zk/drive.h"

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

/* What a call asks; see the file's comment. */
enum call_op {
	C_CREATE, C_DELETE, C_MULTI, C_GET, C_EXISTS, C_SET, C_CHILDREN2,
	C_SYNC, C_UNWATCH, C_ACL, C_REPLACE
};

struct zks_call {
	struct zks_call *next;
	enum call_op op;
	const char *path;
	const char *data;
	int len;
	int mode;		/* a create's flags, a set's version, an
				   unwatch's type */
	watcher_fn watcher;	/* or NULL */
	void *wctx;
	int count;		/* a multi's */
	const zoo_op_t *ops;
	zoo_op_result_t *results;
	union {
		string_stat_completion_t string_stat;
		void_completion_t v;
		data_completion_t data;
		stat_completion_t stat;
		strings_stat_completion_t strings_stat;
		string_completion_t string;
		acl_completion_t acl;
	} done;
	const void *arg;
	/* C_REPLACE: the new handle (NULL: none), whether the generation
	 * moves on, where the old one goes, and the flag set once done
	 * (both under s->lock) */
	zhandle_t *nzh;
	bool bump;
	zhandle_t **old;
	bool *replaced;
	char bytes[];		/* a queued call's copies of its strings */
};

/* Has @zh's session ended for good (expired, or its credentials refused)?
 * The client then refuses every call, unsent. */
static bool handle_over(zhandle_t *zh)
{
	int state = zoo_state(zh);

	return state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

/* Send @c on @zh, the token held.  Return: the client's answer. */
static int call_send(struct zks *s, zhandle_t *zh, const struct zks_call *c)
{
	void_completion_t *as_declared;

	_Static_assert(sizeof(as_declared) == sizeof(c->done.v), "pointer sizes");
	if (!zh)		/* hibernated: the client would say a bad argument */
		return ZINVALIDSTATE;
	switch (c->op) {
	case C_CREATE:
		return zoo_acreate2(zh, c->path, c->data, c->len, s->acl, c->mode,
				    c->done.string_stat, c->arg);
	case C_DELETE:
		return zoo_adelete(zh, c->path, -1, c->done.v, c->arg);
	case C_MULTI:
		/*
		 * The 3.8 client, when a sub-request cannot be made (its
		 * handle expired), skips making the next ones but still
		 * frees their uninitialised paths.  Do not ask it then.
		 */
		if (handle_over(zh))
			return ZINVALIDSTATE;
		return zoo_amulti(zh, c->count, c->ops, c->results, c->done.v, c->arg);
	case C_GET:
		return c->watcher ? zoo_awget(zh, c->path, c->watcher, c->wctx, c->done.data, c->arg)
				  : zoo_aget(zh, c->path, 0, c->done.data, c->arg);
	case C_EXISTS:
		return zoo_aexists(zh, c->path, 0, c->done.stat, c->arg);
	case C_SET:
		return zoo_aset(zh, c->path, c->data, c->len, c->mode, c->done.stat, c->arg);
	case C_CHILDREN2:
		return c->watcher ? zoo_awget_children2(zh, c->path, c->watcher, c->wctx,
							c->done.strings_stat, c->arg)
				  : zoo_aget_children2(zh, c->path, 0, c->done.strings_stat, c->arg);
	case C_SYNC:
		return zoo_async(zh, c->path, c->done.string, c->arg);
	case C_UNWATCH:
		/*
		 * 3.8 declares the completion as void_completion_t * but
		 * stores and calls the pointer it is given: pass the function
		 * itself.  ISO C has no cast from a function pointer to an
		 * object pointer.
		 */
		memcpy(&as_declared, &c->done.v, sizeof(c->done.v));
		return zoo_aremove_all_watches(zh, c->path, c->mode, 0, as_declared, c->arg);
	case C_ACL:
		return zoo_aget_acl(zh, c->path, c->done.acl, c->arg);
	case C_REPLACE:
		break;
	}
	return ZBADARGUMENTS;
}

/* The completion of a queued @c the client refused with @rc. */
static void call_refused(const struct zks_call *c, int rc)
{
	if (rc == ZINVALIDSTATE)
		rc = ZSESSIONEXPIRED;
	switch (c->op) {
	case C_CREATE:
		if (c->done.string_stat)
			c->done.string_stat(rc, NULL, NULL, c->arg);
		break;
	case C_DELETE:
	case C_MULTI:
	case C_UNWATCH:
		if (c->done.v)
			c->done.v(rc, c->arg);
		break;
	case C_GET:
		if (c->done.data)
			c->done.data(rc, NULL, -1, NULL, c->arg);
		break;
	case C_EXISTS:
	case C_SET:
		if (c->done.stat)
			c->done.stat(rc, NULL, c->arg);
		break;
	case C_CHILDREN2:
		if (c->done.strings_stat)
			c->done.strings_stat(rc, NULL, NULL, c->arg);
		break;
	case C_SYNC:
		if (c->done.string)
			c->done.string(rc, NULL, c->arg);
		break;
	case C_ACL:
		if (c->done.acl)
			c->done.acl(rc, NULL, NULL, c->arg);
		break;
	case C_REPLACE:
		break;
	}
}

/* Put the handle @c names in, hand the old one to the thread that waits
 * (zks_replace() closes it), and say so.  The token held. */
static void call_replace(struct zks *s, const struct zks_call *c)
{
	zhandle_t *old;

	pthread_rwlock_wrlock(&s->rw);
	old = s->zh;
	s->zh = c->nzh;
	if (c->bump)
		s->gen++;
	pthread_rwlock_unlock(&s->rw);
	pthread_mutex_lock(&s->lock);
	*c->old = old;
	*c->replaced = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Send what was queued on @s, in order.  The token held, no lock: the
 * completions of a refused call and of a replaced handle run here. */
static void call_flush(struct zks *s)
{
	for (;;) {
		struct zks_call *c;
		int rc;

		pthread_mutex_lock(&s->qlock);
		c = s->qhead;
		if (c) {
			s->qhead = c->next;
			if (!s->qhead)
				s->qtail = &s->qhead;
		}
		pthread_mutex_unlock(&s->qlock);
		if (!c)
			return;
		if (c->op == C_REPLACE)
			call_replace(s, c);
		else if ((rc = call_send(s, s->zh, c)) != ZOK)
			call_refused(c, rc);
		free(c);
	}
}

/* Where the data of a multi's @op is (a create's, a setData's), and its
 * length in *@len; NULL: none. */
static const char **op_data(zoo_op_t *op, size_t *len)
{
	const char **data = NULL;
	int n = 0;

	if (op->type == ZOO_CREATE_OP) {
		data = &op->create_op.data;
		n = op->create_op.datalen;
	} else if (op->type == ZOO_SETDATA_OP) {
		data = &op->set_op.data;
		n = op->set_op.datalen;
	}
	if (!data || !*data || n <= 0)
		return NULL;
	*len = (size_t)n;
	return data;
}

/* A copy of @c and of the strings and ops it points to, in one block. */
static struct zks_call *call_copy(const struct zks_call *c)
{
	size_t plen = c->path ? strlen(c->path) + 1 : 0;
	size_t dlen = c->data && c->len > 0 ? (size_t)c->len : 0;
	size_t n = plen + dlen, len;
	struct zks_call *q;
	char *p;

	for (int i = 0; i < c->count; i++) {
		zoo_op_t op = c->ops[i];

		n += sizeof(zoo_op_t) + strlen(op.check_op.path) + 1;
		if (op_data(&op, &len))
			n += len;
	}
	q = malloc(sizeof(*q) + n + _Alignof(zoo_op_t));
	if (!q)
		return NULL;
	*q = *c;
	q->next = NULL;
	p = q->bytes;
	if (c->count) {		/* the ops first, aligned */
		zoo_op_t *ops;

		p += (_Alignof(zoo_op_t) - (uintptr_t)p % _Alignof(zoo_op_t)) % _Alignof(zoo_op_t);
		ops = (zoo_op_t *)(void *)p;
		memcpy(ops, c->ops, sizeof(zoo_op_t) * (size_t)c->count);
		p += sizeof(zoo_op_t) * (size_t)c->count;
		for (int i = 0; i < c->count; i++) {
			zoo_op_t *op = &ops[i];
			const char **data;
			/* every op starts with its path: the union's members
			 * agree on it (check_op names it here) */
			size_t l = strlen(op->check_op.path) + 1;

			memcpy(p, op->check_op.path, l);
			if (op->type == ZOO_CREATE_OP)
				op->create_op.path = p;
			else if (op->type == ZOO_SETDATA_OP)
				op->set_op.path = p;
			else if (op->type == ZOO_DELETE_OP)
				op->delete_op.path = p;
			else
				op->check_op.path = p;
			p += l;
			data = op_data(op, &len);
			if (data) {
				memcpy(p, *data, len);
				*data = p;
				p += len;
			}
		}
		q->ops = ops;
	}
	if (plen) {
		memcpy(p, c->path, plen);
		q->path = p;
		p += plen;
	}
	if (dlen) {
		memcpy(p, c->data, dlen);
		q->data = p;
	}
	return q;
}

/* Queue @q (a copy) for the driver; @gen, if not NULL, gets the
 * generation of the handle it will go to.  Return: as the client would. */
static int call_queue(struct zks *s, struct zks_call *q, uint64_t *gen)
{
	pthread_mutex_lock(&s->qlock);
	if (gen)
		*gen = s->qgen;
	if (q->op == C_REPLACE) {
		s->qzh = q->nzh;
		if (q->bump)
			s->qgen++;
	} else {
		/* the handle it will meet: refused now, as the client would */
		if (!s->qzh || handle_over(s->qzh))
			goto refused;
	}
	*s->qtail = q;
	s->qtail = &q->next;
	pthread_mutex_unlock(&s->qlock);
	zkd_wake();
	return ZOK;
refused:
	pthread_mutex_unlock(&s->qlock);
	free(q);
	return ZINVALIDSTATE;
}

/*
 * Make the call @c: sent now on the driver, else queued for it.  The
 * driver too queues it behind calls already queued, so that they go
 * first: it sends the queue at its next turn's start, where what the
 * queue may run (a refused call's completion, a replaced handle's) runs
 * with no lock held, not here, under the caller's.
 */
static int call(struct zks *s, const struct zks_call *c, uint64_t *gen)
{
	struct zks_call *q;

	if (zkd_driving()) {
		bool queued;

		pthread_mutex_lock(&s->qlock);
		queued = s->qhead != NULL;
		pthread_mutex_unlock(&s->qlock);
		if (!queued) {
			if (gen)
				*gen = s->gen;
			return call_send(s, s->zh, c);
		}
	}
	q = call_copy(c);
	if (!q) {
		if (gen)
			*gen = zks_generation(s);
		return ZSYSTEMERROR;
	}
	return call_queue(s, q, gen);
}

static bool replaced_yet(void *arg)
{
	return *(bool *)arg;
}

void zks_replace(struct zks *s, zhandle_t *nzh, bool bump)
{
	zhandle_t *old = NULL;
	bool replaced = false;
	struct zks_call *q;

	while (!(q = malloc(sizeof(*q)))) {	/* a handle must not stay */
		struct timespec ts = { 0, 10 * 1000000L };

		nanosleep(&ts, NULL);
	}
	*q = (struct zks_call){ .op = C_REPLACE, .nzh = nzh, .bump = bump,
				.old = &old, .replaced = &replaced };
	call_queue(s, q, NULL);
	pthread_mutex_lock(&s->lock);
	zkd_wait(&s->lock, &s->cond, replaced_yet, &replaced, NULL);
	pthread_mutex_unlock(&s->lock);
	/*
	 * Closed here, not on the loop: on a connected handle the client
	 * sends the close and waits for the server's answer (a write of the
	 * ensemble), which would hold up every session and FUSE.  No turn
	 * reaches the old handle any more.  Its pending completions run here,
	 * with ZCLOSING (none after a barrier: zks_hibernate(), zks_close()).
	 * The client's one global counter of request ids, which the close's
	 * own request takes without a lock, may then give the driver's next
	 * request an id twice: harmless, as the client matches answers to a
	 * connection's requests in order and the server only echoes the id.
	 */
	if (old)
		zookeeper_close(old);
}

/* The session whose loop client @cl is. */
static struct zks *client_zks(struct zkd_client *cl)
{
	return (struct zks *)(void *)((char *)cl - offsetof(struct zks, client));
}

/* The loop's client (zk/drive.h): send the queue, then ask the handle. */
static void handle_prepare(struct zkd_client *cl, int *fd, short *events, int *timeout_ms)
{
	struct zks *s = client_zks(cl);
	struct timeval tv = { 0, 0 };
	int interest = 0, ms;
	int rc;

	call_flush(s);
	s->turn_zh = s->zh;
	if (!s->zh)
		return;
	rc = zookeeper_interest(s->zh, fd, &interest, &tv);
	if (rc == ZINVALIDSTATE) {	/* expired: the supervisor renews */
		*fd = -1;
		return;
	}
	if (rc != ZOK || *fd < 0) {
		/* the connection failed (the client closed the socket it
		 * named): nothing to poll, try again soon */
		*fd = -1;
		interest = 0;
		if (tv.tv_sec == 0 && tv.tv_usec == 0)
			tv.tv_usec = 20000;
	}
	*events = (short)((interest & ZOOKEEPER_READ ? POLLIN : 0) |
			  (interest & ZOOKEEPER_WRITE ? POLLOUT : 0));
	ms = (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
	if (*timeout_ms < 0 || ms < *timeout_ms)
		*timeout_ms = ms;
}

static void handle_process(struct zkd_client *cl, short revents)
{
	struct zks *s = client_zks(cl);
	int events = 0;

	if (!s->turn_zh || s->turn_zh != s->zh || !revents)
		return;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		events |= ZOOKEEPER_READ;
	if (revents & (POLLOUT | POLLERR))
		events |= ZOOKEEPER_WRITE;
	zookeeper_process(s->zh, events);
}

void zks_calls_init(struct zks *s, zhandle_t *zh)
{
	pthread_mutex_init(&s->qlock, NULL);
	s->qtail = &s->qhead;
	s->qzh = zh;
	s->client.prepare = handle_prepare;
	s->client.process = handle_process;
}

void zks_calls_destroy(struct zks *s)
{
	pthread_mutex_destroy(&s->qlock);
}

int zks_acreate(struct zks *s, const char *path, const char *data, int len,
		int mode, string_stat_completion_t done, const void *arg,
		uint64_t *gen)
{
	struct zks_call c = { .op = C_CREATE, .path = path, .data = data, .len = len,
			      .mode = mode, .done.string_stat = done, .arg = arg };

	if (too_big(path, len)) {
		if (gen)
			*gen = zks_generation(s);
		return ZMARSHALLINGERROR;
	}
	return call(s, &c, gen);
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
	struct zks_call c = { .op = C_DELETE, .path = path, .done.v = done, .arg = arg };

	return call(s, &c, NULL);
}

int zks_amulti(struct zks *s, int count, const zoo_op_t *ops,
	       zoo_op_result_t *results, void_completion_t done, const void *arg)
{
	struct zks_call c = { .op = C_MULTI, .count = count, .ops = ops,
			      .results = results, .done.v = done, .arg = arg };

	if (multi_too_big(count, ops))
		return ZMARSHALLINGERROR;
	return call(s, &c, NULL);
}

int zks_aget(struct zks *s, const char *path, data_completion_t done,
	     const void *arg)
{
	return zks_awget(s, path, NULL, NULL, done, arg);
}

int zks_awget(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
	      data_completion_t done, const void *arg)
{
	struct zks_call c = { .op = C_GET, .path = path, .watcher = watcher, .wctx = wctx,
			      .done.data = done, .arg = arg };

	return call(s, &c, NULL);
}

int zks_aexists(struct zks *s, const char *path, stat_completion_t done,
		const void *arg)
{
	struct zks_call c = { .op = C_EXISTS, .path = path, .done.stat = done, .arg = arg };

	return call(s, &c, NULL);
}

int zks_aset_version(struct zks *s, const char *path, const char *data, int len,
		     int version, stat_completion_t done, const void *arg)
{
	struct zks_call c = { .op = C_SET, .path = path, .data = data, .len = len,
			      .mode = version, .done.stat = done, .arg = arg };

	if (too_big(path, len))
		return ZMARSHALLINGERROR;
	return call(s, &c, NULL);
}

int zks_achildren2(struct zks *s, const char *path,
		   strings_stat_completion_t done, const void *arg)
{
	return zks_awchildren2(s, path, NULL, NULL, done, arg);
}

int zks_awchildren2(struct zks *s, const char *path, watcher_fn watcher, void *wctx,
		    strings_stat_completion_t done, const void *arg)
{
	struct zks_call c = { .op = C_CHILDREN2, .path = path, .watcher = watcher,
			      .wctx = wctx, .done.strings_stat = done, .arg = arg };

	return call(s, &c, NULL);
}

int zks_aget_acl(struct zks *s, const char *path, acl_completion_t done,
		 const void *arg)
{
	struct zks_call c = { .op = C_ACL, .path = path, .done.acl = done, .arg = arg };

	return call(s, &c, NULL);
}

uint64_t zks_links(struct zks *s)
{
	return atomic_load(&s->links);
}

int zks_async_sync(struct zks *s, const char *path, string_completion_t done,
		   const void *arg)
{
	struct zks_call c = { .op = C_SYNC, .path = path, .done.string = done, .arg = arg };

	return call(s, &c, NULL);
}

static int unwatch(struct zks *s, const char *path, watcher_fn watcher, int type,
		   void_completion_t done, const void *arg)
{
	/*
	 * zoo_aremove_watches() only asks the server whether the watch is
	 * there (CHECK_WATCHES) and drops it locally: the server still fires
	 * it.  REMOVE_WATCHES, which the server obeys, is sent only for "all
	 * data watches of this session on @path" (the caller must hold no
	 * other).
	 */
	struct zks_call c = { .op = C_UNWATCH, .path = path, .mode = type,
			      .done.v = done, .arg = arg };

	if (!watcher)
		return ZBADARGUMENTS;
	return call(s, &c, NULL);
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
