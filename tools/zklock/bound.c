// SPDX-License-Identifier: MIT
/* tools/zklock/bound.c - -n's and -w's bound kept from outside (see bound.h). */
#include "tools/zklock/bound.h"

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/zklock/opts.h"

/* The child's end of the control socket: a byte says the lock is held,
 * and the parent answers with its standard descriptors; -1 without a
 * split, or once said. */
static int held_fd = -1;
/* Which of the child's standard descriptors stand in for the parent's
 * (a pipe or a socket, whose reader waits for every copy to close). */
static bool stood_in[3];

/* The signals the parent passes on once the lock is held. */
static const int passed_on[] = { SIGINT, SIGTERM, SIGHUP };

/* Exit as the child @st did: its status, or its signal. */
static void __attribute__((noreturn)) exit_as(int st)
{
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		sigset_t one;

		signal(sig, SIG_DFL);
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : CLI_EXIT_OSERR);
}

/* Has the child ended?  Then exit as it did. */
static void reap(pid_t child)
{
	int st;

	if (waitpid(child, &st, WNOHANG) == child)
		exit_as(st);
}

/* Milliseconds until @deadline (cli_now()), for poll(): 0 if past. */
static int ms_until(double deadline)
{
	double left = (deadline - cli_now()) * 1000.0;

	return left <= 0 ? 0 : left > 60000 ? 60000 : (int)left + 1;
}

/* Copy what the child wrote to its stand-in output (@ofd) to our stderr.
 * Return: false once no one can write there any more (EOF). */
static bool copy_out(int ofd)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(ofd, buf, sizeof(buf))) > 0)
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
	return n != 0;
}

/*
 * Give the child our standard descriptors, over the control socket @cfd.
 * If they cannot go, the child must not hold the lock without its command
 * running: it is ended, and so are we.
 */
static void hand_stdio(int cfd, pid_t child)
{
	int fds[3] = { STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO };
	char cbuf[CMSG_SPACE(sizeof(fds))] = { 0 };
	char c = 's';
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	ssize_t n;

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	while ((n = sendmsg(cfd, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != 1) {
		warn("handing the command its standard descriptors");
		kill(child, SIGKILL);
		_exit(CLI_EXIT_OSERR);
	}
}

/* Pass a signal the signalfd @sfd read on to @child, unless the kernel
 * sent it to the whole process group (a terminal's): the child had it. */
static void pass_on(int sfd, pid_t child)
{
	struct signalfd_siginfo si;

	if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
	    si.ssi_signo != SIGCHLD && si.ssi_code != SI_KERNEL)
		kill(child, (int)si.ssi_signo);
}

/*
 * The parent: wait for the child's word (@rfd), its end or the bound, and
 * copy what it says meanwhile (@ofd, -1 once no one writes there); then
 * pass on signals until it ends.  Never returns.
 */
static void __attribute__((noreturn)) supervise(const struct cli_opts *o, pid_t child,
						int rfd, int ofd, int sfd, double t0,
						double bound)
{
	bool held = false;

	for (;;) {
		struct pollfd p[3] = { { .fd = sfd, .events = POLLIN },
				       { .fd = rfd, .events = POLLIN },
				       { .fd = ofd, .events = POLLIN } };
		int n = poll(p, held ? 1 : 3, held ? -1 : ms_until(t0 + bound));

		if (n < 0 && errno != EINTR)
			err(CLI_EXIT_OSERR, "poll");
		/* first what the child said: it may have ended since */
		if (ofd >= 0 && !copy_out(ofd)) {
			close(ofd);		/* no one writes there: polled no more */
			ofd = -1;
		}
		if (n > 0 && (p[0].revents & POLLIN)) {
			pass_on(sfd, child);
			reap(child);
		}
		if (held)
			continue;
		if (n > 0 && p[1].revents) {
			char c;

			if (read(rfd, &c, 1) == 1)
				hand_stdio(rfd, child);
			held = true;	/* else it exited, or exec'd a nested command */
		} else if (cli_now() >= t0 + bound) {
			char c;
			ssize_t got;

			got = recv(rfd, &c, 1, MSG_DONTWAIT);
			if (got >= 0) {	/* held at the bound (it counts), or ended */
				if (got == 1)
					hand_stdio(rfd, child);
				held = true;
			} else {
				kill(child, SIGKILL);
				warnx("%s: the mount did not answer within %.2f s (a call into "
				      "it waited in the kernel, behind another request in the "
				      "same directory): the lock was not taken, and whether "
				      "anyone holds it is unknown", o->lockdir, cli_now() - t0);
				_exit(o->conflict_code);
			}
		}
		if (held && ofd >= 0) {
			close(ofd);
			ofd = -1;
		}
	}
}

/*
 * In the child: a standard descriptor that is a pipe or a socket is taken
 * over by a stand-in until the lock is held (stdin by /dev/null, stdout
 * and stderr by @ofd, which the parent copies to its stderr): a child the
 * kernel holds past the bound must not keep the caller's pipe open (a
 * shell's $(zklock -n ...) waits for every copy to close).  A terminal or
 * a file is kept: nobody waits for its end.
 */
static void stand_in(int ofd)
{
	for (int fd = 0; fd < 3; fd++) {
		struct stat st;
		int with;

		if (fstat(fd, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
			continue;
		with = fd == 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : ofd;
		if (with < 0 || dup2(with, fd) < 0)
			continue;
		if (fd == 0)
			close(with);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		stood_in[fd] = true;
	}
}

/* See bound.h. */
void cli_bound_split(const struct cli_opts *o, double t0, double bound)
{
	sigset_t set, old;
	int fds[2], out[2], sfd;
	pid_t pid, parent = getpid();

	if (!o->nonblock && o->timeout <= 0)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
		return;
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0) {
		close(fds[0]);
		close(fds[1]);
		return;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		sigaddset(&set, passed_on[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (pid <= 0) {			/* the child, or no split */
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(fds[0]);
		close(out[0]);
		if (pid == 0) {
			/* a SIGKILL of the zklock the shell started ends this
			 * one as it would have ended that one alone */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
				_exit(CLI_EXIT_OSERR);
			held_fd = fds[1];
			stand_in(out[1]);
		} else {
			close(fds[1]);
		}
		close(out[1]);
		return;
	}
	close(fds[1]);
	close(out[1]);
	/* signals ignored when zklock started stay ignored: never passed on */
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++) {
		struct sigaction sa;

		if (sigaction(passed_on[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sigdelset(&set, passed_on[i]);
	}
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		kill(pid, SIGKILL);
		err(CLI_EXIT_OSERR, "signalfd");
	}
	supervise(o, pid, fds[0], out[0], sfd, t0, bound);
}

/* See bound.h. */
void cli_bound_held(void)
{
	int fds[3];
	char cbuf[CMSG_SPACE(sizeof(fds))], c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;

	if (held_fd < 0)
		return;
	while ((n = write(held_fd, "h", 1)) < 0 && errno == EINTR)
		;		/* a handler ran (no SA_RESTART): again */
	if (n == 1)
		while ((n = recvmsg(held_fd, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
			;
	if (n != 1 || !(cm = CMSG_FIRSTHDR(&m)) || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(fds))) {
		warnx("the zklock that waits for this one is gone");
		_exit(CLI_EXIT_OSERR);	/* nothing started yet: the lock goes with us */
	}
	memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	for (int fd = 0; fd < 3; fd++) {
		if (stood_in[fd])
			dup2(fds[fd], fd);	/* the command gets the caller's own */
		close(fds[fd]);
	}
	close(held_fd);
	held_fd = -1;
}
