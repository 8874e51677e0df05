/*
 * fs/lockfile.c - a lock file's descriptors and its lock owners' records
 * (see lockfile.h).  What a lock file is, its creation and its data:
 * fs/lfns.c.
 *
 * A descriptor (fi->fh) is a struct lfd; a record, a struct lfrec on its
 * lock file's n->recs, owns an anonymous lock node whose lock request
 * does the work of a holder's descriptor of an entry (fs/fdlock.c).  A
 * record notes the descriptor it last locked through (rec->fd): the one
 * whose reads, writes, fsync and poll act on it, and whose RELEASE gives
 * it back if its owner's FLUSH has not.  Every POSIX owner that locked
 * through a descriptor has sent a FLUSH by the time that descriptor is
 * released (each close() does), so a record still naming it then is the
 * description's own: flock(2) or an F_OFD_ lock.
 */
#include "fs/lockfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "fs/fdlock.h"
#include "fs/lockreq.h"
#include "fs/reply.h"
#include "zk/log.h"

/* A descriptor of a lock file: fuse_file_info.fh. */
struct lfd {
	struct node *file;		/* the lock file: fixed */
	bool tell;			/* its holder handles a loss itself
					   (lf_tell()): fs->lock */
};

/* A lock owner's lock on a lock file; fs->lock. */
struct lfrec {
	struct node *rec;		/* its lock node (fs/lockreq.h) */
	uint64_t owner;			/* fuse_file_info.lock_owner */
	struct lfd *fd;			/* the descriptor it last locked through */
	struct lfrec *next;		/* file->recs */
};

static struct lfd *lfd_of(const struct fuse_file_info *fi)
{
	return (struct lfd *)(uintptr_t)fi->fh;
}

/*
 * The NAME of our entries in a lock file: this host's name where it makes
 * a valid entry name (so `zklock --list` and every client see which host
 * queues), else "zklockfs".
 */
static const char *entry_name(const struct zklfs *fs)
{
	if (zkn_check_entry_name(fs->host, fs->conf->naming, ZKN_SHARED) == 0 &&
	    zkn_check_entry_name(fs->host, fs->conf->naming, ZKN_EXCLUSIVE) == 0)
		return fs->host;
	return "zklockfs";
}

void lf_open(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	struct lfd *d = calloc(1, sizeof(*d));

	if (!d) {
		fs->reply->err(req, ENOMEM);
		return;
	}
	d->file = n;
	zkmx_lock(&fs->lock);
	n->nopen++;
	zkmx_unlock(&fs->lock);
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->direct_io = 1;	/* every read asks who holds it now */
	fi->keep_cache = 0;
	fi->noflush = 0;	/* FLUSH gives a POSIX owner's lock back */
	if (fs->reply->open(req, fi) == -ENOENT) {	/* the opener is gone */
		zkmx_lock(&fs->lock);
		n->nopen--;
		zkmx_unlock(&fs->lock);
		free(d);
	}
}

/* The record of @owner on lock file @n, or NULL.  Under fs->lock. */
static struct lfrec *rec_find_locked(struct node *n, uint64_t owner)
{
	struct lfrec *r;

	ZKMX_ASSERT_HELD(&n->fs->lock);
	for (r = n->recs; r && r->owner != owner; r = r->next)
		;
	return r;
}

/*
 * The record of the owner of @fi's request on @d's lock file, made for
 * @uid if it has none and @make (a lock request, which then names @d as
 * the descriptor it locks through; a test or an unlock names none).
 * Return: its lock node, or NULL (none, or ENOMEM).  FUSE thread.
 */
static struct node *rec_get(struct zklfs *fs, struct lfd *d,
			    const struct fuse_file_info *fi, bool make, uid_t uid)
{
	struct node *n = d->file, *ln;
	struct lfrec *r;
	char *dir;

	zkmx_lock(&fs->lock);
	r = rec_find_locked(n, fi->lock_owner);
	if (r && make) {	/* a lock request: it locks through @d now */
		r->fd = d;
		r->rec->lr->tell = d->tell;
	}
	zkmx_unlock(&fs->lock);
	if (r || !make)
		return r ? r->rec : NULL;
	r = calloc(1, sizeof(*r));
	dir = zklfs_node_path(fs, n);
	ln = r && dir ? lockreq_node(fs, dir, entry_name(fs), uid) : NULL;
	free(dir);
	if (!ln) {
		free(r);
		return NULL;
	}
	zkmx_lock(&fs->lock);
	ln->lr->opened = true;		/* no OPEN of its own: locked by requests */
	ln->lr->ino = n->ino;		/* its descriptions are the file's */
	ln->lr->tell = d->tell;
	r->rec = ln;
	r->owner = fi->lock_owner;
	r->fd = d;
	r->next = n->recs;
	n->recs = r;
	zkmx_unlock(&fs->lock);
	return ln;
}

/*
 * Give back and free the record @r of lock file @n, unless a request of
 * its owner waits in it (a POSIX owner closing one descriptor while
 * another thread waits: that request goes on, as a local lock's does).
 * Return: whether it went.  FUSE thread, without fs->lock.
 */
static bool rec_end(struct zklfs *fs, struct node *n, struct lfrec *r)
{
	struct lfrec **pp;
	bool busy;

	zkmx_lock(&fs->lock);
	busy = lockreq_asking(r->rec->lr);
	if (!busy)
		for (pp = &n->recs; *pp; pp = &(*pp)->next)
			if (*pp == r) {
				*pp = r->next;
				break;
			}
	zkmx_unlock(&fs->lock);
	if (busy)
		return false;
	fdlock_end(fs, r->rec);		/* its data, then the delete */
	node_forget(fs, r->rec, 1);	/* freed now, or once let go */
	free(r);
	return true;
}

/* The first record of @n that names @d (any if @d is NULL) and can go. */
static struct lfrec *rec_next_locked(struct node *n, const struct lfd *d,
				     const struct lfrec *after)
{
	struct lfrec *r = after ? after->next : n->recs;

	ZKMX_ASSERT_HELD(&n->fs->lock);
	while (r && ((d && r->fd != d) || lockreq_asking(r->rec->lr)))
		r = r->next;
	return r;
}

/* Every record of @n that names @d (all if @d is NULL) ends. */
static void recs_end(struct zklfs *fs, struct node *n, const struct lfd *d)
{
	struct lfrec *r;

	for (;;) {
		zkmx_lock(&fs->lock);
		r = rec_next_locked(n, d, NULL);
		zkmx_unlock(&fs->lock);
		if (!r || !rec_end(fs, n, r))
			return;
	}
}

void lf_release(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	struct lfd *d = lfd_of(fi);
	bool last;

	recs_end(fs, n, d);
	zkmx_lock(&fs->lock);
	/* a waiting request that still names it (none should) forgets it */
	for (struct lfrec *r = n->recs; r; r = r->next)
		if (r->fd == d)
			r->fd = NULL;
	last = --n->nopen == 0;
	zkmx_unlock(&fs->lock);
	if (last)
		recs_end(fs, n, NULL);	/* no owner can reach them any more */
	free(d);
	fs->reply->err(req, 0);
}

void lf_flush(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	struct zklfs *fs = n->fs;
	struct lfrec *r;

	/* close(): the closing process's POSIX lock goes, as locally */
	zkmx_lock(&fs->lock);
	r = rec_find_locked(n, fi->lock_owner);
	zkmx_unlock(&fs->lock);
	if (r)
		rec_end(fs, n, r);
	fs->reply->err(req, 0);
}

struct node *lf_record(struct zklfs *fs, const struct fuse_file_info *fi, bool make,
			uid_t uid)
{
	return rec_get(fs, lfd_of(fi), fi, make, uid);
}

void lf_lock(fuse_req_t req, struct node *n, struct fuse_file_info *fi, int op,
	     bool nb, uid_t uid)
{
	struct zklfs *fs = n->fs;
	struct node *ln = rec_get(fs, lfd_of(fi), fi, op != LOCK_UN, uid);

	if (!ln) {
		/* nothing held by this owner: LOCK_UN has nothing to give */
		fs->reply->err(req, op == LOCK_UN ? 0 : ENOMEM);
		return;
	}
	fdlock_op(req, ln, op, nb);
}

/* Does @r hold (or has it lost) an entry?  Under fs->lock. */
static bool rec_holds_locked(const struct lfrec *r)
{
	return r->rec->lr->w && lockreq_granted(r->rec->lr);
}

struct node *lf_holder(struct zklfs *fs, const struct fuse_file_info *fi,
		       uint64_t owner, bool waiting)
{
	struct lfd *d = lfd_of(fi);
	struct lfrec *r, *any = NULL;
	struct node *ln;

	zkmx_lock(&fs->lock);
	for (r = d->file->recs; r; r = r->next) {
		if (r->fd != d || !(rec_holds_locked(r) ||
				    (waiting && lockreq_asking(r->rec->lr))))
			continue;
		if (owner && r->owner == owner)
			break;
		if (!any)
			any = r;
	}
	if (!r)
		r = any;
	ln = r ? r->rec : NULL;
	zkmx_unlock(&fs->lock);
	return ln;
}

bool lf_in_use(struct zklfs *fs, const char *path)
{
	struct node *n;
	bool used;

	zkmx_lock(&fs->lock);
	n = node_find_locked(fs, path);
	used = n && n->type == NODE_LOCKFILE && (n->recs || n->nopen);
	zkmx_unlock(&fs->lock);
	return used;
}

void lf_tell(struct zklfs *fs, const struct fuse_file_info *fi)
{
	struct lfd *d = lfd_of(fi);

	zkmx_lock(&fs->lock);
	d->tell = true;
	for (struct lfrec *r = d->file->recs; r; r = r->next)
		if (r->fd == d)
			r->rec->lr->tell = true;
	zkmx_unlock(&fs->lock);
}

struct node *lf_entry_holder_locked(struct node *n, const char *entry)
{
	ZKMX_ASSERT_HELD(&n->fs->lock);
	for (struct lfrec *r = n->recs; r; r = r->next)
		if (rec_holds_locked(r) && r->rec->path &&
		    strcmp(zkn_base(r->rec->path), entry) == 0)
			return r->rec;
	return NULL;
}
