/* fs/ender.c - the work that holds a lost lock ends (ender.h). */
#include "fs/ender.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "zk/clock.h"
#include "zk/log.h"

/* The most lost locks one scan of /proc looks for. */
#define ENDER_BATCH 64

/* A lost lock's holders to end. */
struct end_job {
	struct zklfs_holders h;
	char what[512];
	char why[16];
	struct end_job *next;
};

static struct {
	pthread_mutex_t mu;		/* jobs, stopping */
	pthread_cond_t cv;
	struct end_job *jobs, **tail;
	bool started, stopping;
	pthread_t thread;
} en = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

size_t zklfs_proc_text(pid_t pid, const char *what, char *buf, size_t size)
{
	char path[96];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, size - 1);
	close(fd);
	n = n < 0 ? 0 : n;
	buf[n] = '\0';
	return (size_t)n;
}

/* From /proc/PID/stat: its parent and start time.  Return: false if gone
 * (a zombie too: it has closed its files and runs nothing). */
static bool proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start)
{
	char buf[1024], *p;
	int field;

	if (!zklfs_proc_text(pid, "stat", buf, sizeof(buf)))
		return false;
	p = strrchr(buf, ')');		/* the command may hold anything */
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return false;
	/* after ')': state (3), ppid (4), ..., starttime (22) */
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ') {
			field++;
			if (field == 4 && ppid)
				*ppid = (pid_t)strtol(p + 1, NULL, 10);
		}
	if (field < 22)
		return false;
	*start = strtoull(p, NULL, 10);
	return true;
}

/* Are descriptor @fa of @a and @fb of @b one open file description? */
static bool same_file(pid_t a, int fa, pid_t b, int fb)
{
	return syscall(SYS_kcmp, a, b, KCMP_FILE, fa, fb) == 0;
}

/*
 * The descriptor the system call thread @tid waits in names, if that call
 * is flock(2) or fcntl(2): /proc/TID/syscall is "NR ARG1 ARG2 ...".
 * Return: it; -1 for another call (an OPEN's openat); -2 if the file
 * could not be read (a ptrace restriction, a caller not dumpable).
 */
static int syscall_fd(pid_t tid)
{
	char buf[256], *end;
	long nr;

	if (!zklfs_proc_text(tid, "syscall", buf, sizeof(buf)))
		return -2;
	nr = strtol(buf, &end, 10);
	if (end == buf)
		return -2;
#ifdef SYS_fcntl64
	if (nr == SYS_fcntl64)
		nr = SYS_fcntl;
#endif
	if (nr != SYS_flock && nr != SYS_fcntl)
		return -1;
	return (int)strtol(end, NULL, 16);
}


/* --- the host's processes and descriptors -------------------------------- */

/* A process of the host, as the scan saw it. */
struct proc {
	pid_t pid, ppid;
	unsigned long long start;
	bool holds;			/* has a holding description open */
	bool target;			/* ... or descends from one that has */
	bool stopped;			/* sent SIGSTOP */
	bool supervises;		/* an ancestor of the daemon */
};

/* A descriptor open on one of the lost locks' inodes. */
struct ofd {
	pid_t pid;
	int fd;
	uint64_t ino;
};

struct scan {
	struct proc *procs;
	size_t nprocs;
	struct ofd *fds;
	size_t nfds, fdcap;
};

static int proc_cmp(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static struct proc *proc_find(struct scan *s, pid_t pid)
{
	struct proc key = { .pid = pid };

	return bsearch(&key, s->procs, s->nprocs, sizeof(key), proc_cmp);
}

/* Every process of the host, sorted by pid.  Return: 0 or -ENOMEM. */
static int scan_procs(struct scan *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t cap = 0;

	s->nprocs = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct proc p = { 0 };

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		p.pid = (pid_t)atoi(e->d_name);
		if (!proc_stat(p.pid, &p.ppid, &p.start))
			continue;
		if (s->nprocs == cap) {
			struct proc *np = realloc(s->procs, (cap = cap ? 2 * cap : 512) *
							    sizeof(*np));
			if (!np) {
				closedir(d);
				return -ENOMEM;
			}
			s->procs = np;
		}
		s->procs[s->nprocs++] = p;
	}
	closedir(d);
	qsort(s->procs, s->nprocs, sizeof(*s->procs), proc_cmp);
	for (struct proc *p = proc_find(s, getppid()); p && p->pid > 1 && !p->supervises;
	     p = proc_find(s, p->ppid))
		p->supervises = true;
	return 0;
}

/* Is @ino one of the @n inodes @inos? */
static bool wanted(const uint64_t *inos, size_t n, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (inos[i] == ino)
			return true;
	return false;
}

/*
 * The descriptors of process @pid open on one of the @ninos inodes @inos,
 * added to s->fds.  The link /proc/PID/fd/N says what a descriptor is
 * without asking its filesystem; only a file's /proc/PID/fdinfo/N is read
 * for its "ino:" (never a stat of our own files, which would wait on this
 * daemon; never the fdinfo of an epoll, whose mutex another process may
 * hold for good).
 */
static void scan_proc_fds(struct scan *s, pid_t pid, const uint64_t *inos, size_t ninos)
{
	char path[64], link[32], buf[512], *p;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		uint64_t ino;
		ssize_t n;
		int fd;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		fd = atoi(e->d_name);
		n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n <= 0 || link[0] != '/')	/* anon_inode:, socket:, pipe: */
			continue;
		snprintf(path, sizeof(path), "fdinfo/%d", fd);
		if (!zklfs_proc_text(pid, path, buf, sizeof(buf)))
			continue;
		p = strstr(buf, "\nino:");
		if (!p)
			continue;
		ino = strtoull(p + 5, NULL, 10);
		if (!wanted(inos, ninos, ino))
			continue;
		if (s->nfds == s->fdcap) {
			size_t cap = s->fdcap ? 2 * s->fdcap : 64;
			struct ofd *nf = realloc(s->fds, cap * sizeof(*nf));

			if (!nf)
				break;
			s->fds = nf;
			s->fdcap = cap;
		}
		s->fds[s->nfds++] = (struct ofd){ .pid = pid, .fd = fd, .ino = ino };
	}
	closedir(d);
}

/* Every descriptor of every process open on one of the @ninos inodes @inos. */
static void scan_fds(struct scan *s, const uint64_t *inos, size_t ninos)
{
	s->nfds = 0;
	for (size_t i = 0; i < s->nprocs; i++)
		scan_proc_fds(s, s->procs[i].pid, inos, ninos);
}

/* --- where a lock request's description is found -------------------- */

static void anchor_add(struct zklfs_holders *h, pid_t pid, int fd)
{
	unsigned long long start;

	if (h->n < ZKLFS_ANCHORS && proc_stat(pid, NULL, &start))
		h->a[h->n++] = (struct zklfs_anchor){ .pid = pid, .fd = fd, .start = start };
}

/*
 * The one descriptor of @pid open on @ino, when /proc/TID/syscall could
 * not be read (a ptrace restriction, a caller that is not dumpable): -1 if
 * none, or several.
 */
static int only_fd_of(pid_t pid, uint64_t ino)
{
	struct scan s = { 0 };
	int fd;

	scan_proc_fds(&s, pid, &ino, 1);
	fd = s.nfds == 1 ? s.fds[0].fd : -1;
	free(s.fds);
	return fd;
}

void zklfs_holders_read(pid_t tid, pid_t pid, uint64_t ino, struct zklfs_holders *h)
{
	unsigned long long start;
	pid_t parent = 0;
	int fd = tid > 0 ? syscall_fd(tid) : -1;

	memset(h, 0, sizeof(*h));
	h->ino = ino;
	if (pid <= 0)
		return;
	if (fd == -2)		/* unread: not an OPEN's, whose is not installed yet */
		fd = only_fd_of(pid, ino);
	anchor_add(h, pid, fd);
	h->unendable = pid == 1;
	if (fd < 0)
		return;
	/* an inherited descriptor keeps its number: the shell of `exec 9>F;
	 * flock 9` holds the description once flock(1) has exited */
	while (h->n < ZKLFS_ANCHORS && proc_stat(pid, &parent, &start) && parent >= 1 &&
	       same_file(pid, fd, parent, fd)) {
		if (parent == 1) {		/* init's: never signalled */
			h->unendable = true;
			break;
		}
		anchor_add(h, parent, fd);
		pid = parent;
	}
}

bool zklfs_holders_reachable(pid_t pid, uid_t uid, const struct zklfs_holders *h)
{
	return pid > 0 && !h->unendable && (geteuid() == 0 || uid == geteuid());
}

/* --- at a loss ----------------------------------------------------------- */

/* Is @a, as the scan found it, still the anchor the request noted? */
static bool anchor_alive(struct scan *s, const struct zklfs_anchor *a)
{
	struct proc *p = proc_find(s, a->pid);

	return p && p->start == a->start;
}

/* Is the descriptor @o one of @a's (any of them, for an OPEN's anchor)? */
static bool anchor_names(const struct zklfs_anchor *a, const struct ofd *o)
{
	return o->pid == a->pid && (a->fd < 0 || o->fd == a->fd);
}

/*
 * Mark the processes that have @h's description open: its references are
 * the descriptors of its live anchors (never a guess: with none alive, the
 * inode's other descriptions may be a waiter's or a reader's).  Return:
 * false if no anchor is left to tell.
 */
static bool mark_holders(struct scan *s, const struct zklfs_holders *h)
{
	const struct ofd *ref[64];
	size_t nref = 0;

	for (int a = 0; a < h->n; a++) {
		if (!anchor_alive(s, &h->a[a]))
			continue;
		for (size_t i = 0; i < s->nfds && nref < 64; i++)
			if (s->fds[i].ino == h->ino && anchor_names(&h->a[a], &s->fds[i]))
				ref[nref++] = &s->fds[i];
	}
	if (!nref)
		return false;
	for (size_t i = 0; i < s->nfds; i++) {
		struct proc *p;

		if (s->fds[i].ino != h->ino)
			continue;
		for (size_t r = 0; r < nref; r++)
			if (ref[r] == &s->fds[i] ||
			    same_file(ref[r]->pid, ref[r]->fd, s->fds[i].pid, s->fds[i].fd)) {
				p = proc_find(s, s->fds[i].pid);
				if (p)
					p->holds = true;
				break;
			}
	}
	return true;
}

/*
 * May the ender signal @p?  Never PID 1, the daemon, nor what the daemon
 * runs under (its ancestors: the supervisor or shell that started it in
 * the foreground, which a loss of one lock must not take down).
 */
static bool signallable(const struct proc *p)
{
	return p->pid > 1 && p->pid != getpid() && !p->supervises;
}

/*
 * Send @sig to @p, the very process the scan saw: through a pidfd, opened
 * before its start time is checked, so that a pid reused since the scan
 * is never signalled.  Return: 0, or a negative errno (-ESRCH: gone).
 */
static int signal_proc(const struct proc *p, int sig)
{
	unsigned long long start;
	int fd = (int)syscall(SYS_pidfd_open, p->pid, 0), rc;

	if (fd < 0)
		return -errno;
	rc = proc_stat(p->pid, NULL, &start) && start == p->start ?
	     (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) : (errno = ESRCH, -1);
	rc = rc < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Mark the holders and their descendants as targets (parents before
 * children need not come first: repeat until nothing changes). */
static void mark_descendants(struct scan *s)
{
	bool changed = true;

	for (size_t i = 0; i < s->nprocs; i++)
		s->procs[i].target |= s->procs[i].holds;
	while (changed) {
		changed = false;
		for (size_t i = 0; i < s->nprocs; i++) {
			struct proc *parent;

			if (s->procs[i].target)
				continue;
			parent = proc_find(s, s->procs[i].ppid);
			/* not through PID 1 or the daemon's ancestors: their
			 * children are not theirs to lose */
			if (parent && parent->target && signallable(parent)) {
				s->procs[i].target = true;
				changed = true;
			}
		}
	}
}

/*
 * End every process marked in @s: stopped first, so that none forks a
 * child the kill would miss (the scan is taken again until no stopped
 * process has an unmarked child), then killed.  Writes the first few
 * into @who.  Return: how many were ended.
 */
static int end_marked(struct scan *s, char *who, size_t size)
{
	int ended = 0, failed = 0;
	size_t off = 0, n;

	for (int round = 0; round < 8; round++) {
		bool more = false;

		for (size_t i = 0; i < s->nprocs; i++) {
			struct proc *p = &s->procs[i];

			if (p->target && !p->stopped && signallable(p)) {
				p->stopped = true;
				more = true;
				signal_proc(p, SIGSTOP);
			}
		}
		if (!more && round > 0)	/* one look at least after a stop */
			break;
		/* again: children forked before the stop */
		struct proc *old = s->procs;
		size_t nold = s->nprocs;

		s->procs = NULL;
		if (scan_procs(s) != 0) {
			free(s->procs);
			s->procs = old;
			s->nprocs = nold;
			break;
		}
		for (size_t i = 0; i < nold; i++) {
			struct proc *p = proc_find(s, old[i].pid);

			if (p && p->start == old[i].start) {
				p->holds = old[i].holds || old[i].target;
				p->stopped = old[i].stopped;
			}
		}
		free(old);
		mark_descendants(s);
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *p = &s->procs[i];
		char comm[64];

		if (!p->target || !signallable(p))
			continue;
		n = (size_t)-signal_proc(p, SIGKILL);
		if (n) {
			failed += n != ESRCH;		/* else gone by itself */
			continue;
		}
		ended++;
		if (ended <= 4 && off < size) {
			n = zklfs_proc_text(p->pid, "comm", comm, sizeof(comm));
			if (n && comm[n - 1] == '\n')
				comm[n - 1] = '\0';
			off += (size_t)snprintf(who + off, size - off, "%s%d %s",
						off ? ", " : "", (int)p->pid, comm);
		}
	}
	if (ended > 4 && off < size)
		snprintf(who + off, size - off, ", ...");
	if (failed)
		zklog(LOG_ERR, "%d processes holding a lost lock could not be signalled", failed);
	return ended;
}

/*
 * Stop at once the live anchors that still have a descriptor of their
 * lock's inode, and their descendants: a few reads of their own /proc
 * entries, before the scan of every process's descriptors, which on a
 * host with many open files takes seconds.  What the full scan finds
 * later is ended with them.
 */
static void stop_anchors(struct scan *s, const struct end_job *jobs)
{
	for (const struct end_job *j = jobs; j; j = j->next)
		for (int a = 0; a < j->h.n; a++) {
			const struct zklfs_anchor *an = &j->h.a[a];
			struct proc *p = proc_find(s, an->pid);
			size_t from = s->nfds;

			if (!p || p->start != an->start)
				continue;
			scan_proc_fds(s, an->pid, &j->h.ino, 1);
			for (size_t i = from; i < s->nfds; i++)
				if (anchor_names(an, &s->fds[i]))
					p->holds = true;
			s->nfds = from;
		}
	mark_descendants(s);
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].target && !s->procs[i].stopped && signallable(&s->procs[i]) &&
		    signal_proc(&s->procs[i], SIGSTOP) == 0)
			s->procs[i].stopped = true;
}

/*
 * End the holders of every job of @jobs (up to ENDER_BATCH), with one
 * scan of /proc: the anchors stopped first, then every process that has
 * one of the holding descriptions open, and the descendants of all.
 */
static void end_jobs(struct end_job *jobs)
{
	struct scan s = { 0 };
	uint64_t inos[ENDER_BATCH] = { 0 };
	size_t ninos = 0;
	int ended = 0, lost = 0, unknown = 0;
	const struct end_job *one = jobs;
	bool any = false;
	char who[256] = "";

	for (struct end_job *j = jobs; j && ninos < ENDER_BATCH; j = j->next)
		inos[ninos++] = j->h.ino;
	if (scan_procs(&s) != 0) {
		zklog(LOG_ERR, "cannot read /proc: the holders of a lost lock run on");
		free(s.procs);
		return;
	}
	stop_anchors(&s, jobs);
	scan_fds(&s, inos, ninos);
	for (struct end_job *j = jobs; j; j = j->next) {
		lost++;
		if (!mark_holders(&s, &j->h)) {
			unknown++;
			zklog(LOG_ERR, "lock %s lost (%s): no process that took it has its "
			      "descriptor open any more, and whoever holds it now is not known: "
			      "nothing ended", j->what, j->why);
		}
	}
	/* every process stopped above is a target (never unmarked): killed */
	mark_descendants(&s);
	for (size_t i = 0; i < s.nprocs; i++)
		any |= s.procs[i].target;
	if (any)
		ended = end_marked(&s, who, sizeof(who));
	if (lost == 1 && !unknown)
		zklog(LOG_WARNING, "lock %s lost (%s): ended %d processes that held it (%s)",
		      one->what, one->why, ended, who);
	else if (lost > 1)
		zklog(LOG_WARNING, "%d locks lost (%s, ...): ended %d processes that held "
		      "them (%s)", lost, one->why, ended, who);
	free(s.procs);
	free(s.fds);
}

/* The signals of a stop are the main thread's: libfuse's handler must
 * interrupt the FUSE loop's read, not one of ours. */
static void block_stop_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* --- an orderly stop --------------------------------------------------- */

static struct {
	pthread_t thread;
	bool running;
	struct zklfs_held *held;
	size_t n;
	int grace_ms;
	void (*done)(void *arg);
	void *arg;
	pthread_mutex_t mu;		/* hurry */
	pthread_cond_t cv;
	bool hurry;
} st = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* Is any process marked in @s still there (the same one: its start)? */
static bool any_alive(const struct scan *s)
{
	unsigned long long start;

	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].target && signallable(&s->procs[i]) &&
		    proc_stat(s->procs[i].pid, NULL, &start) && start == s->procs[i].start)
			return true;
	return false;
}

/* Wait until no process marked in @s is left, for at most @ms (less if
 * hurried and @hurried_ends).  Return: whether none is left. */
static bool wait_gone(const struct scan *s, int ms, bool hurried_ends)
{
	struct timespec until;

	zk_deadline_in(&until, CLOCK_MONOTONIC, ms);
	for (;;) {
		struct timespec now, tick;
		bool hurry;

		if (!any_alive(s))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > until.tv_sec ||
		    (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
			return false;
		/* 20 ms a look, or at once when hurried */
		zk_deadline_in(&tick, CLOCK_REALTIME, 20);
		pthread_mutex_lock(&st.mu);
		if (!st.hurry || !hurried_ends)
			pthread_cond_timedwait(&st.cv, &st.mu, &tick);
		hurry = st.hurry;
		pthread_mutex_unlock(&st.mu);
		if (hurry && hurried_ends)
			return !any_alive(s);
	}
}

/* The schedule of an orderly stop: SIGTERM, kill_grace, SIGKILL. */
static void *stopping_main(void *arg)
{
	struct scan s = { 0 };
	uint64_t *inos = calloc(st.n, sizeof(*inos));
	int termed = 0, killed = 0, unknown = 0;
	char who[256] = "";

	(void)arg;
	block_stop_signals();
	if (!inos || scan_procs(&s) != 0) {
		zklog(LOG_ERR, "stopping: cannot read /proc: the holders of %zu locks run on",
		      st.n);
		goto out;
	}
	for (size_t i = 0; i < st.n; i++)
		inos[i] = st.held[i].h.ino;
	scan_fds(&s, inos, st.n);
	for (size_t i = 0; i < st.n; i++)
		if (!mark_holders(&s, &st.held[i].h)) {
			unknown++;
			zklog(LOG_ERR, "stopping: lock %s: no process that took it has its "
			      "descriptor open any more, and whoever holds it now is not known: "
			      "nothing ended", st.held[i].what);
		}
	mark_descendants(&s);
	for (size_t i = 0; i < s.nprocs; i++)
		if (s.procs[i].target && signallable(&s.procs[i]) &&
		    signal_proc(&s.procs[i], SIGTERM) == 0)
			termed++;
	if (termed && !wait_gone(&s, st.grace_ms, true)) {
		/* those left, and what they forked meanwhile (end_marked()
		 * reads the table again): SIGKILL */
		killed = end_marked(&s, who, sizeof(who));
		/* gone (reaped), their closes are queued for the loop,
		 * hurried or not */
		wait_gone(&s, 1000, false);
	}
	if (termed || unknown)
		zklog(LOG_NOTICE, "stopping: %zu locks held: %d processes that held them sent "
		      "SIGTERM, %d of them SIGKILL after kill_grace=%d ms%s%s%s", st.n, termed,
		      killed, st.grace_ms, killed ? " (" : "", who, killed ? ")" : "");
out:
	free(inos);
	free(s.procs);
	free(s.fds);
	st.done(st.arg);
	return NULL;
}

int zklfs_ender_stopping(const struct zklfs_held *held, size_t n, int grace_ms,
			 void (*done)(void *arg), void *arg)
{
	int err;

	st.held = malloc(n * sizeof(*held));
	if (!st.held)
		return -ENOMEM;
	memcpy(st.held, held, n * sizeof(*held));
	st.n = n;
	st.grace_ms = grace_ms;
	st.done = done;
	st.arg = arg;
	st.hurry = false;
	err = pthread_create(&st.thread, NULL, stopping_main, NULL);
	if (err) {
		free(st.held);
		st.held = NULL;
		return -err;
	}
	st.running = true;
	return 0;
}

void zklfs_ender_hurry(void)
{
	pthread_mutex_lock(&st.mu);
	st.hurry = true;
	pthread_cond_signal(&st.cv);
	pthread_mutex_unlock(&st.mu);
}

void zklfs_ender_stopped(void)
{
	if (!st.running)
		return;
	pthread_join(st.thread, NULL);
	st.running = false;
	free(st.held);
	st.held = NULL;
}

static void *ender_main(void *arg)
{
	(void)arg;
	block_stop_signals();
	pthread_mutex_lock(&en.mu);
	for (;;) {
		struct end_job *jobs = en.jobs;

		if (!jobs) {
			if (en.stopping)
				break;
			pthread_cond_wait(&en.cv, &en.mu);
			continue;
		}
		/* a batch: one scan of /proc for up to ENDER_BATCH locks */
		struct end_job **cut = &en.jobs;

		for (int i = 0; i < ENDER_BATCH && *cut; i++)
			cut = &(*cut)->next;
		en.jobs = *cut;
		*cut = NULL;
		if (!en.jobs)
			en.tail = &en.jobs;
		pthread_mutex_unlock(&en.mu);
		end_jobs(jobs);
		while (jobs) {
			struct end_job *next = jobs->next;

			free(jobs);
			jobs = next;
		}
		pthread_mutex_lock(&en.mu);
	}
	pthread_mutex_unlock(&en.mu);
	return NULL;
}

void zklfs_ender_post(const struct zklfs_holders *h, const char *what, const char *why)
{
	struct end_job *j = calloc(1, sizeof(*j));

	if (!j) {
		zklog(LOG_ERR, "lock %s lost (%s): out of memory: its holders run on", what,
		      why);
		return;
	}
	j->h = *h;
	snprintf(j->what, sizeof(j->what), "%s", what);
	snprintf(j->why, sizeof(j->why), "%s", why);
	pthread_mutex_lock(&en.mu);
	if (!en.started) {
		pthread_mutex_unlock(&en.mu);
		zklog(LOG_ERR, "lock %s lost (%s): no thread to end its holders", what, why);
		free(j);
		return;
	}
	*en.tail = j;
	en.tail = &j->next;
	pthread_cond_signal(&en.cv);
	pthread_mutex_unlock(&en.mu);
}

int zklfs_ender_start(void)
{
	int err;

	en.jobs = NULL;
	en.tail = &en.jobs;
	en.stopping = false;
	err = pthread_create(&en.thread, NULL, ender_main, NULL);
	if (err) {
		zklog(LOG_ERR, "cannot start the thread that ends a lost lock's holders: %s",
		      strerror(err));
		return -err;
	}
	pthread_mutex_lock(&en.mu);
	en.started = true;
	pthread_mutex_unlock(&en.mu);
	return 0;
}

void zklfs_ender_stop(void)
{
	pthread_mutex_lock(&en.mu);
	if (!en.started) {
		pthread_mutex_unlock(&en.mu);
		return;
	}
	en.stopping = true;
	pthread_cond_signal(&en.cv);
	pthread_mutex_unlock(&en.mu);
	pthread_join(en.thread, NULL);
	pthread_mutex_lock(&en.mu);
	en.started = false;
	pthread_mutex_unlock(&en.mu);
}
