/*
 * fs/reply.c - the daemon's side of the seam fs/reply.h: answers go to
 * libfuse (its own functions, where the seam's signature is theirs), and
 * a caller is read from /proc.
 */
#include "fs/reply.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/ender.h"

/*
 * The command name in @stat (a /proc/TID/stat: "TID (COMM) ...", COMM up to
 * 15 bytes of anything, parentheses included) into @cmd: "" if unreadable.
 */
static void stat_comm(const char *stat, char *cmd, size_t size)
{
	const char *open = strchr(stat, '('), *close = strrchr(stat, ')');
	size_t n = open && close > open ? (size_t)(close - open - 1) : 0;

	if (n >= size)
		n = size - 1;
	memcpy(cmd, open ? open + 1 : "", n);
	cmd[n] = '\0';
}

/* The process of thread @tid (FUSE tells the thread).  A thread-group
 * leader is its own process, and only a leader has a pidfd: one syscall
 * instead of formatting /proc/TID/status, which cost more than the rest
 * of an open. */
static pid_t thread_group(pid_t tid)
{
	char status[2048], *t;
	int fd = (int)syscall(SYS_pidfd_open, tid, 0);

	if (fd >= 0) {
		close(fd);
		return tid;
	}
	zklfs_proc_text(tid, "status", status, sizeof(status));
	t = strstr(status, "\nTgid:");
	return t ? (pid_t)atoi(t + 6) : tid;
}

/*
 * Who asks: its process, uid and command, for the entry's data and the
 * log.  Information only: a thread or a process never decides a grant
 * (the owner of a lock is the open file description).  One read of
 * /proc/TID/stat gives the command when the thread leads its process,
 * the usual case.
 */
static void caller(fuse_req_t req, struct zklfs_caller *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char stat[1024];
	pid_t tid = ctx->pid;

	stat[0] = '\0';
	c->uid = ctx->uid;
	c->cmd[0] = '\0';
	c->pid = tid ? thread_group(tid) : 0;
	if (!c->pid)
		return;
	if (c->pid == tid) {
		zklfs_proc_text(tid, "stat", stat, sizeof(stat));
		stat_comm(stat, c->cmd, sizeof(c->cmd));
	} else {
		zklfs_proc_text(c->pid, "comm", c->cmd, sizeof(c->cmd));
	}
}

/* Read at FUSE_INTERRUPT, while the signal is still pending: the caller
 * waits in the kernel for our answer.  A caller outside our pid namespace
 * (pid 0), or gone, cannot be read: an empty status, CAUGHT. */
static enum zklfs_signal signalled(fuse_req_t req)
{
	char status[2048];
	pid_t tid = fuse_req_ctx(req)->pid;

	status[0] = '\0';
	if (tid)
		zklfs_proc_text(tid, "status", status, sizeof(status));
	return zklfs_signal_kind(status);
}

static void notify_poll(struct fuse_pollhandle *ph)
{
	fuse_lowlevel_notify_poll(ph);
	fuse_pollhandle_destroy(ph);
}

static int holders(fuse_req_t req, pid_t pid, uid_t uid, uint64_t ino,
		   struct zklfs_holders *h)
{
	zklfs_holders_read(fuse_req_ctx(req)->pid, pid, ino, h);
	return zklfs_holders_reachable(pid, uid, h) ? 0 : -ENOLCK;
}

const struct zklfs_reply zklfs_fuse_reply = {
	.open = fuse_reply_open,
	.err = fuse_reply_err,
	.write = fuse_reply_write,
	.attr = fuse_reply_attr,
	.buf = fuse_reply_buf,
	.entry = fuse_reply_entry,
	.poll = fuse_reply_poll,
	.xattr = fuse_reply_xattr,
	.ctx = fuse_req_ctx,
	.on_interrupt = fuse_req_interrupt_func,
	.caller = caller,
	.signalled = signalled,
	.holders = holders,
	.end = zklfs_ender_post,
	.notify_poll = notify_poll,
	.drop_poll = fuse_pollhandle_destroy,
};

void zklfs_process_comm(pid_t tid, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	if (tid > 0)
		n = zklfs_proc_text(thread_group(tid), "comm", buf, size);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}
