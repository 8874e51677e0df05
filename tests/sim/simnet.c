/* tests/sim/simnet.c - the simulated connections (see simnet.h). */
#include "tests/sim/simnet.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sn_op { OP_CREATE, OP_DELETE, OP_MULTI, OP_CHILDREN, OP_GET, OP_WGET,
	     OP_EXISTS, OP_UNWATCH };
static const char *const op_name[] = { "create", "delete", "multi", "children",
				       "get", "wget", "exists", "unwatch" };

struct sn_req {
	struct sn_req *next;
	uint64_t id;
	enum sn_op op;
	char *path, *data;
	int len, mode;
	int n;				/* multi: ops copied at the call */
	int *types, *versions;
	char **paths;
	zoo_op_result_t *results;
	watcher_fn watcher;
	void *wctx;
	const void *done, *arg;
};

enum sn_kind { IT_REPLY, IT_WATCH, IT_SESSION };

struct sn_item {
	struct sn_item *next;
	enum sn_kind kind;
	struct sn_req *req;		/* IT_REPLY */
	int rc;
	bool answered;			/* the server answered (else lost) */
	char *value;			/* created path, or data */
	int vlen;
	struct Stat stat;
	struct String_vector sv;
	int *errs;
	int type, state;		/* IT_WATCH, IT_SESSION */
	char *path;
	struct sn_reg *regs;		/* collected when read */
	int nregs;
};

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		abort();
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort();
	return d;
}

void sn_trace(struct simnet *net, const char *fmt, ...)
{
	va_list ap;

	if (!net->verbose)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* queues ------------------------------------------------------------------ */

/* Both structs start with their next pointer. */
struct link { struct link *next; };

static void q_push(struct sn_queue *q, void *x)
{
	((struct link *)x)->next = NULL;
	if (q->tail)
		((struct link *)q->tail)->next = x;
	else
		q->head = x;
	q->tail = x;
	q->n++;
}

static void *q_pop(struct sn_queue *q)
{
	struct link *x = q->head;

	if (!x)
		return NULL;
	q->head = x->next;
	if (!q->head)
		q->tail = NULL;
	q->n--;
	return x;
}

static void req_free(struct sn_req *r)
{
	free(r->path);
	free(r->data);
	for (int i = 0; i < r->n; i++)
		free(r->paths[i]);
	free(r->paths);
	free(r->types);
	free(r->versions);
	free(r);
}

static void item_free(struct sn_item *it)
{
	if (it->req)
		req_free(it->req);
	free(it->value);
	szk_free_strings(&it->sv);
	free(it->errs);
	free(it->path);
	for (int i = 0; i < it->nregs; i++)
		free(it->regs[i].path);
	free(it->regs);
	free(it);
}

/* registrations ----------------------------------------------------------- */

static void reg_add(struct sn_handle *h, const char *path, watcher_fn fn, void *ctx)
{
	for (int i = 0; i < h->nregs; i++)
		if (h->regs[i].fn == fn && h->regs[i].ctx == ctx &&
		    strcmp(h->regs[i].path, path) == 0)
			return;		/* the client keeps a watcher once */
	if (h->nregs == h->rcap) {
		h->rcap = h->rcap ? 2 * h->rcap : 8;
		h->regs = realloc(h->regs, (size_t)h->rcap * sizeof(*h->regs));
		if (!h->regs)
			abort();
	}
	h->regs[h->nregs++] = (struct sn_reg){ xstrdup(path), fn, ctx };
}

static int reg_find(const struct sn_handle *h, const char *path, watcher_fn fn,
		    void *ctx)
{
	for (int i = 0; i < h->nregs; i++)
		if ((!fn || (h->regs[i].fn == fn && h->regs[i].ctx == ctx)) &&
		    strcmp(h->regs[i].path, path) == 0)
			return i;
	return -1;
}

static void reg_del(struct sn_handle *h, int i)
{
	free(h->regs[i].path);
	h->regs[i] = h->regs[--h->nregs];
}

/* Collect the watchers an event reaches: those on @path, or all (NULL). */
static void collect(struct sn_handle *h, struct sn_item *it, const char *path,
		    bool remove)
{
	it->regs = xcalloc((size_t)h->nregs, sizeof(*it->regs));
	for (int i = 0; i < h->nregs;) {
		if (path && strcmp(h->regs[i].path, path) != 0) {
			i++;
			continue;
		}
		it->regs[it->nregs] = h->regs[i];
		it->regs[it->nregs++].path = xstrdup(h->regs[i].path);
		if (remove)
			reg_del(h, i);
		else
			i++;
	}
}

static void session_event(struct sn_handle *h, int state)
{
	struct sn_item *it = xcalloc(1, sizeof(*it));

	it->kind = IT_SESSION;
	it->state = state;
	collect(h, it, NULL, state == ZOO_EXPIRED_SESSION_STATE);
	q_push(&h->in, it);
}

/* the transport ------------------------------------------------------------ */

static int call(struct sn_mount *m, struct sn_req *r)
{
	struct sn_handle *h = m->cur;

	if (h->state == SN_EXPIRED) {
		sn_trace(m->net, "        m%d %s %s -> ZINVALIDSTATE", m->id,
			 op_name[r->op], r->path);
		req_free(r);
		return ZINVALIDSTATE;
	}
	r->id = ++m->net->next_req;
	sn_trace(m->net, "        m%d call #%llu %s %s %s", m->id,
		 (unsigned long long)r->id, op_name[r->op], r->path,
		 m->net->name_of ? m->net->name_of(m->net->hook_ctx, r->arg) : "");
	q_push(&h->out, r);
	return ZOK;
}

static struct sn_req *req_new(enum sn_op op, const char *path, const void *done,
			      const void *arg)
{
	struct sn_req *r = xcalloc(1, sizeof(*r));

	r->op = op;
	r->path = xstrdup(path);
	r->done = done;
	r->arg = arg;
	return r;
}

static int t_create(void *ctx, const char *path, const char *data, int len,
		    int mode, string_stat_completion_t done, const void *arg,
		    uint64_t *gen)
{
	struct sn_mount *m = ctx;
	struct sn_req *r = req_new(OP_CREATE, path, (const void *)done, arg);

	if (gen)
		*gen = m->gen;
	r->data = xcalloc((size_t)len + 1, 1);
	memcpy(r->data, data, (size_t)len);
	r->len = len;
	r->mode = mode;
	return call(m, r);
}

static int t_remove(void *ctx, const char *path, void_completion_t done,
		    const void *arg)
{
	return call(ctx, req_new(OP_DELETE, path, (const void *)done, arg));
}

static int t_multi(void *ctx, int count, const zoo_op_t *ops,
		   zoo_op_result_t *results, void_completion_t done,
		   const void *arg)
{
	struct sn_req *r = req_new(OP_MULTI, ops[0].delete_op.path,
				   (const void *)done, arg);

	r->n = count;
	r->types = xcalloc((size_t)count, sizeof(int));
	r->versions = xcalloc((size_t)count, sizeof(int));
	r->paths = xcalloc((size_t)count, sizeof(char *));
	for (int i = 0; i < count; i++) {
		r->types[i] = ops[i].type;
		if (ops[i].type == ZOO_DELETE_OP) {
			r->paths[i] = xstrdup(ops[i].delete_op.path);
			r->versions[i] = ops[i].delete_op.version;
		} else {
			r->paths[i] = xstrdup(ops[i].check_op.path);
			r->versions[i] = ops[i].check_op.version;
		}
	}
	r->results = results;
	return call(ctx, r);
}

static int t_children(void *ctx, const char *path, strings_completion_t done,
		      const void *arg)
{
	return call(ctx, req_new(OP_CHILDREN, path, (const void *)done, arg));
}

static int t_get(void *ctx, const char *path, data_completion_t done,
		 const void *arg)
{
	return call(ctx, req_new(OP_GET, path, (const void *)done, arg));
}

static int t_wget(void *ctx, const char *path, watcher_fn watcher, void *wctx,
		  data_completion_t done, const void *arg)
{
	struct sn_req *r = req_new(OP_WGET, path, (const void *)done, arg);

	r->watcher = watcher;
	r->wctx = wctx;
	return call(ctx, r);
}

static int t_exists(void *ctx, const char *path, stat_completion_t done,
		    const void *arg)
{
	return call(ctx, req_new(OP_EXISTS, path, (const void *)done, arg));
}

static int t_unwatch(void *ctx, const char *path, watcher_fn watcher,
		     void *wctx, void_completion_t done, const void *arg)
{
	struct sn_mount *m = ctx;
	struct sn_req *r;

	/* as zoo_aremove_watches(): no such watcher here, no request */
	if (m->cur->state != SN_EXPIRED && reg_find(m->cur, path, watcher, wctx) < 0) {
		sn_trace(m->net, "        m%d unwatch %s -> ZNOWATCHER", m->id, path);
		return ZNOWATCHER;
	}
	r = req_new(OP_UNWATCH, path, (const void *)done, arg);
	r->watcher = watcher;
	r->wctx = wctx;
	return call(m, r);
}

static uint64_t t_generation(void *ctx)
{
	return ((struct sn_mount *)ctx)->gen;
}

static int64_t t_session_of(void *ctx, uint64_t gen)
{
	struct sn_mount *m = ctx;

	return gen == m->gen && m->cur->connected_once ? m->cur->sid : 0;
}

static const struct zkl_transport_ops sn_ops = {
	.create = t_create, .remove = t_remove, .multi = t_multi,
	.children = t_children, .get = t_get, .wget = t_wget,
	.exists = t_exists, .unwatch = t_unwatch,
	.generation = t_generation, .session_of = t_session_of,
};

struct zkl_transport sn_transport(struct sn_mount *m)
{
	return (struct zkl_transport){ &sn_ops, m };
}

/* the server side ------------------------------------------------------- */

static struct sn_handle *handle_of(struct simnet *net, int64_t sid)
{
	for (int i = 0; i < net->nmounts; i++)
		if (net->mounts[i].cur->sid == sid)
			return net->mounts[i].cur;
	return NULL;
}

static void missed_add(struct sn_handle *h, int type, const char *path)
{
	for (int i = 0; i < h->nmissed; i++)
		if (strcmp(h->missed[i].path, path) == 0)
			return;		/* one watch, one event */
	if (h->nmissed == h->mcap) {
		h->mcap = h->mcap ? 2 * h->mcap : 8;
		h->missed = realloc(h->missed, (size_t)h->mcap * sizeof(*h->missed));
		if (!h->missed)
			abort();
	}
	h->missed[h->nmissed].type = type;
	h->missed[h->nmissed++].path = xstrdup(path);
}

/* szk's notify: a watch of session @sid fired. */
static void notify(void *ctx, int64_t sid, int type, const char *path)
{
	struct simnet *net = ctx;
	struct sn_handle *h = handle_of(net, sid);
	struct sn_item *it;

	if (!h || h->state == SN_EXPIRED)
		return;
	sn_trace(net, "        watch of m%d fires: %s %s", h->m->id,
		 type == ZOO_DELETED_EVENT ? "DELETED" : "CHANGED", path);
	if (h->state == SN_DISCONNECTED) {
		missed_add(h, type, path);	/* SetWatches fires it later */
		return;
	}
	it = xcalloc(1, sizeof(*it));
	it->kind = IT_WATCH;
	it->type = type;
	it->path = xstrdup(path);
	q_push(&h->wire, it);
}

/* Apply @r at the server for @h's session; its reply goes to the wire. */
static void apply(struct sn_handle *h, struct sn_req *r)
{
	struct szk *z = &h->m->net->zk;
	struct sn_item *it = xcalloc(1, sizeof(*it));
	const char *data = NULL;

	it->kind = IT_REPLY;
	it->req = r;
	it->answered = true;
	switch (r->op) {
	case OP_CREATE:
		it->rc = szk_create(z, h->sid, r->path, r->data, r->len, r->mode,
				    &it->value, &it->stat);
		break;
	case OP_DELETE:
		it->rc = szk_delete(z, r->path, -1);
		break;
	case OP_MULTI:
		it->errs = xcalloc((size_t)r->n, sizeof(int));
		it->rc = szk_multi(z, r->n, r->types, r->paths, r->versions, it->errs);
		break;
	case OP_CHILDREN:
		it->rc = szk_children(z, r->path, &it->sv);
		break;
	case OP_GET:
	case OP_WGET:
		it->rc = szk_get(z, r->path, r->op == OP_WGET ? h->sid : 0, &data,
				 &it->vlen, &it->stat);
		if (it->rc == ZOK) {
			it->value = xcalloc((size_t)it->vlen + 1, 1);
			memcpy(it->value, data, (size_t)it->vlen);
		}
		break;
	case OP_EXISTS:
		it->rc = szk_exists(z, r->path, &it->stat);
		break;
	case OP_UNWATCH:
		it->rc = szk_unwatch(z, h->sid, r->path);
		break;
	}
	sn_trace(h->m->net, "        m%d applied #%llu %s %s%s%s: %s", h->m->id,
		 (unsigned long long)r->id, op_name[r->op], r->path,
		 it->value && r->op == OP_CREATE ? " = " : "",
		 it->value && r->op == OP_CREATE ? it->value : "", zerror(it->rc));
	q_push(&h->wire, it);
}

bool sn_apply(struct sn_mount *m)
{
	struct sn_handle *h = m->cur;
	struct sn_req *r;

	if (h->state != SN_CONNECTED || !(r = q_pop(&h->out)))
		return false;
	apply(h, r);
	return true;
}

/* the client side -------------------------------------------------------- */

bool sn_read(struct sn_handle *h)
{
	struct sn_item *it = q_pop(&h->wire);
	int i;

	if (!it)
		return false;
	if (it->kind == IT_WATCH) {
		collect(h, it, it->path, true);
	} else if (it->req->op == OP_WGET && it->rc == ZOK) {
		reg_add(h, it->req->path, it->req->watcher, it->req->wctx);
	} else if (it->req->op == OP_UNWATCH && it->rc == ZOK &&
		   (i = reg_find(h, it->req->path, it->req->watcher, it->req->wctx)) >= 0) {
		reg_del(h, i);
	}
	q_push(&h->in, it);
	return true;
}

static void complete(struct sn_handle *h, struct sn_item *it)
{
	struct sn_req *r = it->req;
	bool ok = it->rc == ZOK;

	sn_trace(h->m->net, "        m%d completes #%llu %s %s: %s %s", h->m->id,
		 (unsigned long long)r->id, op_name[r->op], r->path, zerror(it->rc),
		 h->m->net->name_of ? h->m->net->name_of(h->m->net->hook_ctx, r->arg) : "");
	switch (r->op) {
	case OP_CREATE:
		((string_stat_completion_t)r->done)(it->rc, ok ? it->value : NULL,
						     ok ? &it->stat : NULL, r->arg);
		break;
	case OP_MULTI:
		for (int i = 0; it->answered && i < r->n; i++)
			r->results[i].err = it->errs[i];
		/* fall through */
	case OP_DELETE:
	case OP_UNWATCH:
		((void_completion_t)r->done)(it->rc, r->arg);
		break;
	case OP_CHILDREN:
		((strings_completion_t)r->done)(it->rc, ok ? &it->sv : NULL, r->arg);
		break;
	case OP_GET:
	case OP_WGET:
		((data_completion_t)r->done)(it->rc, ok ? it->value : NULL,
					     ok ? it->vlen : -1, ok ? &it->stat : NULL,
					     r->arg);
		break;
	case OP_EXISTS:
		((stat_completion_t)r->done)(it->rc, ok ? &it->stat : NULL, r->arg);
		break;
	}
}

bool sn_deliver(struct sn_handle *h)
{
	struct sn_item *it = q_pop(&h->in);
	struct simnet *net = h->m->net;

	if (!it)
		return false;
	if (it->kind == IT_REPLY) {
		complete(h, it);
	} else {
		sn_trace(net, "        m%d event %s %s to %d watcher(s)", h->m->id,
			 it->kind == IT_SESSION ? "SESSION" :
			 it->type == ZOO_DELETED_EVENT ? "DELETED" : "CHANGED",
			 it->kind == IT_SESSION ? (it->state == ZOO_CONNECTED_STATE ?
			 "connected" : it->state == ZOO_CONNECTING_STATE ?
			 "connecting" : "expired") : it->path, it->nregs);
		for (int i = 0; i < it->nregs; i++) {
			if (it->kind == IT_WATCH && net->hook)
				net->hook(net->hook_ctx, h->m, it->type, it->path,
					  it->regs[i].ctx);
			it->regs[i].fn(NULL, it->kind == IT_SESSION ? ZOO_SESSION_EVENT : it->type,
				       it->kind == IT_SESSION ? it->state : ZOO_CONNECTED_STATE,
				       it->kind == IT_SESSION ? "" : it->path, it->regs[i].ctx);
		}
	}
	item_free(it);
	return true;
}

/* Fail @r with @rc (no server answer): queued for delivery in order. */
static struct sn_item *failed(struct sn_req *r, int rc)
{
	struct sn_item *it = xcalloc(1, sizeof(*it));

	it->kind = IT_REPLY;
	it->req = r;
	it->rc = rc;
	return it;
}

/* Move every pending request to @fails as failed with @rc, in call order. */
static void fail_pending(struct sn_handle *h, struct sn_queue *fails, int rc)
{
	struct sn_item *it;
	struct sn_req *r;

	while ((it = q_pop(&h->wire))) {
		if (it->kind == IT_WATCH) {
			missed_add(h, it->type, it->path);
			item_free(it);
			continue;
		}
		r = it->req;
		it->req = NULL;
		item_free(it);
		q_push(fails, failed(r, rc));
	}
	while ((r = q_pop(&h->out)))
		q_push(fails, failed(r, rc));
}

/* Append @fails and a session event, in an order the PRNG picks. */
static void fail_and_tell(struct sn_handle *h, struct sn_queue *fails, int state)
{
	bool event_first = sim_rng_chance(h->m->net->rng, 1, 2);
	void *x;

	if (event_first)
		session_event(h, state);
	while ((x = q_pop(fails)))
		q_push(&h->in, x);
	if (!event_first)
		session_event(h, state);
}

bool sn_drop(struct sn_mount *m)
{
	struct sn_handle *h = m->cur;
	struct sn_queue fails = { 0 };
	int k, j;

	if (h->state != SN_CONNECTED)
		return false;
	k = (int)sim_rng_below(m->net->rng, (uint32_t)h->wire.n + 1);
	j = (int)sim_rng_below(m->net->rng, (uint32_t)h->out.n + 1);
	sn_trace(m->net, "        m%d: connection lost (%d read, %d more applied unseen)",
		 m->id, k, j);
	while (k-- > 0)
		sn_read(h);
	while (j-- > 0)
		apply(h, q_pop(&h->out));
	h->state = SN_DISCONNECTED;
	fail_pending(h, &fails, ZCONNECTIONLOSS);
	fail_and_tell(h, &fails, ZOO_CONNECTING_STATE);
	return true;
}

bool sn_reconnect(struct sn_mount *m)
{
	struct sn_handle *h = m->cur;
	struct sn_queue fails = { 0 };

	if (h->state != SN_DISCONNECTED)
		return false;
	if (!szk_session_alive(&m->net->zk, h->sid)) {
		sn_trace(m->net, "        m%d: reconnects, learns session 0x%llx expired",
			 m->id, (unsigned long long)h->sid);
		h->state = SN_EXPIRED;
		fail_pending(h, &fails, ZSESSIONEXPIRED);
		for (int i = 0; i < h->nmissed; i++)
			free(h->missed[i].path);
		h->nmissed = 0;
		fail_and_tell(h, &fails, ZOO_EXPIRED_SESSION_STATE);
		return true;
	}
	sn_trace(m->net, "        m%d: connected (session 0x%llx)", m->id,
		 (unsigned long long)h->sid);
	h->state = SN_CONNECTED;
	h->connected_once = true;
	session_event(h, ZOO_CONNECTED_STATE);
	for (int i = 0; i < h->nmissed; i++) {	/* SetWatches */
		struct sn_item *it = xcalloc(1, sizeof(*it));

		it->kind = IT_WATCH;
		it->type = h->missed[i].type;
		it->path = h->missed[i].path;
		q_push(&h->wire, it);
	}
	h->nmissed = 0;
	m->connected_due = true;
	m->silent_done = false;
	return true;
}

bool sn_expire(struct sn_mount *m)
{
	struct sn_handle *h = m->cur;

	if (h->state != SN_DISCONNECTED || !m->silent_done || !h->connected_once ||
	    !szk_session_alive(&m->net->zk, h->sid))
		return false;
	sn_trace(m->net, "        server expires session 0x%llx of m%d",
		 (unsigned long long)h->sid, m->id);
	szk_session_expire(&m->net->zk, h->sid);
	return true;
}

static struct sn_handle *handle_new(struct sn_mount *m)
{
	struct sn_handle *h = xcalloc(1, sizeof(*h));

	h->m = m;
	h->gen = m->gen;
	h->sid = szk_session_new(&m->net->zk);
	h->state = SN_DISCONNECTED;
	return h;
}

static void handle_free(struct sn_handle *h)
{
	struct sn_item *it;
	struct sn_req *r;

	while ((r = q_pop(&h->out)))
		req_free(r);
	while ((it = q_pop(&h->wire)))
		item_free(it);
	while ((it = q_pop(&h->in)))
		item_free(it);
	for (int i = 0; i < h->nregs; i++)
		free(h->regs[i].path);
	for (int i = 0; i < h->nmissed; i++)
		free(h->missed[i].path);
	free(h->regs);
	free(h->missed);
	free(h);
}

bool sn_replace(struct sn_mount *m)
{
	struct sn_handle *h = m->cur;

	if (h->state != SN_EXPIRED || m->expired_due)
		return false;
	h->next = m->old;
	m->old = h;
	m->gen++;
	m->cur = handle_new(m);
	m->expired_due = true;
	sn_trace(m->net, "        m%d: new handle, generation %llu, session 0x%llx",
		 m->id, (unsigned long long)m->gen, (unsigned long long)m->cur->sid);
	return true;
}

bool sn_ev_expired(struct sn_mount *m)
{
	if (!m->expired_due)
		return false;
	for (struct sn_handle *h = m->old; h; h = h->next)
		if (h->in.n || h->wire.n)
			return false;	/* zookeeper_close() delivers them first */
	while (m->old) {
		struct sn_handle *h = m->old;

		m->old = h->next;
		handle_free(h);
	}
	m->expired_due = false;
	m->expiries++;
	sn_trace(m->net, "        m%d: engine hears: expired", m->id);
	m->ev.expired(m->ev.arg);
	return true;
}

bool sn_ev_connected(struct sn_mount *m)
{
	if (!m->connected_due || m->expired_due)
		return false;
	m->connected_due = false;
	sn_trace(m->net, "        m%d: engine hears: connected", m->id);
	m->ev.connected(m->ev.arg);
	return true;
}

bool sn_ev_silent(struct sn_mount *m)
{
	if (m->cur->state != SN_DISCONNECTED || m->silent_done || m->expired_due)
		return false;
	m->silent_done = true;
	m->silents++;
	sn_trace(m->net, "        m%d: engine hears: silent", m->id);
	m->ev.silent(m->ev.arg);
	return true;
}

bool sn_ev_tick(struct sn_mount *m)
{
	if (m->cur->state != SN_CONNECTED || m->expired_due)
		return false;
	sn_trace(m->net, "        m%d: engine hears: tick", m->id);
	m->ev.tick(m->ev.arg);
	return true;
}

bool sn_busy(const struct sn_mount *m)
{
	const struct sn_handle *h = m->cur;

	return h->out.n || h->wire.n || h->in.n || m->old || m->connected_due ||
	       m->expired_due || h->state != SN_CONNECTED;
}

static bool deletes(const struct sn_req *r, const char *path)
{
	if (r->op == OP_DELETE && strcmp(r->path, path) == 0)
		return true;
	for (int i = 0; r->op == OP_MULTI && i < r->n; i++)
		if (r->types[i] == ZOO_DELETE_OP && strcmp(r->paths[i], path) == 0)
			return true;
	return false;
}

bool sn_pending_delete(const struct sn_mount *m, const char *path)
{
	const struct sn_handle *h = m->cur;

	for (const struct sn_req *r = h->out.head; r; r = r->next)
		if (deletes(r, path))
			return true;
	for (const struct sn_item *it = h->wire.head; it; it = it->next)
		if (it->kind == IT_REPLY && deletes(it->req, path))
			return true;
	for (const struct sn_item *it = h->in.head; it; it = it->next)
		if (it->kind == IT_REPLY && deletes(it->req, path))
			return true;
	return false;
}

void sn_init(struct simnet *net, struct sim_rng *rng, int n, bool verbose)
{
	memset(net, 0, sizeof(*net));
	net->rng = rng;
	net->verbose = verbose;
	szk_init(&net->zk, rng, notify, net);
	net->mounts = xcalloc((size_t)n, sizeof(*net->mounts));
	net->nmounts = n;
	for (int i = 0; i < n; i++) {
		struct sn_mount *m = &net->mounts[i];

		m->net = net;
		m->id = i;
		m->cur = handle_new(m);
		m->cur->state = SN_CONNECTED;	/* zks_open() waited for it */
		m->cur->connected_once = true;
	}
}

void sn_free(struct simnet *net)
{
	for (int i = 0; i < net->nmounts; i++) {
		struct sn_mount *m = &net->mounts[i];

		while (m->old) {
			struct sn_handle *h = m->old;

			m->old = h->next;
			handle_free(h);
		}
		handle_free(m->cur);
	}
	free(net->mounts);
	szk_free(&net->zk);
}
