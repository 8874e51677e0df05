/* fs/observe.c - LOCKDIR/.holders and .state: who holds a lock and what its
 * holder published, poll(2)-able (observe.h). */
#include "fs/observe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/attr.h"
#include "fs/obsmoves.h"
#include "fs/pending.h"
#include "fs/pool.h"
#include "fs/reply.h"
#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/settings.h"
#include "zk/log.h"
#include "zk/moves.h"
#include "zk/statedata.h"

/* What an observer's text is: the holders, or the lock's state. */
enum obs_kind { OBS_HOLDERS, OBS_STATE };

/* A descriptor of .holders: its fh. */
struct obs_fd {
	struct observer *o;
	uint64_t seen;			/* the text's gen it last read at 0 */
	struct fuse_pollhandle *ph;	/* its poller, till woken */
	struct obs_fd *next;
};

/* An OPEN waiting for the observer's first answer. */
struct obs_open {
	struct zpend pend;
	struct fuse_file_info fi;
	struct obs_fd *fd;
	struct obs_open *next;
};

/* The observer's two small machines, made from fs/obsmoves.h's lists. */
#define ENUM_FETCH(s, why) OBS_##s,
#define ENUM_WATCH(s, why) OBS_WATCH_##s,
enum obs_fetch { OBS_FETCHES(ENUM_FETCH) };
enum obs_watch { OBS_WATCHES(ENUM_WATCH) };
#undef ENUM_FETCH
#undef ENUM_WATCH

/* One observed lock of the mount; every field under fs->obs->mu. */
struct observer {
	struct zklfs *fs;
	char *dir;			/* the lock's znode; read only */
	enum obs_kind kind;		/* read only */
	struct zks *zks;		/* its session; read only */
	struct obs_fd *fds;		/* open descriptors */
	struct obs_open *opening;
	enum obs_fetch fetch;		/* fs/obsmoves.h: set_fetch_locked() */
	enum obs_watch watch;		/* fs/obsmoves.h: set_watch_locked();
					   ARMED holds @o */
	int err;			/* the last fetch's errno (0: ok) */
	uint64_t gen;			/* text changes so far: from the
					   first, text is an answer */
	char *text;
	size_t len;
	struct observer *next;
};

struct zklfs_observe {
	struct zkmx mu;
	struct observer *all;
};

/* One fetch: the listing, the limit, each holder's entry. */
struct fetch {
	struct observer *o;
	struct String_vector sv;
	struct zkg_child *kids;
	const struct zkg_child **h;
	size_t n, nh, left;
	unsigned limit;
	char (*line)[1536];		/* per holder */
};

int zklfs_observe_init(struct zklfs *fs)
{
	fs->obs = calloc(1, sizeof(*fs->obs));
	if (!fs->obs)
		return -ENOMEM;
	zkmx_init(&fs->obs->mu, ZKMX_RANK_OBSERVE, "fs->obs->mu");
	return 0;
}

static void obs_free(struct observer *o)
{
	if (o->zks)			/* its watches are gone or going */
		zklfs_session_unhold(o->fs, o->dir, o->zks);
	free(o->dir);
	free(o->text);
	free(o);
}

void zklfs_observe_free(struct zklfs *fs)
{
	if (!fs->obs)
		return;
	for (struct observer *o = fs->obs->all, *next; o; o = next) {
		next = o->next;
		obs_free(o);		/* the sessions are closed: no watch fires */
	}
	zkmx_destroy(&fs->obs->mu);
	free(fs->obs);
	fs->obs = NULL;
}

/*
 * The one way each of an observer's machines moves (under mu): a move
 * fs/obsmoves.h does not list aborts in the sanitizer builds
 * (ZKL_LOCKCHECK); a state repeated is no move.
 */
#define NAME(st, why) #st,
#define FETCH_MOVE(f, t, why) { OBS_##f, OBS_##t },
#define WATCH_MOVE(f, t, why) { OBS_WATCH_##f, OBS_WATCH_##t },
static const char *const fetch_names[] = { OBS_FETCHES(NAME) };
static const char *const watch_names[] = { OBS_WATCHES(NAME) };
static const struct zke_move fetch_moves[] = { OBS_FETCH_MOVES(FETCH_MOVE) };
static const struct zke_move watch_moves[] = { OBS_WATCH_MOVES(WATCH_MOVE) };
#undef NAME
#undef FETCH_MOVE
#undef WATCH_MOVE

static void set_fetch_locked(struct observer *o, enum obs_fetch to)
{
	ZKMX_ASSERT_HELD(&o->fs->obs->mu);
	if (o->fetch == to)
		return;
	zke_check_move(ZKE_MOVES(fetch_moves), fetch_names, "fetch", o->fetch, to,
		       "observer of %s", o->dir);
	o->fetch = to;
}

static void set_watch_locked(struct observer *o, enum obs_watch to)
{
	ZKMX_ASSERT_HELD(&o->fs->obs->mu);
	if (o->watch == to)
		return;
	zke_check_move(ZKE_MOVES(watch_moves), watch_names, "watch", o->watch, to,
		       "observer of %s", o->dir);
	o->watch = to;
}

/* Let @o go if nothing holds it: no descriptor, open or watch.  Under mu. */
static bool obs_unused_locked(struct zklfs *fs, struct observer *o)
{
	struct observer **pp;

	ZKMX_ASSERT_HELD(&fs->obs->mu);
	if (o->fds || o->opening || o->watch == OBS_WATCH_ARMED || o->fetch != OBS_IDLE)
		return false;
	for (pp = &fs->obs->all; *pp && *pp != o; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = o->next;
	obs_free(o);
	return true;
}

static void fetch_start(struct observer *o);

/* The lock's children changed (or the session went): fetch again, once the
 * fetch under way is done; or let @o go, if nobody observes any more. */
static void obs_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct observer *o = ctx;
	struct zklfs *fs = o->fs;
	bool start = false;

	(void)zh, (void)path;
	if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE)
		return;			/* still registered: it fires later */
	zkmx_lock(&fs->obs->mu);
	set_watch_locked(o, OBS_WATCH_OFF);
	if (!obs_unused_locked(fs, o)) {
		start = o->fetch == OBS_IDLE;
		set_fetch_locked(o, start ? OBS_FETCHING : OBS_AGAIN);
	}
	zkmx_unlock(&fs->obs->mu);
	if (start)
		fetch_start(o);
}

/* Let descriptor @d go (@linked: it is among o->fds), and its observer if
 * nothing else holds it. */
static void obs_release_fd(struct zklfs *fs, struct obs_fd *d, bool linked)
{
	struct observer *o = d->o;
	struct fuse_pollhandle *ph;

	zkmx_lock(&fs->obs->mu);
	ph = d->ph;			/* a fetch's end takes it under mu to wake it */
	d->ph = NULL;
	for (struct obs_fd **pp = &o->fds; linked && *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	obs_unused_locked(fs, o);
	zkmx_unlock(&fs->obs->mu);
	if (ph)
		fs->reply->drop_poll(ph);
	free(d);
}

static void fetch_free(struct fetch *f)
{
	free(f->kids);
	free(f->h);
	free(f->line);
	deallocate_String_vector(&f->sv);
	free(f);
}

/* The fetch ended with @text (@len bytes, taken) or @err: answer the opens,
 * wake the pollers, and fetch again if the watch fired meanwhile. */
static void fetch_end(struct fetch *f, char *text, size_t len, int err)
{
	struct observer *o = f->o;
	struct zklfs *fs = o->fs;
	struct obs_open *opening;
	struct fuse_pollhandle *wake[64];
	size_t nw = 0;
	bool again;

	fetch_free(f);
	zkmx_lock(&fs->obs->mu);
	if (!err && (!o->gen || len != o->len || memcmp(text, o->text, len) != 0)) {
		free(o->text);
		o->text = text;
		o->len = len;
		o->gen++;
		text = NULL;
		for (struct obs_fd *d = o->fds; d; d = d->next)
			if (d->ph && nw < sizeof(wake) / sizeof(wake[0])) {
				wake[nw++] = d->ph;
				d->ph = NULL;
			}
	}
	o->err = err;
	opening = o->opening;
	o->opening = NULL;
	for (struct obs_open *op = opening; op; op = op->next)
		if (!err) {		/* a descriptor from now on */
			op->fd->next = o->fds;
			o->fds = op->fd;
		}
	again = o->fetch == OBS_AGAIN && !err;
	set_fetch_locked(o, again ? OBS_FETCHING : OBS_IDLE);
	zkmx_unlock(&fs->obs->mu);
	free(text);
	for (size_t i = 0; i < nw; i++)
		fs->reply->notify_poll(wake[i]);
	while (opening) {
		struct obs_open *next = opening->next;

		if (zpend_claim(fs, &opening->pend)) {
			opening->fi.fh = (uint64_t)(uintptr_t)opening->fd;
			opening->fi.direct_io = 1;	/* the size is not known */
			opening->fi.nonseekable = 0;
			if (err)
				fs->reply->err(opening->pend.req, err);
			else if (fs->reply->open(opening->pend.req, &opening->fi) == 0)
				opening->fd = NULL;	/* RELEASE lets it go */
		}
		if (opening->fd)	/* interrupted, refused, or its caller gone */
			obs_release_fd(fs, opening->fd, !err);
		free(opening);
		opening = next;
	}
	if (again)
		fetch_start(o);
	else {
		zkmx_lock(&fs->obs->mu);
		obs_unused_locked(fs, o);
		zkmx_unlock(&fs->obs->mu);
	}
}

/* The text of the holders: a line each, as observe.h says. */
static void fetch_text(struct fetch *f)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	for (size_t i = 0; m && i < f->nh; i++)
		fputs(f->line[i], m);
	if (!m || fclose(m) != 0) {
		free(text);
		fetch_end(f, NULL, 0, ENOMEM);
		return;
	}
	fetch_end(f, text, len, 0);
}

/* Holder @i's line, from its entry's data (@value, @n bytes; NULL: not
 * read); the text once every holder's is in. */
static void entry_line(struct fetch *f, size_t i, const char *value, size_t n)
{
	const struct zkg_child *c = f->h[i];
	char host[160], pid[32], cmd[160], since[64], name[1024];
	bool last;

	zkset_data_field(value, n, "host=", host, sizeof(host));
	zkset_data_field(value, n, "pid=", pid, sizeof(pid));
	zkset_data_field(value, n, "cmd=", cmd, sizeof(cmd));
	zkset_data_field(value, n, "since=", since, sizeof(since));
	zkesc(name, sizeof(name), c->name, strlen(c->name));
	snprintf(f->line[i], sizeof(f->line[0]), "%s\t%s\t%s\t%s\t%s\t%s\n", name,
		 c->kind == ZKN_SHARED ? "shared" : "exclusive", host, pid, cmd, since);
	zkmx_lock(&f->o->fs->obs->mu);
	last = --f->left == 0;
	zkmx_unlock(&f->o->fs->obs->mu);
	if (last)
		fetch_text(f);
}

struct entry_get {
	struct fetch *f;
	size_t i;
};

static void entry_done(int rc, const char *value, int len, const struct Stat *zs,
		       const void *data)
{
	struct entry_get g = *(const struct entry_get *)data;

	(void)zs;
	free((void *)data);
	/* gone meanwhile: "-" fields, and the next change fetches again */
	entry_line(g.f, g.i, rc == ZOK ? value : NULL, rc == ZOK && len > 0 ? (size_t)len : 0);
}

/* The holders known: read each one's entry. */
static void fetch_holders(struct fetch *f)
{
	struct observer *o = f->o;
	size_t nh;

	f->h = calloc(f->n + 1, sizeof(*f->h));
	f->line = calloc(f->n + 1, sizeof(*f->line));
	if (!f->h || !f->line) {
		fetch_end(f, NULL, 0, ENOMEM);
		return;
	}
	nh = f->limit ? zkg_holders_limit(f->kids, f->n, f->limit, f->h, f->n)
		      : zkg_holders(f->kids, f->n, f->h, f->n);
	if (!nh) {
		fetch_text(f);
		return;
	}
	f->nh = f->left = nh;
	for (size_t i = 0; i < nh; i++) {
		struct entry_get *g = malloc(sizeof(*g));
		char *path = g ? zkn_join(o->dir, f->h[i]->name) : NULL;
		int rc = ZSYSTEMERROR;

		if (g) {
			g->f = f;
			g->i = i;
		}
		if (path)
			rc = zklfs_zget(o->fs, o->zks, path, entry_done, g);
		free(path);
		if (rc != ZOK) {
			free(g);
			entry_line(f, i, NULL, 0);
		}
	}
}

static void limit_done(int rc, const char *value, int len, const struct Stat *zs,
		       const void *data)
{
	struct fetch *f = (struct fetch *)data;

	(void)zs;
	if (rc == ZOK)
		f->limit = zkset_parse(value, len > 0 ? (size_t)len : 0);
	fetch_holders(f);	/* gone meanwhile: the next change says so */
}

static void fetch_again(void *arg, bool go);

/* The listing, its watch armed: the holders, after the limit if there
 * may be one. */
/*
 * The watched read of @f ended with @rc: true if it is an answer to go on
 * with (its watch is armed); else what it says is done: a transient
 * failure fetches again once the session is back, no lock there is an
 * empty text (nobody holds it, no state), another failure ends the fetch.
 */
static bool fetch_answered(struct fetch *f, int rc)
{
	struct observer *o = f->o;

	if (zk_rc_transient(rc) && zklfs_zlater(o->fs, o->zks, fetch_again, f) == 0)
		return false;	/* the session is away: again when it is back */
	if (rc == ZNONODE) {	/* no lock there (yet) */
		fetch_text(f);
		return false;
	}
	if (rc != ZOK) {
		zklog(LOG_NOTICE, "%s of %s: %s", o->kind == OBS_STATE ? "state" : "holders",
		      o->dir, zerror(rc));
		fetch_end(f, NULL, 0, -zk_errno(rc));
		return false;
	}
	zkmx_lock(&o->fs->obs->mu);
	set_watch_locked(o, OBS_WATCH_ARMED);
	zkmx_unlock(&o->fs->obs->mu);
	return true;
}

static void children_done(int rc, const struct String_vector *sv, const struct Stat *st,
			  const void *data)
{
	struct fetch *f = (struct fetch *)data;
	struct observer *o = f->o;

	if (!fetch_answered(f, rc))
		return;
	f->sv = *sv;		/* kept: the kids borrow its names */
	memset((void *)sv, 0, sizeof(*sv));
	f->kids = zkg_parse_children(f->sv.data, f->sv.count, &f->n);
	if (!f->kids) {
		fetch_end(f, NULL, 0, ENOMEM);
		return;
	}
	if (st->dataLength > 0 &&
	    zklfs_zget(o->fs, o->zks, o->dir, limit_done, f) == ZOK)
		return;
	fetch_holders(f);
}

/* The lock's data, its watch armed: the state it holds is the text. */
static void state_done(int rc, const char *value, int len, const struct Stat *st,
		       const void *data)
{
	struct fetch *f = (struct fetch *)data;
	char *text;
	ssize_t n;

	(void)st;
	if (!fetch_answered(f, rc))
		return;
	text = malloc(len > 0 ? (size_t)len : 1);
	if (!text) {
		fetch_end(f, NULL, 0, ENOMEM);
		return;
	}
	/* the decoded state is never longer than its line: a garbled one
	 * (written by hand) reads as none */
	n = zksd_read(value, len > 0 ? (size_t)len : 0, text, len > 0 ? (size_t)len : 0);
	fetch_end(f, text, n > 0 ? (size_t)n : 0, 0);
}

static void fetch_send(struct fetch *f)
{
	struct observer *o = f->o;
	const struct zkt_transport *t = zklfs_transport(o->fs, o->zks);
	int rc;

	if (o->kind == OBS_STATE) {
		rc = t->ops->wget(t->ctx, o->dir, obs_watcher, o, state_done, f);
		if (rc != ZOK)
			state_done(rc, NULL, 0, NULL, f);
		return;
	}
	rc = t->ops->wchildren(t->ctx, o->dir, obs_watcher, o, children_done, f);
	if (rc != ZOK)
		children_done(rc, NULL, NULL, f);
}

static void fetch_again(void *arg, bool go)
{
	struct fetch *f = arg;

	if (!go) {		/* the mount is going */
		fetch_end(f, NULL, 0, ESHUTDOWN);
		return;
	}
	fetch_send(f);
}

/* Start a fetch of @o (its fetch set FETCHING by the caller). */
static void fetch_start(struct observer *o)
{
	struct fetch *f = calloc(1, sizeof(*f));

	if (!f) {
		zkmx_lock(&o->fs->obs->mu);
		set_fetch_locked(o, OBS_IDLE);
		zkmx_unlock(&o->fs->obs->mu);
		return;
	}
	f->o = o;
	fetch_send(f);
}

/* The handlers ------------------------------------------------------------- */

static void obs_attr(struct zklfs *fs, struct node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = S_IFREG | 0444;	/* read-only, by anyone who may list */
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_atim = st->st_ctim = st->st_mtim;
}

void obs_lookup(fuse_req_t req, struct node *p, const char *name)
{
	struct zklfs *fs = p->fs;
	struct fuse_entry_param e;
	char *path = zkn_join(p->path, name);
	struct node *n = NULL;

	if (path) {
		zkmx_lock(&fs->lock);
		n = node_lookup_locked(fs, path, NODE_HOLDERS);
		zkmx_unlock(&fs->lock);
		free(path);
	}
	if (!n) {
		fs->reply->err(req, ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	obs_attr(fs, n, &e.attr);
	e.entry_timeout = e.attr_timeout = 1.0;
	if (fs->reply->entry(req, &e) != 0)
		node_forget(fs, n, 1);
}

void obs_getattr(fuse_req_t req, struct node *n)
{
	struct stat st;

	obs_attr(n->fs, n, &st);
	n->fs->reply->attr(req, &st, 1.0);
}

/* The observer of @kind of the lock @dir, made if none.  Under mu.
 * Return: NULL on ENOMEM. */
static struct observer *obs_get_locked(struct zklfs *fs, const char *dir,
				       enum obs_kind kind)
{
	struct observer *o;

	ZKMX_ASSERT_HELD(&fs->obs->mu);
	for (o = fs->obs->all; o; o = o->next)
		if (o->kind == kind && strcmp(o->dir, dir) == 0)
			return o;
	o = calloc(1, sizeof(*o));
	if (o)
		o->dir = strdup(dir);
	if (!o || !o->dir) {
		free(o);
		return NULL;
	}
	o->kind = kind;
	o->fs = fs;
	o->zks = zklfs_session_hold(fs, dir);	/* its watches stay there */
	o->next = fs->obs->all;
	fs->obs->all = o;
	return o;
}

void obs_open(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	struct obs_open *op = NULL;
	struct observer *o = NULL;
	struct obs_fd *d;
	bool start = false, now = false;
	enum obs_kind kind = OBS_HOLDERS;
	char *dir;

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fs->reply->err(req, EACCES);
		return;
	}
	zkmx_lock(&fs->lock);
	dir = n->path ? strndup(n->path, zkn_parent_len(n->path)) : NULL;
	if (dir && strcmp(zkn_base(n->path), ZKLFS_STATE_NAME) == 0)
		kind = OBS_STATE;
	zkmx_unlock(&fs->lock);
	d = dir ? calloc(1, sizeof(*d)) : NULL;
	if (d)
		op = calloc(1, sizeof(*op));
	if (op) {
		op->fi = *fi;
		op->fd = d;
		zpend_start(fs, &op->pend, req);	/* before anyone sees it */
		zkmx_lock(&fs->obs->mu);
		o = obs_get_locked(fs, dir, kind);
		if (o && o->gen && o->watch == OBS_WATCH_ARMED && o->fetch == OBS_IDLE) {
			d->o = o;	/* its watch is armed: the text is current */
			d->next = o->fds;
			o->fds = d;
			now = true;
		} else if (o) {
			d->o = o;
			op->next = o->opening;
			o->opening = op;
			start = o->fetch == OBS_IDLE;
			if (start)
				set_fetch_locked(o, OBS_FETCHING);
		}
		zkmx_unlock(&fs->obs->mu);
	}
	free(dir);
	if (!o) {
		if (!op || zpend_claim(fs, &op->pend))
			fs->reply->err(req, ENOMEM);
		free(op);
		free(d);
		return;
	}
	if (now) {
		fi->fh = (uint64_t)(uintptr_t)d;
		fi->direct_io = 1;
		if (!zpend_claim(fs, &op->pend) || fs->reply->open(req, fi) != 0)
			obs_release_fd(fs, d, true);
		free(op);
	} else if (start) {
		fetch_start(o);
	}
}

void obs_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct obs_fd *d = (struct obs_fd *)(uintptr_t)fi->fh;
	struct observer *o = d->o;
	struct zklfs *fs = o->fs;
	char *buf = NULL;
	size_t n = 0;

	zkmx_lock(&fs->obs->mu);
	if (off >= 0 && (size_t)off < o->len) {
		n = o->len - (size_t)off < size ? o->len - (size_t)off : size;
		buf = malloc(n);
		if (buf)
			memcpy(buf, o->text + off, n);
	}
	if (off == 0)
		d->seen = o->gen;
	zkmx_unlock(&fs->obs->mu);
	if (n && !buf)
		fs->reply->err(req, ENOMEM);
	else
		fs->reply->buf(req, buf, n);
	free(buf);
}

void obs_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct obs_fd *d = (struct obs_fd *)(uintptr_t)fi->fh;
	struct zklfs *fs = d->o->fs;
	struct fuse_pollhandle *old = NULL;
	bool changed;

	zkmx_lock(&fs->obs->mu);
	changed = d->seen != d->o->gen;
	if (!changed && ph) {		/* woken at the next change */
		old = d->ph;
		d->ph = ph;
		ph = NULL;
	}
	zkmx_unlock(&fs->obs->mu);
	if (old)
		fs->reply->drop_poll(old);
	if (ph)
		fs->reply->drop_poll(ph);
	fs->reply->poll(req, changed ? POLLIN | POLLRDNORM | POLLPRI : 0);
}

void obs_release(fuse_req_t req, struct fuse_file_info *fi)
{
	struct obs_fd *d = (struct obs_fd *)(uintptr_t)fi->fh;
	struct zklfs *fs = d->o->fs;

	obs_release_fd(fs, d, true);
	fs->reply->err(req, 0);
}
