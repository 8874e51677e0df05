/*
 * zk/sem.c - semaphores: locks whose znode's data sets a limit of N
 * holders (zk/settings.h); an entry holds when fewer than N entries, of any
 * kind, come before it (zkg_decide_limit(), zk/grant.c).
 *
 * Knowing the limit costs a plain lock nothing: the listing every decision
 * makes returns the lock znode's Stat (zoo_aget_children2()), and only a
 * znode with data is read, once per data version (the cache is the
 * mount's queue of entries in that lock).
 *
 * Waiting, without a herd.  Any holder's going lets the first waiter in,
 * whichever holder it is, so no one entry is the one to watch; watching
 * them all would wake every waiter at each release.  Instead a waiter
 * watches only its own entry (W_SEMWAIT), and whoever releases pokes the
 * one its going lets in: after its delete it lists the queue and sets the
 * data of the highest entry within the first N (the entries that hold come
 * first, those just let in last) to what it was, at the data version it
 * read.  That wakes exactly that waiter, whose own watch fires; it lists
 * and holds.  Releases that race each other are kept apart by the
 * version: a poke is a compare-and-set, and an entry already poked (its
 * version is above 0) or poked meanwhile (ZBADVERSION) sends the poker to
 * the entry below.  A holder that goes without a release of ours (another
 * client's, a crash, an expiry) pokes nobody: the first waiter of each
 * mount also lists on every supervisor tick, so it holds within one tick
 * of the server deleting that entry.
 *
 * Everything here runs under engine->lock (ZooKeeper completions take it
 * first), as the rest of the engine (zk/engine.h).
 */
#include "zk/engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zk/grant.h"
#include "zk/settings.h"
#include "zk/log.h"

/* knowing the limit ------------------------------------------------------- */

bool zke_limit_current_locked(struct zkl_waiter *w, const struct Stat *dir)
{
	struct zke_queue *q = w->q;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!q || !dir)
		return true;		/* none known: decided as a plain lock */
	if (dir->dataLength <= 0) {
		q->limit = 0;
		q->linger = -1;
		q->lknown = true;
		q->lczxid = dir->czxid;
		q->lversion = dir->version;
		return true;
	}
	if (q->lknown && q->lczxid == dir->czxid && q->lversion == dir->version)
		return true;
	q->lknown = false;	/* no grant without a listing until it is read */
	return false;
}

static void limit_read_done(int rc, const char *value, int len,
			    const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	struct zke_queue *q;

	zkmx_lock(&e->lock);
	q = w->q;
	if (rc == ZOK && q) {
		q->limit = zkset_parse(value, len > 0 ? (size_t)len : 0);
		q->linger = zkset_setting_parse(&zkset_setting_linger, value,
						len > 0 ? (size_t)len : 0);
		q->lknown = true;
		q->lczxid = stat->czxid;
		q->lversion = stat->version;
	}
	if (zke_answered(w) || w->sm.state != W_CHECKING)
		;
	else if (rc == ZOK)
		zke_check_locked(w);	/* list again: decided with it */
	else
		zke_call_failed_locked(w, rc, S_CHECK, "cannot read the limit of");
	zke_put_locked(w);
	zke_unlock_fire(e);
}

void zke_read_limit_locked(struct zkl_waiter *w)
{
	int rc;

	ZKMX_ASSERT_HELD(&w->e->lock);
	if (!zke_fresh_locked(w, S_CHECK))
		return;
	w->refs++;
	rc = w->e->t.ops->get(w->e->t.ctx, w->req.dir, limit_read_done, w);
	if (rc == ZOK)
		return;
	w->refs--;
	zke_call_failed_locked(w, rc, S_CHECK, "cannot read the limit of");
}

/* waiting ------------------------------------------------------------------ */

void zke_semwait_locked(struct zkl_waiter *w)
{
	ZKMX_ASSERT_HELD(&w->e->lock);
	zke_set_state_locked(w, W_SEMWAIT);
	zke_own_watch_locked(w);	/* now: it is how a poke arrives */
}

void zke_sem_tick_locked(struct zkl_engine *e)
{
	ZKMX_ASSERT_HELD(&e->lock);
	for (size_t i = 0; i < QBUCKETS; i++)
		for (struct zke_queue *q = e->qtab[i]; q; q = q->hnext) {
			struct zkl_waiter *w = q->head;

			while (w && zke_answered(w))
				w = w->qnext;
			if (w && w->sm.state == W_SEMWAIT && w->sm.stall == S_NONE)
				zke_check_locked(w);
		}
}

/* poking ------------------------------------------------------------------- */

#define POKE_TRIES 3			/* listings, if entries keep going */

struct poke {
	struct zkl_engine *e;
	char *dir;
	unsigned limit;
	unsigned count;			/* waiters still to wake */
	int tries;
	char **names;			/* the window's names, lowest first */
	int n, at;			/* names[at] is the one being poked */
	char *path;
	char *data;
	int len;
};

static void poke_free(struct poke *p)
{
	for (int i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	free(p->path);
	free(p->data);
	free(p->dir);
	free(p);
}

static void poke_list_locked(struct poke *p);
static void poke_next_locked(struct poke *p);

/* Send @p's call through the transport; on failure, give up (the tick covers). */
static bool poke_sent(struct poke *p, int rc)
{
	if (rc == ZOK)
		return true;
	poke_free(p);
	return false;
}

static void poke_set_done(int rc, const struct Stat *stat, const void *data)
{
	struct poke *p = (struct poke *)data;
	struct zkl_engine *e = p->e;

	(void)stat;
	zkmx_lock(&e->lock);
	if (rc == ZOK && --p->count > 0)
		poke_next_locked(p);	/* woken; the limit grew by more */
	else if (rc == ZOK)
		poke_free(p);		/* one waiter woken: done */
	else if (rc == ZBADVERSION)
		poke_next_locked(p);	/* another release poked it first */
	else if (rc == ZNONODE)
		poke_list_locked(p);	/* it went: the window moved */
	else
		poke_free(p);		/* the tick lists for it */
	zkmx_unlock(&e->lock);
}

static void poke_get_done(int rc, const char *value, int len,
			  const struct Stat *stat, const void *data)
{
	struct poke *p = (struct poke *)data;
	struct zkl_engine *e = p->e;

	zkmx_lock(&e->lock);
	if (rc == ZNONODE) {
		poke_list_locked(p);
	} else if (rc != ZOK) {
		poke_free(p);
	} else if (stat->version > 0) {
		poke_next_locked(p);	/* poked already, or written: not ours to wake */
	} else {
		free(p->data);
		p->len = len > 0 ? len : 0;
		p->data = malloc((size_t)p->len + 1);
		if (!p->data) {
			poke_free(p);
		} else {
			memcpy(p->data, value, (size_t)p->len);
			/* the same bytes: only its version and watchers see it */
			poke_sent(p, p->e->t.ops->set(e->t.ctx, p->path, p->data, p->len, 0,
						      poke_set_done, p));
		}
	}
	zkmx_unlock(&e->lock);
}

/* Look at the next entry down the window. */
static void poke_next_locked(struct poke *p)
{
	ZKMX_ASSERT_HELD(&p->e->lock);
	if (--p->at < 0) {
		poke_free(p);		/* every one was poked: nothing to do */
		return;
	}
	free(p->path);
	p->path = zkn_join(p->dir, p->names[p->at]);
	if (!p->path) {
		poke_free(p);
		return;
	}
	poke_sent(p, p->e->t.ops->get(p->e->t.ctx, p->path, poke_get_done, p));
}

static void poke_listed(int rc, const struct String_vector *sv,
			const struct Stat *dir, const void *data)
{
	struct poke *p = (struct poke *)data;
	struct zkl_engine *e = p->e;
	struct zkg_child *kids = NULL;
	size_t n = 0, top;

	(void)dir;
	zkmx_lock(&e->lock);
	if (rc == ZOK)
		kids = zkg_parse_children(sv->data, sv->count, &n);
	if (!kids || n < p->limit) {
		free(kids);
		poke_free(p);		/* nobody waits beyond the limit */
		zkmx_unlock(&e->lock);
		return;
	}
	zkg_sort(kids, n);
	top = p->limit;
	p->names = calloc(top, sizeof(*p->names));
	for (size_t i = 0; p->names && i < top; i++)
		if ((p->names[i] = strdup(kids[i].name)))
			p->n = (int)i + 1;
	free(kids);
	if (p->n != (int)top) {
		poke_free(p);
		zkmx_unlock(&e->lock);
		return;
	}
	p->at = p->n;
	poke_next_locked(p);
	zkmx_unlock(&e->lock);
}

static void poke_list_locked(struct poke *p)
{
	ZKMX_ASSERT_HELD(&p->e->lock);
	for (int i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	p->names = NULL;
	p->n = 0;
	if (++p->tries > POKE_TRIES) {
		poke_free(p);
		return;
	}
	poke_sent(p, p->e->t.ops->children(p->e->t.ctx, p->dir, poke_listed, p));
}

/* Wake the @count waiters at the top of the first @limit entries of @dir. */
static void poke_start_locked(struct zkl_engine *e, const char *dir,
			      unsigned limit, unsigned count)
{
	struct poke *p;

	ZKMX_ASSERT_HELD(&e->lock);
	if (!limit || !count || e->shutdown || !(p = calloc(1, sizeof(*p))))
		return;
	p->e = e;
	p->limit = limit;
	p->count = count;
	p->dir = strdup(dir);
	if (!p->dir) {
		free(p);
		return;
	}
	poke_list_locked(p);
}

void zke_poke_locked(struct zkl_waiter *l)
{
	ZKMX_ASSERT_HELD(&l->e->lock);
	poke_start_locked(l->e, l->req.dir, l->verdict.limit, 1);
}

void zkl_limit_changed(struct zkl_engine *e, const char *dir, unsigned before,
		       unsigned now)
{
	unsigned was = before ? before : 1;
	struct zke_queue *q;

	zkmx_lock(&e->lock);
	/* this mount set it: no grant without a listing under the old rule
	 * (a hand-off, a confirmation) until the data is read again */
	q = zke_queue_find_dir_locked(e, dir);
	if (q && before != now)
		q->lknown = false;
	if (now > was)
		poke_start_locked(e, dir, now, now - was);
	zke_unlock_fire(e);
}
