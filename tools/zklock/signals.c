// SPDX-License-Identifier: MIT
/*
 * tools/zklock/signals.c - zklock's signal dispositions, saved at start and
 * given back to the command; the handler and -w timer that end the wait
 * for the lock; the signalfd that takes the signals once it is held.
 */
#include "tools/zklock/signals.h"

#include <err.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>

#define CLI_TIMER_REPEAT_US	50000	/* SIGALRM again after the deadline */

/*
 * The signals zklock catches, and their dispositions at start (restored in
 * the command before exec). Ignored ones are left alone and not forwarded.
 */
static const int cli_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGALRM, SIGCHLD };
#define CLI_NSIGNALS	(sizeof(cli_signals) / sizeof(*cli_signals))
static struct sigaction cli_saved_actions[CLI_NSIGNALS];
static bool cli_ignored[CLI_NSIGNALS];	/* SIG_IGN at start */

/* The last SIGINT/SIGTERM/SIGHUP caught while waiting for the lock; 0 if none. */
static volatile sig_atomic_t cli_got_signal;
/* The -w timer expired (SIGALRM). */
static volatile sig_atomic_t cli_got_alarm;

/*
 * The signal handler while waiting: record, and let open() fail with EINTR.
 * A signal caught after the wait loop (cli_entry_take()) looked but before
 * open() blocked would interrupt nothing: SIGALRM then comes every
 * millisecond until it does.
 */
static void cli_on_signal(int sig)
{
	static const struct itimerval nudge = {
		.it_value.tv_usec = 1000, .it_interval.tv_usec = 1000,
	};
	int saved = errno;

	if (sig == SIGALRM) {
		cli_got_alarm = 1;
	} else {
		cli_got_signal = sig;
		setitimer(ITIMER_REAL, &nudge, NULL);
	}
	errno = saved;
}

/*
 * Install our handler (no SA_RESTART, so a waiting open() fails with EINTR)
 * for cli_signals, keeping ignored ones ignored and saving what was there
 * for the command. SIGCHLD gets its default: we wait for our child.
 * Return: 0 or a negative errno.
 */
static int cli_install_handlers(void)
{
	struct sigaction sa = { .sa_handler = cli_on_signal };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < CLI_NSIGNALS; i++) {
		if (sigaction(cli_signals[i], NULL, &cli_saved_actions[i]) < 0)
			return -errno;
		if (cli_signals[i] == SIGCHLD) {
			struct sigaction dfl = { .sa_handler = SIG_DFL };

			sigemptyset(&dfl.sa_mask);
			if (sigaction(SIGCHLD, &dfl, NULL) < 0)
				return -errno;
			continue;
		}
		cli_ignored[i] = cli_saved_actions[i].sa_handler == SIG_IGN &&
				 cli_signals[i] != SIGALRM;
		if (cli_ignored[i])
			continue;
		if (sigaction(cli_signals[i], &sa, NULL) < 0)
			return -errno;
	}
	return 0;
}

/* See signals.h. */
int cli_sig_install(sigset_t *orig_mask)
{
	sigset_t alrm;
	int err;

	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	err = cli_install_handlers();
	if (!err && (sigprocmask(SIG_SETMASK, NULL, orig_mask) < 0 ||
		     sigprocmask(SIG_UNBLOCK, &alrm, NULL) < 0))
		err = -errno;
	return err;
}

/* See signals.h. */
int cli_sig_caught(void)
{
	return cli_got_signal;
}

/* See signals.h. */
bool cli_sig_alarmed(void)
{
	return cli_got_alarm;
}

/* See signals.h. */
int cli_sig_arm_timer(double timeout)
{
	struct itimerval it = {
		.it_value.tv_sec = (time_t)timeout,
		.it_value.tv_usec = (suseconds_t)((timeout -
			(double)(time_t)timeout) * 1e6),
		.it_interval.tv_usec = CLI_TIMER_REPEAT_US,
	};

	if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
		it.it_value.tv_usec = 1;
	if (setitimer(ITIMER_REAL, &it, NULL) < 0)
		return -errno;
	cli_got_alarm = 0;	/* after: an old timer's SIGALRM came before */
	return 0;
}

/* See signals.h. */
void cli_sig_disarm_timer(void)
{
	struct itimerval it = { 0 };

	if (setitimer(ITIMER_REAL, &it, NULL) < 0)
		warn("setitimer");
}

/* See signals.h. */
int cli_sig_open_fd(int *fd)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < CLI_NSIGNALS; i++)
		if (cli_signals[i] != SIGALRM && !cli_ignored[i])
			sigaddset(&set, cli_signals[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	*fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return *fd < 0 ? -errno : 0;
}

/* See signals.h. */
void cli_sig_restore(const sigset_t *mask)
{
	for (size_t i = 0; i < CLI_NSIGNALS; i++)
		if (sigaction(cli_signals[i], &cli_saved_actions[i], NULL) < 0)
			warn("sigaction");
	if (sigprocmask(SIG_SETMASK, mask, NULL) < 0)
		warn("sigprocmask");
}

/* See signals.h. */
int cli_sig_thread(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);	/* the new thread's mask */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

/* See signals.h. */
void cli_sig_pause(void)
{
	struct timespec second = { 1, 0 };

	if (!cli_sig_caught() && !cli_sig_alarmed())
		nanosleep(&second, NULL);	/* EINTR at a caught signal */
}
