/* fs/mountpoint.c - the mount point guarded while unmounted (mountpoint.h). */
#include "fs/mountpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zk/log.h"

/* Does @fd's directory hold anything but "." and ".."? */
static bool has_entries(int fd)
{
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	bool found = false;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return false;
	}
	while (!found && (e = readdir(d)))
		found = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return found;
}

/*
 * List @mp in the state file, unless it is there already.  The file is
 * flock()ed while read and appended to: two daemons mounting at once list
 * a path once.  Failing is one log line: the mount goes on, the flag set.
 */
static void mp_record(const char *mp)
{
	const char *dir = getenv(ZKLFS_STATE_DIR_ENV);
	char path[4096], *line = NULL;
	size_t cap = 0, len = strlen(mp);
	bool listed = false;
	ssize_t n;
	FILE *f;
	int fd, err;

	if (!dir || !*dir)
		dir = ZKLFS_STATE_DIR;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, ZKLFS_MP_LIST) >= sizeof(path) ||
	    strchr(mp, '\n')) {
		zklog(LOG_WARNING, "cannot list %s in %s/%s (a path too long, or a newline "
		      "in it): remove its immutable flag by hand (chattr -i) once unused",
		      mp, dir, ZKLFS_MP_LIST);
		return;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		goto out_fail;
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out_fail;
	f = fdopen(fd, "a+");
	if (!f) {
		close(fd);
		goto out_fail;
	}
	if (flock(fd, LOCK_EX) != 0)
		goto out_close;
	while (!listed && (n = getline(&line, &cap, f)) >= 0)
		listed = (size_t)n == len + 1 && line[len] == '\n' && memcmp(line, mp, len) == 0;
	free(line);
	if (!listed && (fprintf(f, "%s\n", mp) < 0 || fflush(f) != 0))
		goto out_close;
	fclose(f);			/* and the flock with it */
	return;
out_close:
	err = errno;
	fclose(f);
	errno = err;
out_fail:
	zklog(LOG_WARNING, "made %s immutable, but cannot list it in %s: %s (the "
	      "package's removal will not clear it: chattr -i does)", mp, path,
	      strerror(errno));
}

int zklfs_mp_guard(const char *mp)
{
	int fd, flags, err = 0;

	fd = open(mp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		zklog(LOG_WARNING, "cannot open the mount point %s to guard it while "
		      "unmounted: %s", mp, strerror(-err));
		return err;
	}
	if (has_entries(fd))
		zklog(LOG_WARNING, "the mount point %s is not empty: what is in it is "
		      "reachable while nothing is mounted, and a lock file made there "
		      "then locks this host alone", mp);
	if (geteuid() != 0) {
		zklog(LOG_DEBUG, "not root: the mount point %s stays writable while "
		      "unmounted", mp);
		err = -EPERM;
		goto out_close;
	}
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) {
		err = -errno;
		goto out_unguarded;
	}
	if (flags & FS_IMMUTABLE_FL)
		goto out_close;		/* an earlier mount's, or the admin's */
	flags |= FS_IMMUTABLE_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) {
		err = -errno;
		goto out_unguarded;
	}
	mp_record(mp);
	goto out_close;
out_unguarded:
	if (err == -ENOTTY || err == -EOPNOTSUPP || err == -EINVAL) {
		zklog(LOG_DEBUG, "the filesystem of %s has no immutable flag: the mount "
		      "point stays writable while unmounted", mp);
		err = -EOPNOTSUPP;
	} else {
		zklog(LOG_WARNING, "cannot make the mount point %s immutable: %s (it "
		      "stays writable while unmounted)", mp, strerror(-err));
	}
out_close:
	close(fd);
	return err;
}
