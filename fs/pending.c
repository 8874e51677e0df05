/* fs/pending.c - requests waiting on ZooKeeper, answered once (pending.h). */
#include "fs/pending.h"

#include <errno.h>
#include <stdlib.h>

#include "fs/node.h"
#include "fs/reply.h"
#include "zk/log.h"

struct zklfs_pending {
	struct zkmx mu;		/* everything below */
	struct zpend head;		/* the unanswered, oldest first */
	bool armed;			/* a sweep is due */
	int timeout_ms;
	void (*arm)(struct zklfs *fs);	/* read only */
};

int zpend_init(struct zklfs *fs, void (*arm)(struct zklfs *fs))
{
	struct zklfs_pending *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return -ENOMEM;
	zkmx_init(&pl->mu, ZKMX_RANK_PENDING, "fs->pend->mu");
	pl->head.next = pl->head.prev = &pl->head;
	pl->timeout_ms = 10000;
	pl->arm = arm;
	fs->pend = pl;
	return 0;
}

void zpend_timeout(struct zklfs *fs, int timeout_ms)
{
	zkmx_lock(&fs->pend->mu);
	fs->pend->timeout_ms = timeout_ms;
	zkmx_unlock(&fs->pend->mu);
}

void zpend_free(struct zklfs *fs)
{
	if (!fs->pend)
		return;
	zkmx_destroy(&fs->pend->mu);
	free(fs->pend);
	fs->pend = NULL;
}

/* Take @p off the list and mark it answered.  fs->pend->mu held. */
static void unlink_locked(struct zklfs_pending *pl, struct zpend *p)
{
	ZKMX_ASSERT_HELD(&pl->mu);
	p->answered = true;
	if (p->next) {
		p->prev->next = p->next;
		p->next->prev = p->prev;
		p->next = p->prev = NULL;
	}
}

/*
 * FUSE_INTERRUPT of @req: answer it EINTR if it still waits.  @req is
 * found by its address: libfuse keeps it alive while this runs, so no
 * other request can have it, and one already answered is not on the list.
 */
static void pend_interrupt(fuse_req_t req, void *arg)
{
	struct zklfs *fs = arg;
	struct zklfs_pending *pl = fs->pend;
	bool mine = false;

	zkmx_lock(&pl->mu);
	for (struct zpend *p = pl->head.next; p != &pl->head; p = p->next) {
		if (p->req == req) {
			unlink_locked(pl, p);
			mine = true;
			break;
		}
	}
	zkmx_unlock(&pl->mu);
	if (mine)
		fs->reply->err(req, EINTR);
}

void zpend_start(struct zklfs *fs, struct zpend *p, fuse_req_t req)
{
	struct zklfs_pending *pl = fs->pend;
	bool arm = false;
	int period;

	p->req = req;
	p->answered = false;
	p->started = true;
	zkmx_lock(&pl->mu);
	/* the sweep comes a tenth of the timeout late at most: due that early */
	period = pl->timeout_ms / 10 > 1000 ? 1000 : pl->timeout_ms / 10;
	p->due_ms = zklfs_now_ms() + (uint64_t)(pl->timeout_ms - period);
	p->next = &pl->head;
	p->prev = pl->head.prev;
	pl->head.prev->next = p;
	pl->head.prev = p;
	if (pl->arm && !pl->armed)
		arm = pl->armed = true;
	zkmx_unlock(&pl->mu);
	if (arm)
		pl->arm(fs);
	fs->reply->on_interrupt(req, pend_interrupt, fs);	/* last: may run now */
}

bool zpend_claim(struct zklfs *fs, struct zpend *p)
{
	struct zklfs_pending *pl = fs->pend;
	bool mine;

	if (!p->started)
		return !p->answered ? (p->answered = true) : false;
	zkmx_lock(&pl->mu);
	mine = !p->answered;
	unlink_locked(pl, p);
	zkmx_unlock(&pl->mu);
	return mine;
}

bool zpend_answered(struct zklfs *fs, struct zpend *p)
{
	bool answered;

	if (!p->started)
		return p->answered;
	zkmx_lock(&fs->pend->mu);
	answered = p->answered;
	zkmx_unlock(&fs->pend->mu);
	return answered;
}

/* Answer ETIMEDOUT the @n requests @due, taken off the list.  Return: @n. */
static unsigned answer_timedout(struct zklfs *fs, const fuse_req_t *due, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fs->reply->err(due[i], ETIMEDOUT);
	return (unsigned)n;
}

void zpend_session(struct zklfs *fs, struct zpend *p, const void *zks)
{
	if (!p->started) {
		p->zks = zks;
		return;
	}
	zkmx_lock(&fs->pend->mu);
	p->zks = zks;
	zkmx_unlock(&fs->pend->mu);
}

unsigned zpend_silent(struct zklfs *fs, const void *zks)
{
	struct zklfs_pending *pl = fs->pend;
	fuse_req_t due[32];
	unsigned total = 0;
	size_t n;

	do {
		struct zpend *p, *next;

		n = 0;
		zkmx_lock(&pl->mu);
		for (p = pl->head.next; p != &pl->head && n < sizeof(due) / sizeof(due[0]);
		     p = next) {
			next = p->next;
			if (p->zks != zks)
				continue;
			due[n++] = p->req;
			unlink_locked(pl, p);
		}
		zkmx_unlock(&pl->mu);
		total += answer_timedout(fs, due, n);
	} while (n == sizeof(due) / sizeof(due[0]));
	if (total)
		zklog(LOG_WARNING, "%u request%s answered ETIMEDOUT: ZooKeeper is silent",
		      total, total == 1 ? "" : "s");
	return total;
}

bool zpend_sweep(struct zklfs *fs, uint64_t now_ms, bool stop)
{
	struct zklfs_pending *pl = fs->pend;
	fuse_req_t due[32];
	unsigned total = 0;
	size_t n;
	bool more;
	int timeout;

	do {
		n = 0;
		zkmx_lock(&pl->mu);
		while (n < sizeof(due) / sizeof(due[0]) && pl->head.next != &pl->head &&
		       pl->head.next->due_ms <= now_ms) {
			due[n++] = pl->head.next->req;
			unlink_locked(pl, pl->head.next);
		}
		more = pl->head.next != &pl->head;
		pl->armed = more && !stop;
		timeout = pl->timeout_ms;
		zkmx_unlock(&pl->mu);
		total += answer_timedout(fs, due, n);
	} while (n == sizeof(due) / sizeof(due[0]));
	if (total)
		zklog(LOG_WARNING, "%u request%s found no answer from ZooKeeper within "
		      "the session timeout (%d ms): answered ETIMEDOUT", total,
		      total == 1 ? "" : "s", timeout);
	return more && !stop;
}
