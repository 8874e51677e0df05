/*
 * bench/zkconn.c - ZooKeeper sessions for the baseline and the checks:
 * connect, mkdir -p, counting children, one-shot gates (see
 * bench/zkbench.h).
 */
#include "bench/zkbench.h"

/* ZooKeeper sessions */

void zconn_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zconn *c = ctx;

	(void)zh, (void)path;
	if (type != ZOO_SESSION_EVENT)
		return;
	pthread_mutex_lock(&c->mu);
	if (state == ZOO_CONNECTED_STATE)
		c->state = 1;
	else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
		c->state = -1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* zconn_connect() - a session on @hostport, connected. Return: NULL on failure. */
zhandle_t *zconn_connect(const char *hostport, struct zconn *c)
{
	struct timespec dl;
	zhandle_t *zh;

	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->state = 0;
	zh = zookeeper_init(hostport, zconn_watcher, SESSION_MS, NULL, c, 0);
	if (!zh)
		return NULL;
	/* The baseline keeps the client's defaults, as the textbook recipe
	 * does: ZKBENCH_RESOLVE_DELAY=-1 measures it with the resolution
	 * setting zklockfs uses (see zk/session.c). */
	if (getenv("ZKBENCH_RESOLVE_DELAY"))
		zoo_set_servers_resolution_delay(zh, atoi(getenv("ZKBENCH_RESOLVE_DELAY")));
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 15;
	pthread_mutex_lock(&c->mu);
	while (c->state == 0)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&c->mu);
	if (c->state != 1) {
		zookeeper_close(zh);
		return NULL;
	}
	return zh;
}

/* Create @path and its missing parents (persistent). Return: a ZooKeeper rc. */
int zconn_mkdir_p(zhandle_t *zh, const char *path)
{
	char buf[1024];
	int rc = ZOK;

	fmt(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		rc = zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
		if (rc == ZNODEEXISTS)
			rc = ZOK;
		*p = c;
		if (rc != ZOK || c == '\0')
			return rc;
	}
}

/* numChildren of @path, or -1. */
long zconn_nkids(zhandle_t *zh, const char *path)
{
	struct Stat st;

	return zoo_exists(zh, path, 0, &st) == ZOK ? st.numChildren : -1;
}

/* Wait until @path has @want children. Return: the time it did, or 0. */
int64_t zk_wait_nkids(zhandle_t *zh, const char *path, long want, int64_t deadline,
			     int every_ms)
{
	for (;;) {
		long n = zconn_nkids(zh, path);
		int64_t t = now_ns();

		if (n == want)
			return t;
		if (t > deadline)
			return 0;
		sleep_ms(every_ms);
	}
}

/*
 * zk_wait_nkids() that also notes when @path first had at least marks[i]
 * children, in at[i] (0 if never): how the cost of an enqueue changes as
 * the queue grows.  Gives up (0) once *@stop is set.
 */
int64_t zk_wait_nkids_marks(zhandle_t *zh, const char *path, long want,
				   int64_t deadline, const long *marks, int64_t *at,
				   int nmarks, atomic_int *stop)
{
	while (!atomic_load(stop)) {
		long n = zconn_nkids(zh, path);
		int64_t t = now_ns();

		for (int i = 0; i < nmarks; i++)
			if (!at[i] && n >= marks[i])
				at[i] = t;
		if (n == want)
			return t;
		if (t > deadline)
			return 0;
		sleep_ms(1);
	}
	return 0;
}

void *marks_watch_run(void *arg)
{
	struct marks_watch *mw = arg;

	mw->done = zk_wait_nkids_marks(mw->zh, mw->path, mw->want, mw->deadline,
				       mw->marks, mw->at, 3, &mw->stop);
	return NULL;
}

void gate_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct gate *g = ctx;

	(void)zh, (void)state, (void)path;
	if (type == ZOO_SESSION_EVENT)
		return;			/* not about our node */
	pthread_mutex_lock(&g->mu);
	g->fired = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->fired = 0;
}

/* Wait for @g to open, at most @secs. Return: true if it did. */
bool gate_wait(struct gate *g, int secs)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	pthread_mutex_lock(&g->mu);
	while (!g->fired)
		if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&g->mu);
	return g->fired;
}
