/*
 * bench/scale.c - the scale mode: N waiters on one lock, enqueued, then a
 * cascade (see bench/zkbench.h).
 */
#include "bench/zkbench.h"

/* scale: N waiters on one lock, as threads on a mount (fs) or as async
 * recipe waiters on one session (zk) */

struct swaiter {
	char path[256];
	long seq;
};

static struct scale {
	bool fs;
	bool same_name;			/* fs: every waiter opens DIR/w */
	const char *dir;		/* fs: the lock directory */
	char lock[1024];		/* the lock's znode */
	zhandle_t *zh;			/* zk: the waiters' session */
	struct swaiter *w;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool draining;			/* protected by mu */
	struct swaiter *holder;		/* zk: granted before the drain; mu */
	atomic_int granted, closed, errors, holders, violations, err_claimed;
	atomic_llong last_close;
	char err[256];
} S = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

__attribute__((format(printf, 1, 2)))
static void scale_error(const char *f, ...)
{
	va_list ap;

	atomic_fetch_add(&S.errors, 1);
	if (atomic_exchange(&S.err_claimed, 1) == 0) {
		va_start(ap, f);
		vsnprintf(S.err, sizeof(S.err), f, ap);
		va_end(ap);
	}
}

static void scale_closed(void)
{
	int64_t t = now_ns(), old = atomic_load(&S.last_close);

	while (t > old && !atomic_compare_exchange_weak(&S.last_close, &old, t))
		;
	atomic_fetch_add(&S.closed, 1);
}

/* Granted: count it; hold until the drain starts, else leave at once. */
static bool scale_granted(void)
{
	bool hold;

	atomic_fetch_add(&S.granted, 1);
	if (atomic_fetch_add(&S.holders, 1) != 0)
		atomic_fetch_add(&S.violations, 1);
	pthread_mutex_lock(&S.mu);
	hold = !S.draining;
	pthread_mutex_unlock(&S.mu);
	return hold;
}

/* fs: a waiter is a thread blocked in open(). */
static void *fs_waiter(void *arg)
{
	char path[1024];
	int fd;

	if (S.same_name)
		fmt(path, sizeof(path), "%s/w", S.dir);
	else
		fmt(path, sizeof(path), "%s/w%d", S.dir, (int)(intptr_t)arg);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		scale_error("open %s: %s", path, strerror(errno));
		scale_closed();
		return NULL;
	}
	if (scale_granted()) {
		pthread_mutex_lock(&S.mu);
		while (!S.draining)
			pthread_cond_wait(&S.cv, &S.mu);
		pthread_mutex_unlock(&S.mu);
	}
	atomic_fetch_sub(&S.holders, 1);
	if (close(fd) != 0)
		scale_error("close %s: %s", path, strerror(errno));
	scale_closed();
	return NULL;
}

/* zk: the recipe as callbacks on the completion thread. */
static void sw_check(struct swaiter *w);

static void sw_deleted(int rc, const void *data)
{
	const struct swaiter *w = data;

	if (rc != ZOK)
		scale_error("delete %s: %s", w->path, zerror(rc));
	scale_closed();
}

static void sw_release(struct swaiter *w)
{
	int rc;

	atomic_fetch_sub(&S.holders, 1);
	rc = zoo_adelete(S.zh, w->path, -1, sw_deleted, w);
	if (rc != ZOK)
		sw_deleted(rc, w);
}

static void sw_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh, (void)state, (void)path;
	if (type != ZOO_SESSION_EVENT)
		sw_check(ctx);
}

static void sw_watched(int rc, const char *value, int len, const struct Stat *st,
		       const void *data)
{
	struct swaiter *w = (struct swaiter *)data;

	(void)value, (void)len, (void)st;
	if (rc == ZNONODE)
		sw_check(w);		/* it went before we looked */
	else if (rc != ZOK)
		scale_error("watch before %s: %s", w->path, zerror(rc));
}

static void sw_children(int rc, const struct String_vector *kids, const void *data)
{
	struct swaiter *w = (struct swaiter *)data;
	char pred[256], path[1280];

	if (rc != ZOK) {
		scale_error("children of %s: %s", S.lock, zerror(rc));
		return;
	}
	if (!find_pred(kids, w->seq, pred, sizeof(pred))) {
		bool hold = scale_granted();

		pthread_mutex_lock(&S.mu);
		if (hold && !S.draining) {
			S.holder = w;
			w = NULL;
		}
		pthread_mutex_unlock(&S.mu);
		if (w)
			sw_release(w);
		return;
	}
	fmt(path, sizeof(path), "%s/%s", S.lock, pred);
	rc = zoo_awget(S.zh, path, sw_watcher, w, sw_watched, w);
	if (rc != ZOK)
		scale_error("watch %s: %s", path, zerror(rc));
}

static void sw_check(struct swaiter *w)
{
	int rc = zoo_aget_children(S.zh, S.lock, 0, sw_children, w);

	if (rc != ZOK)
		scale_error("children of %s: %s", S.lock, zerror(rc));
}

static void sw_created(int rc, const char *value, const void *data)
{
	struct swaiter *w = (struct swaiter *)data;

	if (rc != ZOK) {
		scale_error("create in %s: %s", S.lock, zerror(rc));
		scale_closed();
		return;
	}
	fmt(w->path, sizeof(w->path), "%s", value);
	w->seq = seq_of(value);
	sw_check(w);
}

/* Start the drain: wake the holder (fs) or release it (zk). */
static void scale_drain(void)
{
	struct swaiter *h;

	pthread_mutex_lock(&S.mu);
	S.draining = true;
	h = S.holder;
	S.holder = NULL;
	pthread_cond_broadcast(&S.cv);
	pthread_mutex_unlock(&S.mu);
	if (h)
		sw_release(h);
}

/* Wait until @expect() or @deadline, polling every @ms. Return: the time, or 0. */
static int64_t wait_for(bool (*expect)(long), long arg, int64_t deadline, int ms)
{
	for (;;) {
		int64_t t = now_ns();

		if (expect(arg))
			return t;
		if (t > deadline || atomic_load(&S.errors))
			return 0;
		sleep_ms(ms);
	}
}

static const char *mntr_hostport;

static bool watches_at_least(long want)
{
	struct mntr m;

	return mntr_read(mntr_hostport, &m) == 0 && m.watches >= want;
}

static bool all_closed(long n)
{
	return atomic_load(&S.closed) >= n;
}

static double secs(int64_t a, int64_t b)
{
	return a && b ? (double)(b - a) / 1e9 : -1;
}

int run_scale(const struct opts *o)
{
	struct pstat p0 = { 0 }, p1 = { 0 }, p2 = { 0 };
	int64_t t_start = 0, t_issued = 0, t_enq = 0, t_waiting = 0, t_d0 = 0, t_last = 0;
	int64_t t_empty = 0, deadline;
	long n = o->waiters, started = 0, granted_before = 0;
	struct marks_watch mw = { 0 };
	pthread_t mwt;
	struct zconn zcm, zcw;
	zhandle_t *mon = NULL;
	pthread_t *th = NULL;
	pthread_attr_t attr;
	struct mntr m0 = { 0 };
	pid_t watched = o->fs ? o->pid : 0;	/* the zk side's waiters live here */
	int rc;

	if (!o->zk || o->ndirs != 1 || n < 1 || (o->fs && !o->znode))
		usage();
	S.fs = o->fs;
	S.same_name = o->same_name;
	S.dir = o->dirs[0];
	fmt(S.lock, sizeof(S.lock), "%s", o->fs ? o->znode : o->dirs[0]);
	mntr_hostport = o->zk;
	mon = zconn_connect(o->zk, &zcm);
	if (!mon) {
		scale_error("cannot connect to %s", o->zk);
		goto out;
	}
	if (o->fs) {
		rc = mkdir_p(S.dir);
		if (rc) {
			scale_error("mkdir %s: %s", S.dir, strerror(-rc));
			goto out;
		}
	} else {
		rc = zconn_mkdir_p(mon, S.lock);
		S.zh = zconn_connect(o->zk, &zcw);
		S.w = calloc((size_t)n, sizeof(*S.w));
		if (rc != ZOK || !S.zh || !S.w) {
			scale_error("setup %s: %s", S.lock, rc != ZOK ? zerror(rc) : "no session");
			goto out;
		}
	}
	if (zconn_nkids(mon, S.lock) != 0) {
		scale_error("%s is not an empty lock", S.lock);
		goto out;
	}
	if (pstat_read(watched, &p0) != 0 || mntr_read(o->zk, &m0) != 0) {
		scale_error("cannot read /proc/%d/status or mntr", (int)watched);
		goto out;
	}
	deadline = now_ns() + (int64_t)o->timeout * NS;
	mw = (struct marks_watch){ .zh = mon, .path = S.lock, .want = n,
				   .deadline = deadline,
				   .marks = { n / 10, n / 2, n - n / 10 } };
	if (pthread_create(&mwt, NULL, marks_watch_run, &mw) != 0) {
		scale_error("cannot start the entry counter");
		goto out;
	}
	t_start = now_ns();
	if (o->fs) {
		th = calloc((size_t)n, sizeof(*th));
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, (size_t)o->stack_kib * 1024);
		for (; th && started < n; started++)
			if (pthread_create(&th[started], &attr, fs_waiter,
					   (void *)(intptr_t)started) != 0) {
				scale_error("thread %ld: cannot create", started);
				break;
			}
		pthread_attr_destroy(&attr);
	} else {
		for (; started < n; started++) {
			char prefix[1280];

			fmt(prefix, sizeof(prefix), "%s/w%ld-lock-", S.lock, started);
			rc = zoo_acreate(S.zh, prefix, "host=localhost\n", 15, &ZOO_OPEN_ACL_UNSAFE,
					 ZOO_EPHEMERAL_SEQUENTIAL, sw_created, &S.w[started]);
			if (rc != ZOK) {
				scale_error("create in %s: %s", S.lock, zerror(rc));
				break;
			}
		}
	}
	t_issued = now_ns();
	if (started < n) {
		atomic_store(&mw.stop, 1);
		pthread_join(mwt, NULL);
		goto drain;
	}
	/* every waiter's entry exists */
	pthread_join(mwt, NULL);
	t_enq = mw.done;
	if (!t_enq) {
		scale_error("only %ld of %ld entries after %d s", zconn_nkids(mon, S.lock), n,
			    o->timeout);
		goto drain;
	}
	/*
	 * zk: every waiter but the holder watches the entry before it.  fs:
	 * zklockfs keeps a waiter behind an entry of its own mount PARKED from
	 * the create's completion on, with no further request and no watch, so
	 * every waiter waits once the entries exist.
	 */
	t_waiting = o->fs ? t_enq
			 : wait_for(watches_at_least, (long)m0.watches + n - 1, deadline, 10);
	granted_before = atomic_load(&S.granted);
	pstat_read(watched, &p1);
drain:
	t_d0 = now_ns();
	scale_drain();
	if (wait_for(all_closed, started, deadline + 30 * NS, 1))
		t_last = atomic_load(&S.last_close);
	else
		scale_error("%d of %ld waiters left after the drain",
			    atomic_load(&S.closed), started);
	if (!atomic_load(&S.errors))
		t_empty = zk_wait_nkids(mon, S.lock, 0, deadline + 30 * NS, 2);
	pstat_read(watched, &p2);
	if (th && t_last)
		for (long i = 0; i < started; i++)
			pthread_join(th[i], NULL);
out:
	printf("{\"mode\":\"scale\",\"side\":\"%s\",\"waiters\":%ld,\"started\":%ld,"
	       "\"names\":\"%s\",", o->fs ? "fs" : "zk", n, started,
	       o->same_name ? "one" : "distinct");
	printf("\"issue_s\":%.4f,\"enqueue_s\":%.4f,\"waiting_s\":%.4f,\"drain_s\":%.4f,"
	       "\"drain_last_close_s\":%.4f,\"drain_rate\":%.1f,",
	       secs(t_start, t_issued), secs(t_start, t_enq), secs(t_start, t_waiting),
	       secs(t_d0, t_empty), secs(t_d0, t_last),
	       t_empty > t_d0 ? (double)n / secs(t_d0, t_empty) : 0);
	/* per enqueue, while the queue grows from 10% to 50%, and 50% to 90% */
	printf("\"enqueue_us_early\":%.1f,\"enqueue_us_late\":%.1f,",
	       mw.at[0] && mw.at[1] ? secs(mw.at[0], mw.at[1]) * 1e6 /
				      (double)(mw.marks[1] - mw.marks[0]) : -1,
	       mw.at[1] && mw.at[2] ? secs(mw.at[1], mw.at[2]) * 1e6 /
				      (double)(mw.marks[2] - mw.marks[1]) : -1);
	printf("\"granted_before_drain\":%ld,\"granted\":%d,\"violations\":%d,\"errors\":%d,",
	       granted_before, atomic_load(&S.granted), atomic_load(&S.violations),
	       atomic_load(&S.errors));
	printf("\"watched_pid\":%d,", (int)(watched ? watched : getpid()));
	pstat_json("proc_before", &p0);
	putchar(',');
	pstat_json("proc_queued", &p1);
	putchar(',');
	pstat_json("proc_after", &p2);
	printf(",\"error\":");
	json_str(S.err);
	printf("}\n");
	fflush(stdout);
	if (S.zh)
		zookeeper_close(S.zh);
	if (mon)
		zookeeper_close(mon);
	/* threads still blocked in open() (a failed run) die with us */
	return atomic_load(&S.errors) || atomic_load(&S.violations) ? 1 : 0;
}
