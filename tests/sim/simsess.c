/*
 * tests/sim/simsess.c - the simulated sessions' faults and the
 * supervisor's events (see simnet.h): connection loss, reconnection,
 * expiry at the server, the new handle, and the engine's connected,
 * expired, silent and tick events.
 */
#include "tests/sim/simnet_int.h"

#include <stdlib.h>
#include <string.h>

/* Fail @r with @rc (no server answer): queued for delivery in order. */
static struct sn_item *failed(struct sn_req *r, int rc)
{
	struct sn_item *it = sni_xcalloc(1, sizeof(*it));

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

	while ((it = sni_q_pop(&h->wire))) {
		if (it->kind == IT_WATCH) {
			sni_missed_add(h, it->type, it->path);
			sni_item_free(it);
			continue;
		}
		r = it->req;
		it->req = NULL;
		sni_item_free(it);
		sni_q_push(fails, failed(r, rc));
	}
	while ((r = sni_q_pop(&h->out)))
		sni_q_push(fails, failed(r, rc));
}

/* Append @fails and a session event, in an order the PRNG picks. */
static void fail_and_tell(struct sn_handle *h, struct sn_queue *fails, int state)
{
	bool event_first = sim_rng_chance(h->m->net->rng, 1, 2);
	void *x;

	if (event_first)
		sni_session_event(h, state);
	while ((x = sni_q_pop(fails)))
		sni_q_push(&h->in, x);
	if (!event_first)
		sni_session_event(h, state);
}

bool sn_drop(struct sn_mount *m)
{
	struct sn_handle *h = m->cur;
	int k, j;

	if (h->state != SN_CONNECTED)
		return false;
	k = (int)sim_rng_below(m->net->rng, (uint32_t)h->wire.n + 1);
	j = (int)sim_rng_below(m->net->rng, (uint32_t)h->out.n + 1);
	return sn_drop_n(m, k, j);
}

bool sn_drop_n(struct sn_mount *m, int k, int j)
{
	struct sn_handle *h = m->cur;
	struct sn_queue fails = { 0 };

	if (h->state != SN_CONNECTED)
		return false;
	if (k > h->wire.n)
		k = h->wire.n;
	if (j > h->out.n)
		j = h->out.n;
	sn_trace(m->net, "        m%d: connection lost (%d read, %d more applied unseen)",
		 m->id, k, j);
	while (k-- > 0)
		sn_read(h);
	while (j-- > 0)
		sni_apply(h, sni_q_pop(&h->out));
	h->state = SN_DISCONNECTED;
	m->drops++;
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
	m->last_heard = m->net->now;
	h->connected_once = true;
	sni_session_event(h, ZOO_CONNECTED_STATE);
	for (int i = 0; i < h->nmissed; i++) {	/* SetWatches */
		struct sn_item *it = sni_xcalloc(1, sizeof(*it));

		it->kind = IT_WATCH;
		it->type = h->missed[i].type;
		it->path = h->missed[i].path;
		sni_q_push(&h->wire, it);
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
	struct sn_handle *h = sni_xcalloc(1, sizeof(*h));

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

	while ((r = sni_q_pop(&h->out)))
		sni_req_free(r);
	while ((it = sni_q_pop(&h->wire)))
		sni_item_free(it);
	while ((it = sni_q_pop(&h->in)))
		sni_item_free(it);
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
	m->engine_silent = false;
	m->ev.expired(m->ev.arg);
	return true;
}

bool sn_ev_connected(struct sn_mount *m)
{
	if (!m->connected_due || m->expired_due)
		return false;
	m->connected_due = false;
	sn_trace(m->net, "        m%d: engine hears: connected", m->id);
	m->engine_silent = false;
	m->ev.connected(m->ev.arg);
	return true;
}

/*
 * Silence: a whole session timeout with nothing heard.  A reconnection is
 * heard (zk/session.c refreshes last_heard_ms with it), and the supervisor
 * tells the engine within a period, so its connected event always comes
 * before a later silence.
 */
bool sn_ev_silent(struct sn_mount *m)
{
	if (m->cur->state != SN_DISCONNECTED || m->silent_done || m->expired_due ||
	    m->connected_due)
		return false;
	m->silent_done = true;
	m->silents++;
	sn_trace(m->net, "        m%d: engine hears: silent", m->id);
	m->engine_silent = true;
	m->ev.silent(m->ev.arg);
	return true;
}

/*
 * Doubt (zks_doubtful()): the supervisor says so when a ping is overdue or
 * the connection is lost, at any moment, and says it is over only on a
 * connected handle, once a ping sent since was answered.
 */
bool sn_ev_doubt(struct sn_mount *m)
{
	bool in = !m->engine_doubt;

	if (!in && (m->cur->state != SN_CONNECTED || m->expired_due))
		return false;
	m->engine_doubt = in;
	if (in)
		m->doubts++;
	sn_trace(m->net, "        m%d: engine hears: %s doubt", m->id, in ? "in" : "out of");
	m->ev.doubt(m->ev.arg, in);
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

/*
 * The supervisor's look (zk/session.c runs zks_later()'s list at each,
 * connected or not): every call queued runs, with go, in the order
 * zks_later() keeps.  Those it queues meanwhile wait for the next look.
 */
bool sn_look(struct sn_mount *m)
{
	struct sn_later *l = m->later, *next;

	if (!l)
		return false;
	m->later = NULL;
	sn_trace(m->net, "        m%d: the supervisor's look", m->id);
	for (; l; l = next) {
		next = l->next;
		l->fn(l->arg, true);
		free(l);
	}
	return true;
}

void sn_clock_jump(struct simnet *net, uint64_t dt, int suspended)
{
	net->skip += dt;
	net->now += dt;
	for (int i = 0; i < net->nmounts; i++)
		if (i != suspended && net->mounts[i].cur->state == SN_CONNECTED)
			net->mounts[i].last_heard = net->now;
}

bool sn_suspend(struct sn_mount *m, uint64_t dt)
{
	struct sn_handle *h = m->cur;

	if (h->state != SN_CONNECTED)
		return false;
	sn_trace(m->net, "        m%d: the host sleeps %llu ms", m->id, (unsigned long long)dt);
	sn_clock_jump(m->net, dt, m->id);
	sn_trace(m->net, "        server expires session 0x%llx of m%d",
		 (unsigned long long)h->sid, m->id);
	szk_session_expire(&m->net->zk, h->sid);
	return sn_drop_n(m, 0, 0);
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
	szk_init(&net->zk, rng, sni_notify, net);
	net->mounts = sni_xcalloc((size_t)n, sizeof(*net->mounts));
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
		while (m->later) {	/* fs/ is gone: nothing to tell */
			struct sn_later *l = m->later;

			m->later = l->next;
			free(l);
		}
	}
	free(net->mounts);
	szk_free(&net->zk);
}

