/* fs/signals.c - what a pending signal does to the caller (signals.h). */
#include "fs/signals.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BIT(sig) (UINT64_C(1) << ((sig) - 1))

/* Signals whose default action does not end the process (signal(7)):
 * stop, continue, or ignore. */
static const uint64_t kept = BIT(SIGCHLD) | BIT(SIGCONT) | BIT(SIGSTOP) |
	BIT(SIGTSTP) | BIT(SIGTTIN) | BIT(SIGTTOU) | BIT(SIGURG) | BIT(SIGWINCH);

/* The mask on the line "@name:\t<hex>" of @status into @mask.  Return:
 * whether the line is there. */
static bool mask(const char *status, const char *name, uint64_t *mask)
{
	size_t len = strlen(name);
	const char *p = status;
	char *end;

	while ((p = strstr(p, name))) {
		if ((p == status || p[-1] == '\n') && p[len] == ':') {
			*mask = strtoull(p + len + 1, &end, 16);
			return end != p + len + 1;
		}
		p += len;
	}
	return false;
}

enum zklfs_signal zklfs_signal_kind(const char *status)
{
	uint64_t own, shared, blocked, ignored, caught, pending;

	if (!mask(status, "SigPnd", &own) || !mask(status, "ShdPnd", &shared) ||
	    !mask(status, "SigBlk", &blocked) || !mask(status, "SigIgn", &ignored) ||
	    !mask(status, "SigCgt", &caught))
		return ZKLFS_SIG_CAUGHT;
	pending = (own | shared) & ~blocked & ~ignored;
	/* SIGKILL cannot be blocked, caught or ignored; for a signal that
	 * ends the whole process the kernel queues SIGKILL to every thread */
	if (pending & ~caught & ~kept)
		return ZKLFS_SIG_ENDS;
	return pending & caught ? ZKLFS_SIG_CAUGHT : ZKLFS_SIG_STOPS;
}
