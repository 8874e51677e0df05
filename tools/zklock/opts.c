// SPDX-License-Identifier: MIT
/*
 * tools/zklock/opts.c - zklock's command line: parse it into struct
 * cli_opts, answer --help and --version, refuse what cannot work.
 */
#include "tools/zklock/opts.h"

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <strings.h>

#include "zk/naming.h"

#ifndef ZKLOCKFS_VERSION
#error "ZKLOCKFS_VERSION comes from debian/changelog (the Makefile passes it)"
#endif

#define CLI_SECONDS_MAX		1e9	/* any -w/--kill-after must fit a time_t */

/* --help text on @f; exits with @status. */
static void __attribute__((noreturn)) cli_usage(FILE *f, int status)
{
	fprintf(f,
"Usage:\n"
"  zklock [options] LOCKDIR COMMAND [ARG...]\n"
"  zklock [options] LOCKDIR -c 'SHELL COMMAND'\n"
"  zklock --list [--json] LOCKDIR\n"
"  zklock --watch [--json] LOCKDIR\n"
"  zklock --metrics MOUNTPOINT\n"
"  zklock --confirm\n"
"  zklock --state LOCKDIR [--set VALUE]\n"
"  zklock --once-per PERIOD [options] LOCKDIR COMMAND [ARG...]\n"
"\n"
"Run a command while holding a zklockfs (ZooKeeper) lock. LOCKDIR is a\n"
"directory on a zklockfs mount, created if missing, or a lock file on a\n"
"mount with -o lockfiles (taken with flock(2), as flock(1) does).\n"
"\n"
"Options:\n"
"  -x, -e, --exclusive        exclusive lock (the default)\n"
"  -s, --shared               shared lock\n"
"  -n, --nonblock, --nb       fail at once if the lock is not free\n"
"  -w, --timeout, --wait SECS give up after SECS (fractions allowed)\n"
"  -E, --conflict-exit-code N exit status for -n/-w failures (default 1)\n"
"  -c, --command CMD          run CMD with $SHELL -c (default /bin/sh)\n"
"  -N, --name NAME            entry name (default: the host name)\n"
"  -L, --limit N              LOCKDIR is a semaphore of N holders (1 to 1000):\n"
"                             set if it has no limit, else it must be N\n"
"  -k, --kill-after SECS      SIGKILL what the command left running SECS\n"
"                             after SIGTERM (default 10; a lost lock: at once)\n"
"  -o, --close                accepted for flock(1) compatibility (always so)\n"
"      --once-per PERIOD      run COMMAND only if no run under LOCKDIR started\n"
"                             within PERIOD (seconds, or 30m, 1h, 1d), as the\n"
"                             ZooKeeper ensemble's clock says: the cluster's\n"
"                             cron (for a job cron starts every INTERVAL,\n"
"                             about INTERVAL/2); a skip exits 0\n"
"      --skipped-exit CODE    exit status of a skip (default 0)\n"
"      --on-revoke SIG        signal for the command when someone asks the\n"
"                             lock's holder to let go (default USR1; not\n"
"                             STOP, TSTP, TTIN or TTOU)\n"
"      --on-doubt SIG[,SIG2]  signal for the command's processes when the\n"
"                             mount cannot tell whether the lock still holds\n"
"                             (ZooKeeper unheard), and SIG2 once it holds\n"
"                             again (none by default; not the stop signals)\n"
"      --per-host             let LOCKDIR end in this host's name: a lock of\n"
"                             this host's own, which excludes no other host\n"
"      --verbose              say how long getting the lock took\n"
"      --list                 print LOCKDIR's queue\n"
"      --watch                print who holds LOCKDIR, and again at each change\n"
"                             (one ZooKeeper watch per lock and mount)\n"
"      --json                 with --list or --watch: one JSON object a line\n"
"      --metrics              print the figures of the mount at LOCKDIR (its\n"
"                             mount point), in the Prometheus text format\n"
"      --state                print the state LOCKDIR's holder published\n"
"                             (LOCKDIR/.state); with --set VALUE, run by the\n"
"                             command under zklock, publish VALUE (exit 75:\n"
"                             the lock is lost, and nothing changed)\n"
"      --confirm              run by a command under zklock: exit 0 if its\n"
"                             lock ($ZKLOCK_ENTRY) is still held, as ZooKeeper\n"
"                             says now, else 75\n"
"  -h, --help                 this text\n"
"  -V, --version              version\n"
"\n"
"Exit status: the command's; 128+N if it died of signal N; 1 (-E) if the\n"
"lock was busy; 64 usage; 66 bad LOCKDIR; 71 system error; 75 lock lost;\n"
"126/127 command not executable/not found. See zklock(1).\n");
	exit(status);
}

/* Parse a non-negative number of seconds into *@out. Return: 0 or -EINVAL. */
static int cli_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 ||
	    v >= CLI_SECONDS_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * --once-per PERIOD: a whole number of seconds, or of minutes, hours or
 * days with m, h or d after it (30m, 1h, 1d), 1 s to 366 days, into
 * *@out seconds.  Return: 0 or -EINVAL.
 */
static int cli_parse_period(const char *s, double *out)
{
	char *end;
	long v;
	double unit = 1;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || v < 1)
		return -EINVAL;
	if (*end == 's' || *end == 'm' || *end == 'h' || *end == 'd') {
		unit = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 : 86400;
		end++;
	}
	if (*end || v * unit > 366 * 86400.0)
		return -EINVAL;
	*out = (double)v * unit;
	return 0;
}

/* Parse an exit status (0..255) into *@out. Return: 0 or -EINVAL. */
static int cli_parse_code(const char *s, int *out)
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

/* -L N: a semaphore's limit, 1 to 1000 (as zklockfs takes it). */
static int cli_parse_limit(const char *s, unsigned *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 1000 || *s == '+' || *s == '0')
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* --on-revoke=SIG: a name (USR1, SIGUSR1; any case) or a number, 1..SIGRTMAX.
 * The stop signals are named too, to be refused by name (cli_stop_signal()). */
static int cli_parse_signal(const char *s, int *out)
{
	static const struct { const char *name; int sig; } names[] = {
		{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "ALRM", SIGALRM },
		{ "TERM", SIGTERM }, { "CONT", SIGCONT }, { "WINCH", SIGWINCH },
		{ "KILL", SIGKILL }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
		{ "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },
	};
	char *end;
	long v;

	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].sig;
			return 0;
		}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > SIGRTMAX)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/*
 * Would @sig stop the command (its default action) rather than ask it to
 * let go?  A stopped command keeps the lock, frozen, until someone
 * continues it: the request would lock everyone out instead.
 */
static bool cli_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}


/* See opts.h.  The daemon's own check (zk/naming.c), for either naming
 * scheme and kind: a NAME no mount takes is refused before one is asked. */
bool cli_opts_name_ok(const char *name)
{
	for (int s = ZKN_CURATOR; s <= ZKN_KAZOO; s++)
		for (int k = ZKN_EXCLUSIVE; k <= ZKN_SHARED; k++)
			if (zkn_check_entry_name(name, (enum zkn_naming)s,
						 (enum zkn_kind)k))
				return false;
	return true;
}

/*
 * Report a usage error (@fmt may be NULL: getopt has said what) and point
 * to --help. Return: -EINVAL.
 */
static int __attribute__((format(printf, 1, 2))) cli_bad_usage(const char *fmt, ...)
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
 * --on-doubt=SIG[,SIG2]: the signal sent as the lock enters doubt, and
 * the one sent as it leaves it (optional).  A stop signal is refused, as
 * for --on-revoke: a command stopped while its lock is lost could not be
 * ended with the grace a loss allows.  Return: 0, or the usage error told.
 */
static int cli_parse_doubt(const char *arg, struct cli_opts *o)
{
	char first[32];
	const char *comma = strchr(arg, ',');
	size_t len = comma ? (size_t)(comma - arg) : strlen(arg);
	int *sig[2] = { &o->on_doubt, &o->on_sure };
	const char *part[2];

	if (len >= sizeof(first))
		return cli_bad_usage("invalid signal: '%s'", arg);
	memcpy(first, arg, len);
	first[len] = '\0';
	part[0] = first;
	part[1] = comma ? comma + 1 : NULL;
	o->on_sure = 0;
	for (int i = 0; i < 2 && part[i]; i++) {
		if (cli_parse_signal(part[i], sig[i]))
			return cli_bad_usage("invalid signal: '%s'", part[i]);
		if (cli_stop_signal(*sig[i]))
			return cli_bad_usage("--on-doubt %s would stop the command while "
					     "its lock may be lost: choose a signal it "
					     "handles", part[i]);
	}
	return 0;
}

/* See opts.h. */
int cli_opts_parse(int argc, char **argv, struct cli_opts *o)
{
	enum { OPT_VERBOSE = 256, OPT_LIST, OPT_ON_REVOKE, OPT_ON_DOUBT, OPT_STATE, OPT_SET,
	       OPT_ONCE_PER, OPT_SKIPPED_EXIT, OPT_METRICS, OPT_CONFIRM,
	       OPT_PER_HOST, OPT_WATCH, OPT_JSON };
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
		{ "limit",		required_argument,	NULL, 'L' },
		{ "kill-after",		required_argument,	NULL, 'k' },
		{ "close",		no_argument,		NULL, 'o' },
		{ "verbose",		no_argument,		NULL, OPT_VERBOSE },
		{ "on-revoke",		required_argument,	NULL, OPT_ON_REVOKE },
		{ "on-doubt",		required_argument,	NULL, OPT_ON_DOUBT },
		{ "list",		no_argument,		NULL, OPT_LIST },
		{ "watch",		no_argument,		NULL, OPT_WATCH },
		{ "json",		no_argument,		NULL, OPT_JSON },
		{ "confirm",		no_argument,		NULL, OPT_CONFIRM },
		{ "state",		no_argument,		NULL, OPT_STATE },
		{ "once-per",		required_argument,	NULL, OPT_ONCE_PER },
		{ "skipped-exit",	required_argument,	NULL, OPT_SKIPPED_EXIT },
		{ "set",		required_argument,	NULL, OPT_SET },
		{ "metrics",		no_argument,		NULL, OPT_METRICS },
		{ "per-host",		no_argument,		NULL, OPT_PER_HOST },
		{ "help",		no_argument,		NULL, 'h' },
		{ "version",		no_argument,		NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rest, err;

	*o = (struct cli_opts){ .timeout = -1, .kill_after = 10,
				.conflict_code = CLI_EXIT_CONFLICT,
				.on_revoke = SIGUSR1 };
	while ((c = getopt_long(argc, argv, "+sxenw:E:c:N:L:k:ohV", longopts,
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
			if (cli_parse_seconds(optarg, &o->timeout))
				return cli_bad_usage("invalid timeout: '%s'", optarg);
			break;
		case 'E':
			if (cli_parse_code(optarg, &o->conflict_code))
				return cli_bad_usage("invalid exit code: '%s'", optarg);
			break;
		case 'c':
			o->shell_cmd = optarg;
			break;
		case 'N':
			if (!cli_opts_name_ok(optarg))
				return cli_bad_usage("invalid entry name: '%s'", optarg);
			o->name = optarg;
			break;
		case 'L':
			if (cli_parse_limit(optarg, &o->limit))
				return cli_bad_usage("invalid limit: '%s' (1 to 1000)", optarg);
			break;
		case 'k':
			if (cli_parse_seconds(optarg, &o->kill_after))
				return cli_bad_usage("invalid --kill-after: '%s'", optarg);
			break;
		case 'o':
			break;
		case OPT_VERBOSE:
			o->verbose = true;
			break;
		case OPT_LIST:
			o->list = true;
			break;
		case OPT_WATCH:
			o->watch = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_METRICS:
			o->metrics = true;
			break;
		case OPT_CONFIRM:
			o->confirm = true;
			break;
		case OPT_STATE:
			o->state = true;
			break;
		case OPT_ONCE_PER:
			if (cli_parse_period(optarg, &o->once_per))
				return cli_bad_usage("invalid --once-per: '%s' (a number of "
						     "seconds, or 30m, 1h, 1d)", optarg);
			break;
		case OPT_SKIPPED_EXIT:
			if (cli_parse_code(optarg, &o->skipped_exit))
				return cli_bad_usage("invalid --skipped-exit: '%s'", optarg);
			break;
		case OPT_SET:
			o->state_set = optarg;
			break;
		case OPT_PER_HOST:
			o->per_host = true;
			break;
		case OPT_ON_REVOKE:
			if (cli_parse_signal(optarg, &o->on_revoke))
				return cli_bad_usage("invalid signal: '%s'", optarg);
			if (cli_stop_signal(o->on_revoke))
				return cli_bad_usage("--on-revoke %s would stop the command while it keeps the lock: "
						     "choose a signal that asks it to let go",
						     optarg);
			break;
		case OPT_ON_DOUBT:
			err = cli_parse_doubt(optarg, o);
			if (err)
				return err;
			break;
		case 'h':
			cli_usage(stdout, 0);
		case 'V':
			printf("zklock from zklockfs %s\n", ZKLOCKFS_VERSION);
			o->done = true;
			return 0;
		default:
			return cli_bad_usage(NULL);
		}
	}
	if (o->confirm) {
		if (optind < argc || o->list || o->metrics)
			return cli_bad_usage("--confirm takes no argument: it confirms "
					     "$ZKLOCK_ENTRY");
		return 0;
	}
	if (optind >= argc)
		return cli_bad_usage("no LOCKDIR given");
	o->lockdir = argv[optind++];
	if (!*o->lockdir)
		return cli_bad_usage("empty LOCKDIR");
	rest = argc - optind;
	/* --state LOCKDIR --set VALUE: the option after LOCKDIR, as shown */
	if (o->state && !o->state_set && rest == 2 && strcmp(argv[optind], "--set") == 0) {
		o->state_set = argv[optind + 1];
		rest = 0;
	} else if (o->state && !o->state_set && rest == 1 &&
		   strncmp(argv[optind], "--set=", 6) == 0) {
		o->state_set = argv[optind] + 6;
		rest = 0;
	}
	if (o->list + o->metrics + o->watch + o->state > 1)
		return cli_bad_usage("one of --list, --watch, --state and --metrics at a time");
	if (o->json && !o->list && !o->watch)
		return cli_bad_usage("--json goes with --list or --watch");
	if (o->state_set && !o->state)
		return cli_bad_usage("--set goes with --state");
	if (o->skipped_exit && !o->once_per)
		return cli_bad_usage("--skipped-exit goes with --once-per");
	if (o->once_per && (o->shared || o->list || o->watch || o->metrics || o->state))
		return cli_bad_usage("--once-per runs a command under an exclusive lock");
	if (o->list || o->metrics || o->watch || o->state) {
		if (rest || o->shell_cmd)
			return cli_bad_usage("%s takes only %s", o->list ? "--list" :
					     o->watch ? "--watch" : o->state ? "--state" :
					     "--metrics", o->metrics ? "MOUNTPOINT" : "LOCKDIR");
		return 0;
	}
	if (rest && (strcmp(argv[optind], "-c") == 0 ||
		     strcmp(argv[optind], "--command") == 0)) {
		if (rest != 2 || o->shell_cmd)
			return cli_bad_usage("%s requires exactly one command argument",
					     argv[optind]);
		o->shell_cmd = argv[optind + 1];
		rest = 0;
	}
	if (o->shell_cmd && rest)
		return cli_bad_usage("-c takes one command: no more arguments");
	if (!o->shell_cmd && !rest)
		return cli_bad_usage("no command given");
	o->argv = rest ? argv + optind : NULL;
	if (o->timeout == 0)
		o->nonblock = true;
	return 0;
}
