// SPDX-License-Identifier: MIT
/* tools/zklock/watch.c - zklock --watch (see watch.h). */
#include "tools/zklock/watch.h"

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/zklock/lockdir.h"
#include "tools/zklock/text.h"
#include "tools/zklock/zklock.h"

#define HOLDERS_NAME ".holders"	/* fs/observe.h */
#define HOLDER_FIELDS 6		/* ENTRY KIND HOST PID CMD SINCE */

/* Read all of .holders from offset 0 (which tells the mount this descriptor
 * saw it): *@buf (to free), NUL-terminated. */
static ssize_t read_holders(int fd, char **buf)
{
	return lseek(fd, 0, SEEK_SET) < 0 ? -errno : cli_read_all(fd, buf);
}

/* One line of output for the holders @text of @lock. */
static void print_holders(const char *lock, char *text, bool json)
{
	char now[32], *save = NULL;
	time_t t = time(NULL);
	struct tm tm;
	bool first = true;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (json) {
		printf("{\"time\":\"%s\",\"lock\":", now);
		cli_json_str(stdout, lock);
		printf(",\"holders\":[");
	} else {
		printf("%s %s: ", now, lock);
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		static const char *const key[HOLDER_FIELDS] = {
			"entry", "kind", "host", "pid", "cmd", "since"
		};
		char *f[HOLDER_FIELDS], *fs = NULL;
		int k = 0;

		for (char *x = strtok_r(line, "\t", &fs); x && k < HOLDER_FIELDS;
		     x = strtok_r(NULL, "\t", &fs))
			f[k++] = x;
		if (k != HOLDER_FIELDS)
			continue;	/* not a line the mount writes */
		if (json) {
			printf("%s{", first ? "" : ",");
			for (int i = 0; i < HOLDER_FIELDS; i++) {
				printf("%s\"%s\":", i ? "," : "", key[i]);
				cli_json_str(stdout, f[i]);
			}
			printf("}");
		} else {
			printf("%s%s (%s; host %s, pid %s, %s, since %s)", first ? "held by " : "; ",
			       f[0], f[1], f[2], f[3], f[4], f[5]);
		}
		first = false;
	}
	if (json)
		printf("]}\n");
	else
		printf("%s\n", first ? "nobody holds it" : "");
	fflush(stdout);
}

/* See watch.h. */
int cli_watch(const char *lockdir, bool json)
{
	struct pollfd pfd = { .events = POLLIN | POLLPRI };
	char *path, *text = NULL;
	ssize_t n;
	int err;

	/* a follower may start before any candidate: the lock is made, as the
	 * first candidate's zklock would make it, and watched from no holder */
	err = cli_lockdir_is_dir(lockdir);
	if (err == -ENOENT && cli_lockdir_lockfile(lockdir) == 0)
		err = cli_lockdir_make(lockdir);
	if (!err)
		err = cli_lockdir_check(lockdir);
	if (err)
		return cli_lockdir_failed(lockdir, err);
	if (asprintf(&path, "%s/%s", lockdir, HOLDERS_NAME) < 0)
		return CLI_EXIT_OSERR;
	pfd.fd = open(path, O_RDONLY | O_CLOEXEC);
	err = pfd.fd < 0 ? -errno : 0;
	free(path);
	if (err)
		return cli_lockdir_failed(lockdir, err == -ENOENT ? -ENOTZKLOCKFS : err);
	for (;;) {
		n = read_holders(pfd.fd, &text);
		if (n < 0) {
			err = (int)n;
			break;
		}
		print_holders(lockdir, text, json);
		free(text);
		/* wakes once the holders differ from what was just read */
		while (poll(&pfd, 1, -1) < 0)
			if (errno != EINTR) {
				err = -errno;
				goto out;
			}
		if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) {
			err = -ENOTCONN;
			break;
		}
	}
out:
	close(pfd.fd);
	if (err == -ENOTCONN || err == -ENODEV || err == -EIO) {
		warnx("%s: the mount went away", lockdir);
		return CLI_EXIT_UNAVAILABLE;
	}
	return cli_lockdir_failed(lockdir, err);
}
