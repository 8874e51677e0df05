/* fs/pending.c - requests waiting on ZooKeeper, answered once (pending.h). */
#include "fs/pending.h"

#include <errno.h>
#include <stdlib.h>

#include "fs/pool.h"
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
 * FUSE_INTERRUPT of @req, if it still waits: a signal that ends its caller
 * is answered EINTR now; a caught one now if the request has waited its
 * patience, else marked for the sweep to answer once it has; one that
 * only stops or continues the caller (^Z, fg) not at all, as nothing of
 * the caller's runs before the answer (pending.h).  @req is found by its
 * address: libfuse keeps it alive while this runs, so no other request
 * can have it, and one already answered is not on the list.  The kernel
 * sends one FUSE_INTERRUPT per request, however many signals come.
 */
static void pend_interrupt(fuse_req_t req, void *arg)
{
	struct zklfs *fs = arg;
	struct zklfs_pending *pl = fs->pend;
	enum zklfs_signal kind = fs->reply->signalled(req);
	uint64_t now_ms = zklfs_now_ms();
	bool now = false;

	if (kind == ZKLFS_SIG_STOPS)
		return;
	zkmx_lock(&pl->mu);
	for (struct zpend *p = pl->head.next; p != &pl->head; p = p->next) {
		if (p->req == req) {
			p->interrupted = true;
			if (kind == ZKLFS_SIG_ENDS ||
			    p->since_ms + ZPEND_PATIENCE_MS <= now_ms) {
				unlink_locked(pl, p);
				now = true;
			}
			break;
		}
	}
	zkmx_unlock(&pl->mu);
	if (now)
		fs->reply->err(req, EINTR);
}

void zpend_start(struct zklfs *fs, struct zpend *p, fuse_req_t req)
{
	struct zklfs_pending *pl = fs->pend;
	bool arm = false;
	int period;

	p->req = req;
	p->answered = false;
	p->interrupted = false;
	p->started = true;
	p->since_ms = zklfs_now_ms();
	zkmx_lock(&pl->mu);
	/* the sweep comes a tenth of the timeout late at most: due that early */
	period = pl->timeout_ms / 10 > 1000 ? 1000 : pl->timeout_ms / 10;
	p->due_ms = p->since_ms + (uint64_t)(pl->timeout_ms - period);
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

/* A request taken off the list, and its answer. */
struct due {
	fuse_req_t req;
	int err;
};

/* Take @p off the list into @d: EINTR if its caller was signalled, else
 * @err.  fs->pend->mu held. */
static void take_locked(struct zklfs_pending *pl, struct zpend *p, struct due *d, int err)
{
	d->req = p->req;
	d->err = p->interrupted ? EINTR : err;
	unlink_locked(pl, p);
}

/* Answer the @n requests of @due.  Return: how many were ETIMEDOUT. */
static unsigned answer(struct zklfs *fs, const struct due *due, size_t n)
{
	unsigned timedout = 0;

	for (size_t i = 0; i < n; i++) {
		timedout += due[i].err == ETIMEDOUT;
		fs->reply->err(due[i].req, due[i].err);
	}
	return timedout;
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
	struct due due[32];
	unsigned total = 0;
	size_t n;

	do {
		struct zpend *p, *next;

		n = 0;
		zkmx_lock(&pl->mu);
		for (p = pl->head.next; p != &pl->head && n < sizeof(due) / sizeof(due[0]);
		     p = next) {
			next = p->next;
			if (p->zks == zks)
				take_locked(pl, p, &due[n++], ETIMEDOUT);
		}
		zkmx_unlock(&pl->mu);
		total += answer(fs, due, n);
	} while (n == sizeof(due) / sizeof(due[0]));
	if (total)
		zklog(LOG_WARNING, "%u request%s answered ETIMEDOUT: ZooKeeper is silent",
		      total, total == 1 ? "" : "s");
	return total;
}

bool zpend_sweep(struct zklfs *fs, uint64_t now_ms, bool stop)
{
	struct zklfs_pending *pl = fs->pend;
	struct due due[32];
	unsigned total = 0;
	size_t n;
	bool more;
	int timeout;

	do {
		struct zpend *p, *next;

		n = 0;
		zkmx_lock(&pl->mu);
		/* oldest first: past the first that is neither due nor out of
		 * patience, none is */
		for (p = pl->head.next; p != &pl->head && n < sizeof(due) / sizeof(due[0]) &&
		     (p->due_ms <= now_ms || p->since_ms + ZPEND_PATIENCE_MS <= now_ms);
		     p = next) {
			next = p->next;
			if (p->due_ms <= now_ms || p->interrupted)
				take_locked(pl, p, &due[n++], ETIMEDOUT);
		}
		more = pl->head.next != &pl->head;
		pl->armed = more && !stop;
		timeout = pl->timeout_ms;
		zkmx_unlock(&pl->mu);
		total += answer(fs, due, n);
	} while (n == sizeof(due) / sizeof(due[0]));
	if (total)
		zklog(LOG_WARNING, "%u request%s found no answer from ZooKeeper within "
		      "the session timeout (%d ms): answered ETIMEDOUT", total,
		      total == 1 ? "" : "s", timeout);
	return more && !stop;
}
