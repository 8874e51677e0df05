/*
 * zk/lock.c - the lock engine (see lock.h).
 *
 * Every waiter is counted: one reference for its caller, one per ZooKeeper
 * operation in flight, one per watch armed, one while @done runs.  All
 * waiter fields are protected by engine->lock; ZooKeeper calls made under it
 * only queue a request and never wait for a completion.
 */
#include "zk/lock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/log.h"

enum wstate { W_CREATING, W_CHECKING, W_WATCHING, W_HELD, W_DONE };

struct zkl_engine {
	struct zks *zks;
	enum zkl_naming naming;
	pthread_mutex_t lock;
	struct zkl_waiter *all;		/* every live waiter, for shutdown */
};

struct zkl_waiter {
	struct zkl_engine *e;
	struct zkl_waiter *prev, *next;	/* e->all */
	int refs;
	enum wstate state;
	bool answered;			/* done has run or is about to */
	bool released;			/* the caller gave its reference back */
	bool deleting;
	int flags;
	int result;			/* what done is told */
	enum zkl_kind kind;
	int32_t seq;
	int64_t czxid;
	char *dir;
	char *path;			/* our entry, once created */
	zkl_done_fn done;
	void *arg;
};

static char *path_join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name) < 0)
		return NULL;
	return p;
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
	free(w->dir);
	free(w->path);
	free(w);
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

static void delete_done(int rc, const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;

	pthread_mutex_lock(&e->lock);
	if (rc != ZOK && rc != ZNONODE && rc != ZCLOSING)
		zkl_log(LOG_WARNING, "cannot delete %s: %s", w->path, zerror(rc));
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
}

static void delete_locked(struct zkl_waiter *w)
{
	int rc;

	if (!w->path || w->deleting)
		return;
	w->deleting = true;
	w->refs++;
	rc = zoo_adelete(w->e->zks->zh, w->path, -1, delete_done, w);
	if (rc != ZOK) {
		w->refs--;
		zkl_log(LOG_WARNING, "cannot delete %s: %s", w->path, zerror(rc));
	}
}

static bool fail_locked(struct zkl_waiter *w, int err)
{
	bool f = answer_locked(w, err);

	delete_locked(w);
	return f;
}

static void children_done(int rc, const struct String_vector *strings,
			  const void *data);

static bool check_locked(struct zkl_waiter *w)
{
	int rc;

	w->state = W_CHECKING;
	w->refs++;
	rc = zoo_aget_children(w->e->zks->zh, w->dir, 0, children_done, w);
	if (rc == ZOK)
		return false;
	w->refs--;
	zkl_log(LOG_WARNING, "cannot list %s: %s", w->dir, zerror(rc));
	return fail_locked(w, zk_errno(rc));
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

	(void)value;
	(void)len;
	(void)stat;
	pthread_mutex_lock(&e->lock);
	if (rc != ZOK) {
		w->refs--;		/* no watch was left */
		if (w->answered || w->state != W_WATCHING)
			;
		else if (rc == ZNONODE)
			f = check_locked(w);	/* it went before we looked */
		else
			f = fail_locked(w, zk_errno(rc));
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

static bool watch_locked(struct zkl_waiter *w, const char *name)
{
	char *path = path_join(w->dir, name);
	int rc;

	if (!path)
		return fail_locked(w, -ENOMEM);
	w->state = W_WATCHING;
	w->refs += 2;			/* the completion and the watch */
	rc = zoo_awget(w->e->zks->zh, path, pred_watcher, w, pred_done, w);
	free(path);
	if (rc == ZOK)
		return false;
	w->refs -= 2;
	return fail_locked(w, zk_errno(rc));
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
		zkl_log(LOG_WARNING, "cannot list %s: %s", w->dir, zerror(rc));
		f = fail_locked(w, zk_errno(rc));
		goto out;
	}
	kids = malloc(sizeof(*kids) * (size_t)(strings->count ? strings->count : 1));
	if (!kids) {
		f = fail_locked(w, -ENOMEM);
		goto out;
	}
	for (int i = 0; i < strings->count; i++)
		if (zkn_parse(strings->data[i], &kids[n]))
			n++;
	switch (zkl_decide(kids, n, w->seq, w->kind, &pred)) {
	case ZKL_GRANTED:
		f = answer_locked(w, 0);
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

static void create_done(int rc, const char *path, const struct Stat *stat,
			const void *data)
{
	struct zkl_waiter *w = (struct zkl_waiter *)data;
	struct zkl_engine *e = w->e;
	struct zkl_child me;
	bool f = false;

	pthread_mutex_lock(&e->lock);
	if (rc == ZOK) {
		const char *base = strrchr(path, '/');

		w->path = strdup(path);
		w->czxid = stat->czxid;
		if (!w->path || !zkn_parse(base + 1, &me)) {
			zkl_log(LOG_ERR, "created %s but cannot read its sequence", path);
			f = fail_locked(w, -EIO);
		} else if (w->answered || w->released) {
			delete_locked(w);	/* cancelled while it was created */
		} else {
			w->seq = me.seq;
			f = check_locked(w);
		}
	} else {
		if (rc != ZCLOSING)
			zkl_log(LOG_WARNING, "cannot enqueue in %s: %s", w->dir,
				zerror(rc));
		f = answer_locked(w, zk_errno(rc));
	}
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
	if (f)
		fire(w);
}

struct zkl_engine *zkl_engine_new(struct zks *zks, enum zkl_naming naming)
{
	struct zkl_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->zks = zks;
	e->naming = naming;
	pthread_mutex_init(&e->lock, NULL);
	return e;
}

int zkl_enqueue(struct zkl_engine *e, const char *dir, const char *name,
		enum zkl_kind kind, int flags, const char *data, int len,
		zkl_done_fn done, void *arg, struct zkl_waiter **out)
{
	struct zkl_waiter *w = calloc(1, sizeof(*w));
	char *prefix = NULL;
	int rc;

	if (!w)
		return -ENOMEM;
	w->e = e;
	w->kind = kind;
	w->flags = flags;
	w->done = done;
	w->arg = arg;
	w->dir = strdup(dir);
	if (w->dir && asprintf(&prefix, "%s%s", name, zkn_marker(e->naming, kind)) > 0) {
		char *p = path_join(dir, prefix);

		free(prefix);
		prefix = p;
	}
	if (!w->dir || !prefix) {
		free(w->dir);
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_lock(&e->lock);
	w->refs = 2;			/* the caller and the create */
	w->state = W_CREATING;
	w->next = e->all;
	if (e->all)
		e->all->prev = w;
	e->all = w;
	*out = w;
	rc = zoo_acreate2(e->zks->zh, prefix, data, len, &ZOO_OPEN_ACL_UNSAFE,
			  ZOO_EPHEMERAL_SEQUENTIAL, create_done, w);
	if (rc != ZOK) {
		zkl_log(LOG_WARNING, "cannot enqueue %s: %s", prefix, zerror(rc));
		w->refs = 1;
		put_locked(w);
		*out = NULL;
	}
	pthread_mutex_unlock(&e->lock);
	free(prefix);
	return zk_errno(rc);
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

void zkl_release(struct zkl_waiter *w)
{
	struct zkl_engine *e = w->e;

	pthread_mutex_lock(&e->lock);
	w->released = true;
	delete_locked(w);
	put_locked(w);
	pthread_mutex_unlock(&e->lock);
}

void zkl_info(struct zkl_waiter *w, struct zkl_info *info, char **path)
{
	struct zkl_engine *e = w->e;

	pthread_mutex_lock(&e->lock);
	info->created = w->path != NULL;
	info->granted = w->answered && w->result == 0;
	info->seq = w->seq;
	info->czxid = w->czxid;
	info->kind = w->kind;
	if (path)
		*path = w->path ? strdup(w->path) : NULL;
	pthread_mutex_unlock(&e->lock);
}

void zkl_engine_shutdown(struct zkl_engine *e)
{
	struct zkl_waiter *w, **fired = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&e->lock);
	for (w = e->all; w; w = w->next) {
		if (w->answered)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct zkl_waiter **nf = realloc(fired, ncap * sizeof(*nf));

			if (!nf)
				break;
			fired = nf;
			cap = ncap;
		}
		if (answer_locked(w, -ESHUTDOWN))
			fired[n++] = w;
	}
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < n; i++)
		fire(fired[i]);
	free(fired);
}

void zkl_engine_free(struct zkl_engine *e)
{
	while (e->all) {
		struct zkl_waiter *w = e->all;

		e->all = w->next;
		free(w->dir);
		free(w->path);
		free(w);
	}
	pthread_mutex_destroy(&e->lock);
	free(e);
}
