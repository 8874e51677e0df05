/* zk/queue.c - the mount's own queues: the entries this engine made in one
 * lock, in sequence order, found by the lock's path (zk/lock.c says what
 * they let a listing decide).  Calls nothing else of the engine. */
#include "zk/engine.h"

#include <stdlib.h>
#include <string.h>

#include "zk/naming.h"

static struct zke_queue **qslot(struct zkl_engine *e, const char *dir)
{
	return &e->qtab[zkn_hash(dir) % QBUCKETS];
}

struct zke_queue *zke_queue_find_dir_locked(struct zkl_engine *e, const char *dir)
{
	struct zke_queue *q;

	ZKMX_ASSERT_HELD(&e->lock);
	for (q = *qslot(e, dir); q && strcmp(q->dir, dir) != 0; q = q->hnext)
		;
	return q;
}

void zke_queue_insert_locked(struct zkl_waiter *w)
{
	struct zke_queue **slot = qslot(w->e, w->req.dir);
	struct zke_queue *q = zke_queue_find_dir_locked(w->e, w->req.dir);
	struct zkl_waiter *x;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (q)
			q->dir = strdup(w->req.dir);
		if (!q || !q->dir) {
			free(q);
			return;		/* it lists for itself: slower, not wrong */
		}
		q->hnext = *slot;
		*slot = q;
	}
	/* one session's creates complete in order: almost always the tail */
	for (x = q->tail; x && zkn_seq_cmp(x->ours.seq, w->ours.seq) > 0; x = x->qprev)
		;
	w->q = q;
	w->qprev = x;
	w->qnext = x ? x->qnext : q->head;
	if (w->qnext)
		w->qnext->qprev = w;
	else
		q->tail = w;
	if (x)
		x->qnext = w;
	else
		q->head = w;
}

void zke_queue_unlink_locked(struct zkl_waiter *w)
{
	struct zke_queue *q = w->q, **pp;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!q)
		return;
	if (w->qprev)
		w->qprev->qnext = w->qnext;
	else
		q->head = w->qnext;
	if (w->qnext)
		w->qnext->qprev = w->qprev;
	else
		q->tail = w->qprev;
	w->q = NULL;
	w->qprev = w->qnext = NULL;
	if (q->head)
		return;
	for (pp = qslot(w->e, q->dir); *pp != q; pp = &(*pp)->hnext)
		;
	*pp = q->hnext;
	free(q->dir);
	free(q);
}

struct zkl_waiter *zke_queue_find_locked(struct zkl_waiter *w, int32_t seq)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	for (struct zkl_waiter *x = w->qprev; x; x = x->qprev) {
		int c = zkn_seq_cmp(x->ours.seq, seq);

		if (c == 0)
			return x;
		if (c < 0)
			break;
	}
	return NULL;
}
