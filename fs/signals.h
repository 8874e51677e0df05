/*
 * fs/signals.h - what a pending signal does to the caller of a request:
 * read from its thread's /proc/TID/status at FUSE_INTERRUPT of a request
 * that waits on ZooKeeper (fs/pending.c).
 *
 * The kernel sends FUSE_INTERRUPT for any signal, and an EINTR answer
 * reaches the caller as EINTR whatever its handler's SA_RESTART says.  A
 * local disk never fails stat() or unlink() with EINTR, so programs
 * (Go's runtime, whose preemption signals come at any time, a job's
 * SIGCHLD handler, a shell's ^Z) do not retry them.  So the daemon
 * answers EINTR at once only to a caller the signal ends: nothing sees
 * the errno then.
 *
 * Pure: any thread.
 */
#ifndef FS_SIGNALS_H
#define FS_SIGNALS_H

enum zklfs_signal {
	ZKLFS_SIG_STOPS,	/* none it runs or dies of: it only stops or
				   goes on (SIGTSTP, SIGCONT), or nothing */
	ZKLFS_SIG_CAUGHT,	/* a handler of its own runs, or we cannot tell */
	ZKLFS_SIG_ENDS,		/* the process ends */
};

/*
 * zklfs_signal_kind() - @status is a /proc/TID/status: what do the
 * signals pending for that thread (its own or its process's), not
 * blocked, do?  ENDS for SIGKILL, or a signal whose disposition is the
 * default and the default ends the process (terminate or dump core);
 * else CAUGHT for one with a handler; else STOPS (ignored signals, and
 * defaults that stop, continue or ignore: SIGTSTP, SIGCONT, SIGCHLD,
 * SIGURG, SIGWINCH).  CAUGHT when @status lacks the fields (a thread
 * gone, or not ours to read).
 */
enum zklfs_signal zklfs_signal_kind(const char *status);

#endif
