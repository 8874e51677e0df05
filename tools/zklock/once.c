// SPDX-License-Identifier: MIT
/* tools/zklock/once.c - zklock --once-per (see once.h). */
#include "tools/zklock/once.h"

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "abi/zklockfs.h"
#include "tools/zklock/lockdir.h"

#define XATTR_LASTRUN "user.zklockfs.lastrun"

/* @ms since the epoch (the ensemble's stamp) as UTC, into @buf. */
static void cli_stamp(long long ms, char *buf, size_t size)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&secs, &tm) ||
	    !strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, size, "%lld ms", ms);
	else
		snprintf(buf + strlen(buf), size - strlen(buf), ".%03lldZ", ms % 1000);
}

/* "HOST PID" of @label, as words ("web1 (pid 4242)"), into @buf. */
static void cli_label_words(const char *label, char *buf, size_t size)
{
	const char *sp = strrchr(label, ' ');

	if (sp)
		snprintf(buf, size, "%.*s (pid %s)", (int)(sp - label), label, sp + 1);
	else
		snprintf(buf, size, "%s", label);
}

/* Say the skip of a run, naming @label's run of @start_ms; the status. */
static int cli_once_skip(struct cli_run *r, long long start_ms, const char *label)
{
	char when[64], who[256];

	cli_stamp(start_ms, when, sizeof(when));
	cli_label_words(label, who, sizeof(who));
	warnx("%s: skipped: this period's run (--once-per) started %s on %s",
	      r->dir, when, who);
	return r->o->skipped_exit;
}

int cli_once_claim(struct cli_run *r)
{
	struct zklfs_ioc_run run;
	char host[128];

	memset(&run, 0, sizeof(run));
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	snprintf(run.label, sizeof(run.label), "%s %d", host, (int)getpid());
	run.period_ms = (uint64_t)(r->o->once_per * 1000);
	if (ioctl(r->lockfd, ZKLFS_IOC_RUN, &run) < 0) {
		if (errno == EIO) {
			warnx("%s: lock lost before %s started: no run recorded", r->dir,
			      r->argv[0]);
			return CLI_EXIT_LOST;
		}
		warnx("%s: cannot record this run (--once-per): %s", r->dir, strerror(errno));
		return errno == ENOTTY ? CLI_EXIT_NODIR : CLI_EXIT_OSERR;
	}
	run.label[sizeof(run.label) - 1] = '\0';
	if (!run.ran)
		return cli_once_skip(r, (long long)run.start_ms, run.label);
	r->run_start_ms = run.start_ms;
	snprintf(r->run_label, sizeof(r->run_label), "%s", run.label);
	if (r->o->verbose) {
		char when[64];

		cli_stamp((long long)run.start_ms, when, sizeof(when));
		warnx("%s: this period's run, recorded at %s", r->dir, when);
	}
	return -1;
}

void cli_once_done(struct cli_run *r, int status)
{
	struct zklfs_ioc_run run;

	if (!r->run_start_ms || r->lockfd < 0 || r->lost)
		return;
	memset(&run, 0, sizeof(run));
	run.start_ms = r->run_start_ms;
	run.exit_status = status < 0 ? 255 : status > 255 ? 255 : status;
	snprintf(run.label, sizeof(run.label), "%s", r->run_label);
	if (ioctl(r->lockfd, ZKLFS_IOC_RUN, &run) < 0 && r->o->verbose)
		warnx("%s: the run's exit status is not recorded: %s", r->dir, strerror(errno));
}

/* The last run of @path: its stamp, whether it exited (and how), its
 * label.  Return: false if none is recorded. */
static bool cli_once_read(const char *path, long long *start, int *exit_status,
			  char *label, size_t size)
{
	char *v = NULL, exitw[8];
	int off = 0;
	bool ok;

	ok = cli_lockdir_xattr(-1, path, XATTR_LASTRUN, &v) > 0 &&
	     sscanf(v, "%lld %7s %n", start, exitw, &off) == 2 && off > 0;
	if (ok) {
		*exit_status = strcmp(exitw, "-") == 0 ? -1 : atoi(exitw);
		snprintf(label, size, "%s", v + off);
	}
	free(v);
	return ok;
}

int cli_once_busy(struct cli_run *r)
{
	long long start;
	int exit_status;
	char label[512];

	if (!cli_once_read(r->dir, &start, &exit_status, label, sizeof(label)) ||
	    exit_status >= 0 || start <= 0)
		return -1;
	return cli_once_skip(r, start, label);
}

bool cli_once_last(const char *path, char *buf, size_t size)
{
	long long start;
	int exit_status;
	char label[512], when[64], who[600];

	if (!cli_once_read(path, &start, &exit_status, label, sizeof(label)))
		return false;
	cli_label_words(label, who, sizeof(who));
	if (start <= 0)
		snprintf(buf, size, "being recorded by %s", who);
	else if (cli_stamp(start, when, sizeof(when)), exit_status < 0)
		snprintf(buf, size, "started %s by %s, running", when, who);
	else
		snprintf(buf, size, "started %s by %s, exit %d", when, who, exit_status);
	return true;
}
