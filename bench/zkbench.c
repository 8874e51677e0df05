/*
 * bench/zkbench.c - the measuring half of `make bench`; bench/run drives it
 * and prints the table.  Every mode prints one JSON object on stdout.
 *
 *   zkbench cycles --side zk|fs ...   P processes loop acquire/release on
 *                                     K locks (P = K: many locks; K = 1:
 *                                     contended; P = K = 1: uncontended)
 *   zkbench scale --side zk|fs ...    N waiters on one lock: enqueue, then
 *                                     a cascade (each leaves once granted)
 *   zkbench ceiling --zk H:P --lock ZNODE [--sessions N] [--depth D]
 *                                     the server's own limit: D async
 *                                     create+delete pairs in flight per
 *                                     session, no recipe, no waiting
 *   zkbench watchcheck --zk H:P --lock ZNODE
 *                                     checks mntr's watch counters against
 *                                     a case whose count we know
 *   zkbench mntr --zk H:P             mntr's watch counters
 *
 * The baseline (--side zk) is the textbook recipe written directly against
 * the ZooKeeper C client: create an ephemeral-sequential entry, list the
 * lock's children, watch (getData with a watch) only the entry just before
 * ours, list again when it goes; release = delete.  --side fs is
 * open(DIR/NAME, O_CREAT|O_WRONLY) and close() on zklockfs mounts.
 *
 * Timing: CLOCK_MONOTONIC, in nanoseconds.  A cycle is req (acquire
 * called) -> enter (granted) -> exit (about to release) -> done (release
 * returned).  Mutual exclusion is checked twice: a shared holder count per
 * lock (a grant while it is not 0 is a violation) and, afterwards, the
 * [enter, exit] intervals of each lock sorted by enter (an overlap is an
 * interval starting before an earlier one ended).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#define MAX_LOCKS	256
#define MAX_DIRS	8
#define SESSION_MS	10000
#define NS		1000000000LL

/* ------------------------------------------------------------------ */
/* small helpers */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/*
 * fmt() - snprintf into @buf. Return: true if it all fitted.  Error
 * messages may be cut short; paths are checked where they are made.
 */
__attribute__((format(printf, 3, 4)))
static bool fmt(char *buf, size_t size, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, size, f, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort @v and return its @pct percentile in microseconds (-1 if empty). */
static double pct_us(int64_t *v, size_t n, int pct)
{
	if (n == 0)
		return -1;
	qsort(v, n, sizeof(*v), cmp_i64);
	return (double)v[(n * (size_t)pct) / 100 < n ? (n * (size_t)pct) / 100 : n - 1] / 1e3;
}

/* Print @s as a JSON string. */
static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* mkdir -p @path (absolute). Return: 0 or -errno. */
static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];

	if (!fmt(buf, sizeof(buf), "%s", path))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (c == '\0')
			return 0;
	}
}

/* The sequence number ending an entry's name (-1 if there is none). */
static long seq_of(const char *name)
{
	size_t n = strlen(name);

	if (n < 10)
		return -1;
	for (size_t i = n - 10; i < n; i++)
		if (name[i] < '0' || name[i] > '9')
			return -1;
	return strtol(name + n - 10, NULL, 10);
}

/*
 * The entry just before @mine among @kids (the greatest sequence below
 * ours), copied into @pred.  Return: true if there is one (we must wait).
 */
static bool find_pred(const struct String_vector *kids, long mine, char *pred,
		      size_t size)
{
	long best = -1;
	int bi = -1;

	for (int i = 0; i < kids->count; i++) {
		long s = seq_of(kids->data[i]);

		if (s >= 0 && s < mine && s > best) {
			best = s;
			bi = i;
		}
	}
	if (bi < 0)
		return false;
	fmt(pred, size, "%s", kids->data[bi]);
	return true;
}

/* ------------------------------------------------------------------ */
/* /proc/PID/status */

struct pstat {
	long rss_kib, hwm_kib, threads;
};

static int pstat_read(pid_t pid, struct pstat *ps)
{
	char path[64], line[256];
	FILE *f;

	memset(ps, 0, sizeof(*ps));
	if (pid > 0)
		fmt(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		fmt(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", &ps->rss_kib);
		sscanf(line, "VmHWM: %ld", &ps->hwm_kib);
		sscanf(line, "Threads: %ld", &ps->threads);
	}
	fclose(f);
	return 0;
}

static void pstat_json(const char *key, const struct pstat *ps)
{
	printf("\"%s\":{\"rss_kib\":%ld,\"hwm_kib\":%ld,\"threads\":%ld}", key,
	       ps->rss_kib, ps->hwm_kib, ps->threads);
}

/* ------------------------------------------------------------------ */
/* mntr: the server's watch counters (4lw, whitelisted by bench/zoo.cfg) */

struct mntr {
	long long watches;		/* zk_watch_count: armed now */
	long long del_sum, del_cnt;	/* zk_{sum,cnt}_node_deleted_watch_count */
	long long chi_sum, chg_sum, cre_sum;
};

static const struct {
	const char *key;
	size_t off;
} mntr_keys[] = {
	{ "zk_watch_count", offsetof(struct mntr, watches) },
	{ "zk_sum_node_deleted_watch_count", offsetof(struct mntr, del_sum) },
	{ "zk_cnt_node_deleted_watch_count", offsetof(struct mntr, del_cnt) },
	{ "zk_sum_node_children_watch_count", offsetof(struct mntr, chi_sum) },
	{ "zk_sum_node_changed_watch_count", offsetof(struct mntr, chg_sum) },
	{ "zk_sum_node_created_watch_count", offsetof(struct mntr, cre_sum) },
};

/* mntr_read() - ask the server at @hostport. Return: 0 or -errno. */
static int mntr_read(const char *hostport, struct mntr *m)
{
	char host[256], buf[65536], *port, *line, *save;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct timeval tv = { 5, 0 };
	size_t got = 0;
	ssize_t n;
	int fd, found = 0;

	fmt(host, sizeof(host), "%s", hostport);
	port = strrchr(host, ':');
	if (!port)
		return -EINVAL;
	*port++ = '\0';
	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return err;
	}
	freeaddrinfo(ai);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, "mntr", 4) != 4) {
		close(fd);
		return -EIO;
	}
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	memset(m, 0, sizeof(*m));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (!tab)
			continue;
		*tab = '\0';
		for (size_t i = 0; i < sizeof(mntr_keys) / sizeof(mntr_keys[0]); i++) {
			if (strcmp(line, mntr_keys[i].key) == 0) {
				*(long long *)((char *)m + mntr_keys[i].off) = atoll(tab + 1);
				found++;
			}
		}
	}
	return found == (int)(sizeof(mntr_keys) / sizeof(mntr_keys[0])) ? 0 : -EPROTO;
}

static void mntr_delta_json(const char *key, const struct mntr *a, const struct mntr *b)
{
	printf("\"%s\":{\"node_deleted\":%lld,\"node_deleted_events\":%lld,"
	       "\"node_children\":%lld,\"node_changed\":%lld,\"node_created\":%lld,"
	       "\"watches_before\":%lld,\"watches_after\":%lld}", key,
	       b->del_sum - a->del_sum, b->del_cnt - a->del_cnt, b->chi_sum - a->chi_sum,
	       b->chg_sum - a->chg_sum, b->cre_sum - a->cre_sum, a->watches, b->watches);
}

static long long mntr_fired(const struct mntr *a, const struct mntr *b)
{
	return (b->del_sum - a->del_sum) + (b->chi_sum - a->chi_sum) +
	       (b->chg_sum - a->chg_sum) + (b->cre_sum - a->cre_sum);
}

/* ------------------------------------------------------------------ */
/* ZooKeeper sessions */

struct zconn {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;			/* 0, 1 connected, -1 expired/auth failed */
};

static void zconn_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
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

/* zk_connect() - a session on @hostport, connected. Return: NULL on failure. */
static zhandle_t *zk_connect(const char *hostport, struct zconn *c)
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
static int zk_mkdir_p(zhandle_t *zh, const char *path)
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
static long zk_nkids(zhandle_t *zh, const char *path)
{
	struct Stat st;

	return zoo_exists(zh, path, 0, &st) == ZOK ? st.numChildren : -1;
}

/* Wait until @path has @want children. Return: the time it did, or 0. */
static int64_t zk_wait_nkids(zhandle_t *zh, const char *path, long want, int64_t deadline,
			     int every_ms)
{
	for (;;) {
		long n = zk_nkids(zh, path);
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
static int64_t zk_wait_nkids_marks(zhandle_t *zh, const char *path, long want,
				   int64_t deadline, const long *marks, int64_t *at,
				   int nmarks, atomic_int *stop)
{
	while (!atomic_load(stop)) {
		long n = zk_nkids(zh, path);
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

/* zk_wait_nkids_marks() on a thread of its own, started before the
 * waiters are issued, so the first marks are not all seen at once. */
struct marks_watch {
	zhandle_t *zh;
	const char *path;
	long want;
	int64_t deadline;
	long marks[3];
	int64_t at[3];
	int64_t done;
	atomic_int stop;		/* the waiters could not all be issued */
};

static void *marks_watch_run(void *arg)
{
	struct marks_watch *mw = arg;

	mw->done = zk_wait_nkids_marks(mw->zh, mw->path, mw->want, mw->deadline,
				       mw->marks, mw->at, 3, &mw->stop);
	return NULL;
}

/* One-shot gate a watcher opens. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fired;
};

static void gate_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
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

static void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->fired = 0;
}

/* Wait for @g to open, at most @secs. Return: true if it did. */
static bool gate_wait(struct gate *g, int secs)
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

/* ------------------------------------------------------------------ */
/* the baseline recipe, synchronous: one waiter per session/process */

struct recipe {
	zhandle_t *zh;
	const char *lock;		/* the lock's znode */
	char prefix[512];		/* LOCK/NAME-lock- */
	char data[128];			/* holder line, as a recipe would write */
	char mine[512];			/* our entry, once created */
	char err[200];
};

/* recipe_acquire() - wait for the lock. Return: 0, or -1 with r->err set. */
static int recipe_acquire(struct recipe *r)
{
	char pred[256], path[1024], buf[256];
	struct String_vector kids;
	struct Stat st;
	struct gate g;
	long mine;
	int rc, blen;

	rc = zoo_create(r->zh, r->prefix, r->data, (int)strlen(r->data), &ZOO_OPEN_ACL_UNSAFE,
			ZOO_EPHEMERAL_SEQUENTIAL, r->mine, sizeof(r->mine));
	if (rc != ZOK) {
		fmt(r->err, sizeof(r->err), "create %s: %s", r->prefix, zerror(rc));
		return -1;
	}
	mine = seq_of(r->mine);
	for (;;) {
		bool wait;

		rc = zoo_get_children(r->zh, r->lock, 0, &kids);
		if (rc != ZOK) {
			fmt(r->err, sizeof(r->err), "children %s: %s", r->lock, zerror(rc));
			return -1;
		}
		wait = find_pred(&kids, mine, pred, sizeof(pred));
		deallocate_String_vector(&kids);
		if (!wait)
			return 0;
		fmt(path, sizeof(path), "%s/%s", r->lock, pred);
		gate_init(&g);
		/* getData, not exists: a missing node must leave no watch behind */
		blen = sizeof(buf);
		rc = zoo_wget(r->zh, path, gate_watcher, &g, buf, &blen, &st);
		if (rc == ZNONODE)
			continue;	/* it went before we looked */
		if (rc != ZOK) {
			fmt(r->err, sizeof(r->err), "watch %s: %s", path, zerror(rc));
			return -1;
		}
		if (!gate_wait(&g, 600)) {
			fmt(r->err, sizeof(r->err), "no watch event for %s in 600 s", path);
			return -1;
		}
	}
}

static int recipe_release(struct recipe *r)
{
	int rc = zoo_delete(r->zh, r->mine, -1);

	if (rc != ZOK) {
		fmt(r->err, sizeof(r->err), "delete %s: %s", r->mine, zerror(rc));
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* options */

struct opts {
	const char *mode;
	bool fs;			/* --side fs (else zk, the baseline) */
	bool lf;			/* --side lf: fs, on a lock file (-o
					   lockfiles): open once, flock/LOCK_UN */
	const char *zk;			/* HOST:PORT */
	char *dirs[MAX_DIRS];		/* --lock: znode (zk) or directories (fs) */
	int ndirs;
	const char *znode;		/* fs: the znode the lock dir stands for */
	int procs, locks, waiters;
	double seconds;
	long cycles, warmup;
	int timeout;			/* hard limit, seconds */
	bool mntr;
	pid_t pid;			/* the daemon to watch */
	int stack_kib;
	bool same_name;
	int sessions, depth;		/* ceiling */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: zkbench cycles --side zk|fs|lf --lock L[,L...] [--zk H:P] [--znode Z]\n"
		"           [--procs P] [--locks K] [--seconds S] [--cycles C] [--warmup W]\n"
		"           [--timeout T] [--mntr]\n"
		"       zkbench scale --side zk|fs --zk H:P --lock L [--znode Z] --waiters N\n"
		"           [--pid DAEMON] [--stack KIB] [--same-name] [--timeout T]\n"
		"       zkbench ceiling --zk H:P --lock ZNODE [--sessions N] [--depth D]\n"
		"           [--seconds S] [--warmup PAIRS] [--timeout T]\n"
		"       zkbench watchcheck --zk H:P --lock ZNODE\n"
		"       zkbench mntr --zk H:P\n"
		"zk: --lock is a znode; fs: --lock is one directory per mount, same lock\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "side", required_argument, NULL, 's' },
		{ "zk", required_argument, NULL, 'z' },
		{ "lock", required_argument, NULL, 'l' },
		{ "znode", required_argument, NULL, 'n' },
		{ "procs", required_argument, NULL, 'p' },
		{ "locks", required_argument, NULL, 'k' },
		{ "waiters", required_argument, NULL, 'w' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "timeout", required_argument, NULL, 't' },
		{ "mntr", no_argument, NULL, 'm' },
		{ "pid", required_argument, NULL, 'P' },
		{ "stack", required_argument, NULL, 'K' },
		{ "same-name", no_argument, NULL, 'N' },
		{ "sessions", required_argument, NULL, 'E' },
		{ "depth", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	char *save, *d;
	int c;

	memset(o, 0, sizeof(*o));
	o->procs = o->locks = 1;
	o->seconds = 5;
	o->cycles = 1000000;
	o->warmup = -1;
	o->timeout = 120;
	o->stack_kib = 64;
	o->sessions = 1;
	o->depth = 64;
	if (argc < 2)
		usage();
	o->mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (strcmp(optarg, "fs") != 0 && strcmp(optarg, "zk") != 0 &&
			    strcmp(optarg, "lf") != 0)
				usage();
			o->lf = strcmp(optarg, "lf") == 0;
			o->fs = o->lf || strcmp(optarg, "fs") == 0;
			break;
		case 'z': o->zk = optarg; break;
		case 'l':
			for (d = strtok_r(optarg, ",", &save); d && o->ndirs < MAX_DIRS;
			     d = strtok_r(NULL, ",", &save))
				o->dirs[o->ndirs++] = d;
			break;
		case 'n': o->znode = optarg; break;
		case 'p': o->procs = atoi(optarg); break;
		case 'k': o->locks = atoi(optarg); break;
		case 'w': o->waiters = atoi(optarg); break;
		case 'S': o->seconds = atof(optarg); break;
		case 'c': o->cycles = atol(optarg); break;
		case 'W': o->warmup = atol(optarg); break;
		case 't': o->timeout = atoi(optarg); break;
		case 'm': o->mntr = true; break;
		case 'P': o->pid = (pid_t)atoi(optarg); break;
		case 'K': o->stack_kib = atoi(optarg); break;
		case 'N': o->same_name = true; break;
		case 'E': o->sessions = atoi(optarg); break;
		case 'D': o->depth = atoi(optarg); break;
		default: usage();
		}
	}
	if (o->procs < 1 || o->locks < 1 || o->locks > MAX_LOCKS || o->cycles < 1 ||
	    o->sessions < 1 || o->sessions > 64 || o->depth < 1 || o->depth > 4096)
		usage();
	/* ceiling: two rounds of every slot go uncounted (the pipeline fills in one) */
	if (o->warmup < 0 && strcmp(o->mode, "ceiling") == 0)
		o->warmup = 2L * o->depth * o->sessions;
	else if (o->warmup < 0)
		o->warmup = o->procs * 2 > 10 ? o->procs * 2 : 10;
}

/* ------------------------------------------------------------------ */
/* cycles: P processes, each looping acquire/release on lock (id % K) */

struct rec {
	int64_t req, enter, exit, done;
	int lock;
};

/* Shared by the parent and its children (MAP_SHARED|MAP_ANONYMOUS). */
struct shared {
	atomic_int stop;
	atomic_long nrec;		/* records claimed, one per grant */
	atomic_long ncycles;		/* cycles completed */
	atomic_llong t0, t1;		/* the measured window (0: not yet) */
	atomic_int errors;
	atomic_int violations;		/* grants while the lock's count was not 0 */
	atomic_int err_claimed;
	char err[256];			/* the first error */
	long cap;			/* of rec[] */
	atomic_int holders[MAX_LOCKS];
	struct rec rec[];
};

__attribute__((format(printf, 2, 3)))
static void shared_error(struct shared *sh, const char *f, ...)
{
	va_list ap;

	atomic_fetch_add(&sh->errors, 1);
	if (atomic_exchange(&sh->err_claimed, 1) == 0) {
		va_start(ap, f);
		vsnprintf(sh->err, sizeof(sh->err), f, ap);
		va_end(ap);
	}
	atomic_store(&sh->stop, 1);
}

/* The lock @j as a znode (zk) or directory on mount @m (fs). */
static void lock_path(const struct opts *o, int m, int j, char *buf, size_t size)
{
	fmt(buf, size, "%s/l%d", o->dirs[m % o->ndirs], j);
}

/* One cycle's two halves, for either side. */
struct locker {
	bool fs;
	bool lf;			/* a lock file: @fd stays open */
	char path[1024];		/* fs: DIR/NAME to open; lf: the lock file */
	int fd;
	struct recipe r;		/* zk */
	struct zconn zc;
};

static int locker_acquire(struct locker *lk, char *err, size_t size)
{
	if (!lk->fs) {
		if (recipe_acquire(&lk->r) == 0)
			return 0;
		fmt(err, size, "%s", lk->r.err);
		return -1;
	}
	if (lk->lf) {
		if (lk->fd < 0)
			lk->fd = open(lk->path, O_CREAT | O_RDWR | O_CLOEXEC, 0666);
		if (lk->fd >= 0 && flock(lk->fd, LOCK_EX) == 0)
			return 0;
		fmt(err, size, "flock %s: %s", lk->path, strerror(errno));
		return -1;
	}
	lk->fd = open(lk->path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (lk->fd >= 0)
		return 0;
	fmt(err, size, "open %s: %s", lk->path, strerror(errno));
	return -1;
}

static int locker_release(struct locker *lk, char *err, size_t size)
{
	if (!lk->fs) {
		if (recipe_release(&lk->r) == 0)
			return 0;
		fmt(err, size, "%s", lk->r.err);
		return -1;
	}
	if (lk->lf ? flock(lk->fd, LOCK_UN) == 0 : close(lk->fd) == 0)
		return 0;
	fmt(err, size, "%s %s: %s", lk->lf ? "LOCK_UN" : "close", lk->path, strerror(errno));
	return -1;
}

/* A child: connect, say ready, wait for go, loop until told to stop. */
static void cycle_child(const struct opts *o, struct shared *sh, int id, int ready_fd,
			int go_fd)
{
	int j = id % o->locks;
	struct locker lk = { .fs = o->fs, .lf = o->lf, .fd = -1 };
	char lock[1024], err[256], byte = 'r';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	lock_path(o, id, j, lock, sizeof(lock));
	if (o->lf) {			/* every process opens the one lock file */
		fmt(lk.path, sizeof(lk.path), "%s/f", lock);
	} else if (o->fs) {
		fmt(lk.path, sizeof(lk.path), "%s/c%d", lock, id);
	} else {
		lk.r.zh = zk_connect(o->zk, &lk.zc);
		lk.r.lock = lock;
		fmt(lk.r.prefix, sizeof(lk.r.prefix), "%s/c%d-lock-", lock, id);
		fmt(lk.r.data, sizeof(lk.r.data), "host=localhost\npid=%d\n", (int)getpid());
		if (!lk.r.zh) {
			shared_error(sh, "child %d: cannot connect to %s", id, o->zk);
			byte = 'x';
		}
	}
	if (write(ready_fd, &byte, 1) != 1 || byte == 'x')
		_exit(1);
	close(ready_fd);
	if (read(go_fd, &byte, 1) < 0)	/* EOF when the parent says go */
		_exit(1);
	while (!atomic_load(&sh->stop)) {
		struct rec r = { .lock = j };
		long i, n;

		r.req = now_ns();
		if (locker_acquire(&lk, err, sizeof(err)) != 0) {
			shared_error(sh, "child %d: %s", id, err);
			break;
		}
		r.enter = now_ns();
		if (atomic_fetch_add(&sh->holders[j], 1) != 0)
			atomic_fetch_add(&sh->violations, 1);
		i = atomic_fetch_add(&sh->nrec, 1);
		atomic_fetch_sub(&sh->holders[j], 1);
		r.exit = now_ns();
		if (locker_release(&lk, err, sizeof(err)) != 0) {
			shared_error(sh, "child %d: %s", id, err);
			break;
		}
		r.done = now_ns();
		if (i < sh->cap)
			sh->rec[i] = r;
		else
			atomic_store(&sh->stop, 1);
		n = atomic_fetch_add(&sh->ncycles, 1) + 1;
		if (n == o->warmup) {
			int64_t z = 0;

			atomic_compare_exchange_strong(&sh->t0, &z, r.done);
		}
		if (n == o->warmup + o->cycles) {
			int64_t z = 0;

			atomic_compare_exchange_strong(&sh->t1, &z, r.done);
			atomic_store(&sh->stop, 1);
		}
	}
	if (!o->fs && lk.r.zh)
		zookeeper_close(lk.r.zh);
	if (lk.lf && lk.fd >= 0)
		close(lk.fd);
	_exit(0);
}

/* Make the K lock directories on the first mount; wait until every mount sees them. */
static int setup_fs_locks(const struct opts *o, char *err, size_t size)
{
	char path[1024];
	struct stat st;
	int e;

	for (int j = 0; j < o->locks; j++) {
		lock_path(o, 0, j, path, sizeof(path));
		e = mkdir_p(path);
		if (e) {
			fmt(err, size, "mkdir %s: %s", path, strerror(-e));
			return -1;
		}
	}
	for (int m = 1; m < o->ndirs; m++) {
		for (int j = 0; j < o->locks; j++) {
			int tries = 0;

			lock_path(o, m, j, path, sizeof(path));
			while (stat(path, &st) != 0 && tries++ < 100)
				sleep_ms(50);
			if (tries > 100) {
				fmt(err, size, "%s never appeared", path);
				return -1;
			}
		}
	}
	return 0;
}

/* Make the K lock znodes, on a session closed before any fork. */
static int setup_zk_locks(const struct opts *o, char *err, size_t size)
{
	char path[1024] = "";
	struct zconn zc;
	zhandle_t *zh = zk_connect(o->zk, &zc);
	int rc = ZOK;

	if (!zh) {
		fmt(err, size, "cannot connect to %s", o->zk);
		return -1;
	}
	for (int j = 0; j < o->locks && rc == ZOK; j++) {
		lock_path(o, 0, j, path, sizeof(path));
		rc = zk_mkdir_p(zh, path);
	}
	zookeeper_close(zh);	/* ZooKeeper's threads would not survive fork */
	if (rc != ZOK) {
		fmt(err, size, "create %s: %s", path, zerror(rc));
		return -1;
	}
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->lock != y->lock)
		return x->lock < y->lock ? -1 : 1;
	return x->enter < y->enter ? -1 : x->enter > y->enter;
}

/* Count the intervals that start before an earlier one of the same lock ended. */
static long count_overlaps(struct rec *rec, long n)
{
	long overlaps = 0;
	int64_t max_exit = 0;

	qsort(rec, (size_t)n, sizeof(*rec), rec_cmp);
	for (long i = 0; i < n; i++) {
		if (i == 0 || rec[i].lock != rec[i - 1].lock)
			max_exit = rec[i].exit;
		else if (rec[i].enter < max_exit)
			overlaps++;
		if (rec[i].exit > max_exit)
			max_exit = rec[i].exit;
	}
	return overlaps;
}

static void cycles_json(const struct opts *o, struct shared *sh, const char *err,
			bool timed_out, int killed, const struct mntr *m0, const struct mntr *m1)
{
	long n = sh ? atomic_load(&sh->nrec) : 0, measured = 0, overlaps;
	int64_t t0 = sh ? atomic_load(&sh->t0) : 0, t1 = sh ? atomic_load(&sh->t1) : 0;
	int64_t *waits, *cycles;
	double window = t1 > t0 && t0 ? (double)(t1 - t0) / 1e9 : 0;
	long done = 0;

	if (sh && n > sh->cap)
		n = sh->cap;
	waits = calloc((size_t)n + 1, sizeof(*waits));
	cycles = calloc((size_t)n + 1, sizeof(*cycles));
	for (long i = 0; i < n; i++) {
		struct rec *r = &sh->rec[i];

		if (!r->done)		/* a child died mid-cycle */
			continue;
		sh->rec[done++] = *r;
		if (t0 && r->enter > t0 && r->enter <= t1) {
			waits[measured] = r->enter - r->req;
			cycles[measured++] = r->done - r->req;
		}
	}
	overlaps = count_overlaps(sh ? sh->rec : NULL, done);
	printf("{\"mode\":\"cycles\",\"side\":\"%s\",\"procs\":%d,\"locks\":%d,\"mounts\":%d,"
	       "\"warmup\":%ld,\"cycles_limit\":%ld,\"seconds_limit\":%.3f,",
	       o->lf ? "lf" : o->fs ? "fs" : "zk", o->procs, o->locks, o->ndirs, o->warmup, o->cycles,
	       o->seconds);
	printf("\"cycles_total\":%ld,\"measured\":%ld,\"window_s\":%.4f,\"rate\":%.2f,",
	       sh ? atomic_load(&sh->ncycles) : 0, measured, window,
	       window > 0 ? (double)measured / window : 0);
	printf("\"wait_p50_us\":%.1f,\"wait_p99_us\":%.1f,", pct_us(waits, (size_t)measured, 50),
	       pct_us(waits, (size_t)measured, 99));
	printf("\"cycle_p50_us\":%.1f,\"cycle_p99_us\":%.1f,",
	       pct_us(cycles, (size_t)measured, 50), pct_us(cycles, (size_t)measured, 99));
	printf("\"intervals_checked\":%ld,\"overlaps\":%ld,\"violations\":%d,\"errors\":%d,"
	       "\"timed_out\":%s,\"killed\":%d,\"error\":",
	       done, overlaps, sh ? atomic_load(&sh->violations) : 0,
	       sh ? atomic_load(&sh->errors) + (err[0] != 0) : 1,
	       timed_out ? "true" : "false", killed);
	json_str(err[0] ? err : sh && sh->err[0] ? sh->err : "");
	if (m0 && m1) {
		long releases = sh ? atomic_load(&sh->ncycles) : 0;

		putchar(',');
		mntr_delta_json("watch", m0, m1);
		printf(",\"releases\":%ld,\"notifications_per_release\":%.4f", releases,
		       releases ? (double)mntr_fired(m0, m1) / (double)releases : 0);
	}
	printf("}\n");
	free(waits);
	free(cycles);
}

/* Wait for @pids until @deadline; SIGKILL whoever is left. Return: how many. */
static int reap(pid_t *pids, int n, int64_t deadline)
{
	int left = n, killed = 0;

	while (left > 0) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p > 0) {
			for (int i = 0; i < n; i++)
				if (pids[i] == p)
					pids[i] = 0;
			left--;
			continue;
		}
		if (p < 0)
			break;
		if (now_ns() > deadline) {
			for (int i = 0; i < n; i++)
				if (pids[i] > 0) {
					kill(pids[i], SIGKILL);
					killed++;
				}
			/* one stuck in a FUSE request dies only when the mount goes */
			for (int64_t t = now_ns() + 5 * NS; now_ns() < t; sleep_ms(10))
				if (waitpid(-1, &status, WNOHANG) < 0)
					break;
			break;
		}
		sleep_ms(5);
	}
	return killed;
}

static int run_cycles(const struct opts *o)
{
	char err[256] = "", byte;
	struct shared *sh = NULL;
	struct mntr m0, m1;
	bool timed_out = false, have_m = false;
	int ready[2], go[2], nready = 0, killed = 0;
	int64_t tgo, hard;
	pid_t *pids;
	size_t size;
	long cap;

	if (o->ndirs < 1 || (!o->fs && !o->zk))
		usage();
	if (o->mntr && (!o->zk || (o->fs && !o->znode)))
		usage();		/* the counters, and where the queues empty */
	if ((o->fs ? setup_fs_locks : setup_zk_locks)(o, err, sizeof(err)) != 0)
		goto out;
	cap = o->warmup + o->cycles + 2L * o->procs + 64;
	size = sizeof(*sh) + (size_t)cap * sizeof(struct rec);
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
		  -1, 0);
	pids = calloc((size_t)o->procs, sizeof(*pids));
	if (sh == MAP_FAILED || !pids || pipe(ready) != 0 || pipe(go) != 0) {
		sh = NULL;
		fmt(err, sizeof(err), "setup: %s", strerror(errno));
		goto out;
	}
	sh->cap = cap;
	fflush(stdout);
	for (int i = 0; i < o->procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			cycle_child(o, sh, i, ready[1], go[0]);
		}
		if (pids[i] < 0) {
			fmt(err, sizeof(err), "fork: %s", strerror(errno));
			atomic_store(&sh->stop, 1);
			close(go[1]);
			reap(pids, i, now_ns() + 30 * NS);
			goto out;
		}
	}
	close(ready[1]);
	close(go[0]);
	/* every child connected (zk) before the clock starts */
	while (nready < o->procs) {
		struct pollfd pfd = { ready[0], POLLIN, 0 };

		if (poll(&pfd, 1, 30000) <= 0 || read(ready[0], &byte, 1) != 1 || byte != 'r')
			break;
		nready++;
	}
	if (nready < o->procs) {
		fmt(err, sizeof(err), "only %d of %d children started", nready, o->procs);
		atomic_store(&sh->stop, 1);
		close(go[1]);
		killed = reap(pids, o->procs, now_ns() + 30 * NS);
		goto out;
	}
	if (o->mntr)
		have_m = mntr_read(o->zk, &m0) == 0;
	tgo = now_ns();
	hard = tgo + (int64_t)o->timeout * NS;
	close(go[1]);			/* go */
	for (;;) {
		int64_t t0 = atomic_load(&sh->t0), t = now_ns();

		if (atomic_load(&sh->stop))
			break;
		if (t0 && t >= t0 + (int64_t)(o->seconds * 1e9)) {
			int64_t z = 0;

			atomic_compare_exchange_strong(&sh->t1, &z, t);
			atomic_store(&sh->stop, 1);
			break;
		}
		if (t > hard) {
			timed_out = true;
			atomic_store(&sh->stop, 1);
			break;
		}
		sleep_ms(2);
	}
	killed = reap(pids, o->procs, hard + 10 * NS);
	if (killed)
		timed_out = true;
	if (!atomic_load(&sh->t0) && !err[0] && !sh->err[0])
		fmt(err, sizeof(err), "the warm-up (%ld cycles) did not finish", o->warmup);
	if (have_m) {
		/* the daemon deletes after close: wait for the queues to empty */
		struct zconn zc;
		zhandle_t *zh = zk_connect(o->zk, &zc);
		char zpath[1024];

		for (int j = 0; zh && j < o->locks; j++) {
			if (o->fs)
				fmt(zpath, sizeof(zpath), "%s/l%d", o->znode, j);
			else
				lock_path(o, 0, j, zpath, sizeof(zpath));
			if (!zk_wait_nkids(zh, zpath, 0, now_ns() + 20 * NS, 5))
				fmt(err, sizeof(err), "%s did not empty", zpath);
		}
		if (zh)
			zookeeper_close(zh);
		sleep_ms(200);
		have_m = mntr_read(o->zk, &m1) == 0;
	}
out:
	cycles_json(o, sh, err, timed_out, killed, have_m ? &m0 : NULL, have_m ? &m1 : NULL);
	return err[0] || (sh && (sh->errors || sh->violations)) || timed_out ? 1 : 0;
}

/* ------------------------------------------------------------------ */
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

static int run_scale(const struct opts *o)
{
	struct pstat p0 = { 0 }, p1 = { 0 }, p2 = { 0 };
	int64_t t_start = 0, t_issued = 0, t_enq = 0, t_parked = 0, t_d0 = 0, t_last = 0;
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
	mon = zk_connect(o->zk, &zcm);
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
		rc = zk_mkdir_p(mon, S.lock);
		S.zh = zk_connect(o->zk, &zcw);
		S.w = calloc((size_t)n, sizeof(*S.w));
		if (rc != ZOK || !S.zh || !S.w) {
			scale_error("setup %s: %s", S.lock, rc != ZOK ? zerror(rc) : "no session");
			goto out;
		}
	}
	if (zk_nkids(mon, S.lock) != 0) {
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
		scale_error("only %ld of %ld entries after %d s", zk_nkids(mon, S.lock), n,
			    o->timeout);
		goto drain;
	}
	/*
	 * zk: every waiter but the holder watches the entry before it.  fs:
	 * zklockfs parks a waiter behind an entry of its own mount in the
	 * create's completion, with no further request and no watch, so its
	 * queue is settled once the entries exist.
	 */
	t_parked = o->fs ? t_enq
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
	printf("\"issue_s\":%.4f,\"enqueue_s\":%.4f,\"parked_s\":%.4f,\"drain_s\":%.4f,"
	       "\"drain_last_close_s\":%.4f,\"drain_rate\":%.1f,",
	       secs(t_start, t_issued), secs(t_start, t_enq), secs(t_start, t_parked),
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

/* ------------------------------------------------------------------ */
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

static int run_ceiling(const struct opts *o)
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
		s[n].zh = zk_connect(o->zk, &s[n].zc);
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
	rc = zk_mkdir_p(s[0].zh, o->dirs[0]);
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

/* ------------------------------------------------------------------ */
/* watchcheck: does mntr count what we think it counts? */

static int run_watchcheck(const struct opts *o)
{
	struct zconn za, zb, zc, zd;
	zhandle_t *a, *b, *c, *d;
	struct gate g[7];
	struct mntr m0, m1, m2;
	struct String_vector sv;
	struct Stat st;
	char x[1024], y[1024], z[1024], buf[64];
	const char *base;
	int blen, rc = 0, fired = 0;
	bool ok;

	if (!o->zk || o->ndirs != 1)
		usage();
	base = o->dirs[0];
	fmt(x, sizeof(x), "%s/x", base);
	fmt(y, sizeof(y), "%s/y", base);
	fmt(z, sizeof(z), "%s/z", base);
	a = zk_connect(o->zk, &za);
	b = zk_connect(o->zk, &zb);
	c = zk_connect(o->zk, &zc);
	d = zk_connect(o->zk, &zd);
	if (!a || !b || !c || !d) {
		printf("{\"mode\":\"watchcheck\",\"ok\":false,\"error\":\"cannot connect\"}\n");
		return 1;
	}
	zoo_delete(d, x, -1);
	zoo_delete(d, y, -1);
	zoo_delete(d, z, -1);
	if (zk_mkdir_p(d, x) != ZOK || zk_mkdir_p(d, y) != ZOK) {
		printf("{\"mode\":\"watchcheck\",\"ok\":false,"
		       "\"error\":\"cannot create %s\"}\n", x);
		return 1;
	}
	for (int i = 0; i < 7; i++)
		gate_init(&g[i]);
	mntr_read(o->zk, &m0);
	/* three sessions watch x (C twice: one watch on the server), A the children */
	rc |= zoo_wexists(a, x, gate_watcher, &g[0], &st);
	rc |= zoo_wget_children(a, base, gate_watcher, &g[1], &sv);
	deallocate_String_vector(&sv);
	blen = sizeof(buf);
	rc |= zoo_wget(b, x, gate_watcher, &g[2], buf, &blen, &st);
	rc |= zoo_wexists(c, x, gate_watcher, &g[3], &st);
	blen = sizeof(buf);
	rc |= zoo_wget(c, x, gate_watcher, &g[4], buf, &blen, &st);
	/* B watches y's data, A waits for z to be created */
	blen = sizeof(buf);
	rc |= zoo_wget(b, y, gate_watcher, &g[5], buf, &blen, &st);
	if (zoo_wexists(a, z, gate_watcher, &g[6], &st) != ZNONODE)
		rc = -1;
	mntr_read(o->zk, &m1);
	rc |= zoo_delete(d, x, -1);
	rc |= zoo_set(d, y, "v", 1, -1);
	rc |= zoo_create(d, z, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	for (int i = 0; i < 7; i++)
		fired += gate_wait(&g[i], 5);
	sleep_ms(100);
	mntr_read(o->zk, &m2);
	zoo_delete(d, y, -1);
	zoo_delete(d, z, -1);
	ok = rc == 0 && fired == 7 && m1.watches - m0.watches == 6 &&
	     m2.del_sum - m1.del_sum == 3 && m2.del_cnt - m1.del_cnt == 1 &&
	     m2.chi_sum - m1.chi_sum == 1 && m2.chg_sum - m1.chg_sum == 1 &&
	     m2.cre_sum - m1.cre_sum == 1 && m2.watches == m0.watches;
	printf("{\"mode\":\"watchcheck\",\"ok\":%s,\"client_events\":%d,"
	       "\"expected\":{\"armed\":6,\"node_deleted\":3,\"node_deleted_events\":1,"
	       "\"node_children\":1,\"node_changed\":1,\"node_created\":1,\"left\":0},"
	       "\"got\":{\"armed\":%lld,\"node_deleted\":%lld,\"node_deleted_events\":%lld,"
	       "\"node_children\":%lld,\"node_changed\":%lld,\"node_created\":%lld,\"left\":%lld},"
	       "\"case\":",
	       ok ? "true" : "false", fired, m1.watches - m0.watches,
	       m2.del_sum - m1.del_sum, m2.del_cnt - m1.del_cnt, m2.chi_sum - m1.chi_sum,
	       m2.chg_sum - m1.chg_sum, m2.cre_sum - m1.cre_sum, m2.watches - m0.watches);
	json_str("sessions A,B,C watch x (C twice: exists+getData), A watches the children "
		 "of its parent, B y's data, A z's creation; D deletes x, sets y, creates z");
	printf("}\n");
	zookeeper_close(a);
	zookeeper_close(b);
	zookeeper_close(c);
	zookeeper_close(d);
	return ok ? 0 : 1;
}

static int run_mntr(const struct opts *o)
{
	struct mntr m;

	if (!o->zk)
		usage();
	if (mntr_read(o->zk, &m) != 0) {
		fprintf(stderr, "zkbench: cannot read mntr from %s\n", o->zk);
		return 1;
	}
	printf("{\"mode\":\"mntr\",\"watches\":%lld,\"node_deleted\":%lld,"
	       "\"node_deleted_events\":%lld,\"node_children\":%lld,\"node_changed\":%lld,"
	       "\"node_created\":%lld}\n", m.watches, m.del_sum, m.del_cnt, m.chi_sum,
	       m.chg_sum, m.cre_sum);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;

	parse(argc, argv, &o);
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(o.mode, "cycles") == 0)
		return run_cycles(&o);
	if (strcmp(o.mode, "scale") == 0)
		return run_scale(&o);
	if (strcmp(o.mode, "ceiling") == 0)
		return run_ceiling(&o);
	if (strcmp(o.mode, "watchcheck") == 0)
		return run_watchcheck(&o);
	if (strcmp(o.mode, "mntr") == 0)
		return run_mntr(&o);
	usage();
	return 2;
}
