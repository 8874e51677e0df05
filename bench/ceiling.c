/*
 * bench/ceiling.c - the ceiling mode: the server's own limit for a lock, D
 * create+delete pairs in flight per session (see bench/zkbench.h).
 */
#include "bench/zkbench.h"

/* ceiling: the server's own limit for a lock.  A grant costs one write
 * (the entry's create) and a release one (its delete); everything else a
 * recipe does is reads and watches.  So D create+delete pairs kept in
 * flight per session, with nothing waiting on anything, measure the most
 * grant+release pairs per second a lock on this server could reach. */

struct csess;

struct cslot {
	struct csess *s;
	char path[512];			/* the entry just created */
};

struct csess {
	zhandle_t *zh;
	struct zconn zc;
	struct cslot *slot;		/* depth of them */
	atomic_long pairs;
};

static struct ceil {
	char prefix[1024];		/* LOCK/x- */
	char data[64];			/* a holder line, as a recipe would write */
	long warmup;			/* pairs not counted */
	atomic_long pairs;		/* completed create+delete pairs, all sessions */
	atomic_int inflight;		/* slots with a request outstanding */
	atomic_int stop, errors, err_claimed;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* warm-up over, an error, the last slot idle */
	char err[256];
} CL = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Wake run_ceiling(); the mutex orders this after the change it waits for. */
static void ceil_wake(void)
{
	pthread_mutex_lock(&CL.mu);
	pthread_cond_broadcast(&CL.cv);
	pthread_mutex_unlock(&CL.mu);
}

__attribute__((format(printf, 1, 2)))
static void ceil_error(const char *f, ...)
{
	va_list ap;

	atomic_fetch_add(&CL.errors, 1);
	if (atomic_exchange(&CL.err_claimed, 1) == 0) {
		va_start(ap, f);
		vsnprintf(CL.err, sizeof(CL.err), f, ap);
		va_end(ap);
	}
	atomic_store(&CL.stop, 1);
	ceil_wake();
}

/* A slot goes idle for good: the last one wakes the drain. */
static void ceil_slot_done(void)
{
	if (atomic_fetch_sub(&CL.inflight, 1) == 1)
		ceil_wake();
}

static void ceil_created(int rc, const char *value, const void *data);

static void ceil_create(struct cslot *sl)
{
	int rc = zoo_acreate(sl->s->zh, CL.prefix, CL.data, (int)strlen(CL.data),
			     &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, ceil_created, sl);

	if (rc != ZOK) {
		ceil_error("create in %s: %s", CL.prefix, zerror(rc));
		ceil_slot_done();
	}
}

static void ceil_deleted(int rc, const void *data)
{
	struct cslot *sl = (struct cslot *)data;

	if (rc != ZOK) {
		ceil_error("delete %s: %s", sl->path, zerror(rc));
		ceil_slot_done();
		return;
	}
	atomic_fetch_add(&sl->s->pairs, 1);
	if (atomic_fetch_add(&CL.pairs, 1) + 1 == CL.warmup)
		ceil_wake();
	if (atomic_load(&CL.stop))
		ceil_slot_done();
	else
		ceil_create(sl);
}

static void ceil_created(int rc, const char *value, const void *data)
{
	struct cslot *sl = (struct cslot *)data;

	if (rc != ZOK) {
		/* an entry whose create was lost goes with the session */
		ceil_error("create in %s: %s", CL.prefix, zerror(rc));
		ceil_slot_done();
		return;
	}
	/* even when stopping: nothing may be left behind */
	fmt(sl->path, sizeof(sl->path), "%s", value);
	rc = zoo_adelete(sl->s->zh, sl->path, -1, ceil_deleted, sl);
	if (rc != ZOK) {
		ceil_error("delete %s: %s", sl->path, zerror(rc));
		ceil_slot_done();
	}
}

/*
 * ceil_wait() - wait on CL.cv until @done() or @deadline (CLOCK_MONOTONIC).
 * Return: false if the deadline came first.
 */
static bool ceil_wait(bool (*done)(void), int64_t deadline)
{
	struct timespec ts = { deadline / NS, deadline % NS };
	bool ok;

	pthread_mutex_lock(&CL.mu);
	while (!(ok = done()))
		if (pthread_cond_timedwait(&CL.cv, &CL.mu, &ts) == ETIMEDOUT) {
			ok = done();
			break;
		}
	pthread_mutex_unlock(&CL.mu);
	return ok;
}

static bool ceil_warm(void)
{
	return atomic_load(&CL.stop) || atomic_load(&CL.pairs) >= CL.warmup;
}

static bool ceil_stopped(void)
{
	return atomic_load(&CL.stop);
}

static bool ceil_idle(void)
{
	return atomic_load(&CL.inflight) == 0;
}

int run_ceiling(const struct opts *o)
{
	int64_t t0 = 0, t1 = 0, deadline;
	long c0 = 0, c1 = 0, *s0 = NULL;
	struct csess *s = NULL;
	pthread_condattr_t ca;
	bool timed_out = false;
	double window;
	int n = 0, rc;

	if (!o->zk || o->ndirs != 1)
		usage();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&CL.cv, &ca);
	pthread_condattr_destroy(&ca);
	CL.warmup = o->warmup;
	fmt(CL.prefix, sizeof(CL.prefix), "%s/x-", o->dirs[0]);
	fmt(CL.data, sizeof(CL.data), "host=localhost\npid=%d\n", (int)getpid());
	s = calloc((size_t)o->sessions, sizeof(*s));
	s0 = calloc((size_t)o->sessions, sizeof(*s0));
	if (!s || !s0) {
		ceil_error("out of memory");
		goto out;
	}
	for (; n < o->sessions; n++) {
		s[n].slot = calloc((size_t)o->depth, sizeof(*s[n].slot));
		s[n].zh = zconn_connect(o->zk, &s[n].zc);
		/* the server's limit, not the client's: no name resolution
		 * at every poll (it halved this figure) */
		if (s[n].zh)
			zoo_set_servers_resolution_delay(s[n].zh, -1);
		if (!s[n].zh || !s[n].slot) {
			if (s[n].zh)
				zookeeper_close(s[n].zh);
			free(s[n].slot);
			ceil_error("session %d: cannot connect to %s", n, o->zk);
			goto out;
		}
	}
	rc = zconn_mkdir_p(s[0].zh, o->dirs[0]);
	if (rc != ZOK) {
		ceil_error("create %s: %s", o->dirs[0], zerror(rc));
		goto out;
	}
	deadline = now_ns() + (int64_t)o->timeout * NS;
	for (int i = 0; i < n && !atomic_load(&CL.stop); i++)
		for (int d = 0; d < o->depth; d++) {
			s[i].slot[d].s = &s[i];
			atomic_fetch_add(&CL.inflight, 1);
			ceil_create(&s[i].slot[d]);
		}
	if (!ceil_wait(ceil_warm, deadline)) {
		ceil_error("the warm-up (%ld pairs) did not finish in %d s", CL.warmup, o->timeout);
		timed_out = true;
	}
	if (atomic_load(&CL.stop))
		goto drain;
	t0 = now_ns();
	c0 = atomic_load(&CL.pairs);
	for (int i = 0; i < n; i++)
		s0[i] = atomic_load(&s[i].pairs);
	/* the measured window: only an error ends it early */
	ceil_wait(ceil_stopped, t0 + (int64_t)(o->seconds * 1e9));
	t1 = now_ns();
	c1 = atomic_load(&CL.pairs);
	for (int i = 0; i < n; i++)
		s0[i] = atomic_load(&s[i].pairs) - s0[i];
drain:
	atomic_store(&CL.stop, 1);
	/* every slot finishes its pair; no completion may come after close */
	if (!ceil_wait(ceil_idle, now_ns() + 30 * NS)) {
		ceil_error("%d slots still busy 30 s after the stop",
			   atomic_load(&CL.inflight));
		timed_out = true;
	}
out:
	window = t1 > t0 && t0 ? (double)(t1 - t0) / 1e9 : 0;
	printf("{\"mode\":\"ceiling\",\"sessions\":%d,\"depth\":%d,\"warmup\":%ld,"
	       "\"seconds_limit\":%.3f,", o->sessions, o->depth, CL.warmup, o->seconds);
	printf("\"pairs_total\":%ld,\"measured\":%ld,\"window_s\":%.4f,\"rate\":%.2f,"
	       "\"pairs_per_s\":%.2f,\"writes_per_s\":%.2f,\"pair_mean_us\":%.1f,",
	       atomic_load(&CL.pairs), c1 - c0, window,
	       window > 0 ? (double)(c1 - c0) / window : 0,
	       window > 0 ? (double)(c1 - c0) / window : 0,
	       window > 0 ? 2.0 * (double)(c1 - c0) / window : 0,
	       /* Little's law: D*N pairs in flight all along */
	       c1 > c0 ? window * 1e6 * o->depth * o->sessions / (double)(c1 - c0) : -1);
	printf("\"per_session\":[");
	for (int i = 0; i < o->sessions; i++)
		printf("%s%ld", i ? "," : "", s0 ? s0[i] : 0);
	printf("],\"errors\":%d,\"timed_out\":%s,\"error\":", atomic_load(&CL.errors),
	       timed_out ? "true" : "false");
	json_str(CL.err);
	printf("}\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		zookeeper_close(s[i].zh);	/* their entries, if any, go with them */
		free(s[i].slot);
	}
	free(s);
	free(s0);
	return atomic_load(&CL.errors) || timed_out ? 1 : 0;
}
