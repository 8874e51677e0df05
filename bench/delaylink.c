/*
 * bench/delaylink.c - a slow link for `make bench`: a TCP relay that
 * delivers every byte a fixed delay after it arrived, each way.
 *
 *	delaylink DELAY_US LISTEN_PORT TARGET_HOST:PORT
 *
 * Listens on 127.0.0.1:LISTEN_PORT, prints "listening" once it does, and
 * relays each connection to TARGET both ways, in order.  A chunk read at
 * time t is written at t + DELAY_US, as a link of that one-way latency
 * with no bandwidth limit would deliver it.  An end that closes is closed
 * (write side) on the other once what it sent was delivered; an error on
 * either end closes both.
 *
 * Why not tests/integration/delayproxy.py: that relay is a Python asyncio
 * process whose own cost (about a millisecond a round trip on this
 * machine) is larger than the 0.5 ms round trip the bench asks for; the
 * nemesis needs its hold and refuse modes, the bench only a delay.  Here
 * one thread waits in epoll with a timerfd set to the next delivery, the
 * timer slack at 1 ns, so a byte leaves within tens of microseconds of
 * its time (docs/PERFORMANCE.md gives the link's own cost: the same
 * cycles through it at DELAY_US 0).
 *
 * One thread, no locks.  It dies with its parent (PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define MAXCONN 256

struct chunk {
	struct chunk *next;
	uint64_t due_ns;	/* deliver at */
	size_t len, off;
	char data[];
};

/* one direction of a connection: bytes read from @from, written to @to */
struct pipe {
	int from, to;
	struct chunk *head, *tail;
	int eof;		/* @from closed: shut @to's write side when drained */
	int shut;		/* done */
	int blocked;		/* @to is full: waiting for EPOLLOUT */
};

struct conn {
	int used;
	int fd[2];		/* 0: the client's, 1: the target's */
	struct pipe p[2];	/* 0: client to target, 1: back */
};

static struct conn conns[MAXCONN];
static uint64_t delay_ns;
static int ep, tfd;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "delaylink: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* epoll data: a connection's index * 2 + which end; the listener and the
 * timer have their own tags */
#define TAG_LISTEN UINT64_MAX
#define TAG_TIMER (UINT64_MAX - 1)

/* what an end waits for: input unless its reader stopped, output while
 * the pipe into it is blocked */
static void rearm(struct conn *c, int end)
{
	struct epoll_event ev = { 0 };
	struct pipe *in = &c->p[end];		/* reads from this end */
	struct pipe *out = &c->p[1 - end];	/* writes to this end */

	if (!in->eof)
		ev.events |= EPOLLIN;
	if (out->blocked)
		ev.events |= EPOLLOUT;
	ev.data.u64 = (uint64_t)(c - conns) * 2 + (uint64_t)end;
	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd[end], &ev);
}

static void conn_close(struct conn *c)
{
	for (int i = 0; i < 2; i++) {
		struct chunk *k = c->p[i].head;

		while (k) {
			struct chunk *n = k->next;

			free(k);
			k = n;
		}
		close(c->fd[i]);
	}
	memset(c, 0, sizeof(*c));
}

/* deliver what is due on @p; 0, or -1 when the connection is broken */
static int pipe_flush(struct conn *c, struct pipe *p, uint64_t now)
{
	while (p->head && p->head->due_ns <= now) {
		struct chunk *k = p->head;
		ssize_t n = send(p->to, k->data + k->off, k->len - k->off, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!p->blocked) {
				p->blocked = 1;
				rearm(c, p == &c->p[0] ? 1 : 0);
			}
			return 0;
		}
		if (n <= 0)
			return -1;
		k->off += (size_t)n;
		if (k->off < k->len)
			continue;
		p->head = k->next;
		if (!p->head)
			p->tail = NULL;
		free(k);
	}
	if (p->blocked) {
		p->blocked = 0;
		rearm(c, p == &c->p[0] ? 1 : 0);
	}
	if (!p->head && p->eof && !p->shut) {
		shutdown(p->to, SHUT_WR);
		p->shut = 1;
	}
	return 0;
}

/* read what @end has; 0, or -1 when the connection is broken */
static int pipe_fill(struct conn *c, int end, uint64_t now)
{
	struct pipe *p = &c->p[end];

	for (;;) {
		struct chunk *k = malloc(sizeof(*k) + CHUNK);
		ssize_t n;

		if (!k)
			return -1;
		n = recv(p->from, k->data, CHUNK, 0);
		if (n <= 0) {
			free(k);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			if (n < 0)
				return -1;
			p->eof = 1;
			rearm(c, end);
			return 0;
		}
		k->next = NULL;
		k->due_ns = now + delay_ns;
		k->len = (size_t)n;
		k->off = 0;
		if (p->tail)
			p->tail->next = k;
		else
			p->head = k;
		p->tail = k;
	}
}

/* the timer at the earliest chunk still to deliver, or off */
static void timer_set(void)
{
	uint64_t next = 0;
	struct itimerspec it = { 0 };

	for (int i = 0; i < MAXCONN; i++)
		for (int d = 0; conns[i].used && d < 2; d++) {
			struct chunk *k = conns[i].p[d].head;

			if (k && !conns[i].p[d].blocked && (!next || k->due_ns < next))
				next = k->due_ns;
		}
	if (next) {
		it.it_value.tv_sec = (time_t)(next / 1000000000u);
		it.it_value.tv_nsec = (long)(next % 1000000000u);
	}
	timerfd_settime(tfd, TFD_TIMER_ABSTIME, &it, NULL);
}

static int target_connect(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static void accept_one(int lfd, const struct addrinfo *target)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	int one = 1, i, t;

	if (fd < 0)
		return;
	for (i = 0; i < MAXCONN && conns[i].used; i++)
		;
	t = i < MAXCONN ? target_connect(target) : -1;
	if (t < 0) {
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conns[i].used = 1;
	conns[i].fd[0] = fd;
	conns[i].fd[1] = t;
	conns[i].p[0] = (struct pipe){ .from = fd, .to = t };
	conns[i].p[1] = (struct pipe){ .from = t, .to = fd };
	for (int end = 0; end < 2; end++) {
		struct epoll_event ev = { .events = EPOLLIN,
					  .data.u64 = (uint64_t)i * 2 + (uint64_t)end };

		epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd[end], &ev);
	}
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *target;
	struct sockaddr_in la = { .sin_family = AF_INET };
	struct epoll_event ev;
	char *host, *port;
	int lfd, one = 1;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_TIMERSLACK, 1UL);
	if (argc != 4 || !(port = strrchr(argv[3], ':'))) {
		fprintf(stderr, "usage: delaylink DELAY_US LISTEN_PORT TARGET_HOST:PORT\n");
		return 2;
	}
	delay_ns = strtoull(argv[1], NULL, 10) * 1000u;
	host = strndup(argv[3], (size_t)(port - argv[3]));
	if (!host || getaddrinfo(host, port + 1, &hints, &target) != 0) {
		fprintf(stderr, "delaylink: cannot resolve %s\n", argv[3]);
		return 1;
	}
	la.sin_port = htons((uint16_t)atoi(argv[2]));
	la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&la, sizeof(la)) < 0 || listen(lfd, 128) < 0)
		die("listen");
	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ep < 0 || tfd < 0)
		die("epoll");
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = TAG_LISTEN };
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = TAG_TIMER };
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	printf("listening\n");
	fflush(stdout);

	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);
		uint64_t now = now_ns();

		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			struct conn *c;
			int end;

			if (tag == TAG_LISTEN) {
				accept_one(lfd, target);
				continue;
			}
			if (tag == TAG_TIMER) {
				uint64_t ticks;

				if (read(tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					die("timerfd");
				continue;
			}
			c = &conns[tag / 2];
			end = (int)(tag % 2);
			if (!c->used)
				continue;
			/* hung up after its end of file: nothing more goes
			 * either way */
			if ((evs[i].events & (EPOLLHUP | EPOLLERR)) && c->p[end].eof) {
				conn_close(c);
				continue;
			}
			if (((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
			     pipe_fill(c, end, now) < 0) ||
			    ((evs[i].events & EPOLLOUT) &&
			     pipe_flush(c, &c->p[1 - end], now) < 0))
				conn_close(c);
		}
		/* deliver everything due, then sleep until the next is */
		now = now_ns();
		for (int i = 0; i < MAXCONN; i++) {
			struct conn *c = &conns[i];

			if (!c->used)
				continue;
			if (pipe_flush(c, &c->p[0], now) < 0 || pipe_flush(c, &c->p[1], now) < 0 ||
			    (c->p[0].shut && c->p[1].shut))
				conn_close(c);
		}
		timer_set();
	}
}
