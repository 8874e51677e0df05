/*
 * zk/drive.c - the one loop that does the ZooKeeper client's I/O (see
 * zk/drive.h): the token, the clients, a turn of poll, the wake-up.
 */
#include "zk/drive.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "zk/clock.h"
#include "zk/log.h"

#define ZKD_CLIENTS_MAX 32	/* sessions: at most 8 per mount */
#define WAIT_TURN_MS 50		/* a waiter's turn: it looks at its deadline */

static pthread_mutex_t token = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool driving;	/* this thread holds the token */

/* the clients: reg's, copied at each turn's start */
static pthread_mutex_t reg = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv = PTHREAD_COND_INITIALIZER;
static struct zkd_client *clients;
static bool in_turn;			/* reg: a turn uses the copy */
static uint64_t turns;			/* reg: turns ended */

static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static int wake_fd = -1;

static void wake_init(void)
{
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wake_fd < 0)
		zklog(LOG_ERR, "no eventfd for the ZooKeeper loop: %s", strerror(errno));
}

void zkd_wake(void)
{
	uint64_t one = 1;

	pthread_once(&wake_once, wake_init);
	if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		zklog(LOG_ERR, "cannot wake the ZooKeeper loop: %s", strerror(errno));
}

bool zkd_driving(void)
{
	return driving;
}

void zkd_add(struct zkd_client *c)
{
	pthread_mutex_lock(&reg);
	c->next = clients;
	clients = c;
	pthread_mutex_unlock(&reg);
	zkd_wake();
}

void zkd_remove(struct zkd_client *c)
{
	struct zkd_client **p;

	pthread_mutex_lock(&reg);
	for (p = &clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	/* a turn of another thread may still use it: let that turn end
	 * (the next one, which may start before this thread wakes, no
	 * longer has it) */
	if (in_turn && !driving) {
		uint64_t now = turns;

		while (turns == now)
			pthread_cond_wait(&reg_cv, &reg);
	}
	pthread_mutex_unlock(&reg);
}

/*
 * One turn, with the token: each client says what it waits for, one
 * poll, each client gets what came.  *@xready: @xfd is readable.
 */
static void turn(int xfd, int timeout_ms, bool *xready)
{
	struct pollfd pfd[ZKD_CLIENTS_MAX + 2];
	struct zkd_client *cs[ZKD_CLIENTS_MAX];
	int n = 0, first, nc = 0, xi = -1;

	pthread_once(&wake_once, wake_init);
	pfd[n++] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
	if (xfd >= 0) {
		xi = n;
		pfd[n++] = (struct pollfd){ .fd = xfd, .events = POLLIN };
	}
	first = n;
	pthread_mutex_lock(&reg);
	for (struct zkd_client *c = clients; c && nc < ZKD_CLIENTS_MAX; c = c->next)
		cs[nc++] = c;
	in_turn = true;
	pthread_mutex_unlock(&reg);
	for (int i = 0; i < nc; i++) {
		int fd = -1;
		short ev = 0;

		cs[i]->prepare(cs[i], &fd, &ev, &timeout_ms);
		/* no descriptor: a place that poll() skips */
		pfd[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	if (poll(pfd, (nfds_t)n, timeout_ms) < 0) {
		for (int i = 0; i < n; i++)
			pfd[i].revents = 0;
	}
	if (pfd[0].revents & POLLIN) {
		uint64_t v;

		if (read(wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			zklog(LOG_ERR, "the ZooKeeper loop's wake-up: %s", strerror(errno));
	}
	for (int i = 0; i < nc; i++)
		cs[i]->process(cs[i], pfd[first + i].revents);
	*xready = xi >= 0 && pfd[xi].revents;
	pthread_mutex_lock(&reg);
	in_turn = false;
	turns++;
	pthread_cond_broadcast(&reg_cv);
	pthread_mutex_unlock(&reg);
}

void zkd_run(int fd, bool (*serve)(void *arg, bool ready), void *arg, int tick_ms)
{
	bool ready = false;

	pthread_mutex_lock(&token);
	driving = true;
	while (serve(arg, ready))
		turn(fd, tick_ms, &ready);
	driving = false;
	pthread_mutex_unlock(&token);
}

/* how long until @deadline, in ms, at most @cap (@deadline NULL: @cap) */
static int ms_until(const struct timespec *deadline, int cap)
{
	struct timespec now;
	long long ms;

	if (!deadline)
		return cap;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
	     (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > cap ? cap : (int)ms;
}

bool zkd_wait(pthread_mutex_t *mu, pthread_cond_t *cv, bool (*done)(void *arg),
	      void *arg, const struct timespec *deadline)
{
	while (!done(arg)) {
		int left = ms_until(deadline, WAIT_TURN_MS);

		if (deadline && left == 0)
			return false;
		if (!driving && pthread_mutex_trylock(&token) == 0) {
			bool ready;

			pthread_mutex_unlock(mu);
			driving = true;
			turn(-1, left, &ready);
			driving = false;
			pthread_mutex_unlock(&token);
			pthread_mutex_lock(mu);
		} else {
			struct timespec at;

			/* the driver broadcasts @cv; look at the token again
			 * now and then, in case the driver stopped */
			zk_deadline_in(&at, CLOCK_MONOTONIC, left);
			pthread_cond_timedwait(cv, mu, &at);
		}
	}
	return true;
}
