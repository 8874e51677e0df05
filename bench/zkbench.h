/*
 * bench/zkbench.h - what the files of zkbench share: the options, the
 * ZooKeeper sessions, the baseline recipe, the server's statistics and the
 * helpers; each mode (cycles.c, scale.c, ceiling.c, serverstats.c) is a
 * run_*() that main() in zkbench.c calls.  Not a library: one process, whose
 * modes each print one JSON object on stdout (zkbench.c says which).
 */
#ifndef BENCH_ZKBENCH_H
#define BENCH_ZKBENCH_H

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

struct pstat {
	long rss_kib, hwm_kib, threads;
};

struct mntr {
	long long watches;		/* zk_watch_count: armed now */
	long long del_sum, del_cnt;	/* zk_{sum,cnt}_node_deleted_watch_count */
	long long chi_sum, chg_sum, cre_sum;
};

struct zconn {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;			/* 0, 1 connected, -1 expired/auth failed */
};

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

/* One-shot gate a watcher opens. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fired;
};

struct recipe {
	zhandle_t *zh;
	const char *lock;		/* the lock's znode */
	char prefix[512];		/* LOCK/NAME-lock- */
	char data[128];			/* holder line, as a recipe would write */
	char mine[512];			/* our entry, once created */
	char err[200];
};

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

/* util.c: the clock (CLOCK_MONOTONIC, ns), formatting, percentiles,
 * JSON strings, mkdir -p, the recipe's sequence numbers */
int64_t now_ns(void);
__attribute__((format(printf, 3, 4))) bool fmt(char *buf, size_t size,
	const char *f, ...);
void sleep_ms(int ms);
int cmp_i64(const void *a, const void *b);
double pct_us(int64_t *v, size_t n, int pct);
void json_str(const char *s);
int mkdir_p(const char *path);
long seq_of(const char *name);
bool find_pred(const struct String_vector *kids, long mine, char *pred,
	size_t size);

/* serverstats.c: /proc/PID/status, mntr's watch counters; the watchcheck
 * and mntr modes */
int pstat_read(pid_t pid, struct pstat *ps);
void pstat_json(const char *key, const struct pstat *ps);
int mntr_read(const char *hostport, struct mntr *m);
void mntr_delta_json(const char *key, const struct mntr *a,
	const struct mntr *b);
long long mntr_fired(const struct mntr *a, const struct mntr *b);
int run_watchcheck(const struct opts *o);
int run_mntr(const struct opts *o);

/* zkconn.c: a session, connected or not (zconn_connect() waits); children
 * counted until a number is reached; one-shot gates a watcher opens */
void zconn_watcher(zhandle_t *zh, int type, int state, const char *path,
	void *ctx);
zhandle_t *zconn_connect(const char *hostport, struct zconn *c);
int zconn_mkdir_p(zhandle_t *zh, const char *path);
long zconn_nkids(zhandle_t *zh, const char *path);
int64_t zk_wait_nkids(zhandle_t *zh, const char *path, long want,
	int64_t deadline, int every_ms);
int64_t zk_wait_nkids_marks(zhandle_t *zh, const char *path, long want,
	int64_t deadline, const long *marks, int64_t *at, int nmarks,
	atomic_int *stop);
void *marks_watch_run(void *arg);
void gate_watcher(zhandle_t *zh, int type, int state, const char *path,
	void *ctx);
void gate_init(struct gate *g);
bool gate_wait(struct gate *g, int secs);

/* recipe.c: the baseline recipe; 0, or -1 with r->err */
int recipe_acquire(struct recipe *r);
int recipe_release(struct recipe *r);

/* zkbench.c: the command line (usage() exits 2) */
void usage(void);
void parse(int argc, char **argv, struct opts *o);

/* the modes: each prints its JSON object, returns the exit status */
/* cycles.c */
int run_cycles(const struct opts *o);

/* scale.c */
int run_scale(const struct opts *o);

/* ceiling.c */
int run_ceiling(const struct opts *o);

#endif
