// SPDX-License-Identifier: MIT
/*
 * tools/zklock.c - flock(1) over zklockfs: run a command while holding a lock.
 *
 *	zklock [-s|-x] [-n] [-w SECONDS] [-E CODE] [OPTIONS] LOCKDIR COMMAND [ARG...]
 *	zklock [-s|-x] [-n] [-w SECONDS] [-E CODE] [OPTIONS] LOCKDIR -c 'SHELL COMMAND'
 *	zklock --list LOCKDIR
 *
 * The contract (docs/zklock.1 is the user's version of it):
 *
 * - zklock speaks only to the mount, never to ZooKeeper. LOCKDIR must be on a
 *   zklockfs mount (a FUSE file system whose directories answer the
 *   user.zklockfs.holders xattr); missing components are created (mkdir -p),
 *   but only below a directory that is already on zklockfs.
 * - The lock is taken with open(LOCKDIR/NAME, O_CREAT|O_EXCL|O_CLOEXEC and
 *   O_WRONLY (exclusive) or O_RDONLY (shared)). The descriptor is close-on-
 *   exec: the command never inherits it, so the lock lives exactly as long as
 *   zklock holds it, and zklock alone watches it for loss.
 * - -n adds O_NONBLOCK (EAGAIN: conflict); -w arms ITIMER_REAL, whose SIGALRM
 *   handler (installed without SA_RESTART) interrupts the waiting open with
 *   EINTR, which removes the entry. The timer re-fires every 50 ms after the
 *   deadline, so a SIGALRM landing just before open() blocks is not lost.
 * - While waiting, SIGINT, SIGTERM and SIGHUP end the wait the same way;
 *   zklock then exits 128+N without running the command.
 * - Nothing started under the lock outlives it. The command runs in
 *   zklock's own process group (as with flock(1): the terminal's foreground
 *   group, see "The command's process tree" below), and zklock is the child
 *   subreaper of its tree (PR_SET_CHILD_SUBREAPER): whatever the tree
 *   orphans (double forks, setsid() daemons) becomes zklock's child. The
 *   tree is zklock's descendants, read from /proc, each signalled through a
 *   pidfd; it is gone when waitpid(-1) says ECHILD, and only then does
 *   zklock give the lock back and exit.
 * - zklock waits in a poll() loop on a signalfd (SIGCHLD and the forwarded
 *   signals) and on the lock descriptor with events 0, which zklockfs wakes
 *   with POLLERR|POLLHUP when the lock is lost. On loss every process of
 *   the tree gets SIGTERM (and SIGCONT), whatever is left SIGKILL after
 *   --kill-after seconds (default 10); zklock exits 75 (EX_TEMPFAIL) once
 *   none is left.
 * - When the command exits and leaves processes behind, they are ended the
 *   same way (SIGTERM, SIGKILL after --kill-after) before the lock is given
 *   back; zklock exits with the command's status.
 * - SIGINT, SIGTERM and SIGHUP that zklock receives while the tree runs are
 *   passed on to every process of it, except those the kernel sends to the
 *   whole process group (a terminal's ^C, si_code SI_KERNEL): the processes
 *   in the group got those already. Signals that were ignored when zklock
 *   started stay ignored, in zklock and in the command.
 * - The command gets PR_SET_PDEATHSIG SIGTERM: if zklock dies (kill -9), its
 *   lock goes at once and the command is told (its descendants are not).
 *
 * Exit status: the command's; 128+N if it died of signal N; the conflict code
 * (-E, default 1) for -n/-w; 64 usage; 66 LOCKDIR missing, not on zklockfs or
 * not creatable; 71 other system errors; 75 lock lost; 126/127 command not
 * executable/not found.
 *
 * Errors travel as negative errno (kernel style); main() turns them into an
 * exit status and the one line on stderr that says why.
 */
#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#ifndef ZKLOCK_VERSION
#define ZKLOCK_VERSION "0.1"
#endif

#define FUSE_SUPER_MAGIC	0x65735546

#define XATTR_SEQ	"user.zklockfs.seq"
#define XATTR_KIND	"user.zklockfs.kind"
#define XATTR_STATE	"user.zklockfs.state"
#define XATTR_TOKEN	"user.zklockfs.token"
#define XATTR_HOLDERS	"user.zklockfs.holders"

/* The exit statuses of our own (the command's pass through otherwise). */
enum {
	ZKL_EXIT_CONFLICT = 1,		/* default of -E */
	ZKL_EXIT_USAGE = EX_USAGE,	/* 64 */
	ZKL_EXIT_NODIR = EX_NOINPUT,	/* 66: LOCKDIR unusable */
	ZKL_EXIT_OSERR = EX_OSERR,	/* 71 */
	ZKL_EXIT_LOST = EX_TEMPFAIL,	/* 75: the lock was lost */
	ZKL_EXIT_NOEXEC = 126,
	ZKL_EXIT_NOTFOUND = 127,
};

/* "Not a zklockfs directory", as an errno that nothing else here returns. */
#define ENOTZKLOCKFS	EMEDIUMTYPE

/* An entry name: NAME + marker + sequence number ("-2147483648" at most). */
#define ZKL_NAME_MAX	255
#define ZKL_SEQ_MAX_LEN	11
#define ZKL_MARKER_MAX	(sizeof("-read-lock-") - 1)

#define ZKL_TIMER_REPEAT_US	50000	/* SIGALRM again after the deadline */
#define ZKL_SECONDS_MAX		1e9	/* any -w/--kill-after must fit a time_t */

/* What the command line asked for. Filled once by zkl_parse_args(). */
struct zkl_opts {
	bool shared;		/* -s: O_RDONLY; else exclusive, O_WRONLY */
	bool nonblock;		/* -n, or -w 0 */
	double timeout;		/* -w SECONDS; < 0: wait as long as it takes */
	int conflict_code;	/* -E CODE */
	bool verbose;		/* --verbose */
	bool list;		/* --list */
	bool done;		/* --help/--version answered: exit 0 */
	double kill_after;	/* --kill-after SECONDS, after a loss */
	const char *name;	/* -N NAME; NULL: from the host name */
	const char *shell_cmd;	/* -c 'SHELL COMMAND' */
	const char *lockdir;
	char **argv;		/* COMMAND [ARG...]; NULL with -c */
};

/* One running zklock: the lock it holds and the command it watches. */
struct zkl_run {
	const struct zkl_opts *o;
	char *dir;		/* LOCKDIR, absolute */
	char *name;		/* NAME of our entry */
	char *entry;		/* absolute path of our entry, once known */
	char *token;		/* the fencing token, once known */
	char **argv;		/* what we execute */
	char *sh_argv[4];	/* argv storage for -c */
	int lockfd;		/* holds the lock; -1 when not held */
	int sigfd;		/* signalfd: SIGCHLD, forwarded signals; or -1 */
	pid_t child;		/* the command; 0 before it runs */
	sigset_t orig_mask;	/* zklock's mask at start, the command's mask */
	bool lost;		/* the lock was lost while the command ran */
	bool blind;		/* /proc unreadable: the command alone is seen */
	bool kill_failed;	/* a kill failed and was reported (once) */
};

/*
 * The signals zklock catches, and their dispositions at start (restored in
 * the command before exec). Ignored ones are left alone and not forwarded.
 */
static const int zkl_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGALRM, SIGCHLD };
#define ZKL_NSIGNALS	(sizeof(zkl_signals) / sizeof(*zkl_signals))
static struct sigaction zkl_saved_actions[ZKL_NSIGNALS];
static bool zkl_ignored[ZKL_NSIGNALS];	/* SIG_IGN at start */

/* The last SIGINT/SIGTERM/SIGHUP caught while waiting for the lock; 0 if none. */
static volatile sig_atomic_t zkl_got_signal;
/* The -w timer expired (SIGALRM). */
static volatile sig_atomic_t zkl_got_alarm;

/*
 * The signal handler while waiting: record, and let open() fail with EINTR.
 * A signal caught after the loop looked but before open() blocked would
 * interrupt nothing: SIGALRM then comes every millisecond until it does.
 */
static void zkl_on_signal(int sig)
{
	static const struct itimerval nudge = {
		.it_value.tv_usec = 1000, .it_interval.tv_usec = 1000,
	};
	int saved = errno;

	if (sig == SIGALRM) {
		zkl_got_alarm = 1;
	} else {
		zkl_got_signal = sig;
		setitimer(ITIMER_REAL, &nudge, NULL);
	}
	errno = saved;
}

/* Monotonic time in seconds, for deadlines and --verbose. */
static double zkl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --help text on @f; exits with @status. */
static void __attribute__((noreturn)) zkl_usage(FILE *f, int status)
{
	fprintf(f,
"Usage:\n"
"  zklock [options] LOCKDIR COMMAND [ARG...]\n"
"  zklock [options] LOCKDIR -c 'SHELL COMMAND'\n"
"  zklock --list LOCKDIR\n"
"\n"
"Run a command while holding a zklockfs (ZooKeeper) lock. LOCKDIR is a\n"
"directory on a zklockfs mount, created if missing.\n"
"\n"
"Options:\n"
"  -x, -e, --exclusive        exclusive lock (the default)\n"
"  -s, --shared               shared lock\n"
"  -n, --nonblock, --nb       fail at once if the lock is not free\n"
"  -w, --timeout, --wait SECS give up after SECS (fractions allowed)\n"
"  -E, --conflict-exit-code N exit status for -n/-w failures (default 1)\n"
"  -c, --command CMD          run CMD with $SHELL -c (default /bin/sh)\n"
"  -N, --name NAME            entry name (default: the host name)\n"
"  -k, --kill-after SECS      SIGKILL what is left of the command's processes\n"
"                             SECS after SIGTERM (lost lock, or left behind\n"
"                             by the command; default 10)\n"
"  -o, --close                accepted for flock(1) compatibility (always so)\n"
"      --verbose              say how long getting the lock took\n"
"      --list                 print LOCKDIR's queue\n"
"  -h, --help                 this text\n"
"  -V, --version              version\n"
"\n"
"Exit status: the command's; 128+N if it died of signal N; 1 (-E) if the\n"
"lock was busy; 64 usage; 66 bad LOCKDIR; 71 system error; 75 lock lost;\n"
"126/127 command not executable/not found. See zklock(1).\n");
	exit(status);
}

/* Parse a non-negative number of seconds into *@out. Return: 0 or -EINVAL. */
static int zkl_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 ||
	    v >= ZKL_SECONDS_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Parse an exit status (0..255) into *@out. Return: 0 or -EINVAL. */
static int zkl_parse_code(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 255)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/*
 * Whether @name can be the NAME of an entry: what zklockfs would refuse for
 * any marker (empty, ".", "..", a '/', 10 trailing digits, too long) or
 * with the default one ("-read": its exclusive entry would read as shared).
 * The daemon checks the rest (UTF-8, characters ZooKeeper refuses).
 */
static bool zkl_name_ok(const char *name)
{
	size_t len = strlen(name), digits = 0;

	if (len == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strchr(name, '/'))
		return false;
	if (len + ZKL_MARKER_MAX + ZKL_SEQ_MAX_LEN > ZKL_NAME_MAX)
		return false;
	if (len >= 5 && strcmp(name + len - 5, "-read") == 0)
		return false;
	while (digits < len && isdigit((unsigned char)name[len - 1 - digits]))
		digits++;
	return digits < 10;
}

/*
 * Report a usage error (@fmt may be NULL: getopt has said what) and point
 * to --help. Return: -EINVAL.
 */
static int __attribute__((format(printf, 1, 2))) zkl_bad_usage(const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vwarnx(fmt, ap);
		va_end(ap);
	}
	fprintf(stderr, "Try '%s --help' for more information.\n",
		program_invocation_short_name);
	return -EINVAL;
}

/*
 * Fill @o from the command line. Options end at LOCKDIR ('+'), so the
 * command's own options are left alone; "-c CMD" may also follow LOCKDIR,
 * as in flock(1). Return: 0 (check o->done); -EINVAL after a message.
 */
static int zkl_parse_args(int argc, char **argv, struct zkl_opts *o)
{
	enum { OPT_VERBOSE = 256, OPT_LIST };
	static const struct option longopts[] = {
		{ "shared",		no_argument,		NULL, 's' },
		{ "exclusive",		no_argument,		NULL, 'x' },
		{ "nonblock",		no_argument,		NULL, 'n' },
		{ "nb",			no_argument,		NULL, 'n' },
		{ "timeout",		required_argument,	NULL, 'w' },
		{ "wait",		required_argument,	NULL, 'w' },
		{ "conflict-exit-code",	required_argument,	NULL, 'E' },
		{ "command",		required_argument,	NULL, 'c' },
		{ "name",		required_argument,	NULL, 'N' },
		{ "kill-after",		required_argument,	NULL, 'k' },
		{ "close",		no_argument,		NULL, 'o' },
		{ "verbose",		no_argument,		NULL, OPT_VERBOSE },
		{ "list",		no_argument,		NULL, OPT_LIST },
		{ "help",		no_argument,		NULL, 'h' },
		{ "version",		no_argument,		NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rest;

	*o = (struct zkl_opts){ .timeout = -1, .kill_after = 10,
				.conflict_code = ZKL_EXIT_CONFLICT };
	while ((c = getopt_long(argc, argv, "+sxenw:E:c:N:k:ohV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			o->shared = true;
			break;
		case 'x':
		case 'e':
			o->shared = false;
			break;
		case 'n':
			o->nonblock = true;
			break;
		case 'w':
			if (zkl_parse_seconds(optarg, &o->timeout))
				return zkl_bad_usage("invalid timeout: '%s'", optarg);
			break;
		case 'E':
			if (zkl_parse_code(optarg, &o->conflict_code))
				return zkl_bad_usage("invalid exit code: '%s'", optarg);
			break;
		case 'c':
			o->shell_cmd = optarg;
			break;
		case 'N':
			if (!zkl_name_ok(optarg))
				return zkl_bad_usage("invalid entry name: '%s'", optarg);
			o->name = optarg;
			break;
		case 'k':
			if (zkl_parse_seconds(optarg, &o->kill_after))
				return zkl_bad_usage("invalid --kill-after: '%s'", optarg);
			break;
		case 'o':
			break;
		case OPT_VERBOSE:
			o->verbose = true;
			break;
		case OPT_LIST:
			o->list = true;
			break;
		case 'h':
			zkl_usage(stdout, 0);
		case 'V':
			printf("zklock from zklockfs %s\n", ZKLOCK_VERSION);
			o->done = true;
			return 0;
		default:
			return zkl_bad_usage(NULL);
		}
	}
	if (optind >= argc)
		return zkl_bad_usage("no LOCKDIR given");
	o->lockdir = argv[optind++];
	if (!*o->lockdir)
		return zkl_bad_usage("empty LOCKDIR");
	rest = argc - optind;
	if (o->list) {
		if (rest || o->shell_cmd)
			return zkl_bad_usage("--list takes only LOCKDIR");
		return 0;
	}
	if (rest && (strcmp(argv[optind], "-c") == 0 ||
		     strcmp(argv[optind], "--command") == 0)) {
		if (rest != 2 || o->shell_cmd)
			return zkl_bad_usage("%s requires exactly one command argument",
					     argv[optind]);
		o->shell_cmd = argv[optind + 1];
		rest = 0;
	}
	if (o->shell_cmd && rest)
		return zkl_bad_usage("-c takes one command: no more arguments");
	if (!o->shell_cmd && !rest)
		return zkl_bad_usage("no command given");
	o->argv = rest ? argv + optind : NULL;
	if (o->timeout == 0)
		o->nonblock = true;
	return 0;
}

/*
 * The value of xattr @xname of @fd (if @path is NULL) or @path, NUL-
 * terminated, in *@out (to free). Return: its length, or a negative errno.
 */
static ssize_t zkl_getxattr(int fd, const char *path, const char *xname,
			    char **out)
{
	char *buf = NULL, *nbuf;
	ssize_t len, got;
	size_t cap;

	for (;;) {
		len = path ? getxattr(path, xname, NULL, 0) :
			     fgetxattr(fd, xname, NULL, 0);
		if (len < 0)
			goto out_errno;
		/*
		 * Never ask with size 0 a second time: that is a size query,
		 * whose answer may have grown past the buffer (an empty
		 * holders list of a lock someone just took, say).
		 */
		cap = (size_t)len + 1;
		nbuf = realloc(buf, cap + 1);
		if (!nbuf) {
			free(buf);
			return -ENOMEM;
		}
		buf = nbuf;
		got = path ? getxattr(path, xname, buf, cap) :
			     fgetxattr(fd, xname, buf, cap);
		if (got >= 0)
			break;
		if (errno != ERANGE)	/* ERANGE: it grew meanwhile */
			goto out_errno;
	}
	buf[got] = '\0';
	*out = buf;
	return got;

out_errno:
	got = -errno;
	free(buf);
	return got;
}

/*
 * Whether the existing directory @dir is on a zklockfs mount: a FUSE file
 * system whose directory answers user.zklockfs.holders (a local file system
 * answers ENODATA or ENOTSUP; that xattr copied onto one is no proof).
 * Return: 0; -ENOTZKLOCKFS; another negative errno (cannot tell).
 */
static int zkl_check_zklockfs(const char *dir)
{
	struct statfs sfs;

	if (statfs(dir, &sfs) < 0)
		return -errno;
	if (sfs.f_type != FUSE_SUPER_MAGIC)
		return -ENOTZKLOCKFS;
	/* its size is proof enough (the value may pass the kernel's 64 KiB) */
	if (getxattr(dir, XATTR_HOLDERS, NULL, 0) >= 0)
		return 0;
	if (errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP)
		return -ENOTZKLOCKFS;
	return -errno;
}

/* Whether @path exists as a directory. Return: 0, -ENOTDIR or -errno. */
static int zkl_is_dir(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/*
 * The length of the first @len bytes of @p without their last component and
 * the slashes before it: "a/b" -> "a", "/a" -> "/", "a" -> "" (0).
 */
static size_t zkl_parent_len(const char *p, size_t len)
{
	while (len > 0 && p[len - 1] != '/')
		len--;
	while (len > 1 && p[len - 1] == '/')
		len--;
	return len;
}

/*
 * mkdir -p @dir on zklockfs: find the deepest existing ancestor, insist that
 * it is a zklockfs directory, then create the rest (EEXIST from a racing
 * zklock is fine). Nothing is created on any other file system.
 * Return: 0, -ENOTZKLOCKFS or another negative errno.
 */
static int zkl_make_lockdir(const char *dir)
{
	char *p = strdup(dir), save;
	size_t len, have;
	int err;

	if (!p)
		return -ENOMEM;
	len = strlen(p);
	while (len > 1 && p[len - 1] == '/')	/* "a/b/" is "a/b" */
		p[--len] = '\0';
	err = zkl_is_dir(p);
	if (err != -ENOENT) {
		if (!err)
			err = zkl_check_zklockfs(p);
		goto out_free;
	}
	/* walk up to the first ancestor that exists: it must be ours */
	have = len;
	do {
		have = zkl_parent_len(p, have);
		save = p[have];
		p[have] = '\0';
		err = zkl_is_dir(have ? p : ".");
		if (!err)
			err = zkl_check_zklockfs(have ? p : ".");
		p[have] = save;
	} while (err == -ENOENT && have > 0);
	if (err)
		goto out_free;
	/* create what is missing, one component at a time */
	for (size_t i = have + 1; i <= len; i++) {
		if ((i < len && p[i] != '/') || p[i - 1] == '/')
			continue;
		save = p[i];
		p[i] = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			err = -errno;
		p[i] = save;
		if (err)
			goto out_free;
	}
	err = zkl_is_dir(p);
out_free:
	free(p);
	return err;
}

/*
 * The default NAME: the host name if it is a usable, printable one, else
 * "zklock". Return: 0 and *@out (to free), or -ENOMEM.
 */
static int zkl_default_name(char **out)
{
	struct utsname u;
	bool ok;

	ok = uname(&u) == 0 && zkl_name_ok(u.nodename);
	for (const unsigned char *c = (unsigned char *)u.nodename; ok && *c; c++)
		ok = *c > ' ' && *c < 0x7f;
	*out = strdup(ok ? u.nodename : "zklock");
	return *out ? 0 : -ENOMEM;
}

/* Disarm the -w timer. */
static void zkl_disarm_timer(void)
{
	struct itimerval it = { 0 };

	if (setitimer(ITIMER_REAL, &it, NULL) < 0)
		warn("setitimer");
}

/*
 * Install our handler (no SA_RESTART, so a waiting open() fails with EINTR)
 * for zkl_signals, keeping ignored ones ignored and saving what was there
 * for the command. SIGCHLD gets its default: we wait for our child.
 * Return: 0 or a negative errno.
 */
static int zkl_install_handlers(void)
{
	struct sigaction sa = { .sa_handler = zkl_on_signal };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ZKL_NSIGNALS; i++) {
		if (sigaction(zkl_signals[i], NULL, &zkl_saved_actions[i]) < 0)
			return -errno;
		if (zkl_signals[i] == SIGCHLD) {
			struct sigaction dfl = { .sa_handler = SIG_DFL };

			sigemptyset(&dfl.sa_mask);
			if (sigaction(SIGCHLD, &dfl, NULL) < 0)
				return -errno;
			continue;
		}
		zkl_ignored[i] = zkl_saved_actions[i].sa_handler == SIG_IGN &&
				 zkl_signals[i] != SIGALRM;
		if (zkl_ignored[i])
			continue;
		if (sigaction(zkl_signals[i], &sa, NULL) < 0)
			return -errno;
	}
	return 0;
}

/*
 * open() the lock: wait as long as the options allow.
 * Return: 0 with r->lockfd; -EAGAIN (busy, -n); -ETIMEDOUT (-w expired);
 * -EINTR (a signal, in zkl_got_signal); another negative errno.
 */
static int zkl_take_lock(struct zkl_run *r, const char *path)
{
	const struct zkl_opts *o = r->o;
	int flags = O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY |
		    (o->shared ? O_RDONLY : O_WRONLY) |
		    (o->nonblock ? O_NONBLOCK : 0);
	bool timed = !o->nonblock && o->timeout > 0;
	int err = 0;

	if (timed) {
		struct itimerval it = {
			.it_value.tv_sec = (time_t)o->timeout,
			.it_value.tv_usec = (suseconds_t)((o->timeout -
				(double)(time_t)o->timeout) * 1e6),
			.it_interval.tv_usec = ZKL_TIMER_REPEAT_US,
		};

		if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
			it.it_value.tv_usec = 1;
		if (setitimer(ITIMER_REAL, &it, NULL) < 0)
			return -errno;
	}
	for (;;) {
		if (zkl_got_signal) {
			err = -EINTR;
			break;
		}
		if (zkl_got_alarm) {
			err = -ETIMEDOUT;
			break;
		}
		r->lockfd = open(path, flags, 0644);
		if (r->lockfd >= 0)
			break;
		err = -errno;
		if (err != -EINTR)
			break;
		/* a stop signal (^Z) also ends the wait: queue again */
		err = 0;
	}
	if (timed || zkl_got_signal)
		zkl_disarm_timer();
	return err;
}

/*
 * Find our entry: the child of r->dir named NAME + a marker of our kind +
 * the "%010d" of our sequence number (seq from the descriptor's xattr).
 * Return: 0 with r->entry set; -ENOENT if not listed; a negative errno.
 */
static int zkl_find_entry(struct zkl_run *r)
{
	static const char *const excl[] = { "-lock-", "__lock__" };
	static const char *const shrd[] = { "-read-lock-", "__rlock__" };
	const char *const *markers = r->o->shared ? shrd : excl;
	char *seqstr, *end, suffix[16];
	size_t nlen = strlen(r->name), slen;
	struct dirent *de;
	long seq;
	DIR *d;
	int err;

	err = (int)zkl_getxattr(r->lockfd, NULL, XATTR_SEQ, &seqstr);
	if (err < 0)
		return err;
	errno = 0;
	seq = strtol(seqstr, &end, 10);
	err = errno || end == seqstr || seq < INT32_MIN || seq > INT32_MAX ?
	      -EPROTO : 0;
	free(seqstr);
	if (err)
		return err;
	slen = (size_t)snprintf(suffix, sizeof(suffix), "%010d", (int)seq);

	d = opendir(r->dir);
	if (!d)
		return -errno;
	err = -ENOENT;
	while (err == -ENOENT && (errno = 0, de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);

		if (len <= nlen + slen || memcmp(n, r->name, nlen) ||
		    strcmp(n + len - slen, suffix))
			continue;
		for (int i = 0; i < 2; i++) {
			size_t mlen = strlen(markers[i]);

			if (len != nlen + mlen + slen ||
			    memcmp(n + nlen, markers[i], mlen))
				continue;
			err = asprintf(&r->entry, "%s/%s", r->dir, n) < 0 ?
			      -ENOMEM : 0;
			break;
		}
	}
	if (err == -ENOENT && errno)
		err = -errno;
	closedir(d);
	return err;
}

/* Tell the command where its lock is: ZKLOCK_DIR/ENTRY/TOKEN/MODE. */
static int zkl_export_env(struct zkl_run *r)
{
	ssize_t len = zkl_getxattr(r->lockfd, NULL, XATTR_TOKEN, &r->token);

	if (len < 0)
		return (int)len;
	if (setenv("ZKLOCK_DIR", r->dir, 1) < 0 ||
	    setenv("ZKLOCK_ENTRY", r->entry, 1) < 0 ||
	    setenv("ZKLOCK_TOKEN", r->token, 1) < 0 ||
	    setenv("ZKLOCK_MODE", r->o->shared ? "shared" : "exclusive", 1) < 0)
		return -errno;
	return 0;
}

/*
 * Block the signals we handle from now on through a signalfd: SIGCHLD and
 * the forwarded SIGINT/SIGTERM/SIGHUP (not those ignored at start).
 * Return: 0 with r->sigfd, or a negative errno.
 */
static int zkl_open_signalfd(struct zkl_run *r)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < ZKL_NSIGNALS; i++)
		if (zkl_signals[i] != SIGALRM && !zkl_ignored[i])
			sigaddset(&set, zkl_signals[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	r->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return r->sigfd < 0 ? -errno : 0;
}

/*
 * In the forked child: give back the signal dispositions and mask zklock
 * started with, ask for SIGTERM if zklock dies, and exec the command.
 * Exits 127 if it is not found, 126 if it cannot be executed.
 */
static void __attribute__((noreturn)) zkl_exec_command(struct zkl_run *r,
							pid_t parent)
{
	int err;

	for (size_t i = 0; i < ZKL_NSIGNALS; i++)
		if (sigaction(zkl_signals[i], &zkl_saved_actions[i], NULL) < 0)
			warn("sigaction");
	if (sigprocmask(SIG_SETMASK, &r->orig_mask, NULL) < 0)
		warn("sigprocmask");
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		warn("prctl(PR_SET_PDEATHSIG)");
	if (getppid() != parent)	/* zklock died before prctl() */
		_exit(ZKL_EXIT_LOST);
	execvp(r->argv[0], r->argv);
	err = errno;
	warn("%s", r->argv[0]);
	_exit(err == ENOENT ? ZKL_EXIT_NOTFOUND : ZKL_EXIT_NOEXEC);
}

/* fork() and exec the command. Return: 0 with r->child, or -errno. */
static int zkl_spawn(struct zkl_run *r)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		zkl_exec_command(r, parent);
	r->child = pid;
	return 0;
}

/* The command's process tree ------------------------------------------------ */

/*
 * Why /proc and a subreaper, and not a process group of its own: the
 * command stays in zklock's process group, as with flock(1), so that it is
 * in the terminal's foreground group whenever zklock is: it reads the
 * terminal, ^C and ^Z reach it from the kernel, and a job-control shell
 * stops and continues zklock and the command as one job. A group of its own
 * would need zklock to hand the terminal over (tcsetpgrp()) and to relay
 * stops, as a shell does (timeout(1) takes a group of its own and breaks
 * reading the terminal for that reason); and killpg() would still miss what
 * left the group (setsid(), a job-control shell's jobs), while it would hit
 * zklock itself and whatever shares its group (the rest of a pipeline).
 *
 * So zklock is the command's child subreaper: whatever the tree orphans
 * (a double fork, a daemon that setsid()s) becomes zklock's child instead
 * of init's. Every descendant thus stays below zklock, found by walking
 * /proc from zklock's pid, and when waitpid() says ECHILD there is none.
 */

/* One process as /proc showed it. */
struct zkl_proc {
	pid_t pid, ppid;
	unsigned long long start;	/* start time: pid + start = one process */
	char state;			/* 'Z': ended, not reaped yet */
	bool ours;			/* a descendant of zklock */
};

/* Read /proc/@pid/stat into @p. Return: 0; -ENOENT (gone); -errno. */
static int zkl_read_stat(pid_t pid, struct zkl_proc *p)
{
	char path[32], buf[1024], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ESRCH ? -ENOENT : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		n = errno == ESRCH ? -ENOENT : -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	/* "pid (comm) state ppid" ... field 22 "starttime"; comm may hold
	 * anything, ')' too: the fields start after the last ')' */
	rp = strrchr(buf, ')');
	if (!rp || sscanf(rp + 1, " %c %d %*s"
			  " %*s %*s %*s %*s %*s %*s %*s %*s"
			  " %*s %*s %*s %*s %*s %*s %*s %*s %llu",
			  &p->state, &p->ppid, &p->start) != 3)
		return -EPROTO;
	p->pid = pid;
	p->ours = false;
	return 0;
}

static int zkl_proc_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct zkl_proc *)a)->pid;
	pid_t y = ((const struct zkl_proc *)b)->pid;

	return (x > y) - (x < y);
}

/*
 * Every process in /proc, sorted by pid, with zklock's descendants marked
 * ours. Return: their number, with *@out (to free); or a negative errno.
 */
static ssize_t zkl_list_procs(struct zkl_proc **out)
{
	struct zkl_proc *procs = NULL, *np, key, *parent;
	size_t n = 0, cap = 0;
	pid_t self = getpid();
	struct dirent *de;
	bool more;
	int err = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end ||
		    pid <= 0 || pid > INT_MAX)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			np = reallocarray(procs, cap, sizeof(*procs));
			if (!np) {
				err = -ENOMEM;
				break;
			}
			procs = np;
		}
		err = zkl_read_stat((pid_t)pid, &procs[n]);
		if (err == -ENOMEM || err == -EMFILE || err == -ENFILE)
			break;
		/* gone meanwhile; hidden (hidepid=1: not one of ours) */
		if (!err)
			n++;
		err = 0;
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	if (err) {
		free(procs);
		return err;
	}
	if (n)
		qsort(procs, n, sizeof(*procs), zkl_proc_cmp);
	/* mark the children of zklock, then theirs, ... until none is new */
	do {
		more = false;
		for (size_t i = 0; i < n; i++) {
			if (procs[i].ours || procs[i].pid == self)
				continue;
			key.pid = procs[i].ppid;
			parent = procs[i].ppid == self ? NULL :
				 bsearch(&key, procs, n, sizeof(*procs), zkl_proc_cmp);
			if (procs[i].ppid == self || (parent && parent->ours)) {
				procs[i].ours = true;
				more = true;
			}
		}
	} while (more);
	*out = procs;
	return (ssize_t)n;
}

/*
 * Send @sig to @p, the process /proc showed: through a pidfd, and only if
 * the process behind it still has @p's start time (its pid may have been
 * reaped and taken by another process since). Return: 0 or -errno.
 */
static int zkl_signal_proc(const struct zkl_proc *p, int sig)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	struct zkl_proc now;
	int fd, err = 0;

	fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (fd < 0 && errno == ESRCH)
		return 0;
	if (fd >= 0) {
		/* the pid is pinned to the pidfd's process while it lives:
		 * if it is still @p, so was the pidfd's */
		if (zkl_read_stat(p->pid, &now) == 0 && now.start == p->start &&
		    syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0 &&
		    errno != ESRCH)
			err = -errno;
		close(fd);
		return err;
	}
	if (errno != ENOSYS)
		return -errno;
#endif
	/* a kernel before 5.3: kill(), with the race pidfds close */
	return kill(p->pid, sig) < 0 && errno != ESRCH ? -errno : 0;
}

enum {
	ZKL_TREE_CONT = 1,	/* follow with SIGCONT: a stopped process acts */
};

/*
 * Send @sig to every live process of the command's tree (zklock's
 * descendants, the command included). If /proc cannot be read, only the
 * command gets it (once; r->blind says so from then on).
 * Return: how many processes got it.
 */
static int zkl_signal_tree(struct zkl_run *r, int sig, int flags)
{
	struct zkl_proc *procs = NULL;
	ssize_t n = r->blind ? -ENOENT : zkl_list_procs(&procs);
	int count = 0, err;

	if (n < 0) {
		if (!r->blind)
			warnx("cannot list the processes of %s (/proc: %s): "
			      "signalling it alone", r->argv[0], strerror((int)-n));
		r->blind = true;
		if (r->child > 0 && kill(r->child, sig) == 0) {
			if (flags & ZKL_TREE_CONT)
				kill(r->child, SIGCONT);
			count = 1;
		}
		return count;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (!procs[i].ours || procs[i].state == 'Z')
			continue;
		err = zkl_signal_proc(&procs[i], sig);
		if (!err && (flags & ZKL_TREE_CONT))
			err = zkl_signal_proc(&procs[i], SIGCONT);
		if (!err)
			count++;
		else if (!r->kill_failed)	/* not every round of SIGKILL */
			warnx("kill %d: %s (waiting for it to end)",
			      (int)procs[i].pid, strerror(-err));
		r->kill_failed |= err != 0;
	}
	free(procs);
	return count;
}

/*
 * Reap every child that ended: the command (its wait status in *@status,
 * then r->child is 0) and what the tree orphaned (reparented to us).
 * Return: 0 while a child is left; -ECHILD when none is, which for a
 * subreaper means the whole tree is gone; another negative errno.
 */
static int zkl_reap(struct zkl_run *r, int *status)
{
	pid_t pid;
	int st;

	for (;;) {
		pid = waitpid(-1, &st, WNOHANG);
		if (pid > 0 && pid == r->child) {
			*status = st;
			r->child = 0;
		}
		if (pid > 0)
			continue;
		if (pid == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

/*
 * The last resort when supervising failed: SIGKILL the tree and reap it.
 * Blind (no /proc), wait for the command alone.
 */
static void zkl_kill_tree(struct zkl_run *r)
{
	pid_t pid;

	for (;;) {
		zkl_signal_tree(r, SIGKILL, 0);
		if (r->blind && !r->child)
			return;
		pid = waitpid(r->blind ? r->child : -1, NULL, 0);
		if (pid > 0 && pid == r->child)
			r->child = 0;
		if (pid < 0 && errno != EINTR)
			return;
	}
}

/*
 * Read what the signalfd has and pass SIGINT/SIGTERM/SIGHUP on to the
 * command's tree, except those the kernel sent to our whole process group
 * (a terminal's ^C, or SIGHUP when the session ends: si_code SI_KERNEL):
 * the processes in our group got those too, and those that left it did so
 * not to get them. A session leader gets the terminal's hangup alone, so it
 * passes everything on. SIGCHLD needs nothing: the caller reaps.
 * Return: 0 or a negative errno.
 */
static int zkl_drain_signals(struct zkl_run *r)
{
	bool leader = getsid(0) == getpid();
	struct signalfd_siginfo si;
	ssize_t n;

	while ((n = read(r->sigfd, &si, sizeof(si))) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD ||
		    (si.ssi_code == SI_KERNEL && !leader))
			continue;
		zkl_signal_tree(r, (int)si.ssi_signo, 0);
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return -errno;
	return 0;
}

/* Milliseconds until @deadline for poll(), rounded up; 0 if past; at most
 * INT_MAX (poll() is called again: --kill-after may be 1e9 s). */
static int zkl_ms_until(double deadline)
{
	double left = (deadline - zkl_now()) * 1000;

	return left <= 0 ? 0 : left >= INT_MAX - 1 ? INT_MAX : (int)left + 1;
}

/* How often the tree is looked at again while it is being SIGKILLed:
 * soon, then less and less often (what cannot be killed, say EPERM). */
#define ZKL_KILL_ROUND_MS	10
#define ZKL_KILL_ROUND_MAX_MS	500

/*
 * Wait for the command and everything it started, watching the lock.
 * The tree is ended (SIGTERM, SIGCONT; SIGKILL to whatever is left after
 * --kill-after seconds, again until nothing is) when the lock is lost
 * (r->lost), and when the command exits leaving processes behind: nothing
 * started under the lock outlives it. Return: 0 once no process of the tree
 * is left, with the command's wait status in *@status; or a negative errno.
 */
static int zkl_supervise(struct zkl_run *r, int *status)
{
	struct pollfd pfd[2] = {
		{ .fd = r->sigfd, .events = POLLIN },
		{ .fd = r->lockfd, .events = 0 },	/* POLLERR|POLLHUP: lost */
	};
	enum { RUNNING, TERMINATING, KILLING } phase = RUNNING;
	double kill_at = 0;
	int err, timeout, n, round_ms = ZKL_KILL_ROUND_MS;

	for (;;) {
		err = zkl_reap(r, status);
		if (err == -ECHILD || (!err && r->blind && !r->child))
			return 0;		/* the tree is gone */
		if (err)
			return err;
		if (phase == RUNNING && !r->child) {
			n = zkl_signal_tree(r, SIGTERM, ZKL_TREE_CONT);
			if (n > 0)
				warnx("%s exited and left %d process%s running: "
				      "sent SIGTERM", r->argv[0], n, n > 1 ? "es" : "");
			phase = TERMINATING;
			kill_at = zkl_now() + r->o->kill_after;
		}
		if (phase == TERMINATING && zkl_now() >= kill_at) {
			n = zkl_signal_tree(r, SIGKILL, 0);
			if (n > 0)
				warnx("%d process%s still running %gs after SIGTERM: "
				      "sent SIGKILL", n, n > 1 ? "es" : "",
				      r->o->kill_after);
			phase = KILLING;
		} else if (phase == KILLING) {
			/* what forked meanwhile, or was not seen the last time */
			zkl_signal_tree(r, SIGKILL, 0);
		}
		timeout = phase == RUNNING ? -1 :
			  phase == TERMINATING ? zkl_ms_until(kill_at) : round_ms;
		if (phase == KILLING && round_ms < ZKL_KILL_ROUND_MAX_MS)
			round_ms *= 2;
		if (poll(pfd, 2, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[1].revents) {
			r->lost = true;
			pfd[1].fd = -1;		/* told once is enough */
			if (phase == RUNNING) {
				n = zkl_signal_tree(r, SIGTERM, ZKL_TREE_CONT);
				warnx("lock lost (%s): sent SIGTERM to the %d "
				      "process%s of %s (pid %d)", r->entry, n,
				      n == 1 ? "" : "es", r->argv[0], (int)r->child);
				phase = TERMINATING;
				kill_at = zkl_now() + r->o->kill_after;
			} else {
				warnx("lock lost (%s) while ending what %s left",
				      r->entry, r->argv[0]);
			}
		}
		if (pfd[0].revents) {
			err = zkl_drain_signals(r);
			if (err)
				return err;
		}
	}
}

/* Whether the lock was lost by now (a last look, after the command). */
static bool zkl_lock_lost_now(int lockfd)
{
	struct pollfd pfd = { .fd = lockfd, .events = 0 };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLERR | POLLHUP));
}

/* The exit status zklock passes on for a command's wait @status. */
static int zkl_exit_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return ZKL_EXIT_OSERR;
}

/* Map a failure to use LOCKDIR to a message and an exit status. */
static int zkl_lockdir_failed(const char *dir, int err)
{
	if (err == -ENOTZKLOCKFS)
		warnx("%s: not a directory on a zklockfs mount", dir);
	else
		warnx("%s: %s", dir, strerror(-err));
	return ZKL_EXIT_NODIR;
}

/*
 * Prepare r: the lock directory (created, checked, made absolute), the
 * entry NAME and the command's argv. Return: 0 or an exit status.
 */
static int zkl_prepare(struct zkl_run *r)
{
	const struct zkl_opts *o = r->o;
	int err;

	err = zkl_make_lockdir(o->lockdir);
	if (err)
		return zkl_lockdir_failed(o->lockdir, err);
	r->dir = realpath(o->lockdir, NULL);
	if (!r->dir)
		return zkl_lockdir_failed(o->lockdir, -errno);
	if (o->name) {
		r->name = strdup(o->name);
		err = r->name ? 0 : -ENOMEM;
	} else {
		err = zkl_default_name(&r->name);
	}
	if (err) {
		warnx("%s", strerror(-err));
		return ZKL_EXIT_OSERR;
	}
	if (o->shell_cmd) {
		const char *sh = getenv("SHELL");

		r->sh_argv[0] = (char *)(sh && *sh ? sh : "/bin/sh");
		r->sh_argv[1] = (char *)"-c";
		r->sh_argv[2] = (char *)o->shell_cmd;
		r->sh_argv[3] = NULL;
		r->argv = r->sh_argv;
	} else {
		r->argv = o->argv;
	}
	return 0;
}

/*
 * Take the lock, with --verbose's report. Return: 0 with r->lockfd, or the
 * exit status to leave with (r->lockfd stays -1: -E may make that 0).
 */
static int zkl_acquire(struct zkl_run *r)
{
	const struct zkl_opts *o = r->o;
	double t0 = zkl_now(), took;
	char *path;
	int err;

	if (asprintf(&path, "%s/%s", r->dir, r->name) < 0) {
		warnx("%s", strerror(ENOMEM));
		return ZKL_EXIT_OSERR;
	}
	err = zkl_take_lock(r, path);
	took = zkl_now() - t0;
	switch (err) {
	case 0:
		if (o->verbose)
			fprintf(stderr, "%s: getting lock took %.6f seconds\n",
				program_invocation_short_name, took);
		break;
	case -EAGAIN:
		if (o->verbose)
			warnx("failed to get lock");
		err = o->conflict_code;
		break;
	case -ETIMEDOUT:
		if (o->verbose)
			warnx("timeout while waiting to get lock");
		err = o->conflict_code;
		break;
	case -EINTR:
		if (o->verbose)
			warnx("interrupted by signal %d while waiting", zkl_got_signal);
		err = 128 + zkl_got_signal;
		break;
	case -EINVAL:
	case -ENAMETOOLONG:
		warnx("%s: invalid entry name: %s", path, strerror(-err));
		err = ZKL_EXIT_USAGE;
		break;
	default:
		warnx("%s: %s", path, strerror(-err));
		err = ZKL_EXIT_OSERR;
		break;
	}
	free(path);
	return err;
}

/*
 * Run the command under the lock held in r->lockfd until it ends.
 * Return: zklock's exit status.
 */
static int zkl_run_command(struct zkl_run *r)
{
	int status, err;

	err = zkl_open_signalfd(r);
	if (err) {
		warnx("signalfd: %s", strerror(-err));
		return ZKL_EXIT_OSERR;
	}
	if (zkl_got_signal)		/* came after the grant, before the block */
		return 128 + zkl_got_signal;
	err = zkl_find_entry(r);
	if (err == -ENOENT && zkl_lock_lost_now(r->lockfd)) {
		warnx("lock in %s lost before %s started", r->dir, r->argv[0]);
		return ZKL_EXIT_LOST;
	}
	if (!err)
		err = zkl_export_env(r);
	if (err) {
		warnx("%s: cannot find our entry: %s", r->dir, strerror(-err));
		return ZKL_EXIT_OSERR;
	}
	if (r->o->verbose)
		fprintf(stderr, "%s: executing %s\n", program_invocation_short_name,
			r->o->shell_cmd ? r->o->shell_cmd : r->argv[0]);
	/* what the command's tree orphans becomes ours, not init's */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		warn("prctl(PR_SET_CHILD_SUBREAPER): processes that %s's tree "
		     "orphans are not followed", r->argv[0]);
	err = zkl_spawn(r);
	if (err) {
		warnx("fork: %s", strerror(-err));
		return ZKL_EXIT_OSERR;
	}
	err = zkl_supervise(r, &status);
	if (err) {
		warnx("waiting for %s: %s", r->argv[0], strerror(-err));
		zkl_kill_tree(r);	/* nothing outlives the lock */
		return ZKL_EXIT_OSERR;
	}
	if (!r->lost && zkl_lock_lost_now(r->lockfd)) {
		warnx("lock lost (%s) while %s ran", r->entry, r->argv[0]);
		r->lost = true;
	}
	return r->lost ? ZKL_EXIT_LOST : zkl_exit_of(status);
}

/* --list ------------------------------------------------------------------ */

/* One row of the --list table; every field allocated. */
struct zkl_row {
	char *state, *kind, *entry, *host, *pid, *age;
};

/* Read all of @fd into *@out (to free, NUL-terminated). Return: length or -errno. */
static ssize_t zkl_read_all(int fd, char **out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;

	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 4096;
			nbuf = realloc(buf, cap + 1);
			if (!nbuf) {
				free(buf);
				return -ENOMEM;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

/*
 * The value of "@key=" in entry data @data (@len bytes, maybe binary), made
 * printable; "-" if absent. Return: an allocated string, or NULL (ENOMEM).
 */
static char *zkl_kv(const char *data, size_t len, const char *key)
{
	size_t klen = strlen(key);
	const char *p = data, *end = data + len;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - p) > klen && !memcmp(p, key, klen) &&
		    p[klen] == '=') {
			char *v = strndup(p + klen + 1, (size_t)(eol - p) - klen - 1);

			for (char *c = v; v && *c; c++)
				if ((unsigned char)*c < ' ' || *c == 0x7f)
					*c = '?';
			if (v && !*v) {
				free(v);
				return strdup("-");
			}
			return v;
		}
		p = nl ? nl + 1 : NULL;
	}
	return strdup("-");
}

/* @secs as 42s, 3m12s, 2h5m or 3d4h, into @buf. */
static void zkl_format_age(long long secs, char *buf, size_t size)
{
	if (secs < 0)
		secs = 0;
	if (secs < 60)
		snprintf(buf, size, "%llds", secs);
	else if (secs < 3600)
		snprintf(buf, size, "%lldm%llds", secs / 60, secs % 60);
	else if (secs < 86400)
		snprintf(buf, size, "%lldh%lldm", secs / 3600, secs % 3600 / 60);
	else
		snprintf(buf, size, "%lldd%lldh", secs / 86400, secs % 86400 / 3600);
}

/* Free the fields of @row. */
static void zkl_row_free(struct zkl_row *row)
{
	free(row->state);
	free(row->kind);
	free(row->entry);
	free(row->host);
	free(row->pid);
	free(row->age);
}

/*
 * Fill @row for child @name of @dir. Return: 0; -ENOENT if it is not a
 * queue entry (a subdirectory, no sequence number, gone meanwhile);
 * another negative errno.
 */
static int zkl_row_fill(const char *dir, const char *name, time_t now,
			struct zkl_row *row)
{
	char *path, *seq, *data = NULL, age[32];
	ssize_t len;
	struct stat st;
	int fd, err;

	*row = (struct zkl_row){ 0 };
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	err = lstat(path, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -ENOENT;
	if (err)
		goto out_free_path;
	len = zkl_getxattr(-1, path, XATTR_SEQ, &seq);
	if (len < 0) {
		err = len == -ENODATA ? -ENOENT : (int)len;
		goto out_free_path;
	}
	free(seq);
	len = zkl_getxattr(-1, path, XATTR_STATE, &row->state);
	if (len >= 0 && strcmp(row->state, "gone") == 0)
		len = -ENOENT;
	if (len >= 0)
		len = zkl_getxattr(-1, path, XATTR_KIND, &row->kind);
	if (len < 0) {
		err = len == -ENODATA ? -ENOENT : (int)len;
		goto out_free_row;
	}
	/* holder data: no O_CREAT, so this reads and takes no lock */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	len = fd < 0 ? -errno : zkl_read_all(fd, &data);
	if (fd >= 0)
		close(fd);
	if (len == -ENOENT) {
		err = -ENOENT;
		goto out_free_row;
	}
	row->host = zkl_kv(data ? data : "", len > 0 ? (size_t)len : 0, "host");
	row->pid = zkl_kv(data ? data : "", len > 0 ? (size_t)len : 0, "pid");
	free(data);
	zkl_format_age((long long)(now - st.st_ctime), age, sizeof(age));
	row->age = strdup(age);
	row->entry = strdup(name);
	if (!row->host || !row->pid || !row->age || !row->entry) {
		err = -ENOMEM;
		goto out_free_row;
	}
	free(path);
	return 0;

out_free_row:
	zkl_row_free(row);
out_free_path:
	free(path);
	return err;
}

/* Print @rows as the aligned --list table, with its header. */
static void zkl_print_table(const struct zkl_row *rows, size_t n)
{
	static const char *const head[] = {
		"POS", "STATE", "KIND", "ENTRY", "HOST", "PID", "AGE"
	};
	int w[7];
	char pos[24];

	for (int c = 0; c < 7; c++)
		w[c] = (int)strlen(head[c]);
	for (size_t i = 0; i < n; i++) {
		const char *f[] = { rows[i].state, rows[i].kind, rows[i].entry,
				    rows[i].host, rows[i].pid };
		int pl = snprintf(pos, sizeof(pos), "%zu", i + 1);

		if (pl > w[0])
			w[0] = pl;
		for (int c = 0; c < 5; c++)
			if ((int)strlen(f[c]) > w[c + 1])
				w[c + 1] = (int)strlen(f[c]);
	}
	printf("%*s  %-*s  %-*s  %-*s  %-*s  %*s  %s\n", w[0], head[0],
	       w[1], head[1], w[2], head[2], w[3], head[3], w[4], head[4],
	       w[5], head[5], head[6]);
	for (size_t i = 0; i < n; i++)
		printf("%*zu  %-*s  %-*s  %-*s  %-*s  %*s  %s\n", w[0], i + 1,
		       w[1], rows[i].state, w[2], rows[i].kind, w[3], rows[i].entry,
		       w[4], rows[i].host, w[5], rows[i].pid, rows[i].age);
}

/*
 * zklock --list: the queue of @dir in readdir (= queue) order.
 * Return: the exit status.
 */
static int zkl_list(const char *dir)
{
	struct zkl_row *rows = NULL, *nrows;
	size_t n = 0, cap = 0;
	time_t now = time(NULL);
	struct dirent *de;
	int err, status = 0;
	DIR *d;

	err = zkl_is_dir(dir);
	if (!err)
		err = zkl_check_zklockfs(dir);
	if (err)
		return zkl_lockdir_failed(dir, err);
	d = opendir(dir);
	if (!d)
		return zkl_lockdir_failed(dir, -errno);
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			nrows = reallocarray(rows, cap, sizeof(*rows));
			if (!nrows) {
				err = -ENOMEM;
				break;
			}
			rows = nrows;
		}
		err = zkl_row_fill(dir, de->d_name, now, &rows[n]);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (err) {
			warnx("%s/%s: %s", dir, de->d_name, strerror(-err));
			status = ZKL_EXIT_OSERR;	/* show the rest anyway */
			err = 0;
			continue;
		}
		n++;
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	if (err) {
		warnx("%s: %s", dir, strerror(-err));
		status = ZKL_EXIT_OSERR;
	} else {
		zkl_print_table(rows, n);
		if (fflush(stdout) == EOF)
			status = ZKL_EXIT_OSERR;
	}
	for (size_t i = 0; i < n; i++)
		zkl_row_free(&rows[i]);
	free(rows);
	return status;
}

/* main ---------------------------------------------------------------------- */

/* Free what @r holds and give the lock back. */
static void zkl_run_free(struct zkl_run *r)
{
	if (r->sigfd >= 0)
		close(r->sigfd);
	if (r->lockfd >= 0 && close(r->lockfd) < 0 && errno != EIO)
		warn("close");
	free(r->dir);
	free(r->name);
	free(r->entry);
	free(r->token);
}

int main(int argc, char **argv)
{
	struct zkl_opts o;
	struct zkl_run r = { .o = &o, .lockfd = -1, .sigfd = -1 };
	sigset_t alrm;
	int status;

	if (zkl_parse_args(argc, argv, &o))
		return ZKL_EXIT_USAGE;
	if (o.done)
		return fflush(stdout) == EOF ? ZKL_EXIT_OSERR : 0;
	if (o.list)
		return zkl_list(o.lockdir);

	/* the command gets our mask as we got it; -w needs SIGALRM */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	status = zkl_install_handlers();
	if (!status && (sigprocmask(SIG_SETMASK, NULL, &r.orig_mask) < 0 ||
			sigprocmask(SIG_UNBLOCK, &alrm, NULL) < 0))
		status = -errno;
	if (status) {
		warnx("signals: %s", strerror(-status));
		return ZKL_EXIT_OSERR;
	}
	status = zkl_prepare(&r);
	if (!status)
		status = zkl_acquire(&r);
	if (r.lockfd >= 0)		/* not "-E 0" after a conflict */
		status = zkl_run_command(&r);
	zkl_run_free(&r);
	return status;
}
