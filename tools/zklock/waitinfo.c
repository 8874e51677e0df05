// SPDX-License-Identifier: MIT
/* tools/zklock/waitinfo.c - what a waiting zklock shows (see waitinfo.h). */
#include "tools/zklock/waitinfo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "tools/zklock/signals.h"

static struct {
	pthread_mutex_t mu;	/* stop, said */
	bool stop;
	bool said;		/* a line is on a terminal, to clear */
	bool tty;
	char dir[4096];
	char name[256];		/* our entries' names start with "NAME-" */
} wi = { .mu = PTHREAD_MUTEX_INITIALIZER };

static bool stopped(void)
{
	bool s;

	pthread_mutex_lock(&wi.mu);
	s = wi.stop;
	pthread_mutex_unlock(&wi.mu);
	return s;
}

/* Our place in the queue (1 = holds it), from a listing in queue order and
 * the pid line of the entries named as ours; 0 if not seen; *@len the queue's. */
static int our_place(int *len)
{
	DIR *d = opendir(wi.dir);
	struct dirent *de;
	size_t nlen = strlen(wi.name);
	int pos = 0, place = 0;
	char path[4400], want[32], data[512];

	*len = 0;
	if (!d)
		return 0;
	snprintf(want, sizeof(want), "pid=%d\n", (int)getpid());
	while ((de = readdir(d))) {
		int fd;
		ssize_t n;

		if (de->d_name[0] == '.' || !strstr(de->d_name, "lock-"))
			continue;
		pos++;
		if (place || strncmp(de->d_name, wi.name, nlen) != 0 || de->d_name[nlen] != '-')
			continue;
		snprintf(path, sizeof(path), "%s/%s", wi.dir, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);	/* no O_CREAT: reads */
		n = fd < 0 ? -1 : read(fd, data, sizeof(data) - 1);
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			data[n] = '\0';
			if (strstr(data, want))
				place = pos;
		}
	}
	closedir(d);
	*len = pos;
	return place;
}

/*
 * Cut @line to fit one row of the terminal on stderr (80 columns if it
 * does not say): a line that wraps leaves its first rows behind when
 * "\r\033[K" rewrites the last.  Never in the middle of a UTF-8 sequence.
 */
static void fit(char *line)
{
	struct winsize ws;
	size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
	size_t n = strlen(line);

	if (n < cols)
		return;
	n = cols - 1;
	while (n > 0 && ((unsigned char)line[n] & 0xc0) == 0x80)
		n--;
	line[n] = '\0';
}

/* The holders' text, a line each (fs/observe.h), said as one line. */
static void say(const char *text)
{
	char line[6144], who[1024] = "nobody (the queue is moving)";
	char f[6][160];
	int len, place = our_place(&len);

	if (sscanf(text, "%159[^\t]\t%159[^\t]\t%159[^\t]\t%159[^\t]\t%159[^\t]\t%159[^\n]",
		   f[0], f[1], f[2], f[3], f[4], f[5]) == 6)
		snprintf(who, sizeof(who), "%s (host %s, pid %s, %s, since %s)",
			 f[0], f[2], f[3], f[4], f[5]);
	if (place > 0)
		snprintf(line, sizeof(line), "zklock: waiting for %s: place %d of %d; held by %s",
			 wi.dir, place, len, who);
	else
		snprintf(line, sizeof(line), "zklock: waiting for %s: %d in the queue; held by %s",
			 wi.dir, len, who);
	pthread_mutex_lock(&wi.mu);
	if (!wi.stop) {
		if (wi.tty) {
			fit(line);
			dprintf(STDERR_FILENO, "\r\033[K%s", line);
		}
		else
			dprintf(STDERR_FILENO, "%s\n", line);
		wi.said = true;
	}
	pthread_mutex_unlock(&wi.mu);
}

static void *waitinfo_main(void *arg)
{
	struct timespec second = { 1, 0 };
	char path[4200], text[4096];
	struct pollfd pfd = { .events = POLLPRI };
	ssize_t n;

	(void)arg;
	nanosleep(&second, NULL);	/* a short wait says nothing */
	snprintf(path, sizeof(path), "%s/.holders", wi.dir);
	pfd.fd = stopped() ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	if (pfd.fd < 0)
		return NULL;
	while (!stopped()) {
		n = pread(pfd.fd, text, sizeof(text) - 1, 0);
		if (n < 0)
			break;
		text[n] = '\0';
		say(text);
		/* until the holders change; a look at stop twice a second */
		while (!stopped() && poll(&pfd, 1, 500) == 0)
			;
		if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
			break;
	}
	close(pfd.fd);
	return NULL;
}

/* See waitinfo.h. */
void cli_waitinfo_start(struct cli_run *r)
{
	if (r->lockfile || r->o->nonblock || !(r->o->verbose || isatty(STDERR_FILENO)))
		return;
	snprintf(wi.dir, sizeof(wi.dir), "%s", r->dir);
	snprintf(wi.name, sizeof(wi.name), "%s", r->name);
	wi.tty = isatty(STDERR_FILENO);
	cli_sig_thread(waitinfo_main, NULL);	/* no signal of the main thread's */
}

/* See waitinfo.h. */
void cli_waitinfo_stop(void)
{
	pthread_mutex_lock(&wi.mu);
	wi.stop = true;
	if (wi.said && wi.tty)
		dprintf(STDERR_FILENO, "\r\033[K");
	pthread_mutex_unlock(&wi.mu);
}
