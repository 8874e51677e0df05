// SPDX-License-Identifier: MIT
/*
 * tools/zklock/zklock.h - what every part of zklock shares: its exit
 * statuses, the options, the state of one run, the clock.
 *
 * zklock is one thread, but for the watchdog's (watchdog.c), which shares
 * nothing of this but what it copies at its start; nothing here is locked. What the tool promises its
 * user is at the top of tools/zklock/main.c (and in docs/zklock.1).
 */
#ifndef TOOLS_ZKLOCK_ZKLOCK_H
#define TOOLS_ZKLOCK_ZKLOCK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sysexits.h>
#include <time.h>

/* The exit statuses of our own (the command's pass through otherwise). */
enum {
	CLI_EXIT_CONFLICT = 1,		/* default of -E */
	CLI_EXIT_USAGE = EX_USAGE,	/* 64 */
	CLI_EXIT_NODIR = EX_NOINPUT,	/* 66: LOCKDIR unusable */
	CLI_EXIT_UNAVAILABLE = EX_UNAVAILABLE,	/* 69: ZooKeeper did not answer
						   (--list, --metrics) */
	CLI_EXIT_OSERR = EX_OSERR,	/* 71 */
	CLI_EXIT_LOST = EX_TEMPFAIL,	/* 75: the lock was lost */
	CLI_EXIT_NOPERM = EX_NOPERM,	/* 77: -L asks a limit only the mount's
					   owner or root may set */
	CLI_EXIT_NOEXEC = 126,
	CLI_EXIT_NOTFOUND = 127,
};

/* What the command line asked for. Filled once by cli_opts_parse(). */
struct cli_opts {
	bool shared;		/* -s: O_RDONLY; else exclusive, O_WRONLY */
	bool nonblock;		/* -n, or -w 0 */
	double timeout;		/* -w SECONDS; < 0: wait as long as it takes */
	int conflict_code;	/* -E CODE */
	bool verbose;		/* --verbose */
	bool list;		/* --list */
	bool watch;		/* --watch */
	bool json;		/* --json, with --list or --watch */
	bool metrics;		/* --metrics MOUNTPOINT */
	bool confirm;		/* --confirm: is the lock of ZKLOCK_ENTRY held? */
	double once_per;	/* --once-per PERIOD, in seconds; 0: none */
	int skipped_exit;	/* --skipped-exit CODE (0) */
	bool state;		/* --state: print LOCKDIR's state ... */
	const char *state_set;	/* ... or, --set VALUE, publish VALUE */
	bool done;		/* --help/--version answered: exit 0 */
	double kill_after;	/* --kill-after SECONDS, after a loss */
	const char *name;	/* -N NAME; NULL: from the host name */
	int on_revoke;		/* --on-revoke=SIG: passed to the command when
				   its holder is asked to let go (SIGUSR1) */
	int on_doubt;		/* --on-doubt=SIG[,SIG2]: sent to the command's */
	int on_sure;		/* tree when the lock enters doubt, and when it
				   leaves it (0: none) */
	unsigned limit;		/* -L N: a semaphore of N holders; 0: none */
	bool per_host;		/* --per-host: LOCKDIR may end in the host name */
	const char *shell_cmd;	/* -c 'SHELL COMMAND' */
	const char *lockdir;
	char **argv;		/* COMMAND [ARG...]; NULL with -c */
};

/*
 * One running zklock: the lock it holds and the command it watches.
 * main.c owns it (fills it, frees it); entry.c sets lockfd, entry and
 * token; tree.c sets child, lost, blind and kill_failed.
 */
struct cli_run {
	const struct cli_opts *o;
	char *dir;		/* LOCKDIR, absolute */
	bool lockfile;		/* LOCKDIR is a lock file (zklockfs -o
				   lockfiles): lockfd is open from the start
				   and flock(2) takes the lock */
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
	bool revoked;		/* asked to let go: told the command (once) */
	bool doubt;		/* in doubt: told the command (--on-doubt) */
	int64_t run_start_ms;	/* --once-per: our run's stamp (0: none) */
	char run_label[192];	/* ... and its label */
	bool blind;		/* /proc unreadable: the command alone is seen */
	bool kill_failed;	/* a kill failed and was reported (once) */
	double t0;		/* cli_now() at start: -n's and -w's bounds
				   count from it */
};

/* cli_now() - monotonic time in seconds, for deadlines and --verbose. */
static inline double cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
