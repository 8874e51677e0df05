/* fs/mntwatch.c - the mount gone from the daemon's namespace (mntwatch.h). */
#include "fs/mntwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zk/log.h"

static struct {
	pthread_t thread, main;
	bool started;
	int stop[2];			/* a pipe: written to stop the thread */
	char dev[32];			/* the mount's "MAJOR:MINOR" */
	volatile sig_atomic_t gone;	/* the thread ended the loop */
} mw = { .stop = { -1, -1 } };

/*
 * Read all of /proc/self/mountinfo from @fd (from its start).  Return: the
 * text (to free), or NULL.
 */
static char *read_all(int fd)
{
	size_t len = 0, cap = 16384;
	char *buf = malloc(cap + 1), *nb;
	ssize_t n;

	if (!buf || lseek(fd, 0, SEEK_SET) < 0) {
		free(buf);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len)) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		len += (size_t)n;
		if (len == cap) {
			nb = realloc(buf, 2 * cap + 1);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

/*
 * The fields of one mountinfo line: "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT
 * ...".  Return: whether @line has them; @dev and @point point into it
 * (cut with NULs), @point still escaped as the kernel writes it (\040).
 */
static bool fields(char *line, char **dev, char **point)
{
	char *save = NULL, *f[5];
	int i;

	for (i = 0; i < 5 && (f[i] = strtok_r(i ? NULL : line, " ", &save)); i++)
		;
	if (i < 5)
		return false;
	*dev = f[2];
	*point = f[4];
	return true;
}

/* @path as mountinfo writes it: space, tab, newline and '\' as \ooo. */
static void escape(const char *path, char *out, size_t size)
{
	size_t o = 0;

	for (; *path && o + 5 < size; path++) {
		if (*path == ' ' || *path == '\t' || *path == '\n' || *path == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\%03o", (unsigned char)*path);
		else
			out[o++] = *path;
	}
	out[o] = '\0';
}

/*
 * One look at the mount table: the device of the newest mount at @point
 * (escaped as mountinfo writes it; NULL: not asked) into @at ("" if
 * none), and whether a mount of device @dev (NULL: not asked) is there.
 */
struct mt_look {
	const char *point, *dev;	/* what is asked */
	char at[32];
	bool dev_seen;
};

/* Read the table from @fd (from its start) and answer @lk.  Return: false
 * if it could not be read. */
static bool mt_look(int fd, struct mt_look *lk)
{
	char *info = read_all(fd), *save = NULL, *dev, *point;

	if (!info)
		return false;
	lk->at[0] = '\0';
	lk->dev_seen = false;
	for (char *l = strtok_r(info, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!fields(l, &dev, &point))
			continue;
		if (lk->point && strcmp(point, lk->point) == 0)
			snprintf(lk->at, sizeof(lk->at), "%s", dev);
		if (lk->dev && strcmp(dev, lk->dev) == 0)
			lk->dev_seen = true;
	}
	free(info);
	return true;
}

static void *watch_main(void *arg)
{
	struct mt_look lk = { .dev = mw.dev };
	struct pollfd p[2];
	bool there = true;

	p[0].fd = (int)(intptr_t)arg;
	p[0].events = POLLPRI;
	p[1].fd = mw.stop[0];
	p[1].events = POLLIN;
	while (there) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			zklog(LOG_ERR, "watching the mount table: %s: an unmount seen "
			      "from another namespace only ends nothing", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		there = !mt_look(p[0].fd, &lk) || lk.dev_seen;
	}
	if (!there) {
		zklog(LOG_NOTICE, "the mount is gone from this namespace (device %s): "
		      "stopping, whatever other namespaces hold", mw.dev);
		mw.gone = 1;
		pthread_kill(mw.main, SIGTERM);	/* libfuse's handler ends the loop */
	}
	close(p[0].fd);
	return NULL;
}

int zklfs_mntwatch_start(struct zklfs *fs)
{
	char want[4096 * 4 + 1];
	struct mt_look lk = { .point = want };
	int fd, err;

	escape(fs->mountpoint, want, sizeof(want));
	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !mt_look(fd, &lk))
		lk.at[0] = '\0';
	memcpy(mw.dev, lk.at, sizeof(mw.dev));		/* the newest there */
	err = !mw.dev[0] ? ENOENT : pipe2(mw.stop, O_CLOEXEC) < 0 ? errno : 0;
	mw.main = pthread_self();
	if (!err)
		err = pthread_create(&mw.thread, NULL, watch_main, (void *)(intptr_t)fd);
	if (err) {
		zklog(LOG_ERR, "cannot watch the mount table (%s): an unmount seen "
		      "from another namespace only ends nothing", strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	mw.started = true;
	return 0;
}

bool zklfs_mntwatch_may_unmount(struct zklfs *fs)
{
	char want[4096 * 4 + 1];
	struct mt_look lk = { .point = want };
	bool read_it;
	int fd;

	if (!mw.gone)
		return true;
	escape(fs->mountpoint, want, sizeof(want));
	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	read_it = fd >= 0 && mt_look(fd, &lk);
	if (fd >= 0)
		close(fd);
	if (lk.at[0])
		zklog(LOG_NOTICE, "%s is another mount's now: left alone", fs->mountpoint);
	return read_it && !lk.at[0];
}

void zklfs_mntwatch_stop(void)
{
	if (!mw.started)
		return;
	if (write(mw.stop[1], "x", 1) < 0)
		zklog(LOG_WARNING, "stopping the mount table's watch: %s", strerror(errno));
	pthread_join(mw.thread, NULL);
	close(mw.stop[0]);
	close(mw.stop[1]);
	mw.started = false;
}
