// SPDX-License-Identifier: MIT
/*
 * tools/zklock/entry.c - our entry in the lock directory: name it, take the
 * lock by opening it, find its full name, pass it on to the command.
 */
#include "tools/zklock/entry.h"

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/utsname.h>

#include "abi/zklockfs.h"

#include "tools/zklock/lockdir.h"
#include "tools/zklock/opts.h"
#include "tools/zklock/signals.h"

/* See entry.h. */
int cli_entry_default_name(char **out)
{
	struct utsname u;
	bool ok;

	ok = uname(&u) == 0 && cli_opts_name_ok(u.nodename);
	for (const unsigned char *c = (unsigned char *)u.nodename; ok && *c; c++)
		ok = *c > ' ' && *c < 0x7f;
	*out = strdup(ok ? u.nodename : "zklock");
	return *out ? 0 : -ENOMEM;
}

static int cli_entry_find_in_dir(struct cli_run *r);
static int cli_entry_ask(struct cli_run *r, const char *path);

/*
 * While it asks for the lock, zklock goes by its command's name: the mount
 * writes the asking process's name in the entry's data (cmd=), which
 * `zklock --list`, --watch and .holders show, and "zklock" would say
 * nothing of the work.  Its own name comes back once the call returns
 * (meanwhile `pgrep zklock` does not find it: `pgrep -f` does).
 */
static void cli_entry_named(struct cli_run *r, bool asking)
{
	static char own[17];		/* the name zklock had */
	const char *cmd = r->argv && r->argv[0] ? r->argv[0] : NULL;
	const char *base = cmd ? strrchr(cmd, '/') : NULL;
	char name[17];			/* PR_SET_NAME takes 15 bytes of it */

	if (!cmd)
		return;
	if (asking && prctl(PR_GET_NAME, own) != 0)
		return;
	if (!asking && !own[0])
		return;
	snprintf(name, sizeof(name), "%s", asking ? (base ? base + 1 : cmd) : own);
	(void)prctl(PR_SET_NAME, name);
}

/* One try at the lock: open the entry, or flock the lock file. */
static int cli_entry_try(struct cli_run *r, const char *path)
{
	int err;

	cli_entry_named(r, true);
	err = cli_entry_ask(r, path);
	cli_entry_named(r, false);
	return err;
}

/* The call that asks: open the entry, or flock the lock file. */
static int cli_entry_ask(struct cli_run *r, const char *path)
{
	const struct cli_opts *o = r->o;
	int flags = O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY |
		    (o->shared ? O_RDONLY : O_WRONLY) |
		    (o->nonblock ? O_NONBLOCK : 0);

	/* zklock ends its command itself at a loss (watch.c), and reports it
	 * (75): with on_loss=end the mount must not end zklock with it
	 * (ZKLFS_IOC_TELL; a mount without it says ENOTTY, and ends nothing) */
	if (r->lockfile) {
		(void)ioctl(r->lockfd, ZKLFS_IOC_TELL);
		return flock(r->lockfd, (o->shared ? LOCK_SH : LOCK_EX) |
				       (o->nonblock ? LOCK_NB : 0)) < 0 ? -errno : 0;
	}
	r->lockfd = open(path, flags, 0644);
	if (r->lockfd < 0)
		return -errno;
	(void)ioctl(r->lockfd, ZKLFS_IOC_TELL);
	return 0;
}

/* See entry.h. */
int cli_entry_take(struct cli_run *r, const char *path)
{
	int remakes = CLI_ENTRY_REMAKES;
	bool said = false;
	int err = 0;

	for (;;) {
		if (cli_sig_caught()) {
			err = -EINTR;
			break;
		}
		if (cli_sig_alarmed()) {
			err = -ETIMEDOUT;
			break;
		}
		err = cli_entry_try(r, path);
		if (!err)
			break;
		if (err == -EWOULDBLOCK)
			err = -EAGAIN;
		if (err == -ENOENT && !r->lockfile && remakes-- > 0) {
			/* the directory went since we made it: again */
			err = cli_lockdir_remake(r->dir);
			if (err)
				break;
			continue;
		}
		if (err == -ETIMEDOUT && !said && r->o->verbose) {
			warnx("%s: ZooKeeper does not answer the mount: waiting", r->dir);
			said = true;
		}
		/* a stop signal (^Z) also ends the wait: queue again; and the
		 * mount's ETIMEDOUT (ZooKeeper away for its session timeout)
		 * does not end it: a lock is waited for through an outage */
		if (err != -EINTR && err != -ETIMEDOUT)
			break;
		if (err == -ETIMEDOUT)
			cli_sig_pause();	/* the mount answers at once while silent */
		err = 0;
	}
	return err;
}

/* See entry.h. */
int cli_entry_per_host(const char *lockdir)
{
	const char *base;
	struct utsname u;
	size_t len, blen, short_len;

	len = strlen(lockdir);
	while (len > 1 && lockdir[len - 1] == '/')
		len--;
	base = lockdir + len;
	while (base > lockdir && base[-1] != '/')
		base--;
	blen = (size_t)(lockdir + len - base);
	if (uname(&u) < 0 || !*u.nodename)
		return 0;
	short_len = strcspn(u.nodename, ".");
	if ((blen == strlen(u.nodename) && memcmp(base, u.nodename, blen) == 0) ||
	    (blen == short_len && memcmp(base, u.nodename, blen) == 0))
		return -EXDEV;
	return 0;
}

/* See entry.h. */
int cli_entry_find(struct cli_run *r)
{
	if (r->lockfile) {	/* its entries have no path: the file stands for ours */
		r->entry = strdup(r->dir);
		return r->entry ? 0 : -ENOMEM;
	}
	return cli_entry_find_in_dir(r);
}

/* The entry of ours among r->dir's children (cli_entry_find()). */
static int cli_entry_find_in_dir(struct cli_run *r)
{
	static const char *const excl[] = { "-lock-", "__lock__" };
	static const char *const shrd[] = { "-read-lock-", "__rlock__" };
	const char *const *markers = r->o->shared ? shrd : excl;
	char *seqstr, *end, suffix[16];
	size_t nlen = strlen(r->name), slen;
	struct dirent *de;
	long seq;
	DIR *d;
	int err;

	err = (int)cli_lockdir_xattr(r->lockfd, NULL, XATTR_SEQ, &seqstr);
	if (err < 0)
		return err;
	errno = 0;
	seq = strtol(seqstr, &end, 10);
	err = errno || end == seqstr || seq < INT32_MIN || seq > INT32_MAX ?
	      -EPROTO : 0;
	free(seqstr);
	if (err)
		return err;
	slen = (size_t)snprintf(suffix, sizeof(suffix), "%010d", (int)seq);

	d = opendir(r->dir);
	if (!d)
		return -errno;
	err = -ENOENT;
	while (err == -ENOENT && (errno = 0, de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);

		if (len <= nlen + slen || memcmp(n, r->name, nlen) ||
		    strcmp(n + len - slen, suffix))
			continue;
		for (int i = 0; i < 2; i++) {
			size_t mlen = strlen(markers[i]);

			if (len != nlen + mlen + slen ||
			    memcmp(n + nlen, markers[i], mlen))
				continue;
			err = asprintf(&r->entry, "%s/%s", r->dir, n) < 0 ?
			      -ENOMEM : 0;
			break;
		}
	}
	if (err == -ENOENT && errno)
		err = -errno;
	closedir(d);
	return err;
}

/* See entry.h. */
int cli_entry_fd_text(int fd, unsigned long cmd, char *buf, size_t size)
{
	struct zklfs_ioc_text t;

	if (ioctl(fd, cmd, &t) < 0)
		return errno;
	t.text[sizeof(t.text) - 1] = '\0';
	snprintf(buf, size, "%s", t.text);
	return 0;
}

/* See entry.h. */
int cli_entry_export_env(struct cli_run *r)
{
	char fdstr[16], token[sizeof(((struct zklfs_ioc_text *)0)->text)];
	ssize_t len;

	if (r->lockfile) {	/* no entry file: the descriptor tells */
		len = -cli_entry_fd_text(r->lockfd, ZKLFS_IOC_TOKEN, token, sizeof(token));
		if (!len) {
			r->token = strdup(token);
			len = r->token ? 0 : -ENOMEM;
		}
	} else {
		len = cli_lockdir_xattr(r->lockfd, NULL, XATTR_TOKEN, &r->token);
	}
	if (len < 0)
		return (int)len;
	/*
	 * The command gets the lock's descriptor (ZKLOCK_FD): through it, and
	 * only through it, a nested zklock knows it runs under this lock and
	 * --confirm asks the mount (fsync).  The lock lives as long as its
	 * open file description, so it ends once zklock and the command's
	 * whole tree, which zklock waits for, have closed it.
	 */
	snprintf(fdstr, sizeof(fdstr), "%d", r->lockfd);
	if (fcntl(r->lockfd, F_SETFD, 0) < 0 || setenv("ZKLOCK_FD", fdstr, 1) < 0)
		return -errno;
	if (setenv("ZKLOCK_DIR", r->dir, 1) < 0 ||
	    setenv("ZKLOCK_ENTRY", r->entry, 1) < 0 ||
	    setenv("ZKLOCK_TOKEN", r->token, 1) < 0 ||
	    setenv("ZKLOCK_MODE", r->o->shared ? "shared" : "exclusive", 1) < 0)
		return -errno;
	return 0;
}

/* See entry.h. */
int cli_inherited_fd(void)
{
	const char *v = getenv("ZKLOCK_FD");
	char *end;
	long fd;

	if (!v || !*v)
		return -1;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno || *end || fd < 0 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0)
		return -1;
	return (int)fd;
}

/* See entry.h. */
bool cli_fd_is_lock(int fd, const char *dir, bool lockfile)
{
	char link[64], path[PATH_MAX];
	size_t dlen = strlen(dir);
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = '\0';
	if (lockfile)
		return strcmp(path, dir) == 0;
	return (size_t)n > dlen + 1 && memcmp(path, dir, dlen) == 0 &&
	       path[dlen] == '/' && !strchr(path + dlen + 1, '/');
}
