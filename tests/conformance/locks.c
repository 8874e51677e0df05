/* locks.c - C programs taking zklockfs locks the way C programmers do:
 * pthreads and fork(2), open(2) on a lock directory, flock(2), OFD and
 * POSIX fcntl(2) locks and lockf(3) on a lock file.  Run by
 * tests/integration/test_languages.py; see tests/conformance/README.md.
 *
 *   locks MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH
 *
 * Each of TASKS tasks (named PREFIX "t" N) does CYCLES critical sections on
 * PATH (a lock directory: the task opens PATH/ITS_NAME with O_CREAT; a lock
 * file: the task locks its own descriptor of PATH).  A section appends
 * "enter ID NS" to LOG once the lock is granted, sleeps HOLD_MS in 1 ms
 * steps, each followed by sched_yield(), appends "leave ID NS", and only
 * then gives the lock back; the task pauses 1 ms before its next cycle.
 * NS is CLOCK_MONOTONIC; each line is one write(2) to LOG opened with
 * O_APPEND.  Exit 0 once every task did its cycles; any failure is one
 * line on stderr and exit 1.
 *
 *   dir-threads         TASKS pthreads: open(O_CREAT|O_WRONLY) / close
 *   dir-fork            TASKS forked processes: the same
 *   file-flock-threads  TASKS pthreads, each its own descriptor: flock(2)
 *   file-ofd-threads    TASKS pthreads, each its own descriptor: F_OFD_SETLKW
 *   file-fcntl-fork     TASKS processes: POSIX F_SETLKW (a process's lock)
 *   file-lockf-fork     TASKS processes: lockf(F_LOCK)
 *
 * One thread, two descriptors (LOG, TASKS, ... are given but not used):
 *
 *   reopen   PATH a lock directory: open PATH/a; a second thread closes it
 *            after 300 ms while this thread opens PATH/b.  Prints
 *            "granted 1" if that open returned only after the close,
 *            "granted 0" if it returned while PATH/a was held, or
 *            "error ERRNO".
 *   reflock  PATH a lock file: the same with flock(LOCK_EX) on two
 *            descriptors, the first given back with LOCK_UN.
 *   nb       PATH a lock file: flock(LOCK_EX) on one descriptor, then
 *            LOCK_EX|LOCK_NB on a second: prints "nb ERRNO" (0: granted);
 *            then gives the first back and locks the second with LOCK_EX:
 *            "after ERRNO".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int logfd;
static int cycles, hold_ms;
static const char *mode, *prefix, *path;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void logline(const char *what, const char *id)
{
	char buf[128];
	int n = snprintf(buf, sizeof buf, "%s %s %lld\n", what, id, now_ns());

	if (write(logfd, buf, (size_t)n) != n) {
		perror("write log");
		exit(1);
	}
}

static void die(const char *id, const char *what)
{
	fprintf(stderr, "error %s: %s: %s (%s)\n", id, what, strerror(errno),
		strerrorname_np(errno));
	exit(1);
}

/* The critical section: its two log lines around a short sleep that yields. */
static void section(const char *id)
{
	logline("enter", id);
	for (int i = 0; i < hold_ms; i++) {
		usleep(1000);
		sched_yield();
	}
	logline("leave", id);
}

/* Between two cycles, once the lock is given back. */
static void pause_between(void)
{
	usleep(1000);
}

static void wholefile(const char *id, int fd, int cmd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };

	if (fcntl(fd, cmd, &fl) < 0)
		die(id, cmd == F_OFD_SETLKW ? "fcntl(F_OFD_SETLKW)" : "fcntl(F_SETLKW)");
}

static void task(const char *id)
{
	int fd = -1;

	if (strncmp(mode, "file-", 5) == 0) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die(id, "open lock file");
	}
	for (int c = 0; c < cycles; c++) {
		if (strncmp(mode, "dir-", 4) == 0) {
			char entry[4096];

			snprintf(entry, sizeof entry, "%s/%s", path, id);
			fd = open(entry, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0)
				die(id, "open");
			section(id);
			if (close(fd) < 0)
				die(id, "close");
			pause_between();
		} else if (strcmp(mode, "file-flock-threads") == 0) {
			if (flock(fd, LOCK_EX) < 0)
				die(id, "flock(LOCK_EX)");
			section(id);
			if (flock(fd, LOCK_UN) < 0)
				die(id, "flock(LOCK_UN)");
			pause_between();
		} else if (strcmp(mode, "file-ofd-threads") == 0) {
			wholefile(id, fd, F_OFD_SETLKW, F_WRLCK);
			section(id);
			wholefile(id, fd, F_OFD_SETLKW, F_UNLCK);
			pause_between();
		} else if (strcmp(mode, "file-fcntl-fork") == 0) {
			wholefile(id, fd, F_SETLKW, F_WRLCK);
			section(id);
			wholefile(id, fd, F_SETLKW, F_UNLCK);
			pause_between();
		} else {
			if (lockf(fd, F_LOCK, 0) < 0)
				die(id, "lockf(F_LOCK)");
			section(id);
			if (lockf(fd, F_ULOCK, 0) < 0)
				die(id, "lockf(F_ULOCK)");
			pause_between();
		}
	}
	if (fd >= 0 && strncmp(mode, "file-", 5) == 0)
		close(fd);
}

static void *thread_main(void *arg)
{
	task(arg);
	return NULL;
}

/* ---- one thread, two descriptors -------------------------------------- */

static atomic_int released;
static int first_fd;

static void *releaser(void *arg)
{
	(void)arg;
	usleep(300 * 1000);
	atomic_store(&released, 1);
	if (strcmp(mode, "reflock") == 0 ? flock(first_fd, LOCK_UN) : close(first_fd)) {
		perror("release");
		exit(1);
	}
	return NULL;
}

static int one_thread(void)
{
	char a[4096], b[4096];
	pthread_t t;
	int fd2;

	if (strcmp(mode, "reopen") == 0) {
		snprintf(a, sizeof a, "%s/a", path);
		snprintf(b, sizeof b, "%s/b", path);
		first_fd = open(a, O_CREAT | O_WRONLY, 0644);
		if (first_fd < 0)
			die("main", "open a");
		pthread_create(&t, NULL, releaser, NULL);
		fd2 = open(b, O_CREAT | O_WRONLY, 0644);
		if (fd2 < 0)
			printf("error %d\n", errno);
		else
			printf("granted %d\n", atomic_load(&released));
		pthread_join(t, NULL);
		return 0;
	}
	first_fd = open(path, O_RDWR | O_CREAT, 0644);
	fd2 = open(path, O_RDWR | O_CREAT, 0644);
	if (first_fd < 0 || fd2 < 0)
		die("main", "open lock file");
	if (flock(first_fd, LOCK_EX) < 0)
		die("main", "flock(LOCK_EX) on the first descriptor");
	if (strcmp(mode, "reflock") == 0) {
		pthread_create(&t, NULL, releaser, NULL);
		if (flock(fd2, LOCK_EX) < 0)
			printf("error %d\n", errno);
		else
			printf("granted %d\n", atomic_load(&released));
		pthread_join(t, NULL);
		return 0;
	}
	printf("nb %d\n", flock(fd2, LOCK_EX | LOCK_NB) < 0 ? errno : 0);
	if (flock(first_fd, LOCK_UN) < 0)
		die("main", "flock(LOCK_UN)");
	printf("after %d\n", flock(fd2, LOCK_EX) < 0 ? errno : 0);
	return 0;
}

int main(int argc, char **argv)
{
	int tasks;

	if (argc != 8) {
		fprintf(stderr, "usage: locks MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH\n");
		return 2;
	}
	mode = argv[1];
	tasks = atoi(argv[3]);
	cycles = atoi(argv[4]);
	hold_ms = atoi(argv[5]);
	prefix = argv[6];
	path = argv[7];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "reopen") == 0 || strcmp(mode, "reflock") == 0 ||
	    strcmp(mode, "nb") == 0)
		return one_thread();
	logfd = open(argv[2], O_WRONLY | O_APPEND | O_CLOEXEC);
	if (logfd < 0)
		die("main", "open log");

	char (*ids)[64] = calloc((size_t)tasks, sizeof *ids);
	for (int i = 0; i < tasks; i++)
		snprintf(ids[i], sizeof ids[i], "%st%d", prefix, i);

	if (strstr(mode, "-threads")) {
		pthread_t *th = calloc((size_t)tasks, sizeof *th);

		for (int i = 0; i < tasks; i++)
			if (pthread_create(&th[i], NULL, thread_main, ids[i]) != 0)
				die(ids[i], "pthread_create");
		for (int i = 0; i < tasks; i++)
			pthread_join(th[i], NULL);
		return 0;
	}
	if (!strstr(mode, "-fork")) {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	for (int i = 0; i < tasks; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die(ids[i], "fork");
		if (pid == 0) {
			task(ids[i]);
			_exit(0);
		}
	}
	int status, failed = 0;

	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	return failed;
}
