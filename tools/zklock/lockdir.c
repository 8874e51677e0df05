// SPDX-License-Identifier: MIT
/*
 * tools/zklock/lockdir.c - the lock directory: prove it is on zklockfs,
 * create it there, read the xattrs zklockfs answers.
 */
#include "tools/zklock/lockdir.h"

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>

#include "tools/zklock/zklock.h"

#define FUSE_SUPER_MAGIC	0x65735546

/* See lockdir.h. */
ssize_t cli_lockdir_xattr(int fd, const char *path, const char *xname,
			  char **out)
{
	char *buf = NULL, *nbuf;
	ssize_t len, got;
	size_t cap;

	for (;;) {
		len = path ? getxattr(path, xname, NULL, 0) :
			     fgetxattr(fd, xname, NULL, 0);
		if (len < 0)
			goto out_errno;
		/*
		 * Never ask with size 0 a second time: that is a size query,
		 * whose answer may have grown past the buffer (an empty
		 * holders list of a lock someone just took, say).
		 */
		cap = (size_t)len + 1;
		nbuf = realloc(buf, cap + 1);
		if (!nbuf) {
			free(buf);
			return -ENOMEM;
		}
		buf = nbuf;
		got = path ? getxattr(path, xname, buf, cap) :
			     fgetxattr(fd, xname, buf, cap);
		if (got >= 0)
			break;
		if (errno != ERANGE)	/* ERANGE: it grew meanwhile */
			goto out_errno;
	}
	buf[got] = '\0';
	*out = buf;
	return got;

out_errno:
	got = -errno;
	free(buf);
	return got;
}

/* See lockdir.h. */
int cli_lockdir_check(const char *dir)
{
	struct statfs sfs;

	if (statfs(dir, &sfs) < 0)
		return -errno;
	if (sfs.f_type != FUSE_SUPER_MAGIC)
		return -ENOTZKLOCKFS;
	/* its size is proof enough (the value may pass the kernel's 64 KiB) */
	if (getxattr(dir, XATTR_HOLDERS, NULL, 0) >= 0)
		return 0;
	if (errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP)
		return -ENOTZKLOCKFS;
	return -errno;
}

/* See lockdir.h. */
int cli_lockdir_is_dir(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/*
 * The length of the first @len bytes of @p without their last component and
 * the slashes before it: "a/b" -> "a", "/a" -> "/", "a" -> "" (0).
 */
static size_t cli_parent_len(const char *p, size_t len)
{
	while (len > 0 && p[len - 1] != '/')
		len--;
	while (len > 1 && p[len - 1] == '/')
		len--;
	return len;
}

/*
 * mkdir the first @len bytes of @p once its parent is proven a zklockfs
 * directory; a parent that is gone too is made again first, up to @levels
 * levels up.  mkdir() asks the mount even while the kernel still remembers
 * the directory (it revalidates the name it creates); stat() would not.
 */
static int cli_mkdir_up(char *p, size_t len, int levels)
{
	size_t plen = cli_parent_len(p, len);
	char save = p[plen];
	int err;

	p[plen] = '\0';
	err = cli_lockdir_check(plen ? p : ".");
	p[plen] = save;
	if (err == -ENOENT && plen > 0 && levels > 0)
		err = cli_mkdir_up(p, plen, levels - 1);
	if (err)
		return err;
	save = p[len];
	p[len] = '\0';
	err = mkdir(p, 0777) < 0 && errno != EEXIST ? -errno : 0;
	p[len] = save;
	return err;
}

/* See lockdir.h. */
int cli_lockdir_remake(const char *dir)
{
	char *p = strdup(dir);
	size_t len;
	int err;

	if (!p)
		return -ENOMEM;
	len = strlen(p);
	while (len > 1 && p[len - 1] == '/')
		p[--len] = '\0';
	err = cli_mkdir_up(p, len, CLI_LOCKDIR_LEVELS);
	if (!err)
		err = cli_lockdir_is_dir(p);
	free(p);
	return err;
}

/* See lockdir.h. */
int cli_lockdir_make(const char *dir)
{
	char *p = strdup(dir), save;
	size_t len, have;
	int err;

	if (!p)
		return -ENOMEM;
	len = strlen(p);
	while (len > 1 && p[len - 1] == '/')	/* "a/b/" is "a/b" */
		p[--len] = '\0';
	err = cli_lockdir_is_dir(p);
	if (err != -ENOENT) {
		if (!err)
			err = cli_lockdir_check(p);
		if (err == -ENOENT)	/* gone, though the kernel remembers it */
			err = cli_lockdir_remake(p);
		goto out_free;
	}
	/* walk up to the first ancestor that exists: it must be ours */
	have = len;
	do {
		have = cli_parent_len(p, have);
		save = p[have];
		p[have] = '\0';
		err = cli_lockdir_is_dir(have ? p : ".");
		if (!err)
			err = cli_lockdir_check(have ? p : ".");
		p[have] = save;
	} while (err == -ENOENT && have > 0);
	if (err)
		goto out_free;
	/* create what is missing, one component at a time */
	for (size_t i = have + 1; i <= len; i++) {
		if ((i < len && p[i] != '/') || p[i - 1] == '/')
			continue;
		save = p[i];
		p[i] = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			err = -errno;
		p[i] = save;
		if (err)
			goto out_free;
	}
	err = cli_lockdir_is_dir(p);
out_free:
	free(p);
	return err;
}

/* See lockdir.h. */
int cli_lockdir_limit(const char *dir, unsigned limit)
{
	char want[16], *have = NULL;
	int n = snprintf(want, sizeof(want), "%u", limit), err = 0;

	bool may_set = true;

	if (setxattr(dir, XATTR_LIMIT, want, (size_t)n, XATTR_CREATE) == 0)
		return 0;
	if (errno == EPERM)		/* only the mount's owner and root set one */
		may_set = false;
	else if (errno != EEXIST)
		return -errno;
	n = (int)cli_lockdir_xattr(-1, dir, XATTR_LIMIT, &have);
	if (n == -ENODATA && !may_set) {
		warnx("%s has no limit, and only the mount's owner or root may set one: "
		      "ask them for a limit of %s, or run without -L", dir, want);
		return -EPERM;
	}
	if (n < 0)
		return n == -ENODATA ? -EAGAIN : n;	/* removed meanwhile */
	if (strcmp(have, want) != 0) {
		warnx("%s: a semaphore of %s holders, not %s%s", dir, have, want,
		      may_set ? "" : " (only the mount's owner or root may change it)");
		err = may_set ? -EEXIST : -EPERM;
	}
	free(have);
	return err;
}

/* See lockdir.h. */
int cli_lockdir_no_limit(const char *dir)
{
	char *have = NULL;
	ssize_t n = cli_lockdir_xattr(-1, dir, XATTR_LIMIT, &have);

	/* gone since it was made (-o containers reaps it): a new one, made
	 * by the enqueue, has no limit */
	if (n == -ENODATA || n == -ENOENT)
		return 0;
	if (n < 0)
		return (int)n;
	warnx("%s: a semaphore of %s holders, not a mutex: someone may have made "
	      "this directory first; run with -L %s to share it, or use a name "
	      "only your users can make", dir, have, have);
	free(have);
	return -EEXIST;
}

/* See lockdir.h. */
int cli_lockdir_failed(const char *dir, int err)
{
	struct statfs sfs;

	if (err == -ETIMEDOUT) {
		warnx("%s: ZooKeeper did not answer the mount within its session "
		      "timeout", dir);
		return CLI_EXIT_UNAVAILABLE;
	}
	if (err == -ENOTZKLOCKFS)
		warnx("%s: not a directory on a zklockfs mount", dir);
	else if (err == -EISDIR)
		warnx("%s: a folder of a lockfiles mount, not a lock: name a lock file "
		      "in it (zklock %s/NAME.lock ...)", dir, dir);
	else if (err == -EACCES && statfs(dir, &sfs) < 0 && errno == EACCES)
		/* FUSE answers nobody but the mount's owner, unless told */
		warnx("%s: %s: a FUSE mount lets in only the user who mounted it, "
		      "unless mounted with -o allow_other", dir, strerror(-err));
	else
		warnx("%s: %s", dir, strerror(-err));
	return CLI_EXIT_NODIR;
}

/* See lockdir.h. */
int cli_lockdir_lockfile(const char *path)
{
	char *p = strdup(path), *slash;
	struct stat st;
	char one[4];
	int err;

	if (!p)
		return -ENOMEM;
	if (stat(path, &st) == 0) {
		free(p);
		/* a folder of a lockfiles mount holds locks, it is none: an
		 * entry made in it would be a stray lock file of this host's */
		if (S_ISDIR(st.st_mode) && getxattr(path, XATTR_LOCKFILES, one, sizeof(one)) > 0)
			return -EISDIR;
		return S_ISREG(st.st_mode);
	}
	err = -errno;
	if (err == -ENOENT) {	/* missing: its folder tells what it would be */
		slash = strrchr(p, '/');
		if (slash)
			*slash = '\0';
		err = getxattr(slash ? (*p ? p : "/") : ".", XATTR_LOCKFILES, one,
			       sizeof(one)) > 0;
	}
	free(p);
	return err;
}
