// SPDX-License-Identifier: MIT
/*
 * tools/zklock/signals.h - zklock's signals through its life: the
 * dispositions it found (given back to the command), the handler and -w
 * timer that end the wait for the lock, the signalfd that takes over once
 * the lock is held.
 *
 * The signals are SIGINT, SIGTERM, SIGHUP (forwarded), SIGALRM (the -w
 * timer) and SIGCHLD. Those ignored when zklock started stay ignored, in
 * zklock and in the command, and are never forwarded. The order of calls:
 * cli_sig_install() once at start; while waiting for the lock the timer
 * and cli_sig_caught()/cli_sig_alarmed(); then cli_sig_open_fd(); in the
 * forked command, cli_sig_restore() before exec.
 */
#ifndef TOOLS_ZKLOCK_SIGNALS_H
#define TOOLS_ZKLOCK_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

/*
 * cli_sig_install() - save the dispositions and mask zklock started with
 * (the mask in *@orig_mask), install the handler that records a signal and
 * lets a waiting open() fail with EINTR (no SA_RESTART), give SIGCHLD its
 * default (zklock waits for its children) and unblock SIGALRM (-w needs it).
 * Called once, by main(), before anything else is done.
 * Return: 0 or a negative errno.
 */
int cli_sig_install(sigset_t *orig_mask);

/*
 * cli_sig_caught() - the last SIGINT/SIGTERM/SIGHUP caught while waiting
 * for the lock; 0 if none. Once one was caught, SIGALRM comes every
 * millisecond, so that an open() that had not blocked yet when it came
 * still fails with EINTR; cli_sig_disarm_timer() stops that.
 */
int cli_sig_caught(void);

/* cli_sig_alarmed() - whether the -w timer has expired (SIGALRM came). */
bool cli_sig_alarmed(void);

/*
 * cli_sig_pause() - wait a second before asking again a mount that said
 * ZooKeeper is silent (it answers ETIMEDOUT at once through an outage):
 * cut short by any signal the handler takes (a SIGINT, the -w timer).
 */
void cli_sig_pause(void);

/*
 * cli_sig_arm_timer() - arm the -w timer: SIGALRM in @timeout seconds (> 0),
 * then again every 50 ms, so that one landing just before open() blocks is
 * not lost. Re-arming replaces the timer and clears cli_sig_alarmed().
 * Return: 0 or a negative errno.
 */
int cli_sig_arm_timer(double timeout);

/* cli_sig_disarm_timer() - stop SIGALRM (says so on stderr if it cannot). */
void cli_sig_disarm_timer(void);

/*
 * cli_sig_open_fd() - from now on, take the signals through a signalfd
 * (close-on-exec, non-blocking) in *@fd: block SIGCHLD and the forwarded
 * SIGINT/SIGTERM/SIGHUP (not those ignored at start). Called once the lock
 * is held, before the command is forked.
 * Return: 0; a negative errno (then *@fd is -1 if signalfd() failed).
 */
int cli_sig_open_fd(int *fd);

/*
 * cli_sig_thread() - start @fn(@arg) on a detached thread that blocks
 * every signal: the signals are the main thread's (SIGALRM must end its
 * open(), SIGCHLD reach its signalfd), and a process-directed signal goes
 * to any thread that does not block it.  zklock's helper threads
 * (watchdog.c, waitinfo.c) start this way.  Return: 0 or a negative errno.
 */
int cli_sig_thread(void *(*fn)(void *), void *arg);

/*
 * cli_sig_restore() - in the forked command: give back the dispositions
 * zklock started with, and the signal mask @mask (cli_sig_install()'s
 * *orig_mask). Failures are reported on stderr and otherwise ignored.
 */
void cli_sig_restore(const sigset_t *mask);

#endif
