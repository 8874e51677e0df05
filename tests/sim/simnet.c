/* tests/sim/simnet.c - the simulated connections (see simnet.h). */
#include "tests/sim/simnet_int.h"
#include "tests/sim/room.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_name[] = { "create", "delete", "multi", "children",
				       "get", "wget", "exists", "unwatch", "set",
				       "wchildren", "unwatch-children", "sync" };

void *sni_xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		abort();
	return p;
}

char *sni_xstrdup(const char *s)
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

void sni_q_push(struct sn_queue *q, void *x)
{
	((struct link *)x)->next = NULL;
	if (q->tail)
		((struct link *)q->tail)->next = x;
	else
		q->head = x;
	q->tail = x;
	q->n++;
}

void *sni_q_pop(struct sn_queue *q)
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

void sni_req_free(struct sn_req *r)
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

void sni_item_free(struct sn_item *it)
{
	if (it->req)
		sni_req_free(it->req);
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

static void reg_add(struct sn_handle *h, const char *path, watcher_fn fn, void *ctx,
		    bool child)
{
	for (int i = 0; i < h->nregs; i++)
		if (h->regs[i].fn == fn && h->regs[i].ctx == ctx &&
		    h->regs[i].child == child && strcmp(h->regs[i].path, path) == 0)
			return;		/* the client keeps a watcher once */
	SIM_ROOM(h->regs, h->nregs, h->rcap, 8);
	h->regs[h->nregs++] = (struct sn_reg){ sni_xstrdup(path), fn, ctx, child };
}

static int reg_find(const struct sn_handle *h, const char *path, watcher_fn fn,
		    void *ctx, bool child)
{
	for (int i = 0; i < h->nregs; i++)
		if ((!fn || (h->regs[i].fn == fn && h->regs[i].ctx == ctx)) &&
		    h->regs[i].child == child &&
		    strcmp(h->regs[i].path, path) == 0)
			return i;
	return -1;
}

static void reg_del(struct sn_handle *h, int i)
{
	free(h->regs[i].path);
	h->regs[i] = h->regs[--h->nregs];
}

/* Collect the watchers an event reaches: those on @path its type reaches
 * (a data change data watches, a child's change child watches, a delete
 * both), or all (NULL). */
static void collect(struct sn_handle *h, struct sn_item *it, const char *path,
		    bool remove)
{
	it->regs = sni_xcalloc((size_t)h->nregs, sizeof(*it->regs));
	for (int i = 0; i < h->nregs;) {
		if (path && (strcmp(h->regs[i].path, path) != 0 ||
			     (it->type == ZOO_CHANGED_EVENT && h->regs[i].child) ||
			     (it->type == ZOO_CHILD_EVENT && !h->regs[i].child))) {
			i++;
			continue;
		}
		it->regs[it->nregs] = h->regs[i];
		it->regs[it->nregs++].path = sni_xstrdup(h->regs[i].path);
		if (remove)
			reg_del(h, i);
		else
			i++;
	}
}

void sni_session_event(struct sn_handle *h, int state)
{
	struct sn_item *it = sni_xcalloc(1, sizeof(*it));

	it->kind = IT_SESSION;
	it->state = state;
	collect(h, it, NULL, state == ZOO_EXPIRED_SESSION_STATE);
	sni_q_push(&h->in, it);
}

/* the transport ------------------------------------------------------------ */

static int call(struct sn_mount *m, struct sn_req *r)
{
	struct sn_handle *h = m->cur;

	if (h->state == SN_EXPIRED) {
		sn_trace(m->net, "        m%d %s %s -> ZINVALIDSTATE", m->id,
			 op_name[r->op], r->path);
		sni_req_free(r);
		return ZINVALIDSTATE;
	}
	r->id = ++m->net->next_req;
	sn_trace(m->net, "        m%d call #%llu %s %s %s", m->id,
		 (unsigned long long)r->id, op_name[r->op], r->path,
		 m->net->name_of ? m->net->name_of(m->net->hook_ctx, r->arg) : "");
	sni_q_push(&h->out, r);
	return ZOK;
}

static struct sn_req *req_new(enum sn_op op, const char *path, sn_fn done,
			      const void *arg)
{
	struct sn_req *r = sni_xcalloc(1, sizeof(*r));

	r->op = op;
	r->path = sni_xstrdup(path);
	r->done = done;
	r->arg = arg;
	return r;
}

static int t_create(void *ctx, const char *path, const char *data, int len,
		    int mode, string_stat_completion_t done, const void *arg,
		    uint64_t *gen)
{
	struct sn_mount *m = ctx;
	struct sn_req *r = req_new(OP_CREATE, path, (sn_fn)done, arg);

	if (gen)
		*gen = m->gen;
	r->data = sni_xcalloc((size_t)len + 1, 1);
	memcpy(r->data, data, (size_t)len);
	r->len = len;
	r->mode = mode;
	return call(m, r);
}

static int t_remove(void *ctx, const char *path, void_completion_t done,
		    const void *arg)
{
	return call(ctx, req_new(OP_DELETE, path, (sn_fn)done, arg));
}

static int t_multi(void *ctx, int count, const zoo_op_t *ops,
		   zoo_op_result_t *results, void_completion_t done,
		   const void *arg)
{
	struct sn_req *r = req_new(OP_MULTI, ops[0].delete_op.path,
				   (sn_fn)done, arg);

	r->n = count;
	r->types = sni_xcalloc((size_t)count, sizeof(int));
	r->versions = sni_xcalloc((size_t)count, sizeof(int));
	r->paths = sni_xcalloc((size_t)count, sizeof(char *));
	for (int i = 0; i < count; i++) {
		r->types[i] = ops[i].type;
		if (ops[i].type == ZOO_DELETE_OP) {
			r->paths[i] = sni_xstrdup(ops[i].delete_op.path);
			r->versions[i] = ops[i].delete_op.version;
		} else {
			r->paths[i] = sni_xstrdup(ops[i].check_op.path);
			r->versions[i] = ops[i].check_op.version;
		}
	}
	r->results = results;
	return call(ctx, r);
}

static int t_children(void *ctx, const char *path,
		      strings_stat_completion_t done, const void *arg)
{
	return call(ctx, req_new(OP_CHILDREN, path, (sn_fn)done, arg));
}

static int t_get(void *ctx, const char *path, data_completion_t done,
		 const void *arg)
{
	return call(ctx, req_new(OP_GET, path, (sn_fn)done, arg));
}

/* A call that names a watcher (@watcher, @wctx): to set it or remove it. */
static int call_watcher(void *ctx, enum sn_op op, const char *path, watcher_fn watcher,
			void *wctx, sn_fn done, const void *arg)
{
	struct sn_req *r = req_new(op, path, done, arg);

	r->watcher = watcher;
	r->wctx = wctx;
	return call(ctx, r);
}

static int t_wget(void *ctx, const char *path, watcher_fn watcher, void *wctx,
		  data_completion_t done, const void *arg)
{
	return call_watcher(ctx, OP_WGET, path, watcher, wctx, (sn_fn)done, arg);
}

static int t_set(void *ctx, const char *path, const char *data, int len,
		 int version, stat_completion_t done, const void *arg)
{
	struct sn_req *r = req_new(OP_SET, path, (sn_fn)done, arg);

	r->data = sni_xcalloc((size_t)len + 1, 1);
	memcpy(r->data, data, (size_t)len);
	r->len = len;
	r->mode = version;
	return call(ctx, r);
}

static int t_exists(void *ctx, const char *path, stat_completion_t done,
		    const void *arg)
{
	return call(ctx, req_new(OP_EXISTS, path, (sn_fn)done, arg));
}

/* Remove the data (or @child) watch @watcher, @wctx of this session on @path. */
static int unwatch(struct sn_mount *m, const char *path, watcher_fn watcher, void *wctx,
		   bool child, void_completion_t done, const void *arg)
{
	/* as zoo_aremove_watches(): no such watcher here, no request */
	if (m->cur->state != SN_EXPIRED && reg_find(m->cur, path, watcher, wctx, child) < 0) {
		sn_trace(m->net, "        m%d unwatch %s -> ZNOWATCHER", m->id, path);
		return ZNOWATCHER;
	}
	return call_watcher(m, child ? OP_UNWATCHC : OP_UNWATCH, path, watcher, wctx,
			    (sn_fn)done, arg);
}

static int t_unwatch(void *ctx, const char *path, watcher_fn watcher,
		     void *wctx, void_completion_t done, const void *arg)
{
	return unwatch(ctx, path, watcher, wctx, false, done, arg);
}

static int t_wchildren(void *ctx, const char *path, watcher_fn watcher, void *wctx,
		       strings_stat_completion_t done, const void *arg)
{
	return call_watcher(ctx, OP_WCHILDREN, path, watcher, wctx, (sn_fn)done, arg);
}

static int t_unwatch_children(void *ctx, const char *path, watcher_fn watcher,
			      void *wctx, void_completion_t done, const void *arg)
{
	return unwatch(ctx, path, watcher, wctx, true, done, arg);
}

/* The simulator's clock: one step is a millisecond.  Its ticks come when
 * the scheduler says (simsess.c), so tick_by() asks for nothing. */
static uint64_t t_now_ms(void *ctx)
{
	return (uint64_t)((struct sn_mount *)ctx)->net->now;
}

/*
 * May the server have expired the session?  A mount hears the server when
 * it reads from the wire or connects (last_heard); the session timeout is
 * SN_QUIET_MS of the clock, far beyond a seed's steps, so only a jump of
 * the clock (sn_suspend()) makes a mount quiet by time.  Also once it was
 * told it is silent, until it connects again, and once its handle knows
 * the session expired, as zks_quiet() says.
 */
static bool t_quiet(void *ctx)
{
	struct sn_mount *m = ctx;

	return m->silent_done || m->cur->state == SN_EXPIRED ||
	       m->net->now - m->last_heard >= SN_QUIET_MS;
}

/* In doubt: told so and not yet out, or the connection down (zks_doubtful()). */
static bool t_doubtful(void *ctx)
{
	struct sn_mount *m = ctx;

	return m->engine_doubt || m->cur->state != SN_CONNECTED;
}

/* ZooKeeper's sync: one server here, so only its place in the session's
 * order matters (fs/confirm.c's round trip). */
static int t_sync(void *ctx, const char *path, string_completion_t done,
		  const void *arg)
{
	return call(ctx, req_new(OP_SYNC, path, (sn_fn)done, arg));
}

/* fs/'s work for the supervisor's next look (the holders' data: fs/wbuf.c),
 * which sn_look() is; first queued, last run, as zks_later()'s list. */
static int t_later(void *ctx, void (*fn)(void *arg, bool go), void *arg)
{
	struct sn_mount *m = ctx;
	struct sn_later *l = sni_xcalloc(1, sizeof(*l));

	l->fn = fn;
	l->arg = arg;
	l->next = m->later;
	m->later = l;
	sn_trace(m->net, "        m%d: a call for the supervisor's next look", m->id);
	return 0;
}

static int t_timeout_ms(void *ctx)
{
	(void)ctx;
	return (int)(SN_QUIET_MS / 2);
}

static size_t t_data_max(void *ctx, const char *path)
{
	(void)ctx, (void)path;
	return ZKS_DATA_MAX;
}

static void t_tick_by(void *ctx, uint64_t at_ms)
{
	(void)ctx, (void)at_ms;
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

static const struct zkt_ops sn_ops = {
	.create = t_create, .remove = t_remove, .multi = t_multi,
	.children = t_children, .get = t_get, .wget = t_wget,
	.exists = t_exists, .unwatch = t_unwatch, .set = t_set,
	.wchildren = t_wchildren, .unwatch_children = t_unwatch_children, .sync = t_sync,
	.now_ms = t_now_ms, .quiet = t_quiet, .doubtful = t_doubtful, .tick_by = t_tick_by,
	.later = t_later, .timeout_ms = t_timeout_ms, .data_max = t_data_max,
	.generation = t_generation, .session_of = t_session_of,
};

struct zkt_transport sn_transport(struct sn_mount *m)
{
	return (struct zkt_transport){ &sn_ops, m };
}

/* the server side ------------------------------------------------------- */

static struct sn_handle *handle_of(struct simnet *net, int64_t sid)
{
	for (int i = 0; i < net->nmounts; i++)
		if (net->mounts[i].cur->sid == sid)
			return net->mounts[i].cur;
	return NULL;
}

void sni_missed_add(struct sn_handle *h, int type, const char *path)
{
	for (int i = 0; i < h->nmissed; i++)
		if (h->missed[i].type == type && strcmp(h->missed[i].path, path) == 0)
			return;		/* one watch, one event */
	SIM_ROOM(h->missed, h->nmissed, h->mcap, 8);
	h->missed[h->nmissed].type = type;
	h->missed[h->nmissed++].path = sni_xstrdup(path);
}

/* szk's notify: a watch of session @sid fired. */
void sni_notify(void *ctx, int64_t sid, int type, const char *path)
{
	struct simnet *net = ctx;
	struct sn_handle *h = handle_of(net, sid);
	struct sn_item *it;

	if (!h || h->state == SN_EXPIRED)
		return;
	sn_trace(net, "        watch of m%d fires: %s %s", h->m->id,
		 type == ZOO_DELETED_EVENT ? "DELETED" :
		 type == ZOO_CHILD_EVENT ? "CHILD" : "CHANGED", path);
	if (h->state == SN_DISCONNECTED) {
		sni_missed_add(h, type, path);	/* SetWatches fires it later */
		return;
	}
	it = sni_xcalloc(1, sizeof(*it));
	it->kind = IT_WATCH;
	it->type = type;
	it->path = sni_xstrdup(path);
	sni_q_push(&h->wire, it);
}

/* The deletes of @r (@what: SN_DELETING, SN_DELETED with @rc) to the hook. */
static void deletes_hook(struct sn_handle *h, const struct sn_req *r, enum sn_applied what,
			 int rc)
{
	struct simnet *net = h->m->net;

	if (!net->applied)
		return;
	if (r->op == OP_DELETE)
		net->applied(net->hook_ctx, h->m, r->id, what, r->path, rc);
	for (int i = 0; r->op == OP_MULTI && i < r->n; i++)
		if (r->types[i] == ZOO_DELETE_OP)
			net->applied(net->hook_ctx, h->m, r->id, what, r->paths[i], rc);
}

/* Apply @r at the server for @h's session; its reply goes to the wire. */
void sni_apply(struct sn_handle *h, struct sn_req *r)
{
	struct szk *z = &h->m->net->zk;
	struct sn_item *it = sni_xcalloc(1, sizeof(*it));
	const char *data = NULL;

	it->kind = IT_REPLY;
	it->req = r;
	it->answered = true;
	deletes_hook(h, r, SN_DELETING, -1);
	switch (r->op) {
	case OP_CREATE:
		it->rc = szk_create(z, h->sid, r->path, r->data, r->len, r->mode,
				    &it->value, &it->stat);
		break;
	case OP_DELETE:
		it->rc = szk_delete(z, r->path, -1);
		break;
	case OP_MULTI:
		it->errs = sni_xcalloc((size_t)r->n, sizeof(int));
		it->rc = szk_multi(z, r->n, r->types, r->paths, r->versions, it->errs);
		break;
	case OP_CHILDREN:
	case OP_WCHILDREN:
		it->rc = szk_children(z, r->path, &it->sv);
		if (it->rc == ZOK)
			szk_exists(z, r->path, &it->stat);	/* the parent's */
		if (it->rc == ZOK && r->op == OP_WCHILDREN)
			szk_watch_children(z, h->sid, r->path);
		break;
	case OP_GET:
	case OP_WGET:
		it->rc = szk_get(z, r->path, r->op == OP_WGET ? h->sid : 0, &data,
				 &it->vlen, &it->stat);
		if (it->rc == ZOK) {
			it->value = sni_xcalloc((size_t)it->vlen + 1, 1);
			memcpy(it->value, data, (size_t)it->vlen);
		}
		break;
	case OP_EXISTS:
		it->rc = szk_exists(z, r->path, &it->stat);
		break;
	case OP_SET:
		it->rc = szk_set(z, r->path, r->data, r->len, r->mode);
		if (it->rc == ZOK)
			szk_exists(z, r->path, &it->stat);
		break;
	case OP_UNWATCH:
	case OP_UNWATCHC:
		it->rc = szk_unwatch(z, h->sid, r->path, r->op == OP_UNWATCHC);
		break;
	case OP_SYNC:
		it->rc = ZOK;
		it->value = sni_xstrdup(r->path);
		break;
	}
	sn_trace(h->m->net, "        m%d applied #%llu %s %s%s%s: %s", h->m->id,
		 (unsigned long long)r->id, op_name[r->op], r->path,
		 it->value && r->op == OP_CREATE ? " = " : "",
		 it->value && r->op == OP_CREATE ? it->value : "", zerror(it->rc));
	deletes_hook(h, r, SN_DELETED, it->rc);
	if (r->op == OP_SET && h->m->net->applied)
		h->m->net->applied(h->m->net->hook_ctx, h->m, r->id, SN_SET, r->path, it->rc);
	sni_q_push(&h->wire, it);
}

const char *sn_next_request(const struct sn_mount *m, const char **path)
{
	const struct sn_req *r = m->cur->out.head;

	*path = r ? r->path : NULL;
	return r ? op_name[r->op] : NULL;
}

bool sn_apply(struct sn_mount *m)
{
	struct sn_handle *h = m->cur;
	struct sn_req *r;

	if (h->state != SN_CONNECTED || !(r = sni_q_pop(&h->out)))
		return false;
	sni_apply(h, r);
	return true;
}

/* the client side -------------------------------------------------------- */

bool sn_read(struct sn_handle *h)
{
	struct sn_item *it = sni_q_pop(&h->wire);
	int i;

	if (!it)
		return false;
	if (h == h->m->cur)
		h->m->last_heard = h->m->net->now;
	if (it->kind == IT_WATCH) {
		collect(h, it, it->path, true);
	} else if ((it->req->op == OP_WGET || it->req->op == OP_WCHILDREN) && it->rc == ZOK) {
		reg_add(h, it->req->path, it->req->watcher, it->req->wctx,
			it->req->op == OP_WCHILDREN);
	} else if ((it->req->op == OP_UNWATCH || it->req->op == OP_UNWATCHC) && it->rc == ZOK &&
		   (i = reg_find(h, it->req->path, it->req->watcher, it->req->wctx,
				 it->req->op == OP_UNWATCHC)) >= 0) {
		reg_del(h, i);
	}
	sni_q_push(&h->in, it);
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
	case OP_UNWATCHC:
		((void_completion_t)r->done)(it->rc, r->arg);
		break;
	case OP_CHILDREN:
	case OP_WCHILDREN:
		if (ok && h->m->net->listed)
			h->m->net->listed(h->m->net->hook_ctx, h->m, r->path, &it->stat,
					  r->done);
		((strings_stat_completion_t)r->done)(it->rc, ok ? &it->sv : NULL,
						     ok ? &it->stat : NULL, r->arg);
		break;
	case OP_GET:
	case OP_WGET:
		((data_completion_t)r->done)(it->rc, ok ? it->value : NULL,
					     ok ? it->vlen : -1, ok ? &it->stat : NULL,
					     r->arg);
		break;
	case OP_EXISTS:
	case OP_SET:
		((stat_completion_t)r->done)(it->rc, ok ? &it->stat : NULL, r->arg);
		break;
	case OP_SYNC:
		((string_completion_t)r->done)(it->rc, ok ? it->value : NULL, r->arg);
		break;
	}
}

bool sn_deliver(struct sn_handle *h)
{
	struct sn_item *it = sni_q_pop(&h->in);
	struct simnet *net = h->m->net;

	if (!it)
		return false;
	if (it->kind == IT_REPLY) {
		complete(h, it);
	} else {
		sn_trace(net, "        m%d event %s %s to %d watcher(s)", h->m->id,
			 it->kind == IT_SESSION ? "SESSION" :
			 it->type == ZOO_DELETED_EVENT ? "DELETED" :
			 it->type == ZOO_CHILD_EVENT ? "CHILD" : "CHANGED",
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
	sni_item_free(it);
	return true;
}

