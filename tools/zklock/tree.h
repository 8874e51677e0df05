// SPDX-License-Identifier: MIT
/*
 * tools/zklock/tree.h - the command's process tree: run the command under
 * the lock and make sure nothing it started outlives the lock.
 *
 * The tree is zklock's descendants (the command, what it started, and what
 * they orphaned: zklock is their child subreaper), read from /proc and
 * signalled through pidfds. If /proc cannot be read, zklock is "blind"
 * (r->blind) and sees the command alone. Called from main.c, once the lock
 * is held and cli_sig_open_fd() has set r->sigfd, in this order:
 * cli_tree_spawn(), cli_tree_supervise(), and cli_tree_kill() only if
 * supervising failed.
 */
#ifndef TOOLS_ZKLOCK_TREE_H
#define TOOLS_ZKLOCK_TREE_H

#include "tools/zklock/zklock.h"

/*
 * cli_tree_spawn() - make zklock the child subreaper (PR_SET_CHILD_SUBREAPER;
 * a failure is only reported), fork, and exec r->argv in the child with
 * the signal dispositions and mask zklock started with (r->orig_mask) and
 * PR_SET_PDEATHSIG SIGTERM: if zklock dies, the command is told. The child
 * exits 127 if the command is not found, 126 if it cannot be executed, 75
 * if zklock died before it asked for SIGTERM.
 * Return: 0 with r->child set; or a negative errno (fork failed).
 */
int cli_tree_spawn(struct cli_run *r);

/*
 * cli_tree_exec() - exec r->argv in this process, as it is (the caller
 * sets the signal mask); on failure say why.
 * Return: only on failure: 127 if not found, 126 if not executable.
 */
int cli_tree_exec(struct cli_run *r);

/*
 * cli_tree_until_sure() - with --on-doubt, before the command starts:
 * wait while the lock reads "doubt" (a grant the mount cannot yet vouch
 * for), reading its state every quarter second.  Return: 0 once it holds,
 * 75 if it is lost, 128+N for a signal N that came meanwhile, 71.
 */
int cli_tree_until_sure(struct cli_run *r);

/*
 * cli_tree_supervise() - wait for the command and everything it started,
 * watching r->lockfd (zklockfs wakes poll() with POLLERR|POLLHUP when the
 * lock is lost) and r->sigfd. The tree is ended (SIGTERM and SIGCONT;
 * SIGKILL to whatever is left after r->o->kill_after seconds, again until
 * nothing is) when the lock is lost (then r->lost is set), and when the
 * command exits leaving processes behind. SIGINT/SIGTERM/SIGHUP from the
 * signalfd are passed on to every process of the tree, except those the
 * kernel sent to zklock's whole process group (a terminal's ^C, SI_KERNEL),
 * unless zklock leads its session. What happens is said on stderr.
 * Return: 0 once no process of the tree is left (waitpid() says ECHILD),
 * with the command's wait status in *@status; or a negative errno.
 */
int cli_tree_supervise(struct cli_run *r, int *status);

/*
 * cli_tree_claim_loss() - may the caller end the tree for a loss, and say
 * so?  True once: the mount's POLLERR (cli_tree_supervise()) and the
 * watchdog may see the same instant, and only one account is given.
 * Any thread.
 */
bool cli_tree_claim_loss(void);

/*
 * cli_tree_kill_now() - SIGKILL every process of the tree (zklock's
 * descendants; blind, @child alone), again until a round finds none, and
 * reap nothing: for the watchdog's thread, which must not wait.
 * Return: how many processes the first round signalled.
 */
int cli_tree_kill_now(pid_t child);

/*
 * cli_tree_kill() - the last resort when cli_tree_supervise() failed:
 * SIGKILL the tree and reap it, until none of it is left (blind, until the
 * command is reaped). Never fails; returns when waitpid() does.
 */
void cli_tree_kill(struct cli_run *r);

#endif
