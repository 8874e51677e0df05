/*
 * zk/lock.c - the lock engine (see lock.h).
 *
 * Every waiter is counted: one reference for its caller, one per ZooKeeper
 * operation in flight, one per watch armed, one while a callback runs.  All
 * waiter fields are protected by engine->lock; ZooKeeper calls made under it
 * only queue a request and never wait for a completion.
 *
 * A request failing with a connection loss (or a closing/expired handle)
 * parks the waiter in @stall; the session's connected event redoes the
 * step, its expired event starts the waiter over.
 */
#include "zk/lock.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/log.h"

enum wstate {
	W_CREATING,	/* create in flight */
	W_RESOLVING,	/* create outcome unknown: looking for our entry */
	W_CHECKING,	/* listing the children */
	W_WATCHING,	/* watching the entry before ours */
	W_HELD,		/* granted; our entry is watched */
	W_DONE,		/* answered with an error, or lost */
};

/* What to redo once the session is back. */
enum stall { S_NONE, S_CREATE, S_RESOLVE, S_CHECK, S_OWNWATCH, S_DELETE };

struct zkl_engine {
	struct zks *zks;
	enum zkl_naming naming;
	zkl_lost_fn lost;
	pthread_mutex_t lock;
	struct zkl_waiter *all;		/* every live waiter */
};

struct zkl_waiter {
	struct zkl_engine *e;
	struct zkl_waiter *prev, *next;	/* e->all */
	int refs;
	enum wstate state;
	enum stall stall;
	bool answered;			/* done has run or is about to */
	bool released;			/* the caller gave its reference back */
	bool deleting;
	bool lost;
	bool own_armed;			/* the watch on our own entry is set */
	bool own_inflight;		/* ... is being set: its reply is due */
	bool delete_deferred;		/* released before that reply came */
	int flags;
	int result;			/* what done is told */
	enum zkl_kind kind;
	int32_t seq;
	int64_t czxid;
	char *dir;
	char *prefix;			/* DIR/NAME<marker>, what we create */
	char *path;			/* our entry, once created */
	char *pred;			/* W_WATCHING: the entry we outlive */
	char *data;			/* its data, ending in our nonce line */
	int len;
	char nonce[24];			/* "zkl=XXXXXXXXXXXXXXXX\n" */
	char **cands;			/* W_RESOLVING: entries that may be ours */
	int ncand, ci;
	zkl_done_fn done;
	void *arg;
};

/* Failures after which the step can be redone when the session is back. */
static bool rc_stalls(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
	       rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING ||
	       rc == ZSESSIONMOVED;
}

static void free_cands(struct zkl_waiter *w)
{
	for (int i = 0; i < w->ncand; i++)
		free(w->cands[i]);
	free(w->cands);
	w->cands = NULL;
	w->ncand = w->ci = 0;
}

static void waiter_free(struct zkl_waiter *w)
{
	free_cands(w);
	free(w->dir);
	free(w->prefix);
	free(w->path);
	free(w->pred);
	free(w->data);
	free(w);
}

static void put_locked(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	if (--w->refs > 0)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		e->all = w->next;
	if (w->next)
		w->next->prev = w->prev;
	waiter_free(w);
}

/*
 * Park @w until the session is back, to redo @what.  A parked waiter holds a
 * reference of its own: its caller may have given it up (an interrupted
 * open whose create is unresolved), and the redo must still happen.
 */
static void stall_locked(struct zkl_waiter *w, enum stall what)
{
	if (w->stall == S_NONE)
		w->refs++;
	w->stall = what;
}

/* Take @w out of the parked state. Return: what was to be redone. */
static enum stall unstall_locked(struct zkl_waiter *w)
{
	enum stall what = w->stall;

	if (what != S_NONE) {
		w->stall = S_NONE;
		put_locked(w);		/* the caller holds another reference */
	}
	return what;
}

/* Decide @w's answer. Return: true if the caller must fire() after unlocking. */
static bool answer_locked(struct zkl_waiter *w, int err)
{
	if (w->answered)
		return false;
	w->answered = true;
	w->result = err;
	w->state = err ? W_DONE : W_HELD;
	w->refs++;			/* held across done */
	return true;
}

static void fire(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	w->done(w, w->result, w->arg);
	pthread_mutex_lock(&e->lock);
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
}

static void own_watch_locked(struct zkl_waiter *w);
static void fire(struct zkl_waiter *w);

/*
 * Local hand-off.  @held, an exclusive entry that held the lock (so nothing
 * came before it), is deleted: a waiter of ours that outlives exactly
 * @held now has nothing before it, and is granted at once, without waiting
 * for the notification and a children listing.  (Its watch still fires,
 * and is ignored.)  Collects the waiters to fire() in *@out.
 * Return: how many.
 */
static size_t handoff_locked(struct zkl_waiter *held, struct zkl_waiter ***out)
{
	struct zkl_waiter *x, **v = NULL;
	size_t n = 0;

	for (x = held->e->all; x; x = x->next) {
		struct zkl_waiter **nv;

		if (x == held || x->answered || x->state != W_WATCHING ||
		    !x->pred || strcmp(x->pred, held->path) != 0)
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			break;		/* it will hear the notification */
		v = nv;
		if (answer_locked(x, 0)) {
			own_watch_locked(x);
			v[n++] = x;
		}
	}
	*out = v;
	return n;
}

static void delete_done(int rc, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	struct zkl_waiter **granted = NULL;
	size_t n = 0;

	pthread_mutex_lock(&e->lock);
	if (rc_stalls(rc)) {
		w->deleting = false;
		stall_locked(w, S_DELETE);	/* the session may live: delete later */
	} else if (rc == ZOK && w->answered && w->result == 0 && !w->lost &&
		   w->kind == ZKL_EXCLUSIVE) {
		n = handoff_locked(w, &granted);
	} else if (rc != ZOK && rc != ZNONODE) {
		zkl_log(LOG_WARNING, "cannot delete %s: %s", w->path, zerror(rc));
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < n; i++)
		fire(granted[i]);
	free(granted);
}

static void delete_locked(struct zkl_waiter *w)
{
	int rc;

	if (!w->path || w->deleting)
		return;
	w->deleting = true;
	w->refs++;
	rc = zks_adelete(w->e->zks, w->path, delete_done, w);
	if (rc != ZOK) {
		w->refs--;
		w->deleting = false;
		stall_locked(w, S_DELETE);
	}
}

static bool fail_locked(struct zkl_waiter *w, int err)
{
	bool f = answer_locked(w, err);

	delete_locked(w);
	return f;
}

/* A held lock is gone: tell the caller once, and make sure the entry goes. */
static void lose_locked(struct zkl_waiter *w, const char *why)
{
	if (w->lost || w->released || !w->answered || w->result != 0)
		return;
	w->lost = true;
	w->state = W_DONE;
	zkl_log(LOG_WARNING, "lock %s lost: %s", w->path ? w->path : w->dir, why);
	w->e->lost(w, w->arg);
	delete_locked(w);
}

static bool check_locked(struct zkl_waiter *w);
static bool create_locked(struct zkl_waiter *w);
static bool resolve_locked(struct zkl_waiter *w);
static void own_watch_locked(struct zkl_waiter *w);

/*
 * A request of @w's failed with @rc.  Park it if the session may come back,
 * else answer with the error.  Return: true if the caller must fire().
 */
static bool trouble_locked(struct zkl_waiter *w, int rc, enum stall redo,
			   const char *what)
{
	if (rc_stalls(rc)) {
		stall_locked(w, redo);
		return false;
	}
	zkl_log(LOG_WARNING, "%s %s: %s", what, w->path ? w->path : w->dir, zerror(rc));
	return fail_locked(w, zk_errno(rc));
}

static void unwatch_locked(struct zkl_waiter *w);

/* The watch on our own granted entry. */
static void own_watcher(zhandle_t *zh, int type, int state, const char *path,
			void *ctx)
{
	struct zkl_waiter *w = ctx;
	struct zkl_engine *e = w->e;

	(void)zh;
	(void)path;
	if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE)
		return;			/* the watch stays armed */
	pthread_mutex_lock(&e->lock);
	w->own_armed = false;
	if (type == ZOO_DELETED_EVENT)
		lose_locked(w, "its entry was deleted by someone else");
	else if (type == ZOO_CHANGED_EVENT && !w->lost && !w->released)
		own_watch_locked(w);	/* data written: watch on */
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
}

static void own_watch_done(int rc, const char *value, int len,
			   const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	(void)value, (void)len, (void)stat;
	pthread_mutex_lock(&e->lock);
	w->own_inflight = false;
	if (rc == ZOK) {
		w->own_armed = true;
	} else {
		w->refs--;		/* no watch was left */
		if (rc == ZNONODE)
			lose_locked(w, "its entry was deleted by someone else");
		else if (rc_stalls(rc) && !w->lost && !w->released)
			stall_locked(w, S_OWNWATCH);
	}
	if (w->delete_deferred) {	/* released meanwhile: now in order */
		w->delete_deferred = false;
		unwatch_locked(w);
		delete_locked(w);
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
}

static void own_watch_locked(struct zkl_waiter *w)
{
	w->refs += 2;			/* the completion and the watch */
	w->own_inflight = true;
	if (zks_awget(w->e->zks, w->path, own_watcher, w, own_watch_done, w) != ZOK) {
		w->refs -= 2;
		w->own_inflight = false;
		stall_locked(w, S_OWNWATCH);
	}
}

static void pred_watcher(zhandle_t *zh, int type, int state, const char *path,
			 void *ctx)
{
	struct zkl_waiter *w = ctx;
	struct zkl_engine *e = w->e;
	bool f = false;

	(void)zh;
	(void)path;
	if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE)
		return;			/* the watch stays armed */
	pthread_mutex_lock(&e->lock);
	if (type != ZOO_SESSION_EVENT && !w->answered && w->state == W_WATCHING)
		f = check_locked(w);
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

static void pred_done(int rc, const char *value, int len,
		      const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	bool f = false;

	(void)value, (void)len, (void)stat;
	pthread_mutex_lock(&e->lock);
	if (rc != ZOK) {
		w->refs--;		/* no watch was left */
		if (w->answered || w->state != W_WATCHING)
			;
		else if (rc == ZNONODE)
			f = check_locked(w);	/* it went before we looked */
		else
			f = trouble_locked(w, rc, S_CHECK, "cannot watch before");
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

static bool watch_locked(struct zkl_waiter *w, const char *name)
{
	char *path = zkn_join(w->dir, name);
	int rc;

	if (!path)
		return fail_locked(w, -ENOMEM);
	w->state = W_WATCHING;
	w->refs += 2;			/* the completion and the watch */
	rc = zks_awget(w->e->zks, path, pred_watcher, w, pred_done, w);
	free(w->pred);
	w->pred = path;
	if (rc == ZOK)
		return false;
	w->refs -= 2;
	return trouble_locked(w, rc, S_CHECK, "cannot watch before");
}

static void children_done(int rc, const struct String_vector *strings,
			  const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	const struct zkl_child *pred = NULL;
	struct zkl_child *kids = NULL;
	size_t n = 0;
	bool f = false;

	pthread_mutex_lock(&e->lock);
	if (w->answered || w->state != W_CHECKING)
		goto out;
	if (rc != ZOK) {
		f = trouble_locked(w, rc, S_CHECK, "cannot list the queue of");
		goto out;
	}
	kids = zkl_parse_children(strings->data, strings->count, &n);
	if (!kids) {
		f = fail_locked(w, -ENOMEM);
		goto out;
	}
	switch (zkl_decide(kids, n, w->seq, w->kind, &pred)) {
	case ZKL_GRANTED:
		f = answer_locked(w, 0);
		own_watch_locked(w);
		break;
	case ZKL_WAIT:
		if (w->flags & ZKL_NONBLOCK)
			f = fail_locked(w, -EAGAIN);
		else
			f = watch_locked(w, pred->name);
		break;
	case ZKL_MISSING:
		zkl_log(LOG_WARNING, "%s was deleted while it waited", w->path);
		f = fail_locked(w, -EIO);
		break;
	}
	free(kids);
out:
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

static bool check_locked(struct zkl_waiter *w)
{
	int rc;

	w->state = W_CHECKING;
	w->refs++;
	rc = zks_achildren(w->e->zks, w->dir, children_done, w);
	if (rc == ZOK)
		return false;
	w->refs--;
	return trouble_locked(w, rc, S_CHECK, "cannot list the queue of");
}

/* Our entry exists (created or found again): take it as ours. */
static bool adopt_locked(struct zkl_waiter *w, const char *path, int64_t czxid)
{
	struct zkl_child me;

	free(w->path);
	w->path = strdup(path);
	w->czxid = czxid;
	if (!w->path || !zkn_parse(zkn_base(path), &me)) {
		zkl_log(LOG_ERR, "created %s but cannot read its sequence", path);
		return fail_locked(w, -EIO);
	}
	w->seq = me.seq;
	if (w->answered || w->released) {
		delete_locked(w);	/* given up while it was being made */
		return false;
	}
	return check_locked(w);
}

static void create_done(int rc, const char *path, const struct Stat *stat,
			const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	bool f = false;

	/*
	 * Even if @w was answered meanwhile (interrupted): an entry made must
	 * be deleted.  No completion of an expired handle comes after the
	 * waiter starts over: zookeeper_close() fires them all first.
	 */
	pthread_mutex_lock(&e->lock);
	if (rc == ZOK)
		f = adopt_locked(w, path, stat->czxid);
	else if (zk_rc_unknown(rc))
		stall_locked(w, S_RESOLVE);	/* it may exist: find it, never guess */
	else if (rc_stalls(rc))
		stall_locked(w, S_CREATE);	/* never sent */
	else {
		zkl_log(LOG_WARNING, "cannot enqueue in %s: %s", w->dir, zerror(rc));
		f = answer_locked(w, zk_errno(rc));
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

static bool create_locked(struct zkl_waiter *w)
{
	int rc;

	if (w->answered || w->released)
		return false;		/* nothing to make any more */
	w->state = W_CREATING;
	w->refs++;
	rc = zks_acreate(w->e->zks, w->prefix, w->data, w->len,
			 ZOO_EPHEMERAL_SEQUENTIAL, create_done, w);
	if (rc == ZOK)
		return false;
	w->refs--;
	if (rc_stalls(rc)) {
		stall_locked(w, S_CREATE);
		return false;
	}
	zkl_log(LOG_WARNING, "cannot enqueue %s: %s", w->prefix, zerror(rc));
	return answer_locked(w, zk_errno(rc));
}

static bool resolve_next_locked(struct zkl_waiter *w);

static void resolve_get_done(int rc, const char *value, int len,
			     const struct Stat *stat, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	size_t nl = strlen(w->nonce);
	bool f = false;

	pthread_mutex_lock(&e->lock);
	if (rc == ZOK && value && (size_t)len >= nl &&
		   memcmp(value + len - nl, w->nonce, nl) == 0) {
		char *path = zkn_join(w->dir, w->cands[w->ci]);

		zkl_log(LOG_NOTICE, "found %s again after an unknown create", path);
		free_cands(w);
		f = path ? adopt_locked(w, path, stat->czxid) : fail_locked(w, -ENOMEM);
		free(path);
	} else if (rc_stalls(rc)) {
		free_cands(w);
		stall_locked(w, S_RESOLVE);
	} else {
		w->ci++;
		f = resolve_next_locked(w);
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

/* Look at the next candidate; when none is left, the create never happened. */
static bool resolve_next_locked(struct zkl_waiter *w)
{
	char *path;
	int rc;

	if (w->ci >= w->ncand) {
		free_cands(w);
		return create_locked(w);
	}
	path = zkn_join(w->dir, w->cands[w->ci]);
	if (!path)
		return fail_locked(w, -ENOMEM);
	w->refs++;
	rc = zks_aget(w->e->zks, path, resolve_get_done, w);
	free(path);
	if (rc == ZOK)
		return false;
	w->refs--;
	free_cands(w);
	stall_locked(w, S_RESOLVE);
	return false;
}

static void resolve_children_done(int rc, const struct String_vector *sv,
				  const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	const char *base = zkn_base(w->prefix);
	size_t bl = strlen(base);
	struct zkl_child c;
	bool f = false;

	/* answered meanwhile or not, an entry of ours must be found */
	pthread_mutex_lock(&e->lock);
	if (rc != ZOK) {
		f = trouble_locked(w, rc, S_RESOLVE, "cannot list the queue of");
	} else {
		free_cands(w);
		w->cands = calloc((size_t)sv->count + 1, sizeof(*w->cands));
		for (int i = 0; w->cands && i < sv->count; i++)
			if (strncmp(sv->data[i], base, bl) == 0 &&
			    zkn_parse(sv->data[i], &c) && strlen(sv->data[i]) <= bl + 11)
				w->cands[w->ncand++] = strdup(sv->data[i]);
		f = w->cands ? resolve_next_locked(w) : fail_locked(w, -ENOMEM);
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

static bool resolve_locked(struct zkl_waiter *w)
{
	int rc;

	w->state = W_RESOLVING;
	w->refs++;
	rc = zks_achildren(w->e->zks, w->dir, resolve_children_done, w);
	if (rc == ZOK)
		return false;
	w->refs--;
	stall_locked(w, S_RESOLVE);
	return false;
}

/* Redo what @w could not do while the session was away. */
static bool resume_locked(struct zkl_waiter *w)
{
	switch (unstall_locked(w)) {
	case S_NONE:
		return false;
	case S_CREATE:
		return create_locked(w);
	case S_RESOLVE:
		return resolve_locked(w);
	case S_CHECK:
		return w->answered ? false : check_locked(w);
	case S_OWNWATCH:
		if (!w->lost && !w->released)
			own_watch_locked(w);
		return false;
	case S_DELETE:
		delete_locked(w);
		return false;
	}
	return false;
}

/* Run @step on every waiter, firing the answers it produces. */
static void for_each_waiter(struct zkl_engine *e, bool (*step)(struct zkl_waiter *))
{
	struct zkl_waiter *w, **fired = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&e->lock);
	for (w = e->all; w; w = w->next) {
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct zkl_waiter **nf = realloc(fired, ncap * sizeof(*nf));

			if (!nf)
				break;
			fired = nf;
			cap = ncap;
		}
		w->refs++;		/* keeps it while we walk on */
		fired[n++] = w;
	}
	for (size_t i = 0; i < n; i++) {
		if (!step(fired[i])) {
			put_locked(fired[i]);
			fired[i] = NULL;
		}
	}
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < n; i++) {
		if (!fired[i])
			continue;
		/* step answered it: answer_locked took the ref fire() drops */
		fire(fired[i]);
		pthread_mutex_lock(&e->lock);
		put_locked(fired[i]);
		pthread_mutex_unlock(&e->lock);
	}
	free(fired);
}

static bool on_connected_step(struct zkl_waiter *w)
{
	return resume_locked(w);
}

static bool on_silent_step(struct zkl_waiter *w)
{
	lose_locked(w, "nothing heard from ZooKeeper for the session timeout");
	return false;
}

static bool on_expired_step(struct zkl_waiter *w)
{
	/* the old session took every entry with it */
	unstall_locked(w);
	w->deleting = true;
	lose_locked(w, "the ZooKeeper session expired");
	if (w->answered || w->released)
		return false;
	free(w->path);
	w->path = NULL;
	w->deleting = false;
	return create_locked(w);
}

static void on_connected(void *arg)
{
	for_each_waiter(arg, on_connected_step);
}

static void on_silent(void *arg)
{
	for_each_waiter(arg, on_silent_step);
}

static void on_expired(void *arg)
{
	for_each_waiter(arg, on_expired_step);
}

struct zks_events zkl_engine_events(struct zkl_engine *e)
{
	return (struct zks_events){ on_connected, on_silent, on_expired, e };
}

struct zkl_engine *zkl_engine_new(struct zks *zks, enum zkl_naming naming,
				  zkl_lost_fn lost)
{
	struct zkl_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->zks = zks;
	e->naming = naming;
	e->lost = lost;
	pthread_mutex_init(&e->lock, NULL);
	return e;
}

int zkl_enqueue(struct zkl_engine *e, const char *dir, const char *name,
		enum zkl_kind kind, int flags, const char *data, int len,
		zkl_done_fn done, void *arg, struct zkl_waiter **out)
{
	struct zkl_waiter *w = calloc(1, sizeof(*w));
	uint64_t nonce = 0;
	char *base = NULL;
	bool f;

	if (!w)
		return -ENOMEM;
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		nonce = (uint64_t)(uintptr_t)w ^ (uint64_t)time(NULL);
	snprintf(w->nonce, sizeof(w->nonce), "zkl=%016" PRIx64 "\n", nonce);
	w->e = e;
	w->kind = kind;
	w->flags = flags;
	w->done = done;
	w->arg = arg;
	w->dir = strdup(dir);
	w->len = len + (int)strlen(w->nonce);
	w->data = malloc((size_t)w->len + 1);
	if (w->data) {
		memcpy(w->data, data, (size_t)len);
		strcpy(w->data + len, w->nonce);
	}
	if (asprintf(&base, "%s%s", name, zkn_marker(e->naming, kind)) > 0)
		w->prefix = zkn_join(dir, base);
	free(base);
	if (!w->dir || !w->data || !w->prefix) {
		waiter_free(w);
		return -ENOMEM;
	}
	pthread_mutex_lock(&e->lock);
	w->refs = 1;			/* the caller's */
	w->next = e->all;
	if (e->all)
		e->all->prev = w;
	e->all = w;
	*out = w;
	f = create_locked(w);
	if (f) {			/* refused at once: no done, an error */
		int err = w->result;

		w->refs = 1;		/* drop the answer's and the caller's */
		put_locked(w);
		*out = NULL;
		pthread_mutex_unlock(&e->lock);
		return err;
	}
	pthread_mutex_unlock(&e->lock);
	return 0;
}

void zkl_cancel(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;
	bool f;

	pthread_mutex_lock(&e->lock);
	f = fail_locked(w, -EINTR);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

static void unwatch_done(int rc, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	pthread_mutex_lock(&e->lock);
	if (rc == ZOK)
		put_locked(w);		/* the watch's: it will never fire now */
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
}

/*
 * Before we delete our own entry, take our watch off it, so that the delete
 * notifies only the next waiter: one notification per release.  Requests
 * of one session are done in order, so the removal comes first.  The
 * client knows a watch only once the reply that set it is in, so a release
 * that comes sooner waits for it (zkl_release(), own_watch_done()).
 */
static void unwatch_locked(struct zkl_waiter *w)
{
	if (!w->own_armed || !w->path || w->deleting)
		return;
	w->own_armed = false;
	w->refs++;
	if (zks_aunwatch(w->e->zks, w->path, own_watcher, w, unwatch_done, w) != ZOK)
		w->refs--;		/* not there (it fired): nothing to undo */
}

void zkl_release(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	pthread_mutex_lock(&e->lock);
	w->released = true;
	if (w->own_inflight && w->path && !w->deleting && !w->lost) {
		w->delete_deferred = true;	/* own_watch_done() deletes */
	} else {
		unwatch_locked(w);
		delete_locked(w);
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
}

void zkl_info(struct zkl_waiter *w, struct zkl_info *info, char **path)
{
	struct zkl_engine *e = w->e;

	pthread_mutex_lock(&e->lock);
	info->created = w->path != NULL;
	info->granted = w->answered && w->result == 0;
	info->lost = w->lost;
	info->seq = w->seq;
	info->czxid = w->czxid;
	info->kind = w->kind;
	if (path)
		*path = w->path ? strdup(w->path) : NULL;
	pthread_mutex_unlock(&e->lock);
}

static bool on_shutdown_step(struct zkl_waiter *w)
{
	return answer_locked(w, -ESHUTDOWN);
}

void zkl_engine_shutdown(struct zkl_engine *e)
{
	for_each_waiter(e, on_shutdown_step);
}

void zkl_engine_free(struct zkl_engine *e)
{
	while (e->all) {
		struct zkl_waiter *w = e->all;

		e->all = w->next;
		waiter_free(w);
	}
	pthread_mutex_destroy(&e->lock);
	free(e);
}
