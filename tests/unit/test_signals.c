/* Unit tests: whether a pending signal ends the caller of a request, read
 * from its /proc/TID/status (fs/signals.c). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "fs/signals.h"

#define BIT(sig) (1ULL << ((sig) - 1))

/* A status as the kernel prints it, with the masks given. */
static const char *status(char *buf, size_t size, unsigned long long own,
			  unsigned long long shared, unsigned long long blocked,
			  unsigned long long ignored, unsigned long long caught)
{
	snprintf(buf, size,
		 "Name:\tprog\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\n"
		 "SigQ:\t0/95635\nSigPnd:\t%016llx\nShdPnd:\t%016llx\n"
		 "SigBlk:\t%016llx\nSigIgn:\t%016llx\nSigCgt:\t%016llx\n"
		 "CapInh:\t0000000000000000\n", own, shared, blocked, ignored, caught);
	return buf;
}

static enum zklfs_signal kind(unsigned long long own, unsigned long long shared,
			      unsigned long long blocked, unsigned long long ignored,
			      unsigned long long caught)
{
	char buf[512];

	return zklfs_signal_kind(status(buf, sizeof(buf), own, shared, blocked,
					ignored, caught));
}

#define ends(...) (kind(__VA_ARGS__) == ZKLFS_SIG_ENDS)
#define caught(...) (kind(__VA_ARGS__) == ZKLFS_SIG_CAUGHT)
#define stops(...) (kind(__VA_ARGS__) == ZKLFS_SIG_STOPS)

/* SIGKILL, on the thread (as the kernel queues it for every fatal signal)
 * or the process, ends it whatever else the masks say. */
static void test_sigkill_ends(void **state)
{
	(void)state;
	assert_true(ends(BIT(SIGKILL), 0, 0, 0, 0));
	assert_true(ends(0, BIT(SIGKILL), 0, 0, 0));
	assert_true(ends(BIT(SIGKILL) | BIT(SIGURG), 0, 0, 0, BIT(SIGURG)));
}

/* A default that terminates or dumps core ends it: ^C on ls, ^\, kill. */
static void test_default_disposition_ends(void **state)
{
	(void)state;
	assert_true(ends(0, BIT(SIGINT), 0, 0, 0));
	assert_true(ends(0, BIT(SIGQUIT), 0, 0, 0));
	assert_true(ends(0, BIT(SIGTERM), 0, 0, 0));
	assert_true(ends(BIT(SIGRTMIN + 2), 0, 0, 0, 0));
}

/* Caught (Go's SIGURG, Python's SIGINT, a job's SIGCHLD): the caller
 * lives on and would see the EINTR. */
static void test_caught(void **state)
{
	(void)state;
	assert_true(caught(BIT(SIGURG), 0, 0, 0, BIT(SIGURG)));
	assert_true(caught(0, BIT(SIGINT), 0, 0, BIT(SIGINT) | BIT(SIGCHLD)));
	assert_true(caught(0, BIT(SIGALRM) | BIT(SIGCHLD), 0, 0,
			   BIT(SIGALRM) | BIT(SIGCHLD)));
	assert_true(caught(0, BIT(SIGTSTP) | BIT(SIGUSR1), 0, 0, BIT(SIGUSR1)));
}

/* Ignored, or a default that stops, continues or is ignored: nothing of
 * the caller's runs before the answer (^Z, fg). */
static void test_stop_continue_and_ignore(void **state)
{
	(void)state;
	assert_true(stops(0, BIT(SIGTERM), 0, BIT(SIGTERM), 0));
	assert_true(stops(0, BIT(SIGTSTP), 0, 0, 0));
	assert_true(stops(0, BIT(SIGSTOP), 0, 0, 0));
	assert_true(stops(0, BIT(SIGCONT) | BIT(SIGTTIN) | BIT(SIGTTOU), 0, 0, 0));
	assert_true(stops(BIT(SIGCHLD) | BIT(SIGURG) | BIT(SIGWINCH), 0, 0, 0, 0));
	assert_true(stops(0, 0, 0, 0, 0));
}

/* A blocked signal waits: it does nothing yet. */
static void test_blocked(void **state)
{
	(void)state;
	assert_true(stops(0, BIT(SIGTERM), BIT(SIGTERM), 0, 0));
	assert_true(stops(0, BIT(SIGUSR1), BIT(SIGUSR1), 0, BIT(SIGUSR1)));
	assert_true(ends(0, BIT(SIGTERM) | BIT(SIGHUP), BIT(SIGTERM), 0, 0));
}

/* A status without the masks (a thread gone: an empty read) is a signal
 * we cannot tell, and a name that only ends like a field's is not taken
 * for it. */
static void test_missing_fields(void **state)
{
	char buf[512];

	(void)state;
	assert_int_equal(zklfs_signal_kind(""), ZKLFS_SIG_CAUGHT);
	assert_int_equal(zklfs_signal_kind("Name:\tx\nSigPnd:\t0000000000000100\n"),
			 ZKLFS_SIG_CAUGHT);
	snprintf(buf, sizeof(buf), "Name:\tSigPnd: fake\nXSigPnd:\t0000000000000100\n"
		 "ShdPnd:\t0\nSigBlk:\t0\nSigIgn:\t0\nSigCgt:\t0\n");
	assert_int_equal(zklfs_signal_kind(buf), ZKLFS_SIG_CAUGHT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigkill_ends),
		cmocka_unit_test(test_default_disposition_ends),
		cmocka_unit_test(test_caught),
		cmocka_unit_test(test_stop_continue_and_ignore),
		cmocka_unit_test(test_blocked),
		cmocka_unit_test(test_missing_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
