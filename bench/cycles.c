/*
 * bench/cycles.c - the cycles mode: P processes loop acquire/release on K
 * locks, exclusion checked twice (see bench/zkbench.h).
 */
#include "bench/zkbench.h"

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
		lk.r.zh = zconn_connect(o->zk, &lk.zc);
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
	zhandle_t *zh = zconn_connect(o->zk, &zc);
	int rc = ZOK;

	if (!zh) {
		fmt(err, size, "cannot connect to %s", o->zk);
		return -1;
	}
	for (int j = 0; j < o->locks && rc == ZOK; j++) {
		lock_path(o, 0, j, path, sizeof(path));
		rc = zconn_mkdir_p(zh, path);
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

int run_cycles(const struct opts *o)
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
		zhandle_t *zh = zconn_connect(o->zk, &zc);
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
