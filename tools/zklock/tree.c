// SPDX-License-Identifier: MIT
/*
 * tools/zklock/tree.c - the command's process tree: fork and exec the
 * command, be the subreaper of what it starts, find the tree in /proc,
 * signal it through pidfds, reap it, and supervise it against the lock.
 *
 * Why /proc and a subreaper, and not a process group of its own: the
 * command stays in zklock's process group, as with flock(1), so that it is
 * in the terminal's foreground group whenever zklock is: it reads the
 * terminal, ^C and ^Z reach it from the kernel, and a job-control shell
 * stops and continues zklock and the command as one job. A group of its own
 * would need zklock to hand the terminal over (tcsetpgrp()) and to relay
 * stops, as a shell does (timeout(1) takes a group of its own and breaks
 * reading the terminal for that reason); and killpg() would still miss what
 * left the group (setsid(), a job-control shell's jobs), while it would hit
 * zklock itself and whatever shares its group (the rest of a pipeline).
 *
 * So zklock is the command's child subreaper: whatever the tree orphans
 * (a double fork, a daemon that setsid()s) becomes zklock's child instead
 * of init's. Every descendant thus stays below zklock, found by walking
 * /proc from zklock's pid, and when waitpid() says ECHILD there is none.
 */
#include "tools/zklock/tree.h"

#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/zklockfs.h"
#include "tools/zklock/entry.h"
#include "tools/zklock/signals.h"
#include "tools/zklock/why.h"

/*
 * In the forked child: give back the signal dispositions and mask zklock
 * started with, ask for SIGTERM if zklock dies, and exec the command.
 * Exits 127 if it is not found, 126 if it cannot be executed.
 */
static void __attribute__((noreturn)) cli_exec_command(struct cli_run *r,
							pid_t parent)
{
	cli_sig_restore(&r->orig_mask);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		warn("prctl(PR_SET_PDEATHSIG)");
	if (getppid() != parent)	/* zklock died before prctl() */
		_exit(CLI_EXIT_LOST);
	_exit(cli_tree_exec(r));
}

/* See tree.h. */
int cli_tree_exec(struct cli_run *r)
{
	int err;

	execvp(r->argv[0], r->argv);
	err = errno;
	warn("%s", r->argv[0]);
	return err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
}

/* See tree.h. */
int cli_tree_spawn(struct cli_run *r)
{
	pid_t parent = getpid(), pid;

	/* what the command's tree orphans becomes ours, not init's */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		warn("prctl(PR_SET_CHILD_SUBREAPER): processes that %s's tree "
		     "orphans are not followed", r->argv[0]);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		cli_exec_command(r, parent);
	r->child = pid;
	return 0;
}

/* One process as /proc showed it. */
struct cli_proc {
	pid_t pid, ppid;
	unsigned long long start;	/* start time: pid + start = one process */
	char state;			/* 'Z': ended, not reaped yet */
	bool ours;			/* a descendant of zklock */
};

/* Read /proc/@pid/stat into @p. Return: 0; -ENOENT (gone); -errno. */
static int cli_read_stat(pid_t pid, struct cli_proc *p)
{
	char path[32], buf[1024], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ESRCH ? -ENOENT : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		n = errno == ESRCH ? -ENOENT : -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	/* "pid (comm) state ppid" ... field 22 "starttime"; comm may hold
	 * anything, ')' too: the fields start after the last ')' */
	rp = strrchr(buf, ')');
	if (!rp || sscanf(rp + 1, " %c %d %*s"
			  " %*s %*s %*s %*s %*s %*s %*s %*s"
			  " %*s %*s %*s %*s %*s %*s %*s %*s %llu",
			  &p->state, &p->ppid, &p->start) != 3)
		return -EPROTO;
	p->pid = pid;
	p->ours = false;
	return 0;
}

static int cli_proc_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct cli_proc *)a)->pid;
	pid_t y = ((const struct cli_proc *)b)->pid;

	return (x > y) - (x < y);
}

/*
 * Every process in /proc, sorted by pid, with zklock's descendants marked
 * ours. Return: their number, with *@out (to free); or a negative errno.
 */
static ssize_t cli_scan_procs(struct cli_proc **out)
{
	struct cli_proc *procs = NULL, *np, key, *parent;
	size_t n = 0, cap = 0;
	pid_t self = getpid();
	struct dirent *de;
	bool more;
	int err = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end ||
		    pid <= 0 || pid > INT_MAX)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			np = reallocarray(procs, cap, sizeof(*procs));
			if (!np) {
				err = -ENOMEM;
				break;
			}
			procs = np;
		}
		err = cli_read_stat((pid_t)pid, &procs[n]);
		if (err == -ENOMEM || err == -EMFILE || err == -ENFILE)
			break;
		/* gone meanwhile; hidden (hidepid=1: not one of ours) */
		if (!err)
			n++;
		err = 0;
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	if (err) {
		free(procs);
		return err;
	}
	if (n)
		qsort(procs, n, sizeof(*procs), cli_proc_cmp);
	/* mark the children of zklock, then theirs, ... until none is new */
	do {
		more = false;
		for (size_t i = 0; i < n; i++) {
			if (procs[i].ours || procs[i].pid == self)
				continue;
			key.pid = procs[i].ppid;
			parent = procs[i].ppid == self ? NULL :
				 bsearch(&key, procs, n, sizeof(*procs), cli_proc_cmp);
			if (procs[i].ppid == self || (parent && parent->ours)) {
				procs[i].ours = true;
				more = true;
			}
		}
	} while (more);
	*out = procs;
	return (ssize_t)n;
}

/*
 * Send @sig to @p, the process /proc showed: through a pidfd, and only if
 * the process behind it still has @p's start time (its pid may have been
 * reaped and taken by another process since). Return: 0 or -errno.
 */
static int cli_signal_proc(const struct cli_proc *p, int sig)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	struct cli_proc now;
	int fd, err = 0;

	fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (fd < 0 && errno == ESRCH)
		return 0;
	if (fd >= 0) {
		/* the pid is pinned to the pidfd's process while it lives:
		 * if it is still @p, so was the pidfd's */
		if (cli_read_stat(p->pid, &now) == 0 && now.start == p->start &&
		    syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0 &&
		    errno != ESRCH)
			err = -errno;
		close(fd);
		return err;
	}
	if (errno != ENOSYS)
		return -errno;
#endif
	/* a kernel before 5.3: kill(), with the race pidfds close */
	return kill(p->pid, sig) < 0 && errno != ESRCH ? -errno : 0;
}

/* See tree.h.  Touches nothing of the run: any thread. */
int cli_tree_kill_now(pid_t child)
{
	int first = -1;

	/* again while a round finds one: a fork may race a scan */
	for (int round = 0; round < 8; round++) {
		struct cli_proc *procs = NULL;
		ssize_t n = cli_scan_procs(&procs);
		int sent = 0;

		if (n < 0) {		/* blind: the command alone */
			if (child > 0 && kill(child, SIGKILL) == 0)
				sent = 1;
			return first < 0 ? sent : first;
		}
		for (ssize_t i = 0; i < n; i++)
			if (procs[i].ours && procs[i].state != 'Z' &&
			    cli_signal_proc(&procs[i], SIGKILL) == 0)
				sent++;
		free(procs);
		if (first < 0)
			first = sent;
		if (!sent)
			break;
	}
	return first;
}

enum {
	CLI_TREE_CONT = 1,	/* follow with SIGCONT: a stopped process acts */
};

/*
 * Send @sig to every live process of the command's tree (zklock's
 * descendants, the command included). If /proc cannot be read, only the
 * command gets it (once; r->blind says so from then on).
 * Return: how many processes got it.
 */
static int cli_signal_tree(struct cli_run *r, int sig, int flags)
{
	struct cli_proc *procs = NULL;
	ssize_t n = r->blind ? -ENOENT : cli_scan_procs(&procs);
	int count = 0, err;

	if (n < 0) {
		if (!r->blind)
			warnx("cannot list the processes of %s (/proc: %s): "
			      "signalling it alone", r->argv[0], strerror((int)-n));
		r->blind = true;
		if (r->child > 0 && kill(r->child, sig) == 0) {
			if (flags & CLI_TREE_CONT)
				kill(r->child, SIGCONT);
			count = 1;
		}
		return count;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (!procs[i].ours || procs[i].state == 'Z')
			continue;
		err = cli_signal_proc(&procs[i], sig);
		if (!err && (flags & CLI_TREE_CONT))
			err = cli_signal_proc(&procs[i], SIGCONT);
		if (!err)
			count++;
		else if (!r->kill_failed)	/* not every round of SIGKILL */
			warnx("kill %d: %s (waiting for it to end)",
			      (int)procs[i].pid, strerror(-err));
		r->kill_failed |= err != 0;
	}
	free(procs);
	return count;
}

/*
 * Reap every child that ended: the command (its wait status in *@status,
 * then r->child is 0) and what the tree orphaned (reparented to us).
 * Return: 0 while a child is left; -ECHILD when none is, which for a
 * subreaper means the whole tree is gone; another negative errno.
 */
static int cli_reap(struct cli_run *r, int *status)
{
	pid_t pid;
	int st;

	for (;;) {
		pid = waitpid(-1, &st, WNOHANG);
		if (pid > 0 && pid == r->child) {
			*status = st;
			r->child = 0;
		}
		if (pid > 0)
			continue;
		if (pid == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

/* See tree.h. Blind (no /proc), it waits for the command alone. */
void cli_tree_kill(struct cli_run *r)
{
	pid_t pid;

	for (;;) {
		cli_signal_tree(r, SIGKILL, 0);
		if (r->blind && !r->child)
			return;
		pid = waitpid(r->blind ? r->child : -1, NULL, 0);
		if (pid > 0 && pid == r->child)
			r->child = 0;
		if (pid < 0 && errno != EINTR)
			return;
	}
}

/*
 * Read what the signalfd has and pass SIGINT/SIGTERM/SIGHUP on to the
 * command's tree, except those the kernel sent to our whole process group
 * (a terminal's ^C, or SIGHUP when the session ends: si_code SI_KERNEL):
 * the processes in our group got those too, and those that left it did so
 * not to get them. A session leader gets the terminal's hangup alone, so it
 * passes everything on. SIGCHLD needs nothing: the caller reaps.
 * Return: 0 or a negative errno.
 */
static int cli_drain_signals(struct cli_run *r)
{
	bool leader = getsid(0) == getpid();
	struct signalfd_siginfo si;
	ssize_t n;

	while ((n = read(r->sigfd, &si, sizeof(si))) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD ||
		    (si.ssi_code == SI_KERNEL && !leader))
			continue;
		cli_signal_tree(r, (int)si.ssi_signo, 0);
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return -errno;
	return 0;
}

/* Milliseconds until @deadline for poll(), rounded up; 0 if past; at most
 * INT_MAX (poll() is called again: --kill-after may be 1e9 s). */
static int cli_ms_until(double deadline)
{
	double left = (deadline - cli_now()) * 1000;

	return left <= 0 ? 0 : left >= INT_MAX - 1 ? INT_MAX : (int)left + 1;
}

/* How often the tree is looked at again while it is being SIGKILLed:
 * soon, then less and less often (what cannot be killed, say EPERM). */
#define CLI_KILL_ROUND_MS	10
#define CLI_KILL_ROUND_MAX_MS	500

/* A loss is being acted on: by cli_tree_supervise() or the watchdog. */
static atomic_bool loss_claimed;

/* See tree.h. */
bool cli_tree_claim_loss(void)
{
	return !atomic_exchange(&loss_claimed, true);
}

/* How often the lock's state is read once POLLPRI stays up (a revocation
 * holds it up until the lock is given back) while --on-doubt needs the
 * moves into doubt and out of it. */
#define CLI_STATE_LOOK_MS 250

/*
 * The lock's state, read when POLLPRI came (or every CLI_STATE_LOOK_MS):
 * a request to let go is passed on once (--on-revoke), a move into doubt
 * or out of it as --on-doubt asks, to the command's whole tree, while the
 * command runs (@running).  Return: whether it brought news; none means
 * POLLPRI stays up.
 */
static bool cli_tree_pri(struct cli_run *r, bool running)
{
	char state[32];
	bool doubt, news = false;
	int sig, n;

	if (cli_entry_fd_text(r->lockfd, ZKLFS_IOC_STATE, state, sizeof(state)))
		return false;
	if (strcmp(state, "revoking") == 0 && !r->revoked) {
		r->revoked = news = true;
		if (running && r->child) {
			warnx("asked to let go of %s: sent %s to %s (pid %d)",
			      r->entry, strsignal(r->o->on_revoke), r->argv[0],
			      (int)r->child);
			kill(r->child, r->o->on_revoke);
		}
	}
	doubt = strcmp(state, "doubt") == 0;
	if (doubt == r->doubt || (!doubt && strcmp(state, "held") != 0 &&
				  strcmp(state, "revoking") != 0))
		return news;		/* no move, or lost: POLLERR says */
	r->doubt = doubt;
	sig = doubt ? r->o->on_doubt : r->o->on_sure;
	if (running && sig && r->child) {
		n = cli_signal_tree(r, sig, 0);
		warnx(doubt ? "lock %s in doubt (ZooKeeper unheard): sent %s to the %d "
			      "process%s of %s" :
			      "lock %s held again: sent %s to the %d process%s of %s",
		      r->entry, strsignal(sig), n, n == 1 ? "" : "es", r->argv[0]);
	}
	return true;
}

/* See tree.h. */
int cli_tree_until_sure(struct cli_run *r)
{
	struct pollfd pfd[2] = {
		{ .fd = r->sigfd, .events = POLLIN },
		{ .fd = r->lockfd, .events = 0 },	/* POLLERR|POLLHUP: lost */
	};
	struct signalfd_siginfo si;
	char state[32];
	bool said = false;

	for (;;) {
		if (cli_entry_fd_text(r->lockfd, ZKLFS_IOC_STATE, state, sizeof(state)) ||
		    strcmp(state, "lost") == 0) {
			warnx("lock in %s lost before %s started: %s", r->dir, r->argv[0],
			      cli_why_lost(r));
			return CLI_EXIT_LOST;
		}
		if (strcmp(state, "doubt") != 0)
			return 0;
		if (!said)
			warnx("lock %s in doubt (ZooKeeper unheard): %s starts once it "
			      "holds again", r->entry, r->argv[0]);
		said = true;
		if (poll(pfd, 2, CLI_STATE_LOOK_MS) < 0 && errno != EINTR)
			return CLI_EXIT_OSERR;
		if ((pfd[0].revents & POLLIN) &&
		    read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
		    si.ssi_signo != SIGCHLD)
			return 128 + (int)si.ssi_signo;	/* nothing to pass it on to */
	}
}

/* See tree.h. */
int cli_tree_supervise(struct cli_run *r, int *status)
{
	struct pollfd pfd[2] = {
		{ .fd = r->sigfd, .events = POLLIN },
		/* POLLERR|POLLHUP: lost; POLLPRI: asked to let go */
		{ .fd = r->lockfd, .events = POLLPRI },
	};
	enum { RUNNING, TERMINATING, KILLING } phase = RUNNING;
	double kill_at = 0;
	int err, timeout, n, round_ms = CLI_KILL_ROUND_MS;
	bool look = false;	/* POLLPRI stays up: read the state instead */

	for (;;) {
		err = cli_reap(r, status);
		if (err == -ECHILD || (!err && r->blind && !r->child))
			return 0;		/* the tree is gone */
		if (err)
			return err;
		if (phase == RUNNING && !r->child) {
			n = cli_signal_tree(r, SIGTERM, CLI_TREE_CONT);
			if (n > 0)
				warnx("%s exited and left %d process%s running: "
				      "sent SIGTERM", r->argv[0], n, n > 1 ? "es" : "");
			phase = TERMINATING;
			kill_at = cli_now() + r->o->kill_after;
		}
		if (phase == TERMINATING && cli_now() >= kill_at) {
			n = cli_signal_tree(r, SIGKILL, 0);
			if (n > 0)
				warnx("%d process%s still running %gs after SIGTERM: "
				      "sent SIGKILL", n, n > 1 ? "es" : "",
				      r->o->kill_after);
			phase = KILLING;
		} else if (phase == KILLING) {
			/* what forked meanwhile, or was not seen the last time */
			cli_signal_tree(r, SIGKILL, 0);
		}
		timeout = phase == RUNNING ? -1 :
			  phase == TERMINATING ? cli_ms_until(kill_at) : round_ms;
		if (phase == KILLING && round_ms < CLI_KILL_ROUND_MAX_MS)
			round_ms *= 2;
		/* looking: while a doubt or a revocation is still to tell */
		bool looking = look && pfd[1].fd >= 0 && (r->o->on_doubt || !r->revoked);

		if (looking && (timeout < 0 || timeout > CLI_STATE_LOOK_MS))
			timeout = CLI_STATE_LOOK_MS;
		n = poll(pfd, 2, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (looking && !pfd[1].revents)
			cli_tree_pri(r, phase == RUNNING);
		if ((pfd[1].revents & POLLPRI) &&
		    !(pfd[1].revents & (POLLERR | POLLHUP))) {
			/* a revocation holds POLLPRI up (told, or hidden
			 * behind a doubt when nothing moved): from then on only
			 * a loss wakes us, and the state is read as we look */
			if (!cli_tree_pri(r, phase == RUNNING) || r->revoked) {
				look = true;
				pfd[1].events = 0;
			}
		} else if (pfd[1].revents) {
			r->lost = true;
			pfd[1].fd = -1;		/* told once is enough */
			if (phase != KILLING) {
				/* another host may hold the lock from now on: no
				 * grace, as the mount's on_loss=end (fs/ender.h) */
				/* the watchdog may see the same instant: one of
				 * the two ends the tree and says so */
				if (!cli_tree_claim_loss()) {
					phase = KILLING;
					continue;
				}
				n = cli_signal_tree(r, SIGKILL, 0);
				if (n > 0)
					warnx("lock lost (%s): %s; sent SIGKILL to the %d "
					      "process%s of %s (pid %d)", r->entry,
					      cli_why_lost(r), n, n == 1 ? "" : "es",
					      r->argv[0], (int)r->child);
				else
					warnx("lock lost (%s): %s; %s had ended already",
					      r->entry, cli_why_lost(r), r->argv[0]);
				phase = KILLING;
			} else {
				warnx("lock lost (%s) while ending what %s left: %s",
				      r->entry, r->argv[0], cli_why_lost(r));
			}
		}
		if (pfd[0].revents) {
			err = cli_drain_signals(r);
			if (err)
				return err;
		}
	}
}
