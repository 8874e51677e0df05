// SPDX-License-Identifier: MIT
/*
 * tools/zklock/entry.h - our entry in the lock directory's queue: its NAME,
 * the open() that takes the lock, its full name once granted, and what the
 * command is told about it.
 *
 * The lock is open(LOCKDIR/NAME, O_CREAT|O_EXCL|O_CLOEXEC and O_WRONLY
 * (exclusive) or O_RDONLY (shared)); zklockfs queues an entry NAME + marker
 * + sequence number for it. Once granted, the descriptor is handed to the
 * command (ZKLOCK_FD, cli_entry_export_env()): the lock is that open file
 * description's, and zklock closes its own copy only once the command's
 * whole tree has ended. Called from main.c, in this order.
 */
#ifndef TOOLS_ZKLOCK_ENTRY_H
#define TOOLS_ZKLOCK_ENTRY_H

#include "tools/zklock/zklock.h"

/*
 * cli_entry_default_name() - the NAME when -N gives none: the host name if
 * it is a usable (cli_opts_name_ok()), printable one, else "zklock".
 * Return: 0 and *@out (to free), or -ENOMEM.
 */
int cli_entry_default_name(char **out);

/*
 * cli_entry_per_host() - does @lockdir end in this host's name (its
 * nodename, or the part before the first dot)?  Written the way flock(1)
 * is often used ("locks/deploy/$HOSTNAME"), it would give each host a
 * lock of its own, which excludes no other host.  Return: 0, or -EXDEV if
 * it does.
 */
int cli_entry_per_host(const char *lockdir);

/* How many times cli_entry_take() makes a vanished r->dir again. */
#define CLI_ENTRY_REMAKES	5

/*
 * cli_entry_take() - open() the lock at @path (r->dir/r->name), or with
 * r->lockfile flock(2) r->lockfd, waiting as long as r->o allows: -n adds
 * O_NONBLOCK (LOCK_NB); the timer of signals.h (armed by main() for -n and
 * -w, cli_sig_alarmed()) interrupts the open() with EINTR, which removes
 * the entry.  The mount's ETIMEDOUT (ZooKeeper silent for its session
 * timeout) is tried again: a lock is waited for through an outage.
 * A SIGINT/SIGTERM/SIGHUP ends the wait the same way; a stop signal (^Z)
 * does too, and the entry is queued again. An open() that fails with
 * ENOENT found r->dir gone (zklockfs -o containers: the server deletes an
 * emptied directory, maybe between our mkdir and our open): it is made
 * again (cli_lockdir_remake()) and opened again, up to CLI_ENTRY_REMAKES
 * times. cli_sig_install() must have run.
 * Return: 0 with r->lockfd; -EAGAIN (busy, -n); -ETIMEDOUT (the timer ran out);
 * -EINTR (a signal, see cli_sig_caught()); -ENOENT (r->dir went each
 * time); -ENOTZKLOCKFS (r->dir is no longer on zklockfs); another negative
 * errno.
 */
int cli_entry_take(struct cli_run *r, const char *path);

/*
 * cli_entry_find() - find our entry: the child of r->dir named NAME + a
 * marker of our kind (either naming= of the mount) + the "%010d" of our
 * sequence number (read from the lock descriptor's xattr); for a lock
 * file, whose entries have no path, the lock file itself.
 * Return: 0 with r->entry set (absolute, to free); -ENOENT if not listed
 * (the lock may be lost already); another negative errno.
 */
int cli_entry_find(struct cli_run *r);

/*
 * cli_entry_fd_text() - the text an ioctl of zklockfs (abi/zklockfs.h: its
 * state, kind, fencing token) gives for the lock descriptor @fd, into
 * @buf.  Return: 0 or the errno (ENOLCK: it holds no lock; ENOTTY: no
 * zklockfs descriptor).
 */
int cli_entry_fd_text(int fd, unsigned long cmd, char *buf, size_t size);

/*
 * cli_entry_export_env() - give the command its lock: r->lockfd stays
 * open across exec, named by ZKLOCK_FD (what a nested zklock and
 * --confirm act through), and ZKLOCK_DIR, ZKLOCK_ENTRY, ZKLOCK_TOKEN (the
 * fencing token, kept in r->token; a lock file's from the ZKLFS_IOC_TOKEN
 * ioctl) and ZKLOCK_MODE, for information, in zklock's environment, which
 * the command inherits. After cli_entry_find(). Return: 0 or a negative
 * errno.
 */
int cli_entry_export_env(struct cli_run *r);

/*
 * cli_inherited_fd() - the lock descriptor a zklock we run under left us:
 * ZKLOCK_FD, if it names a descriptor open in this process.  Return: it,
 * or -1 (not set, not a number, or not open).
 */
int cli_inherited_fd(void);

/*
 * cli_fd_is_lock() - does descriptor @fd stand for the lock @dir (an
 * absolute path): an entry in the lock directory @dir, or the lock file
 * @dir itself (@lockfile)?  The kernel says where the descriptor's file
 * is (/proc/self/fd), whatever the environment says.
 */
bool cli_fd_is_lock(int fd, const char *dir, bool lockfile);

#endif
