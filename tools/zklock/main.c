// SPDX-License-Identifier: MIT
/*
 * tools/zklock/main.c - flock(1) over zklockfs: run a command while holding
 * a lock. This file is the flow, from the command line to the exit status;
 * the parts are opts.c, lockdir.c, entry.c, signals.c, tree.c and list.c.
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
 *   but only below a directory that is already on zklockfs. If the open
 *   finds LOCKDIR gone (zklockfs -o containers: the server deletes emptied
 *   directories), LOCKDIR is made again and opened again, 5 times at most.
 * - The lock is taken with open(LOCKDIR/NAME, O_CREAT|O_EXCL|O_CLOEXEC and
 *   O_WRONLY (exclusive) or O_RDONLY (shared)). Once granted, the descriptor
 *   is handed to the command (close-on-exec cleared, its number in
 *   ZKLOCK_FD): the owner of a lock is its open file description, and
 *   through that descriptor alone a nested zklock of the same lock knows it
 *   runs under it and --confirm asks the mount (fsync). zklock watches it for
 *   loss and closes its own copy only once the command's whole tree is gone.
 * - -n adds O_NONBLOCK (EAGAIN: conflict). -n and -w arm ITIMER_REAL at
 *   the start (-n: 0.8 s, -w: SECONDS), whose SIGALRM handler (installed
 *   without SA_RESTART) interrupts whichever call into the mount is under
 *   way with EINTR: the waiting open, which removes the entry, or a lookup
 *   that waits for a silent ZooKeeper. The timer re-fires every 50 ms after
 *   the deadline, so a SIGALRM landing just before open() blocks is not
 *   lost. Then why.c says in one line whether the lock was held or
 *   ZooKeeper did not answer, within 1 s (-n) or SECONDS + 1 s (-w).
 * - Without -n or -w, a call that the mount answers ETIMEDOUT (ZooKeeper
 *   silent for its session timeout) is made again: zklock waits through
 *   an outage, as a blocked open() does.
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
 *   the tree gets SIGKILL at once (another host may hold the lock from
 *   then on, as the mount's on_loss=end does); zklock exits 75
 *   (EX_TEMPFAIL) once none is left.
 * - When the command exits and leaves processes behind, they are ended the
 *   same way (SIGTERM, SIGKILL after --kill-after) before the lock is given
 *   back; zklock exits with the command's status.
 * - SIGINT, SIGTERM and SIGHUP that zklock receives while the tree runs are
 *   passed on to every process of it, except those the kernel sends to the
 *   whole process group (a terminal's ^C, si_code SI_KERNEL): the processes
 *   in the group got those already. Signals that were ignored when zklock
 *   started stay ignored, in zklock and in the command.
 * - The command gets PR_SET_PDEATHSIG SIGTERM: if zklock dies (kill -9), the
 *   command is told (its descendants are not), and the lock goes once the
 *   processes that hold its descriptor have ended.
 *
 * Exit status: the command's; 128+N if it died of signal N; the conflict code
 * (-E, default 1) for -n/-w; 64 usage; 66 LOCKDIR missing, not on zklockfs or
 * not creatable; 69 ZooKeeper did not answer (--list, --metrics); 71 other
 * system errors; 75 lock lost, or may be lost (the watchdog); 126/127
 * command not executable/not found.
 * - While the command runs, the watchdog (watchdog.c) ends its tree with
 *   SIGKILL and exits 75 at the instant the daemon's session may be gone,
 *   even if the daemon stopped answering: it never calls into the mount.
 *
 * Errors travel as negative errno (kernel style); main() turns them into an
 * exit status and the one line on stderr that says why.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "abi/zklockfs.h"

#include "tools/zklock/bound.h"
#include "tools/zklock/entry.h"
#include "tools/zklock/list.h"
#include "tools/zklock/lockdir.h"
#include "tools/zklock/once.h"
#include "tools/zklock/opts.h"
#include "tools/zklock/signals.h"
#include "tools/zklock/state.h"
#include "tools/zklock/tree.h"
#include "tools/zklock/waitinfo.h"
#include "tools/zklock/watch.h"
#include "tools/zklock/watchdog.h"
#include "tools/zklock/why.h"
#include "tools/zklock/zklock.h"

/* Whether the lock was lost by now (a last look, after the command). */
static bool cli_lock_lost_now(int lockfd)
{
	struct pollfd pfd = { .fd = lockfd, .events = 0 };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLERR | POLLHUP));
}

/* The exit status zklock passes on for a command's wait @status. */
static int cli_exit_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return CLI_EXIT_OSERR;
}

/*
 * Open the lock file LOCKDIR (made if missing): r->lockfd, which holds
 * nothing until cli_entry_take() flocks it.  Return: 0 or a negative errno.
 */
static int cli_lockfile_open(struct cli_run *r)
{
	r->lockfd = open(r->o->lockdir, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
	if (r->lockfd < 0)
		return -errno;
	return cli_lockdir_check(r->o->lockdir);
}

/*
 * The lock: a lock file opened (r->lockfd), or the lock directory made and
 * checked; its limit as asked; its absolute path in r->dir.
 * Return: 0 or a negative errno (-EEXIST: another limit, said).
 */
static int cli_prepare_lock(struct cli_run *r)
{
	const struct cli_opts *o = r->o;
	int err;

	if (r->lockfd >= 0) {		/* a try before this one */
		close(r->lockfd);
		r->lockfd = -1;
	}
	err = cli_lockdir_lockfile(o->lockdir);
	if (err > 0) {
		r->lockfile = true;
		err = cli_lockfile_open(r);
	} else if (!err) {
		err = cli_lockdir_make(o->lockdir);
	}
	if (!err && o->limit)
		err = cli_lockdir_limit(o->lockdir, o->limit);
	else if (!err)
		err = cli_lockdir_no_limit(o->lockdir);
	if (!err) {
		r->dir = realpath(o->lockdir, NULL);
		if (!r->dir)
			err = -errno;
	}
	return err;
}

/*
 * Prepare r: the lock (cli_prepare_lock(), again while the mount says
 * ZooKeeper does not answer, until -n's or -w's timer runs out), the entry
 * NAME and the command's argv.  Return: 0 or an exit status.
 */
static int cli_prepare(struct cli_run *r)
{
	const struct cli_opts *o = r->o;
	bool said = false;
	int err;

	if (!o->per_host && cli_entry_per_host(o->lockdir)) {
		int plen = (int)strlen(o->lockdir);

		while (plen > 1 && o->lockdir[plen - 1] == '/')	/* "a/host/" */
			plen--;
		while (plen > 0 && o->lockdir[plen - 1] != '/')	/* its parent */
			plen--;
		while (plen > 1 && o->lockdir[plen - 1] == '/')
			plen--;

		warnx("%s ends in this host's name: each host would take a lock of its "
		      "own, which excludes no other host. Name the lock the same way on "
		      "every host (zklock %.*s ..., which every host names alike), or pass "
		      "--per-host if a lock per host is what you want", o->lockdir,
		      plen > 0 ? plen : 1, plen > 0 ? o->lockdir : ".");
		return CLI_EXIT_USAGE;
	}
	while ((err = cli_prepare_lock(r)) == -ETIMEDOUT && !cli_sig_alarmed() &&
	       !cli_sig_caught()) {
		if (!said && o->verbose)
			warnx("%s: ZooKeeper does not answer the mount: waiting", o->lockdir);
		said = true;
		cli_sig_pause();	/* the mount answers at once while silent */
	}
	if (err == -EINTR && cli_sig_caught())
		return 128 + cli_sig_caught();
	if ((err == -EINTR && cli_sig_alarmed()) || err == -ETIMEDOUT)
		return cli_why_not(r, -ETIMEDOUT);
	if (err == -EEXIST)
		return CLI_EXIT_NODIR;		/* another limit, or one unasked: said */
	if (err == -EPERM)
		return CLI_EXIT_NOPERM;		/* a limit only the mount's owner sets: said */
	if (err)
		return cli_lockdir_failed(o->lockdir, err);
	if (o->name) {
		r->name = strdup(o->name);
		err = r->name ? 0 : -ENOMEM;
	} else {
		err = cli_entry_default_name(&r->name);
	}
	if (err) {
		warnx("%s", strerror(-err));
		return CLI_EXIT_OSERR;
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

/* Why an inherited ZKLOCK_FD did not make this zklock a nested one (NULL:
 * none was inherited), said when the lock is then found busy. */
static const char *cli_not_nested;

/*
 * Are we inside the command of a zklock that holds this very lock?  Only
 * its descriptor says so: ZKLOCK_FD names a descriptor open here that
 * stands for this lock and holds it.  Then waiting would be waiting on
 * our own parent: run the command at once, holding the lock through that
 * descriptor (shared under exclusive too; exclusive under shared cannot
 * be).  The environment alone, or a descriptor of another lock, makes
 * nothing nested: such a zklock queues like any other.  Return: -1 if not
 * nested (take the lock), else the exit status (the command is not run).
 */
static int cli_nested(struct cli_run *r)
{
	const char *env = getenv("ZKLOCK_FD");
	int fd = cli_inherited_fd();
	char state[64], kind[64];
	int err;

	if (fd < 0 || !cli_fd_is_lock(fd, r->dir, r->lockfile)) {
		if (env && *env)
			cli_not_nested = fd < 0 ? "names no open descriptor" :
					 "is not a descriptor of this lock";
		return -1;
	}
	err = cli_entry_fd_text(fd, ZKLFS_IOC_STATE, state, sizeof(state));
	if (!err && strcmp(state, "lost") == 0) {
		warnx("the lock %s that this runs under is lost", r->dir);
		return CLI_EXIT_LOST;
	}
	if (!err)
		err = cli_entry_fd_text(fd, ZKLFS_IOC_KIND, kind, sizeof(kind));
	if (err) {		/* it holds nothing (given back, waiting) */
		cli_not_nested = "holds nothing of this lock";
		return -1;
	}
	if (!r->o->shared && strcmp(kind, "shared") == 0) {
		warnx("%s is held shared by the zklock this runs under: it cannot be "
		      "taken exclusive inside it", r->dir);
		return CLI_EXIT_CONFLICT;
	}
	if (r->o->verbose)
		warnx("%s is held through descriptor %d (ZKLOCK_FD), by the zklock "
		      "this runs under: executing %s at once", r->dir, fd, r->argv[0]);
	fflush(NULL);
	cli_sig_disarm_timer();		/* an exec keeps it */
	cli_bound_held();		/* the command's own stdio */
	cli_sig_restore(&r->orig_mask);
	return cli_tree_exec(r);
}

/*
 * Take the lock, with --verbose's report. Return: 0 with r->lockfd, or the
 * exit status to leave with (r->lockfd stays -1: -E may make that 0).
 */
static int cli_acquire(struct cli_run *r)
{
	const struct cli_opts *o = r->o;
	double t0 = cli_now(), took;
	struct stat st;
	char *path;
	int err;

	if (asprintf(&path, "%s/%s", r->dir, r->name) < 0) {
		warnx("%s", strerror(ENOMEM));
		return CLI_EXIT_OSERR;
	}
	cli_waitinfo_start(r);		/* --verbose, or a terminal: who holds it */
	err = cli_entry_take(r, path);
	cli_waitinfo_stop();
	took = cli_now() - t0;
	switch (err) {
	case 0:
		if (o->verbose)
			fprintf(stderr, "%s: getting lock took %.6f seconds\n",
				program_invocation_short_name, took);
		break;
	case -EAGAIN:
		if (o->verbose)
			warnx("failed to get lock");
		if (cli_not_nested)
			warnx("ZKLOCK_FD (%s) %s: this zklock queued as any other",
			      getenv("ZKLOCK_FD"), cli_not_nested);
		err = cli_why_not(r, err);
		break;
	case -ETIMEDOUT:
		if (o->verbose)
			warnx("timeout while waiting to get lock");
		err = cli_why_not(r, err);
		break;
	case -EINTR:
		if (o->verbose)
			warnx("interrupted by signal %d while waiting",
			      cli_sig_caught());
		err = 128 + cli_sig_caught();
		break;
	case -ENOENT:
	case -ENOTZKLOCKFS:
		err = cli_lockdir_failed(r->dir, err);
		break;
	case -EINVAL:
	case -ENAMETOOLONG:
		warnx("%s: the mount refused the entry name (%s): a NAME may not be "
		      "'.' or '..', have the shape of a queue entry (as 'x-lock-0000000001': "
		      "it would join the queue), end in '-read' (it would read as shared), "
		      "hold a character ZooKeeper refuses, or make a path too long or deep",
		      path, strerror(-err));
		err = CLI_EXIT_USAGE;
		break;
	case -EEXIST:			/* NAME is a directory there: a per-host lock */
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			warnx("%s is a lock directory (a per-host lock, as zklock --per-host "
			      "makes?): this host's entry in %s cannot take that name; name it "
			      "otherwise with -N NAME", path, r->dir ? r->dir : o->lockdir);
			err = CLI_EXIT_USAGE;
			break;
		}
		warnx("%s: %s", path, strerror(-err));
		err = CLI_EXIT_OSERR;
		break;
	case -ESHUTDOWN:		/* the daemon stopping answered the wait */
	case -ECONNABORTED:		/* the connection cut under it */
	case -ENOTCONN:			/* a mount whose daemon is gone */
	case -ENODEV:
		warnx("%s: the mount went away while waiting for the lock (unmounted, or "
		      "its daemon stopped): %s not started", r->dir ? r->dir : o->lockdir,
		      r->argv[0]);
		err = CLI_EXIT_UNAVAILABLE;
		break;
	default:
		warnx("%s: %s", path, strerror(-err));
		err = CLI_EXIT_OSERR;
		break;
	}
	free(path);
	if (err && r->lockfile) {	/* it holds nothing: no command runs */
		close(r->lockfd);
		r->lockfd = -1;
	}
	return err;
}

/*
 * Run the command under the lock held in r->lockfd until it ends.
 * Return: zklock's exit status.
 */
static int cli_run_command(struct cli_run *r)
{
	int status, err;

	err = cli_sig_open_fd(&r->sigfd);
	if (err) {
		warnx("signalfd: %s", strerror(-err));
		return CLI_EXIT_OSERR;
	}
	if (cli_sig_caught())		/* came after the grant, before the block */
		return 128 + cli_sig_caught();
	err = cli_entry_find(r);
	if (err == -ENOENT && cli_lock_lost_now(r->lockfd)) {
		warnx("lock in %s lost before %s started: %s", r->dir, r->argv[0],
		      cli_why_lost(r));
		return CLI_EXIT_LOST;
	}
	if (!err)
		err = cli_entry_export_env(r);
	if (err) {
		warnx("%s: cannot find our entry: %s", r->dir, strerror(-err));
		return CLI_EXIT_OSERR;
	}
	if (r->o->verbose)
		fprintf(stderr, "%s: executing %s\n", program_invocation_short_name,
			r->o->shell_cmd ? r->o->shell_cmd : r->argv[0]);
	if (r->o->on_doubt && (status = cli_tree_until_sure(r)) != 0)
		return status;
	/* watched before it starts: a daemon that froze meanwhile holds
	 * zklock in the ioctl, never a command running unwatched */
	if (cli_watchdog_arm(r) != 0)
		return CLI_EXIT_UNAVAILABLE;
	err = cli_tree_spawn(r);
	if (err) {
		cli_watchdog_stop();
		warnx("fork: %s", strerror(-err));
		return CLI_EXIT_OSERR;
	}
	cli_watchdog_child(r->child);
	err = cli_tree_supervise(r, &status);
	cli_watchdog_stop();
	if (err) {
		warnx("waiting for %s: %s", r->argv[0], strerror(-err));
		cli_tree_kill(r);	/* nothing outlives the lock */
		return CLI_EXIT_OSERR;
	}
	if (!r->lost && cli_lock_lost_now(r->lockfd)) {
		warnx("lock lost (%s) while %s ran: %s", r->entry, r->argv[0],
		      cli_why_lost(r));
		r->lost = true;
	}
	return r->lost ? CLI_EXIT_LOST : cli_exit_of(status);
}

/* Free what @r holds and give the lock back. */
static void cli_run_free(struct cli_run *r)
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

/* --metrics: the mount's figures (user.zklockfs.metrics of its root), as is. */
static int cli_metrics(const char *mnt)
{
	char *val = NULL;
	ssize_t n = cli_lockdir_xattr(-1, mnt, XATTR_METRICS, &val);

	if (n == -ENODATA && cli_lockdir_check(mnt) == 0) {
		warnx("%s is on a zklockfs mount but is not its mount point: the "
		      "figures are the mount point's (zklock --metrics MOUNTPOINT)", mnt);
		return CLI_EXIT_NODIR;
	}
	if (n < 0)
		return cli_lockdir_failed(mnt, n == -ENODATA || n == -ENOTSUP ?
					  -ENOTZKLOCKFS : (int)n);
	if (fwrite(val, 1, (size_t)n, stdout) != (size_t)n || fflush(stdout) == EOF) {
		free(val);
		return CLI_EXIT_OSERR;
	}
	free(val);
	return 0;
}

/*
 * --confirm: is the lock of the zklock we run under still held, as a round
 * trip to ZooKeeper shows now?  fsync(2) on the descriptor it left us
 * (ZKLOCK_FD) asks exactly that of the mount (docs/SPEC.md), once the
 * mount said that descriptor holds a lock (ZKLFS_IOC_KIND): an fsync of
 * any other file, or of a zklockfs file that holds nothing, would say 0.
 */
static int cli_confirm(void)
{
	int fd = cli_inherited_fd(), err;
	char kind[64];

	if (fd < 0) {
		warnx("--confirm: ZKLOCK_FD does not name an open descriptor: run it "
		      "from a command that zklock runs");
		return CLI_EXIT_USAGE;
	}
	err = cli_entry_fd_text(fd, ZKLFS_IOC_KIND, kind, sizeof(kind));
	if (err && err != ENOLCK && err != EIO) {
		warnx("--confirm: descriptor %d (ZKLOCK_FD) is not a zklockfs lock", fd);
		return CLI_EXIT_USAGE;
	}
	if (!err && fsync(fd) == 0)
		return 0;
	warnx("--confirm: the lock is not held: %s", strerror(err ? err : errno));
	return CLI_EXIT_LOST;
}

int main(int argc, char **argv)
{
	struct cli_opts o;
	struct cli_run r = { .o = &o, .lockfd = -1, .sigfd = -1, .t0 = cli_now() };
	double budget;
	int status;

	if (cli_opts_parse(argc, argv, &o))
		return CLI_EXIT_USAGE;
	if (o.done)
		return fflush(stdout) == EOF ? CLI_EXIT_OSERR : 0;
	if (o.list)
		return cli_list(o.lockdir, o.json);
	if (o.watch)
		return cli_watch(o.lockdir, o.json);
	if (o.metrics)
		return cli_metrics(o.lockdir);
	if (o.confirm)
		return cli_confirm();
	if (o.state)
		return cli_state(o.lockdir, o.state_set);

	/* the command gets our mask as we got it; -w needs SIGALRM */
	status = cli_sig_install(&r.orig_mask);
	if (status) {
		warnx("signals: %s", strerror(-status));
		return CLI_EXIT_OSERR;
	}
	/* -n and -w bound every call into the mount, not the open alone:
	 * the timer interrupts those that wait for ZooKeeper, and a parent
	 * outlasts those the kernel holds (bound.h) */
	budget = o.nonblock ? CLI_NONBLOCK_BUDGET : o.timeout;
	cli_bound_split(&o, r.t0, budget + (o.nonblock ? 0 : CLI_PROBE_BUDGET) +
			CLI_BOUND_GRACE);
	if ((o.nonblock || o.timeout > 0) && (status = cli_sig_arm_timer(budget))) {
		warnx("setitimer: %s", strerror(-status));
		return CLI_EXIT_OSERR;
	}
	status = cli_prepare(&r);
	if (!status && (status = cli_nested(&r)) < 0) {
		status = cli_acquire(&r);
		/* busy: this period's run may be the one holding it */
		if (o.once_per && o.nonblock && r.lockfd < 0 && status == o.conflict_code) {
			int skip = cli_once_busy(&r);

			if (skip >= 0)
				status = skip;
		}
	} else if (r.lockfd >= 0) {	/* a lock file opened, never locked */
		close(r.lockfd);
		r.lockfd = -1;
	}
	cli_sig_disarm_timer();
	if (r.lockfd >= 0) {		/* not "-E 0" after a conflict */
		cli_bound_held();
		if (!o.once_per || (status = cli_once_claim(&r)) < 0) {
			status = cli_run_command(&r);
			if (o.once_per)
				cli_once_done(&r, status);
		}
	}
	cli_run_free(&r);
	return status;
}
