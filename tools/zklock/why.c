// SPDX-License-Identifier: MIT
/* tools/zklock/why.c - why the command did not run (see why.h). */
#include "tools/zklock/why.h"

#include <err.h>
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "abi/zklockfs.h"

#include "tools/zklock/list.h"
#include "tools/zklock/signals.h"

/* See why.h. */
const char *cli_why_lost(struct cli_run *r)
{
	struct zklfs_ioc_text t;

	memset(&t, 0, sizeof(t));
	if (ioctl(r->lockfd, ZKLFS_IOC_LOSS, &t) < 0)
		return errno == ENOTCONN || errno == ENODEV || errno == EIO ?
		       "the mount went away (unmounted, or its daemon ended)" :
		       "the mount did not say why";
	if (!strcmp(t.text, "deleted"))
		return "its entry was deleted by someone else (an operator, another "
		       "client, user.zklockfs.break)";
	if (!strcmp(t.text, "silent"))
		return "the mount heard nothing from ZooKeeper for the session timeout "
		       "less the margin";
	if (!strcmp(t.text, "expired"))
		return "ZooKeeper expired the mount's session";
	return "the mount did not say why";
}

/* See why.h. */
int cli_why_not(struct cli_run *r, int err)
{
	const struct cli_opts *o = r->o;
	const char *lock = r->dir ? r->dir : o->lockdir;
	char who[600];
	int h = -EINTR;		/* -n's second is spent: ask nothing more */
	double took;

	if (err == -EAGAIN || (!o->nonblock && cli_sig_arm_timer(CLI_PROBE_BUDGET) == 0))
		h = cli_list_holder(lock, r->lockfile, who, sizeof(who));
	cli_sig_disarm_timer();
	took = cli_now() - r->t0;	/* the time it took, never the budget */
	if (h == 0)
		warnx("%s: held by %s", lock, who);
	else if (err == -EAGAIN && h == -ENOENT)
		warnx("%s: held when asked (nobody holds it now)", lock);
	else if (err == -EAGAIN)
		warnx("%s: held (who holds it could not be read: %s)", lock, strerror(-h));
	else if (h == -ENOENT)
		warnx("%s: not granted within %.2f s (nobody holds it now)", lock, took);
	else if (h == -EINTR || h == -ETIMEDOUT)
		warnx("%s: ZooKeeper did not answer within %.2f s: the lock was not taken, "
		      "and whether anyone holds it is unknown", lock, took);
	else
		warnx("%s: not granted within %.2f s (who holds it could not be read: %s)",
		      lock, took, strerror(-h));
	return o->conflict_code;
}
