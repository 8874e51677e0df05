/* zk/connect.c - a connect string checked before the client gets it (connect.h). */
#include "zk/connect.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "zk/clock.h"

int zkc_part(const char *connect, int i, char *host, size_t hsize, char *port,
	     size_t psize)
{
	const char *p = connect, *end, *colon;
	size_t len, hlen;
	long v;
	char *e;

	for (; i > 0 && p; i--) {
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	if (!p || !*p)
		return 0;
	end = strchr(p, ',');
	len = end ? (size_t)(end - p) : strlen(p);
	colon = memrchr(p, ':', len);
	if (!colon || colon == p || (size_t)(p + len - colon - 1) >= psize)
		return -EINVAL;
	hlen = (size_t)(colon - p);
	if (p[0] == '[' && colon[-1] == ']') {	/* [::1]:2181 */
		p++;
		hlen -= 2;
	}
	if (hlen == 0 || hlen >= hsize)
		return -EINVAL;
	memcpy(host, p, hlen);
	host[hlen] = '\0';
	len = (size_t)(end ? end - colon - 1 : (long)strlen(colon + 1));
	memcpy(port, colon + 1, len);
	port[len] = '\0';
	errno = 0;
	v = strtol(port, &e, 10);
	if (!isdigit((unsigned char)port[0]) || *e || errno || v < 1 || v > 65535)
		return -EINVAL;
	return 1;
}

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (deadline->tv_sec - now.tv_sec) * 1000 +
	       (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* Try @ai for at most @ms.  Return: 0 accepted, -ECONNREFUSED, or -ETIMEDOUT
 * (no answer either way, or another error: the client will try too). */
static int probe(const struct addrinfo *ai, long ms)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol), err = -ETIMEDOUT, soerr = 0;
	socklen_t slen = sizeof(soerr);
	struct pollfd pfd;

	if (fd < 0)
		return -ETIMEDOUT;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		err = 0;
	} else if (errno == ECONNREFUSED) {
		err = -ECONNREFUSED;
	} else if (errno == EINPROGRESS) {
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, (int)(ms > 0 ? ms : 0)) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) == 0)
			err = soerr == 0 ? 0 : soerr == ECONNREFUSED ? -ECONNREFUSED : -ETIMEDOUT;
	}
	close(fd);
	return err;
}

int zkc_check(const char *connect, int probe_ms, char *why, size_t size)
{
	char host[256], port[16];
	struct timespec deadline;
	bool answered = false;
	int i, rc, refused = 0, tried = 0;

	zk_deadline_in(&deadline, CLOCK_MONOTONIC, probe_ms);
	for (i = 0; (rc = zkc_part(connect, i, host, sizeof(host), port, sizeof(port))) != 0; i++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
		int gai;

		if (rc < 0) {
			snprintf(why, size, "part %d is not host:port with a port 1..65535", i + 1);
			return -EINVAL;
		}
		gai = getaddrinfo(host, port, &hints, &res);
		if (gai == EAI_AGAIN || gai == EAI_SYSTEM)	/* no answer yet (DNS at boot) */
			continue;			/* the client will try */
		if (gai != 0) {
			snprintf(why, size, "host '%s' does not resolve: %s", host,
				 gai_strerror(gai));
			return -ENOENT;
		}
		for (ai = res; ai && !answered; ai = ai->ai_next) {
			tried++;
			rc = probe(ai, ms_left(&deadline));
			if (rc == -ECONNREFUSED)
				refused++;
			answered = rc == 0;
		}
		freeaddrinfo(res);
		if (answered)
			return 0;
	}
	if (i == 0) {
		snprintf(why, size, "no host:port in it");
		return -EINVAL;
	}
	if (tried && refused == tried) {
		snprintf(why, size, "every server refused the connection (%d address%s tried)",
			 tried, tried == 1 ? "" : "es");
		return -ECONNREFUSED;
	}
	return 0;
}
