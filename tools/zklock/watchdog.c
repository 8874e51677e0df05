// SPDX-License-Identifier: MIT
/* tools/zklock/watchdog.c - the command ends before its lock can (watchdog.h). */
#include "tools/zklock/watchdog.h"

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abi/zklockfs.h"

#include "tools/zklock/signals.h"
#include "tools/zklock/tree.h"

/* The watch, set by cli_watchdog_start() before the thread starts. */
static struct {
	const struct zk_heartbeat_file *file;
	const struct zk_heartbeat *hb;	/* the lock's session's slot */
	uint64_t gen;			/* its generation when the lock was held */
	int64_t skew_ms;		/* the daemon's boot clock less ours (time
					   namespaces): added to our readings,
					   taken off our sleeps */
	_Atomic pid_t child;		/* the command, once started */
	char lock[256];			/* for the message */
	pthread_mutex_t mu;		/* stopped; held while acting */
	bool stopped;
} wd = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Now on the daemon's CLOCK_BOOTTIME, whatever time namespace each is in. */
static uint64_t boot_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + wd.skew_ms);
}

/* Kill the tree, say why, exit 75: unless stopped meanwhile. */
static void act(uint64_t now, uint64_t until, bool replaced)
{
	uint64_t alive = atomic_load_explicit(&wd.hb->alive_ms, memory_order_relaxed);
	uint64_t margin = atomic_load_explicit(&wd.hb->margin_ms, memory_order_relaxed);
	char why[160];
	int n;

	pthread_mutex_lock(&wd.mu);
	if (wd.stopped || !cli_tree_claim_loss()) {	/* said, or being done */
		wd.stopped = true;		/* the watch is over */
		pthread_mutex_unlock(&wd.mu);
		return;
	}
	n = cli_tree_kill_now(atomic_load(&wd.child));
	if (replaced)
		snprintf(why, sizeof(why), "the mount's ZooKeeper session was replaced "
			 "(it expired)");
	else if (now - alive > 2 * margin + 100 &&	/* it looks every margin */
		 kill((pid_t)wd.file->pid, 0) < 0 && errno == ESRCH)
		snprintf(why, sizeof(why), "the daemon (pid %u) is gone",
			 (unsigned)wd.file->pid);
	else if (now - alive > 2 * margin + 100)
		snprintf(why, sizeof(why), "the daemon (pid %u) has not run for %.1f s: "
			 "it is stopped or frozen", (unsigned)wd.file->pid,
			 (double)(now - alive) / 1000);
	else
		snprintf(why, sizeof(why), "the mount has heard nothing from ZooKeeper "
			 "for the session timeout less %llu ms", (unsigned long long)margin);
	/* stdio's locks may be another thread's: one write(2) */
	if (until + margin > now)
		dprintf(STDERR_FILENO, "%s: lock %s may be another host's %llu ms from now: "
			"%s; sent SIGKILL to %d process%s of the command\n",
			program_invocation_short_name, wd.lock,
			(unsigned long long)(until + margin - now), why, n, n == 1 ? "" : "es");
	else
		dprintf(STDERR_FILENO, "%s: lock %s may be another host's now: %s; sent "
			"SIGKILL to %d process%s of the command\n",
			program_invocation_short_name, wd.lock, why, n, n == 1 ? "" : "es");
	_exit(CLI_EXIT_LOST);
}

static void *watch(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t until = atomic_load_explicit(&wd.hb->until_ms, memory_order_acquire);
		uint64_t gen = atomic_load_explicit(&wd.hb->gen, memory_order_acquire);
		uint64_t now = boot_ms(), at;
		enum zk_hb_verdict v = zk_heartbeat_verdict(wd.gen, gen, until, now);
		struct timespec ts;

		if (v != ZK_HB_ALIVE)
			act(now, until, v == ZK_HB_REPLACED);
		pthread_mutex_lock(&wd.mu);
		if (wd.stopped) {
			pthread_mutex_unlock(&wd.mu);
			return NULL;
		}
		pthread_mutex_unlock(&wd.mu);
		/* until then, or a second at most: a new session shows in gen */
		at = until && until < now + 1000 ? until : now + 1000;
		at = (uint64_t)((int64_t)at - wd.skew_ms);	/* on our own clock */
		ts.tv_sec = (time_t)(at / 1000);
		ts.tv_nsec = (long)(at % 1000) * 1000000L;
		while (clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
}

/*
 * Open the heartbeat file @path as the daemon (uid @uid) made it, never
 * what another user put there: a regular file of that owner that no one
 * else may write, opened without following a link and without blocking
 * (a FIFO would hold zklock in open(2), its command unwatched).
 * Return: the descriptor, or a negative errno (-EPERM: not the daemon's).
 */
static int open_heartbeat(const char *path, uid_t uid)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    st.st_size < (off_t)sizeof(struct zk_heartbeat_file)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* See watchdog.h. */
int cli_watchdog_arm(struct cli_run *r)
{
	struct zklfs_ioc_watchdog w;
	void *map;
	int fd, err;

	memset(&w, 0, sizeof(w));
	if (ioctl(r->lockfd, ZKLFS_IOC_WATCHDOG, &w) < 0) {
		err = -errno;
		warnx("%s: the daemon does not let zklock watch it (%s): %s not started",
		      r->dir, strerror(-err), r->argv[0]);
		return err;
	}
	w.path[sizeof(w.path) - 1] = '\0';
	fd = open_heartbeat(w.path, (uid_t)w.uid);
	if (fd < 0) {
		err = fd;
		goto fail;
	}
	map = mmap(NULL, sizeof(struct zk_heartbeat_file), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	wd.file = map;
	if (memcmp(wd.file->magic, ZK_HEARTBEAT_MAGIC, sizeof(wd.file->magic)) != 0 ||
	    w.slot >= wd.file->slots || w.slot >= ZK_HEARTBEAT_SLOTS) {
		err = -EPROTO;
		goto fail;
	}
	wd.hb = &wd.file->slot[w.slot];
	wd.gen = w.gen;
	wd.skew_ms = wd.file->boottime_offset_ms - zk_boottime_offset_ms();
	snprintf(wd.lock, sizeof(wd.lock), "%s", r->entry ? r->entry : r->dir);
	err = cli_sig_thread(watch, NULL);	/* no signal of the main thread's */
	if (!err)
		return 0;
fail:
	warnx("%s: cannot watch the daemon through %s (%s): %s not started", r->dir,
	      w.path, err == -EPERM ? "not a file of the daemon's uid that only it "
	      "writes" : strerror(-err), r->argv[0]);
	return err;
}

/* See watchdog.h. */
void cli_watchdog_child(pid_t child)
{
	atomic_store(&wd.child, child);
}

/* See watchdog.h. */
void cli_watchdog_stop(void)
{
	pthread_mutex_lock(&wd.mu);
	wd.stopped = true;
	pthread_mutex_unlock(&wd.mu);
}
