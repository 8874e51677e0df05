// SPDX-License-Identifier: MIT
/* tools/zklock/state.c - zklock --state (see state.h). */
#include "tools/zklock/state.h"

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "abi/zklockfs.h"
#include "tools/zklock/entry.h"
#include "tools/zklock/zklock.h"
#include "zk/escape.h"

#define XATTR_STATEDATA "user.zklockfs.statedata"

/* The state of @dir, read into @buf (@cap bytes).  Return: its length, or
 * -errno. */
static ssize_t read_state(const char *dir, bool lockfile, char *buf, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n = 0, got = 0;
	int fd;

	if (lockfile) {
		n = getxattr(dir, XATTR_STATEDATA, buf, cap);
		return n < 0 ? -errno : n;
	}
	if (snprintf(path, sizeof(path), "%s/.state", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)got < cap && (n = read(fd, buf + got, cap - (size_t)got)) > 0)
		got += n;
	if (n < 0)
		got = -errno;
	close(fd);
	return got;
}

static int print_state(const char *dir, bool lockfile)
{
	size_t cap = 1024 * 1024;
	char *buf = malloc(cap), *out = NULL;
	ssize_t n = buf ? read_state(dir, lockfile, buf, cap) : -ENOMEM;
	int status = 0;

	if (n < 0) {
		warnx("cannot read the state of %s: %s", dir, strerror((int)-n));
		free(buf);
		return n == -ENOENT || n == -ENOTSUP || n == -ENODATA ? CLI_EXIT_NODIR
								     : CLI_EXIT_OSERR;
	}
	if (isatty(STDOUT_FILENO)) {	/* anyone's bytes: never raw to a terminal */
		out = malloc(4 * (size_t)n + 2);
		if (out) {
			zkesc(out, 4 * (size_t)n + 1, buf, (size_t)n);
			printf("%s\n", out);
		}
	} else {
		fwrite(buf, 1, (size_t)n, stdout);
	}
	if (fflush(stdout) == EOF)
		status = CLI_EXIT_OSERR;
	free(out);
	free(buf);
	return status;
}

static int set_state(const char *dir, bool lockfile, const char *value)
{
	struct zklfs_ioc_state *st;
	int fd = cli_inherited_fd();
	size_t len = strlen(value);
	int err;

	if (fd < 0 || !cli_fd_is_lock(fd, dir, lockfile)) {
		warnx("--state --set: ZKLOCK_FD %s: run it from the command that zklock "
		      "runs with %s", fd < 0 ? "names no open descriptor" :
		      "is not a descriptor of this lock", dir);
		return CLI_EXIT_USAGE;
	}
	if (len > ZKLFS_STATE_MAX) {
		warnx("--state --set: %zu bytes, more than the %d a state may hold",
		      len, ZKLFS_STATE_MAX);
		return CLI_EXIT_USAGE;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return CLI_EXIT_OSERR;
	st->len = (uint32_t)len;
	memcpy(st->data, value, len);
	err = ioctl(fd, ZKLFS_IOC_SETSTATE, st) < 0 ? errno : 0;
	free(st);
	if (!err)
		return 0;
	if (err == EIO) {
		warnx("--state --set: the lock %s is lost: its state is unchanged", dir);
		return CLI_EXIT_LOST;
	}
	if (err == EACCES) {
		warnx("--state --set: %s is not held exclusively through ZKLOCK_FD "
		      "(a shared lock or a semaphore has no one holder to publish)", dir);
		return CLI_EXIT_NOPERM;
	}
	warnx("--state --set: %s: %s", dir, strerror(err));
	return err == ENOTTY ? CLI_EXIT_NODIR : CLI_EXIT_OSERR;
}

int cli_state(const char *lockdir, const char *set)
{
	char *dir = realpath(lockdir, NULL);
	struct stat sb;
	int status;

	if (!dir || stat(dir, &sb) < 0) {
		warnx("%s: %s", lockdir, strerror(errno));
		free(dir);
		return CLI_EXIT_NODIR;
	}
	status = set ? set_state(dir, S_ISREG(sb.st_mode), set)
		     : print_state(dir, S_ISREG(sb.st_mode));
	free(dir);
	return status;
}
