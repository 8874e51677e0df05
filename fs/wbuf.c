/*
 * fs/wbuf.c - the holder's data: coalesced writes.
 *
 * A write() changes the node's buffer and answers (a setData of the whole
 * data written so far for each write would cost ZooKeeper's transaction log
 * 32 MiB for 256 writes of 1 KiB); the latest buffer is sent once,
 * at the first of: the next look of the lock's supervisor (zklfs_zlater(),
 * within a tenth of the session timeout, at most 1 s), an fsync, or the
 * give-back of the entry, just before its delete.
 *
 * Order.  Every set goes on the lock's session, where its create and its
 * delete go: ZooKeeper does one session's requests in order, so the data
 * is in ZooKeeper before the delete, and an fsync's confirmation
 * (fs/confirm.h) is answered after the sets before it.  Between two senders (a tick on the
 * supervisor, an fsync or a close on the FUSE thread), fs->wb_send is held
 * from taking the data until it is sent, so no older data goes out last.
 *
 * Lifetime.  A send (struct wflight) copies the path and data it sends
 * and names its node only while that node holds its entry: a give-back
 * or the node's end sets f->n to NULL (fs->lock), and the completion
 * then frees it, touching no node.
 */
#include "fs/wbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/attr.h"
#include "fs/confirm.h"
#include "fs/reply.h"
#include "fs/xcache.h"
#include "zk/errno.h"
#include "zk/log.h"

/* One setData. */
struct wflight {
	struct zklfs *fs;
	struct node *n;			/* NULL once n let its entry go; fs->lock */
	struct wflight *next;		/* n->lr->wb.flights; fs->lock */
	struct wflight *batch;		/* a tick's list of sends to make */
	struct zks *zks;
	uint64_t ver;			/* the version of the data it carries */
	bool fsync;			/* taken by an FSYNC: it reports a retry */
	char *path;
	char *data;			/* freed once the client copied it */
	int len;
};

static void flight_free(struct wflight *f)
{
	free(f->path);
	free(f->data);
	free(f);
}

/* Mark @n dirty.  Return: true if a tick must be asked for (wb_schedule()). */
static bool dirty_locked(struct zklfs *fs, struct node *n)
{
	struct wb_tick *t = &fs->wb_ticks[zklfs_session_slot(fs, n->lr->wb.zks)];

	ZKMX_ASSERT_HELD(&fs->lock);
	if (!n->lr->wb.dirty) {
		n->lr->wb.dirty = true;
		n->lr->wb.dprev = NULL;
		n->lr->wb.dnext = fs->dirty;
		if (fs->dirty)
			fs->dirty->lr->wb.dprev = n;
		fs->dirty = n;
	}
	if (t->queued)
		return false;
	t->fs = fs;
	t->zks = n->lr->wb.zks;
	t->queued = true;
	return true;
}

static void undirty_locked(struct zklfs *fs, struct node *n)
{
	ZKMX_ASSERT_HELD(&fs->lock);
	if (!n->lr->wb.dirty)
		return;
	if (n->lr->wb.dprev)
		n->lr->wb.dprev->lr->wb.dnext = n->lr->wb.dnext;
	else
		fs->dirty = n->lr->wb.dnext;
	if (n->lr->wb.dnext)
		n->lr->wb.dnext->lr->wb.dprev = n->lr->wb.dprev;
	n->lr->wb.dnext = n->lr->wb.dprev = NULL;
	n->lr->wb.dirty = false;
}

/* The sends in flight about @n no longer name it. */
static void detach_locked(struct node *n)
{
	ZKMX_ASSERT_HELD(&n->fs->lock);
	for (struct wflight *f = n->lr->wb.flights; f; f = f->next)
		f->n = NULL;
	n->lr->wb.flights = NULL;
}

static void unlink_flight_locked(struct wflight *f)
{
	struct wflight **pp;

	ZKMX_ASSERT_HELD(&f->fs->lock);
	if (!f->n)
		return;
	for (pp = &f->n->lr->wb.flights; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	f->n = NULL;
}

/* Does @n hold its entry, so that its data has somewhere to go? */
static bool holds_locked(const struct node *n)
{
	ZKMX_ASSERT_HELD(&n->fs->lock);
	return n->lr->state == LR_HELD && n->path;
}

/*
 * The most data @n's entry may hold: what ZooKeeper takes with its path
 * (zklfs_data_max(): a request it refuses costs the connection).
 */
static size_t data_max_locked(const struct node *n)
{
	ZKMX_ASSERT_HELD(&n->fs->lock);
	return n->path ? zklfs_data_max(n->fs, n->path) : ZKS_DATA_MAX;
}

/*
 * A send of @n's latest data: the data taken (no longer dirty).
 * Return: NULL on ENOMEM (still dirty).
 */
static struct wflight *take_locked(struct zklfs *fs, struct node *n)
{
	struct wflight *f = calloc(1, sizeof(*f));

	ZKMX_ASSERT_HELD(&fs->lock);
	if (!f)
		return NULL;
	f->path = strdup(n->path);
	f->data = malloc(n->lr->wb.len ? n->lr->wb.len : 1);
	if (!f->path || !f->data) {
		flight_free(f);
		return NULL;
	}
	memcpy(f->data, n->lr->wb.buf, n->lr->wb.len);
	f->len = (int)n->lr->wb.len;
	f->ver = n->lr->wb.ver;
	undirty_locked(fs, n);
	f->fs = fs;
	f->n = n;
	f->zks = n->lr->wb.zks;
	f->next = n->lr->wb.flights;
	n->lr->wb.flights = f;
	return f;
}

static void wb_tick_run(void *arg, bool go);

/* Ask for a tick of @zks (dirty_locked() said so).  Without fs->lock. */
static void wb_schedule(struct zklfs *fs, struct zks *zks)
{
	struct wb_tick *t = &fs->wb_ticks[zklfs_session_slot(fs, zks)];

	if (zklfs_zlater(fs, zks, wb_tick_run, t) == 0)
		return;
	/* closing: the data goes at fsync or close, or with the session */
	zkmx_lock(&fs->lock);
	t->queued = false;
	zkmx_unlock(&fs->lock);
}

/* The errno of a failed set or exists on the holder's entry. */
static int flight_errno(int rc)
{
	if (rc == ZNONODE)
		return EIO;		/* the entry is gone: the lock is lost */
	if (zk_rc_transient(rc))
		return EAGAIN;		/* may be held still: sent again */
	return -zk_errno(rc);
}

/* ZooKeeper's answer, in its completion (or at once if not sent). */
static void flight_done(int rc, const struct Stat *zs, const void *data)
{
	struct wflight *f = (struct wflight *)data;
	struct zklfs *fs = f->fs;
	struct node *n;
	bool sched = false, log = true;
	struct zks *zks = f->zks;
	int err = rc == ZOK ? 0 : flight_errno(rc);

	(void)zs;
	if (rc == ZOK)
		zklfs_xc_changed(fs);	/* the entry's data and size */
	zkmx_lock(&fs->lock);
	n = f->n;
	unlink_flight_locked(f);
	if (n && err == EAGAIN) {
		/* the latest data (never older) is sent again at the next tick;
		 * the FSYNC that sent it says so (its confirmation comes after) */
		log = !n->lr->wb.retrying;
		n->lr->wb.retrying = true;
		if (f->fsync && !n->lr->wb.err)
			n->lr->wb.err = -EAGAIN;
		if (holds_locked(n))
			sched = dirty_locked(fs, n);
	} else if (n) {
		if (err && !n->lr->wb.err)
			n->lr->wb.err = -err;	/* for the next fsync */
		if (!err)
			n->lr->wb.retrying = false;
		if (f->ver > n->lr->wb.answered)	/* sets complete in order */
			n->lr->wb.answered = f->ver;
	}
	zkmx_unlock(&fs->lock);
	/* a call site per cause: the log's rate limit is per call site */
	if (rc != ZOK && log && err == EAGAIN)
		zklog(LOG_WARNING, "write to %s: %s; sent again at the next tick",
		      f->path, zerror(rc));
	else if (rc != ZOK && log)
		zklog(LOG_WARNING, "write to %s refused: %s; the next fsync reports it",
		      f->path, zerror(rc));
	if (sched)
		wb_schedule(fs, zks);
	flight_free(f);
}

/* Send @f.  The client copies the data before it returns, and f may be
 * answered (and freed) before that: the data is ours to free here. */
static void flight_send(struct wflight *f)
{
	char *data = f->data;
	int rc;

	f->data = NULL;
	rc = zklfs_zset(f->fs, f->zks, f->path, data, f->len, -1, flight_done, f);
	free(data);
	if (rc != ZOK)
		flight_done(rc, NULL, f);
}

/*
 * The supervisor's look (zklfs_zlater()): send the data of every dirty node
 * of this session.  With !@go the session closes: its entries go with it.
 */
static void wb_tick_run(void *arg, bool go)
{
	struct wb_tick *t = arg;
	struct zklfs *fs = t->fs;
	struct wflight *batch = NULL, *f;
	struct node *n, *next;
	bool again = false;

	if (!go) {
		zkmx_lock(&fs->lock);
		t->queued = false;
		zkmx_unlock(&fs->lock);
		return;
	}
	zkmx_lock(&fs->wb_send);
	zkmx_lock(&fs->lock);
	t->queued = false;
	for (n = fs->dirty; n; n = next) {
		next = n->lr->wb.dnext;
		if (n->lr->wb.zks != t->zks)
			continue;
		if (!holds_locked(n)) {
			undirty_locked(fs, n);	/* lost or given back: nowhere to go */
			continue;
		}
		f = take_locked(fs, n);
		if (!f) {
			again = true;		/* ENOMEM: at the next look */
			continue;
		}
		f->batch = batch;
		batch = f;
	}
	if (again)
		t->queued = true;
	zkmx_unlock(&fs->lock);
	while (batch) {
		f = batch;
		batch = f->batch;
		flight_send(f);
	}
	zkmx_unlock(&fs->wb_send);
	if (again)
		wb_schedule(fs, t->zks);
}

/*
 * write() on the holder's descriptor replaces its entry's data: a write at
 * offset 0 starts it afresh, a write further on continues it as in a file
 * (the kernel splits one large write(2) into several).  A descriptor whose
 * lock is lost, or that holds none, changes nothing: lockreq_holder_errno().
 */

void zklfs_wbuf_write(fuse_req_t req, struct node *n, const char *buf, size_t size,
		      off_t off, struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	size_t end = (size_t)off + size, len, max;
	struct zks *zks;
	bool sched;
	char *nb;
	int err;

	if (fi->fh != FH_HOLDER) {
		fs->reply->err(req, EACCES);
		return;
	}
	err = lockreq_holder_errno(fs, n, fi);
	if (err) {
		fs->reply->err(req, err);
		return;
	}
	if (off < 0 || end > ZKS_DATA_MAX) {
		zklog(LOG_NOTICE, "write of %zu bytes at %lld refused: entries hold at most %d bytes",
		      size, (long long)off, ZKS_DATA_MAX);
		fs->reply->err(req, EFBIG);
		return;
	}
	zks = zklfs_session(fs, n->lr->dir);	/* lr->dir never changes */
	zkmx_lock(&fs->lock);
	max = data_max_locked(n);
	if (end > max) {
		zkmx_unlock(&fs->lock);
		zklog(LOG_NOTICE, "write of %zu bytes at %lld refused: an entry this deep holds at most %zu bytes",
		      size, (long long)off, max);
		fs->reply->err(req, EFBIG);
		return;
	}
	len = off == 0 ? 0 : n->lr->wb.len;		/* a write at the start replaces */
	nb = realloc(n->lr->wb.buf, end > len ? end : len ? len : 1);
	if (!nb) {
		zkmx_unlock(&fs->lock);
		fs->reply->err(req, ENOMEM);
		return;
	}
	if ((size_t)off > len)
		memset(nb + len, 0, (size_t)off - len);
	memcpy(nb + off, buf, size);
	n->lr->wb.buf = nb;
	n->lr->wb.len = end > len ? end : len;
	n->lr->wb.ver++;
	n->lr->wb.zks = zks;
	sched = dirty_locked(fs, n);
	zkmx_unlock(&fs->lock);
	if (sched)
		wb_schedule(fs, zks);
	fs->reply->write(req, size);
}

void zklfs_wbuf_setsize(fuse_req_t req, struct node *n, off_t size,
			struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	struct zks *zks;
	struct stat st;
	size_t len = (size_t)size, max;
	bool sched;
	char *nb;
	int err;

	if (n->type == NODE_DIR) {
		fs->reply->err(req, EISDIR);
		return;
	}
	if (!fi || fi->fh != FH_HOLDER) {
		zklog(LOG_NOTICE, "truncate of an entry refused: not the holder's descriptor");
		fs->reply->err(req, EACCES);
		return;
	}
	err = lockreq_holder_errno(fs, n, fi);
	if (err) {
		fs->reply->err(req, err);
		return;
	}
	if (size < 0) {
		fs->reply->err(req, EINVAL);
		return;
	}
	zks = zklfs_session(fs, n->lr->dir);
	zkmx_lock(&fs->lock);
	max = data_max_locked(n);
	if (len > max) {
		zkmx_unlock(&fs->lock);
		zklog(LOG_NOTICE, "truncate to %zu bytes refused: the entry holds at most %zu bytes",
		      len, max);
		fs->reply->err(req, EFBIG);
		return;
	}
	nb = realloc(n->lr->wb.buf, len ? len : 1);
	if (!nb) {
		zkmx_unlock(&fs->lock);
		fs->reply->err(req, ENOMEM);
		return;
	}
	if (len > n->lr->wb.len)
		memset(nb + n->lr->wb.len, 0, len - n->lr->wb.len);
	n->lr->wb.buf = nb;
	n->lr->wb.len = len;
	n->lr->wb.ver++;
	n->lr->wb.zks = zks;
	sched = dirty_locked(fs, n);
	zkmx_unlock(&fs->lock);
	if (sched)
		wb_schedule(fs, zks);
	/* ours, held: what stat would say once sent, owner the opener */
	zklfs_pending_attr(fs, &st, n->ino, n->lr->uid);
	st.st_size = size;
	st.st_blocks = (size + 511) / 512;
	fs->reply->attr(req, &st, 0.0);
}

static void fsync_answer(struct zklfs *fs, fuse_req_t req, size_t size, int err)
{
	(void)size;
	fs->reply->err(req, err);
}

void zklfs_wbuf_fsync(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	struct wflight *f = NULL;
	bool nomem = false;

	if (!fi || fi->fh != FH_HOLDER) {
		fs->reply->err(req, 0);	/* nothing of ours to send */
		return;
	}
	/*
	 * The data first, on the session the confirmation then goes to: the
	 * latest, unless ZooKeeper answered for it already.  A set out now
	 * (the supervisor's flush, another FSYNC's) may yet fail with the
	 * connection, and its data would go again only at the next look,
	 * after the confirmation: this FSYNC's own set goes right before its
	 * confirmation, which answers 0 only once ZooKeeper answered for the
	 * version written by now (fs/confirm.c).
	 */
	zkmx_lock(&fs->wb_send);
	zkmx_lock(&fs->lock);
	if (holds_locked(n) && n->lr->wb.answered < n->lr->wb.ver) {
		f = take_locked(fs, n);
		nomem = !f;
		if (f)
			f->fsync = true;
	}
	zkmx_unlock(&fs->lock);
	if (f)
		flight_send(f);
	zkmx_unlock(&fs->wb_send);
	if (nomem)
		fs->reply->err(req, ENOMEM);
	else
		zklfs_confirm(fs, n, req, true, fsync_answer, 0);	/* still held? */
}

int zklfs_wbuf_copy_locked(const struct node *n, size_t size, off_t off,
			   char **buf, size_t *len)
{
	ZKMX_ASSERT_HELD(&n->fs->lock);
	*buf = NULL;
	*len = 0;
	if (!n->lr || (!n->lr->wb.dirty && !n->lr->wb.flights))
		return 0;		/* ZooKeeper has it: ask there */
	if (off < 0 || (size_t)off >= n->lr->wb.len)
		return 1;
	*len = n->lr->wb.len - (size_t)off < size ? n->lr->wb.len - (size_t)off : size;
	if (!*len)
		return 1;
	*buf = malloc(*len);
	if (!*buf)
		return -ENOMEM;
	memcpy(*buf, n->lr->wb.buf + off, *len);
	return 1;
}

bool zklfs_wbuf_read(struct zklfs *fs, struct node *n, fuse_req_t req,
		     size_t size, off_t off)
{
	char *copy;
	size_t len;
	int ours;

	if (!n->lr)
		return false;		/* not a lock node: no data of ours */
	zkmx_lock(&fs->lock);
	ours = zklfs_wbuf_copy_locked(n, size, off, &copy, &len);
	zkmx_unlock(&fs->lock);
	if (ours < 0)
		fs->reply->err(req, -ours);
	else if (ours)
		fs->reply->buf(req, copy, len);
	free(copy);
	return ours != 0;
}

void zklfs_wbuf_attr(struct zklfs *fs, struct node *n, struct stat *st)
{
	if (!n->lr)
		return;
	zkmx_lock(&fs->lock);
	if (n->lr->wb.dirty || n->lr->wb.flights) {
		st->st_size = (off_t)n->lr->wb.len;
		st->st_blocks = (st->st_size + 511) / 512;
	}
	zkmx_unlock(&fs->lock);
}

void zklfs_wbuf_close(struct zklfs *fs, struct node *n)
{
	struct wflight *f = NULL;
	bool lost = false;

	zkmx_lock(&fs->wb_send);
	zkmx_lock(&fs->lock);
	if (n->lr->wb.dirty && holds_locked(n)) {
		f = take_locked(fs, n);
		lost = !f;
	}
	undirty_locked(fs, n);
	detach_locked(n);		/* nobody left to tell how they went */
	free(n->lr->wb.buf);
	n->lr->wb.buf = NULL;
	n->lr->wb.len = 0;			/* a new entry starts with new data */
	n->lr->wb.ver = n->lr->wb.answered = 0;
	n->lr->wb.err = 0;
	n->lr->wb.retrying = false;
	zkmx_unlock(&fs->lock);
	if (f)
		flight_send(f);
	zkmx_unlock(&fs->wb_send);
	if (lost)
		zklog(LOG_WARNING, "the last data written to %s in %s not sent: out of memory",
		      n->lr->name, n->lr->dir);
}

void zklfs_wbuf_forget_locked(struct zklfs *fs, struct node *n)
{
	ZKMX_ASSERT_HELD(&fs->lock);
	undirty_locked(fs, n);
	detach_locked(n);
}
