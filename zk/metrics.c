/* zk/metrics.c - the mount's figures (see metrics.h). */
#include "zk/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

/* Bucket bounds of the wait and hold histograms, in microseconds. */
static const uint64_t bounds_us[] = {
	1000, 5000, 10000, 50000, 100000, 500000,
	1000000, 5000000, 10000000, 60000000, 600000000,
};
#define NBOUNDS (sizeof(bounds_us) / sizeof(*bounds_us))

struct histogram {
	atomic_uint_fast64_t le[NBOUNDS];	/* counts per bucket, not cumulated */
	atomic_uint_fast64_t count, sum_us;
};

static struct {
	atomic_uint_fast64_t grants, releases, eagain, eintr;
	atomic_uint_fast64_t losses[ZKM_LOSS_N];
	atomic_uint_fast64_t local[ZKM_LOCAL_N];
	atomic_uint_fast64_t connection_losses, expiries, opened, closed, moved;
	/* time in doubt (doubt_mu): of the doubts ended, and since the sum of
	 * the beginnings of the in_doubt ones still on */
	uint64_t doubt_ended_us, doubt_began_sum_us;
	int64_t in_doubt;
	atomic_int_fast64_t waiters, holders, lingering, dir_owners;
	atomic_int state;
	struct histogram wait, hold;
} m;

/* The doubt figures are read together: a lock, not atomics (a doubt that
 * began between two loads would make the total run backwards). */
static pthread_mutex_t doubt_mu = PTHREAD_MUTEX_INITIALIZER;

#define ADD(x, n) atomic_fetch_add_explicit(&(x), (n), memory_order_relaxed)
#define GET(x) atomic_load_explicit(&(x), memory_order_relaxed)

uint64_t zkm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void observe(struct histogram *h, uint64_t us)
{
	size_t i = 0;

	while (i < NBOUNDS && us > bounds_us[i])
		i++;
	if (i < NBOUNDS)
		ADD(h->le[i], 1);
	ADD(h->count, 1);
	ADD(h->sum_us, us);
}

void zkm_enqueued(void)
{
	ADD(m.waiters, 1);
}

void zkm_granted(uint64_t waited_us)
{
	ADD(m.waiters, -1);
	ADD(m.holders, 1);
	ADD(m.grants, 1);
	observe(&m.wait, waited_us);
}

void zkm_local_grant(enum zkm_local how)
{
	if (how < ZKM_LOCAL_N)
		ADD(m.local[how], 1);
}

void zkm_dir_owners(int delta)
{
	ADD(m.dir_owners, delta);
}

void zkm_lingering(int delta)
{
	ADD(m.lingering, delta);
}

void zkm_refused(int err)
{
	ADD(m.waiters, -1);
	if (err == -EAGAIN)
		ADD(m.eagain, 1);
	else if (err == -EINTR)
		ADD(m.eintr, 1);
}

void zkm_released(uint64_t held_us)
{
	ADD(m.holders, -1);
	ADD(m.releases, 1);
	observe(&m.hold, held_us);
}

void zkm_lost(enum zkm_loss cause)
{
	ADD(m.holders, -1);
	if (cause < ZKM_LOSS_N)
		ADD(m.losses[cause], 1);
}

void zkm_connection_lost(void)
{
	ADD(m.connection_losses, 1);
}

void zkm_expired(void)
{
	ADD(m.expiries, 1);
}

uint64_t zkm_doubt_began(void)
{
	uint64_t now = zkm_now_us();

	pthread_mutex_lock(&doubt_mu);
	m.doubt_began_sum_us += now;
	m.in_doubt++;
	pthread_mutex_unlock(&doubt_mu);
	return now;
}

void zkm_doubt_ended(uint64_t began_us)
{
	pthread_mutex_lock(&doubt_mu);
	m.doubt_ended_us += zkm_now_us() - began_us;
	m.in_doubt--;
	m.doubt_began_sum_us -= began_us;
	pthread_mutex_unlock(&doubt_mu);
}

void zkm_session_opened(int delta)
{
	if (delta > 0)
		ADD(m.opened, 1);
	else
		ADD(m.closed, 1);
}

void zkm_lock_moved(void)
{
	ADD(m.moved, 1);
}

void zkm_session_state(int state)
{
	atomic_store_explicit(&m.state, state, memory_order_relaxed);
}

/* snprintf() into what is left of @buf, counting what would not fit. */
struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->buf + (o->len < o->cap ? o->len : o->cap),
		      o->len < o->cap ? o->cap - o->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP zklockfs_%s %s\n# TYPE zklockfs_%s %s\n", name, help, name, type);
}

static void histogram(struct out *o, const char *name, const char *help,
		      struct histogram *h)
{
	uint64_t cum = 0;

	family(o, name, "histogram", help);
	for (size_t i = 0; i < NBOUNDS; i++) {
		cum += GET(h->le[i]);
		put(o, "zklockfs_%s_bucket{le=\"%g\"} %llu\n", name,
		    (double)bounds_us[i] / 1e6, (unsigned long long)cum);
	}
	put(o, "zklockfs_%s_bucket{le=\"+Inf\"} %llu\n", name,
	    (unsigned long long)GET(h->count));
	put(o, "zklockfs_%s_sum %.6f\nzklockfs_%s_count %llu\n", name,
	    (double)GET(h->sum_us) / 1e6, name, (unsigned long long)GET(h->count));
}

char *zkm_status(char *buf, size_t cap)
{
	int state = atomic_load_explicit(&m.state, memory_order_relaxed);
	uint64_t lost = 0;

	for (int i = 0; i < ZKM_LOSS_N; i++)
		lost += GET(m.losses[i]);
	snprintf(buf, cap, "ZooKeeper %s; %lld held, %lld waiting; %llu lost so far",
		 state == ZOO_CONNECTED_STATE ? "connected" :
		 state == ZOO_EXPIRED_SESSION_STATE ? "session expired" : "connecting",
		 (long long)GET(m.holders), (long long)GET(m.waiters),
		 (unsigned long long)lost);
	return buf;
}

const char *zkm_loss_name(enum zkm_loss cause)
{
	static const char *const names[ZKM_LOSS_N] = { "deleted", "silent", "expired" };

	return (unsigned)cause < ZKM_LOSS_N ? names[cause] : "?";
}

size_t zkm_format(char *buf, size_t cap)
{
	const struct { const char *name; int zstate; } states[] = {	/* not constants */
		{ "connected", ZOO_CONNECTED_STATE },
		{ "connecting", ZOO_CONNECTING_STATE },
		{ "expired", ZOO_EXPIRED_SESSION_STATE },
	};
	struct out o = { buf, cap, 0 };
	int state = atomic_load_explicit(&m.state, memory_order_relaxed);

	if (cap)
		buf[0] = '\0';
	family(&o, "grants_total", "counter", "Locks granted.");
	put(&o, "zklockfs_grants_total %llu\n", (unsigned long long)GET(m.grants));
	family(&o, "releases_total", "counter", "Held locks given back.");
	put(&o, "zklockfs_releases_total %llu\n", (unsigned long long)GET(m.releases));
	family(&o, "local_grants_total", "counter",
	       "Grants made without waiting for ZooKeeper: the next holder of this "
	       "mount at a release (cohort), or on a lingering entry (linger).");
	put(&o, "zklockfs_local_grants_total{how=\"cohort\"} %llu\n",
	    (unsigned long long)GET(m.local[ZKM_LOCAL_COHORT]));
	put(&o, "zklockfs_local_grants_total{how=\"linger\"} %llu\n",
	    (unsigned long long)GET(m.local[ZKM_LOCAL_LINGER]));
	family(&o, "losses_total", "counter", "Held locks lost, by cause.");
	for (int i = 0; i < ZKM_LOSS_N; i++)
		put(&o, "zklockfs_losses_total{cause=\"%s\"} %llu\n", zkm_loss_name((enum zkm_loss)i),
		    (unsigned long long)GET(m.losses[i]));
	family(&o, "refusals_total", "counter",
	       "Waits answered EAGAIN (O_NONBLOCK) or EINTR (interrupted).");
	put(&o, "zklockfs_refusals_total{errno=\"EAGAIN\"} %llu\n",
	    (unsigned long long)GET(m.eagain));
	put(&o, "zklockfs_refusals_total{errno=\"EINTR\"} %llu\n",
	    (unsigned long long)GET(m.eintr));
	family(&o, "connection_losses_total", "counter", "ZooKeeper connections lost.");
	put(&o, "zklockfs_connection_losses_total %llu\n",
	    (unsigned long long)GET(m.connection_losses));
	family(&o, "session_expiries_total", "counter", "ZooKeeper sessions expired.");
	put(&o, "zklockfs_session_expiries_total %llu\n", (unsigned long long)GET(m.expiries));
	int64_t in_doubt;
	uint64_t doubt_us;

	pthread_mutex_lock(&doubt_mu);
	in_doubt = m.in_doubt;
	doubt_us = m.doubt_ended_us;
	if (in_doubt > 0)	/* each one on so far: now less its beginning */
		doubt_us += (uint64_t)in_doubt * zkm_now_us() - m.doubt_began_sum_us;
	pthread_mutex_unlock(&doubt_mu);
	family(&o, "doubt_seconds_total", "counter",
	       "Time the mount's sessions spent in doubt, summed over the sessions: "
	       "held locks neither known held nor lost.");
	put(&o, "zklockfs_doubt_seconds_total %.3f\n", (double)doubt_us / 1e6);
	family(&o, "sessions_in_doubt", "gauge", "ZooKeeper sessions in doubt now.");
	put(&o, "zklockfs_sessions_in_doubt %lld\n", (long long)in_doubt);
	family(&o, "sessions_opened_total", "counter",
	       "ZooKeeper sessions the mount opened, the first one included.");
	put(&o, "zklockfs_sessions_opened_total %llu\n", (unsigned long long)GET(m.opened));
	family(&o, "sessions_closed_total", "counter",
	       "Sessions the mount closed while mounted: idle, beyond the first.");
	put(&o, "zklockfs_sessions_closed_total %llu\n", (unsigned long long)GET(m.closed));
	family(&o, "lock_moves_total", "counter",
	       "Locks with nothing left on their session moved to a less busy one.");
	put(&o, "zklockfs_lock_moves_total %llu\n", (unsigned long long)GET(m.moved));
	family(&o, "sessions", "gauge", "ZooKeeper sessions open.");
	put(&o, "zklockfs_sessions %lld\n",
	    (long long)GET(m.opened) - (long long)GET(m.closed));
	family(&o, "waiters", "gauge", "Opens waiting for a lock.");
	put(&o, "zklockfs_waiters %lld\n", (long long)GET(m.waiters));
	family(&o, "holders", "gauge", "Locks held.");
	put(&o, "zklockfs_holders %lld\n", (long long)GET(m.holders));
	family(&o, "lingering", "gauge", "Entries kept after their last close (-o linger).");
	put(&o, "zklockfs_lingering %lld\n", (long long)GET(m.lingering));
	family(&o, "dir_owners", "gauge",
	       "Directories made through this mount whose maker it remembers.");
	put(&o, "zklockfs_dir_owners %lld\n", (long long)GET(m.dir_owners));
	family(&o, "session_state", "gauge", "The ZooKeeper session's state (1: this one).");
	for (size_t i = 0; i < sizeof(states) / sizeof(*states); i++)
		put(&o, "zklockfs_session_state{state=\"%s\"} %d\n", states[i].name,
		    state == states[i].zstate);
	histogram(&o, "wait_seconds", "Time from an open to its grant.", &m.wait);
	histogram(&o, "hold_seconds", "Time from a grant to its release.", &m.hold);
	return o.len;
}
