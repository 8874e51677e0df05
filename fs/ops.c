/*
 * fs/ops.c - the namespace: lookup, stat, readdir, mkdir, rmdir, unlink,
 * read, xattrs.  Every handler copies what it needs into a struct zop,
 * starts one asynchronous ZooKeeper call and returns; the completion, on the
 * ZooKeeper thread, answers the request.
 */
#include "fs/zklockfs.h"
#include "fs/limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/log.h"

/* One request in flight to ZooKeeper. */
struct zop {
	struct zklfs *fs;
	fuse_req_t req;
	struct node *node;		/* the inode asked about, or the parent */
	char *path;			/* the znode */
	uid_t uid;			/* who asked */
	size_t size;
	off_t off;
	int attr;			/* xattr asked for (enum xattr) */
	enum node_type type;
	struct dirlist *dl;		/* opendir */
	struct fuse_file_info fi;
	/* a read, sent again while the session is away (zop_send()) */
	int (*send)(struct zop *op);	/* (re)sends it on zks */
	struct zks *zks;
	uint64_t deadline_ms;		/* give up then: a session timeout */
};

static struct zklfs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct zop *zop_new(fuse_req_t req, struct node *node, char *path)
{
	struct zop *op;

	if (!path)
		return NULL;
	op = calloc(1, sizeof(*op));
	if (!op) {
		free(path);
		return NULL;
	}
	op->fs = fs_of(req);
	op->req = req;
	op->node = node;
	op->path = path;
	op->uid = fuse_req_ctx(req)->uid;
	return op;
}

static void zop_free(struct zop *op)
{
	free(op->path);
	free(op);
}

static bool zop_again(struct zop *op, int rc);

/*
 * Answer @op with the errno of a failed ZooKeeper call and free it.  The
 * answers a filesystem gives every day (no such node, exists, not empty)
 * are not news; anything else gets its one log line.  A read that met a
 * connection loss is sent again instead, for up to a session timeout.
 */
static void zop_fail(struct zop *op, int rc)
{
	if (zop_again(op, rc))
		return;
	if (rc != ZNONODE && rc != ZNODEEXISTS && rc != ZNOTEMPTY)
		zkl_log(LOG_WARNING, "%s: %s", op->path, zerror(rc));
	fuse_reply_err(op->req, -zk_errno(rc));
	zop_free(op);
}

/* After starting a call: answer the request now if it could not start. */
static void zop_started(struct zop *op, int rc)
{
	if (rc == ZOK)
		return;
	zop_fail(op, rc);
}

/*
 * Send @op's read with @send on session @zks, and again (the same step) if
 * it meets a connection loss or expiry: a short outage, or the server's
 * restart, delays a stat or a listing instead of failing it.  Writes
 * (mkdir, rmdir, unlink, write) are not sent twice: their outcome may be
 * unknown.
 */
static void zop_send(struct zop *op, struct zks *zks, int (*send)(struct zop *op))
{
	op->zks = zks;
	op->send = send;
	zop_started(op, send(op));
}

static void zop_resend(void *arg, bool go)
{
	struct zop *op = arg;

	if (!go) {
		op->send = NULL;	/* the mount is going */
		zop_fail(op, ZCLOSING);
		return;
	}
	zop_started(op, op->send(op));
}

/* Whether @op will be sent again rather than failed with @rc. */
static bool zop_again(struct zop *op, int rc)
{
	uint64_t now;

	if (!op->send || !zk_rc_transient(rc))
		return false;
	now = zklfs_now_ms();
	if (!op->deadline_ms)
		op->deadline_ms = now + (uint64_t)zks_timeout_ms(op->zks);
	return now < op->deadline_ms && zks_later(op->zks, zop_resend, op) == 0;
}

char *zklfs_node_path(struct zklfs *fs, struct node *n)
{
	char *p;

	zkl_mutex_lock(&fs->lock);
	p = n->path ? strdup(n->path) : NULL;
	zkl_mutex_unlock(&fs->lock);
	return p;
}


/* lookup ---------------------------------------------------------------- */

static void reply_entry(struct zop *op, struct node *n, const struct Stat *zs)
{
	enum node_type type = n->type == NODE_DIR ? NODE_DIR : NODE_FILE;
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	zklfs_fill_attr(op->fs, &e.attr, n->ino, type, zs,
			zklfs_owner(op->fs, op->path, type, zs));
	/* directories live long; entries come and go behind our back */
	e.entry_timeout = e.attr_timeout = n->type == NODE_DIR ? 1.0 : 0.0;
	if (fuse_reply_entry(op->req, &e) != 0)
		node_forget(op->fs, n, 1);
}

static void lookup_done(int rc, const char *value, int len,
			const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;
	struct node *n;

	(void)value, (void)len;
	if (rc == ZBADARGUMENTS)
		rc = ZNONODE;		/* a name ZooKeeper cannot hold: none such */
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zkl_mutex_lock(&op->fs->lock);
	n = node_lookup_locked(op->fs, op->path, zs->ephemeralOwner ? NODE_FILE : NODE_DIR);
	zkl_mutex_unlock(&op->fs->lock);
	if (!n) {
		fuse_reply_err(op->req, ENOMEM);
	} else {
		reply_entry(op, n, zs);
	}
	zop_free(op);
}

static int lookup_send(struct zop *op)
{
	int rc = zks_aget(op->zks, op->path, lookup_done, op);

	return rc == ZBADARGUMENTS ? ZNONODE : rc;	/* a name it cannot hold */
}

/* A busy lock directory's listing, to answer a LOOKUP (see lsc_lookup()). */
static void lookup_list_done(int rc, const struct String_vector *sv,
			     const void *data)
{
	struct zop *op = (struct zop *)data;
	const char *name = zkn_base(op->path);

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	lsc_fill(op->fs, op->node->path, sv->data, sv->count);
	for (int i = 0; i < sv->count; i++)
		if (strcmp(sv->data[i], name) == 0) {
			zop_send(op, op->zks, lookup_send);
			return;
		}
	zop_fail(op, ZNONODE);
}

static int lookup_list_send(struct zop *op)
{
	return zks_achildren(op->zks, op->node->path, lookup_list_done, op);
}

static void zklfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zklfs *fs = fs_of(req);
	struct node *p = node_of(fs, parent);
	struct zkl_child c;
	struct zop *op;

	if (strlen(name) > ZKN_NAME_MAX) {
		zkl_log(LOG_NOTICE, "name of %zu bytes refused: at most %d",
			strlen(name), ZKN_NAME_MAX);
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (p->type != NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	/* the kernel looks a name up before its MKDIR or MKNOD: refused
	 * here, no directory or entry is made past the bounds */
	if (zklfs_path_check(fs->root.path, p->path, name)) {
		zkl_log(LOG_NOTICE, "path refused: longer than %d bytes or deeper "
			"than %d levels below ROOT", ZKLFS_PATH_MAX, ZKLFS_DEPTH_MAX);
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (zklfs_hidden(fs, p->path, name)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	op = zop_new(req, p, zkn_join(p->path, name));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	switch (zkn_parse(name, &c) ? LSC_UNKNOWN : lsc_lookup(fs, p->path, name)) {
	case LSC_ABSENT:
		zop_fail(op, ZNONODE);
		return;
	case LSC_STALE:
		zop_send(op, zklfs_session(fs, p->path), lookup_list_send);
		return;
	default:
		break;
	}
	zop_send(op, zklfs_session(fs, p->path), lookup_send);
}

static void zklfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct zklfs *fs = fs_of(req);

	node_forget(fs, node_of(fs, ino), nlookup);
	fuse_reply_none(req);
}

static void zklfs_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	struct zklfs *fs = fs_of(req);

	for (size_t i = 0; i < count; i++)
		node_forget(fs, node_of(fs, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

/* getattr / setattr ----------------------------------------------------- */

static void getattr_done(int rc, const char *value, int len,
			 const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;
	struct stat st;

	(void)value, (void)len;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_fill_attr(op->fs, &st, op->node->ino, op->type, zs,
			zklfs_owner(op->fs, op->path, op->type, zs));
	zklfs_wbuf_attr(op->fs, op->node, &st);	/* written, not yet sent */
	fuse_reply_attr(op->req, &st, op->type == NODE_DIR ? 1.0 : 0.0);
	zop_free(op);
}

static int getattr_send(struct zop *op)
{
	return zks_aget(op->zks, op->path, getattr_done, op);
}

static void zklfs_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	char *path = zklfs_node_path(fs, n);
	struct zop *op;

	(void)fi;
	if (!path) {			/* a lock request not yet in ZooKeeper */
		struct stat st;

		zklfs_pending_attr(fs, &st, n);
		fuse_reply_attr(req, &st, 0.0);
		return;
	}
	op = zop_new(req, n, path);
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->type = n->type == NODE_DIR ? NODE_DIR : NODE_FILE;
	zop_send(op, zklfs_session_of(fs, op->path, n->type == NODE_DIR), getattr_send);
}

/*
 * Only the size of the holder's own entry can change (truncate, O_TRUNC,
 * whose times come with it).  Mode, owner and times are ZooKeeper's or
 * ours to say: chmod, chown and utimes are EPERM, never a 0 that changed
 * nothing.
 */
#define SET_ATTR_REFUSED (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | \
			  FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | \
			  FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | \
			  FUSE_SET_ATTR_CTIME)

static void zklfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			  int to_set, struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);

	if (!(to_set & FUSE_SET_ATTR_SIZE)) {
		if (!(to_set & SET_ATTR_REFUSED)) {
			zklfs_getattr(req, ino, fi);
			return;
		}
		zkl_log(LOG_NOTICE, "%s refused: modes, owners and times are fixed",
			to_set & FUSE_SET_ATTR_MODE ? "chmod" :
			to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID) ? "chown" : "utimes");
		fuse_reply_err(req, EPERM);
		return;
	}
	zklfs_wbuf_setsize(req, node_of(fs, ino), attr->st_size, fi);
}

/* readdir ---------------------------------------------------------------- */

struct dirent_s {
	char *name;
	bool dir;
	struct zkl_child c;
	bool seq;
};

struct dirlist {
	struct dirent_s *e;
	size_t n;
	size_t waiting;			/* type look-ups in flight */
	struct zkl_mutex lock;
	struct dirlist *next, *prev;	/* fs->dirlists once opened; fs->lock */
};

static void dirlist_free(struct dirlist *dl)
{
	for (size_t i = 0; dl && i < dl->n; i++)
		free(dl->e[i].name);
	if (dl) {
		free(dl->e);
		zkl_mutex_destroy(&dl->lock);
	}
	free(dl);
}

/* Queue entries in queue order, then other files, then subdirectories. */
static int dirent_cmp(const void *a, const void *b)
{
	const struct dirent_s *x = a, *y = b;
	int rx = x->seq ? 0 : x->dir ? 2 : 1, ry = y->seq ? 0 : y->dir ? 2 : 1;

	if (rx != ry)
		return rx - ry;
	if (rx == 0)
		return zkn_seq_cmp(x->c.seq, y->c.seq);
	return strcmp(x->name, y->name);
}

/* Opened directories are listed in fs->dirlists, to be freed at exit if
 * the kernel goes before their RELEASEDIR arrives. */
static void dirlist_link(struct zklfs *fs, struct dirlist *dl)
{
	zkl_mutex_lock(&fs->lock);
	dl->next = fs->dirlists;
	if (dl->next)
		dl->next->prev = dl;
	fs->dirlists = dl;
	zkl_mutex_unlock(&fs->lock);
}

static void dirlist_unlink(struct zklfs *fs, struct dirlist *dl)
{
	zkl_mutex_lock(&fs->lock);
	if (dl->prev)
		dl->prev->next = dl->next;
	else
		fs->dirlists = dl->next;
	if (dl->next)
		dl->next->prev = dl->prev;
	zkl_mutex_unlock(&fs->lock);
}

void zklfs_dirlists_free(struct zklfs *fs)
{
	while (fs->dirlists) {
		struct dirlist *dl = fs->dirlists;

		fs->dirlists = dl->next;
		dirlist_free(dl);
	}
}

static void opendir_finish(struct zop *op)
{
	struct dirlist *dl = op->dl;

	qsort(dl->e, dl->n, sizeof(*dl->e), dirent_cmp);
	op->fi.fh = (uint64_t)(uintptr_t)dl;
	dirlist_link(op->fs, dl);	/* first: RELEASEDIR may come at once */
	if (fuse_reply_open(op->req, &op->fi) != 0) {
		dirlist_unlink(op->fs, dl);
		dirlist_free(dl);
	}
	zop_free(op);
}

struct typeq {
	struct zop *op;
	size_t i;
};

static void type_done(int rc, const struct Stat *zs, const void *data)
{
	struct typeq *tq = (struct typeq *)data;
	struct zop *op = tq->op;
	struct dirlist *dl = op->dl;
	bool last;

	/* gone meanwhile: show it as a file, a readdir is only a snapshot */
	dl->e[tq->i].dir = rc == ZOK && zs->ephemeralOwner == 0;
	free(tq);
	zkl_mutex_lock(&dl->lock);
	last = --dl->waiting == 0;
	zkl_mutex_unlock(&dl->lock);
	if (last)
		opendir_finish(op);
}

static void opendir_done(int rc, const struct String_vector *sv, const void *data)
{
	struct zop *op = (struct zop *)data;
	struct dirlist *dl;
	struct zks *zs;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zs = zklfs_session(op->fs, op->path);
	dl = calloc(1, sizeof(*dl));
	if (dl)
		dl->e = calloc((size_t)sv->count + 1, sizeof(*dl->e));
	if (!dl || !dl->e) {
		free(dl);
		fuse_reply_err(op->req, ENOMEM);
		zop_free(op);
		return;
	}
	zkl_mutex_init(&dl->lock, ZKL_RANK_DIRLIST, "dirlist->lock");
	op->dl = dl;
	for (int i = 0; i < sv->count; i++) {
		struct dirent_s *d = &dl->e[dl->n];

		if (zklfs_hidden(op->fs, op->path, sv->data[i]))
			continue;
		d->name = strdup(sv->data[i]);
		if (!d->name)
			continue;
		d->seq = zkn_parse(d->name, &d->c);
		dl->n++;
	}
	/* a child without a sequence number: directory or not, ask ZooKeeper */
	dl->waiting = 1;
	for (size_t i = 0; i < dl->n; i++) {
		struct typeq *tq;
		char *p;

		if (dl->e[i].seq || !(tq = malloc(sizeof(*tq))))
			continue;
		p = zkn_join(op->path, dl->e[i].name);
		tq->op = op;
		tq->i = i;
		zkl_mutex_lock(&dl->lock);
		dl->waiting++;
		zkl_mutex_unlock(&dl->lock);
		if (!p || zks_aexists(zs, p, type_done, tq) != ZOK) {
			zkl_mutex_lock(&dl->lock);
			dl->waiting--;
			zkl_mutex_unlock(&dl->lock);
			dl->e[i].dir = true;
			free(tq);
		}
		free(p);
	}
	zkl_mutex_lock(&dl->lock);
	bool last = --dl->waiting == 0;
	zkl_mutex_unlock(&dl->lock);
	if (last)
		opendir_finish(op);
}

static int opendir_send(struct zop *op)
{
	return zks_achildren(op->zks, op->path, opendir_done, op);
}

static void zklfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct zop *op = zop_new(req, n, zklfs_node_path(fs, n));

	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->fi = *fi;
	zop_send(op, zklfs_session(fs, op->path), opendir_send);
}

static void zklfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	struct dirlist *dl = (struct dirlist *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	size_t used = 0;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = (size_t)off; i < dl->n + 2; i++) {
		struct stat st = { .st_ino = 1 };
		const char *name;
		size_t need;

		if (i < 2) {
			name = i == 0 ? "." : "..";
			st.st_mode = S_IFDIR;
		} else {
			struct dirent_s *d = &dl->e[i - 2];

			name = d->name;
			st.st_mode = d->dir ? S_IFDIR : S_IFREG;
			st.st_ino = 2 + i;	/* any non-zero: lookup gives the real one */
		}
		need = fuse_add_direntry(req, buf + used, size - used, name, &st,
					 (off_t)i + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void zklfs_releasedir(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	(void)ino;
	dirlist_unlink(fs_of(req), (struct dirlist *)(uintptr_t)fi->fh);
	dirlist_free((struct dirlist *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* mkdir / rmdir / unlink ------------------------------------------------- */

static void mkdir_done(int rc, const char *path, const struct Stat *zs,
		       const void *data)
{
	struct zop *op = (struct zop *)data;
	struct node *n;

	(void)path;
	/* made, found made (EEXIST), or unknown: what we remember is stale */
	lsc_forget(op->fs, op->node->path);
	zklfs_ns_changed(op->fs, op->path);
	if (rc == ZNOCHILDRENFOREPHEMERALS)
		rc = ZNONODE;
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zklfs_dir_made(op->fs, op->path, zs->czxid, op->uid);
	zkl_mutex_lock(&op->fs->lock);
	n = node_lookup_locked(op->fs, op->path, NODE_DIR);
	zkl_mutex_unlock(&op->fs->lock);
	if (n)
		reply_entry(op, n, zs);
	else
		fuse_reply_err(op->req, ENOMEM);
	zop_free(op);
}

static void zklfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode)
{
	struct zklfs *fs = fs_of(req);
	struct node *p = node_of(fs, parent);
	struct zop *op;
	int err = zkn_check_name(name);

	(void)mode;
	if (!err)
		err = zklfs_path_check(fs->root.path, p->path, name);
	if (!err && zklfs_hidden(fs, p->path, name))
		err = -EEXIST;
	if (err) {
		zkl_log(LOG_NOTICE, "mkdir '%s': %s", name, strerror(-err));
		fuse_reply_err(req, -err);
		return;
	}
	op = zop_new(req, p, zkn_join(p->path, name));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* on the new directory's own session: its entries will be made there */
	zop_started(op, zks_acreate(zklfs_session(fs, op->path), op->path, NULL, -1, 0,
				    mkdir_done, op, NULL));
}

static void delete_done(int rc, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	lsc_forget(op->fs, op->node->path);
	zkl_mutex_lock(&op->fs->lock);
	node_unhash_path_locked(op->fs, op->path);
	zkl_mutex_unlock(&op->fs->lock);
	fuse_reply_err(op->req, 0);
	zop_free(op);
}

/* Removed, or unknown: the other sessions must see it before their next request. */
static void rmdir_done(int rc, const void *data)
{
	const struct zop *op = data;

	zklfs_ns_changed(op->fs, op->path);
	if (rc == ZOK || rc == ZNONODE)
		zklfs_dir_gone(op->fs, op->path);
	delete_done(rc, data);
}

/*
 * The sticky-bit rule of /tmp, for unlink and rmdir: the znode's owner
 * (zklfs_owner(): never what its data says), the mount's owner, root.
 */
static bool may_remove(struct zop *op, enum node_type type, const struct Stat *zs)
{
	if (op->uid == 0 || op->uid == op->fs->uid ||
	    op->uid == zklfs_owner(op->fs, op->path, type, zs))
		return true;
	zkl_log(LOG_NOTICE, "%s refused: uid %u owns neither it nor the mount",
		type == NODE_DIR ? "rmdir" : "unlink", (unsigned)op->uid);
	fuse_reply_err(op->req, EPERM);
	zop_free(op);
	return false;
}

static void rmdir_got(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (zs->ephemeralOwner != 0) {
		zop_fail(op, ZNOCHILDRENFOREPHEMERALS);	/* ENOTDIR */
		return;
	}
	if (!may_remove(op, NODE_DIR, zs))
		return;
	zop_started(op, zks_adelete(zklfs_session(op->fs, op->path), op->path,
				    rmdir_done, op));
}

static void zklfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zklfs *fs = fs_of(req);
	struct node *p = node_of(fs, parent);
	struct zop *op = zop_new(req, p, zkn_join(p->path, name));

	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	zop_started(op, zks_aexists(zklfs_session(fs, op->path), op->path, rmdir_got, op));
}

static void unlink_got(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (!may_remove(op, NODE_FILE, zs))
		return;
	rc = zks_adelete(zklfs_session(op->fs, op->node->path), op->path, delete_done, op);
	zop_started(op, rc);
}

static void zklfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zklfs *fs = fs_of(req);
	struct node *p = node_of(fs, parent);
	struct zop *op = zop_new(req, p, zkn_join(p->path, name));

	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	zop_started(op, zks_aexists(zklfs_session(fs, p->path), op->path, unlink_got, op));
}

static void zklfs_refuse(fuse_req_t req, const char *what)
{
	zkl_log(LOG_NOTICE, "%s refused: locks cannot be renamed or linked", what);
	fuse_reply_err(req, EPERM);
}

static void zklfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			 fuse_ino_t newparent, const char *newname,
			 unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	zklfs_refuse(req, "rename");
}

static void zklfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		       const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	zklfs_refuse(req, "link");
}

static void zklfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			  const char *name)
{
	(void)link, (void)parent, (void)name;
	zklfs_refuse(req, "symlink");
}

/* read --------------------------------------------------------------------- */

static void read_done(int rc, const char *value, int len, const struct Stat *zs,
		      const void *data)
{
	struct zop *op = (struct zop *)data;

	(void)zs;
	if (rc == ZNONODE && op->fi.fh == FH_HOLDER) {
		fuse_reply_err(op->req, EIO);	/* lost: not noticed yet */
		zop_free(op);
		return;
	}
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (op->off >= len || !value)
		fuse_reply_buf(op->req, NULL, 0);
	else
		fuse_reply_buf(op->req, value + op->off,
			       (size_t)len - (size_t)op->off < op->size ?
			       (size_t)len - (size_t)op->off : op->size);
	zop_free(op);
}

static int read_send(struct zop *op)
{
	return zks_aget(op->zks, op->path, read_done, op);
}

static void zklfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct zop *op;

	if (zklfs_holder_lost(fs, n, fi)) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (zklfs_holder_idle(fs, n, fi)) {
		fuse_reply_err(req, ENOLCK);
		return;
	}
	if (zklfs_wbuf_read(fs, n, req, size, off))
		return;			/* written here, not yet in ZooKeeper */
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {
		fuse_reply_err(req, n->path ? ENOMEM : EIO);
		return;
	}
	op->size = size;
	op->off = off;
	op->fi.fh = fi ? fi->fh : FH_PLAIN;
	zop_send(op, zklfs_session_of(fs, op->path, false), read_send);
}

/* xattr -------------------------------------------------------------------- */

enum xattr { X_NONE, X_SEQ, X_KIND, X_STATE, X_TOKEN, X_HOLDERS };

static const char *const xattr_names[] = {
	[X_SEQ] = "user.zklockfs.seq",
	[X_KIND] = "user.zklockfs.kind",
	[X_STATE] = "user.zklockfs.state",
	[X_TOKEN] = "user.zklockfs.token",
	[X_HOLDERS] = "user.zklockfs.holders",
};

static void reply_xattr_value(fuse_req_t req, size_t size, const char *val, size_t len)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, len);
}

static void xattr_children_done(int rc, const struct String_vector *sv,
				const void *data)
{
	struct zop *op = (struct zop *)data;
	struct zkl_child *kids;
	char *val = NULL;
	size_t len = 0, n;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	kids = zkl_parse_children(sv->data, sv->count, &n);
	if (!kids) {
		fuse_reply_err(op->req, ENOMEM);
		zop_free(op);
		return;
	}
	if (op->attr == X_HOLDERS) {
		const struct zkl_child **h = malloc(sizeof(*h) * (n + 1));
		size_t nh = h ? zkl_holders(kids, n, h, n) : 0;
		FILE *f = h ? open_memstream(&val, &len) : NULL;

		for (size_t i = 0; f && i < nh; i++)
			fprintf(f, "%s\n", h[i]->name);
		if (f && fclose(f) != 0) {
			free(val);
			val = NULL;		/* ENOMEM below, not an empty list */
		}
		free(h);
	} else {			/* X_STATE of an entry */
		struct zkl_child me;
		const char *s = "gone";

		if (zkn_parse(zkn_base(op->path), &me)) {
			switch (zkl_decide(kids, n, me.seq, me.kind, NULL)) {
			case ZKL_GRANTED: s = "held"; break;
			case ZKL_WAIT: s = "waiting"; break;
			case ZKL_MISSING: s = "gone"; break;
			}
		}
		val = strdup(s);
		len = strlen(s);
	}
	free(kids);
	if (!val)
		fuse_reply_err(op->req, ENOMEM);
	else
		reply_xattr_value(op->req, op->size, val, len);
	free(val);
	zop_free(op);
}

static void token_done(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;
	struct zkl_child me;
	char val[64];

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zkn_parse(zkn_base(op->path), &me);
	snprintf(val, sizeof(val), "%lld %d", (long long)zs->czxid, me.seq);
	reply_xattr_value(op->req, op->size, val, strlen(val));
	zop_free(op);
}

static int token_send(struct zop *op)
{
	return zks_aexists(op->zks, op->path, token_done, op);
}

/* The listing the xattr needs: the directory's (holders), the entry's
 * directory's (state). */
static int xattr_list_send(struct zop *op)
{
	char *dir;
	int rc;

	if (op->attr == X_HOLDERS)
		return zks_achildren(op->zks, op->path, xattr_children_done, op);
	dir = strndup(op->path, zkn_parent_len(op->path));
	if (!dir)
		return ZSYSTEMERROR;
	rc = zks_achildren(op->zks, dir, xattr_children_done, op);
	free(dir);
	return rc;
}

static void zklfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   size_t size)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct zkl_child me;
	enum xattr x = X_NONE;
	struct zop *op;
	char val[64];
	struct zkl_info own;

	for (size_t i = 1; i < sizeof(xattr_names) / sizeof(*xattr_names); i++)
		if (strcmp(name, xattr_names[i]) == 0)
			x = (enum xattr)i;
	/* our own lock: the engine knows, even while ZooKeeper is away */
	if ((x == X_STATE || x == X_TOKEN) && zklfs_own_state(fs, n, &own)) {
		if (x == X_STATE)
			snprintf(val, sizeof(val), "%s", own.lost ? "lost" :
				 own.granted ? "held" : "waiting");
		else
			snprintf(val, sizeof(val), "%lld %d", (long long)own.czxid, own.seq);
		reply_xattr_value(req, size, val, strlen(val));
		return;
	}
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {			/* a lock node holding no entry */
		if (x == X_STATE && zklfs_lock_waiting(fs, n)) {
			reply_xattr_value(req, size, "waiting", strlen("waiting"));
			return;
		}
		fuse_reply_err(req, ENODATA);
		return;
	}
	op->size = size;
	op->attr = x;
	if (n->type == NODE_DIR ? x != X_HOLDERS :
	    x == X_HOLDERS || x == X_NONE || !zkn_parse(zkn_base(op->path), &me)) {
		fuse_reply_err(req, ENODATA);
		zop_free(op);
		return;
	}
	switch (x) {
	case X_SEQ:
		snprintf(val, sizeof(val), "%d", me.seq);
		break;
	case X_KIND:
		snprintf(val, sizeof(val), "%s", me.kind == ZKL_SHARED ? "shared" : "exclusive");
		break;
	case X_TOKEN:
		zop_send(op, zklfs_session_of(fs, op->path, false), token_send);
		return;
	case X_HOLDERS:
		zop_send(op, zklfs_session(fs, op->path), xattr_list_send);
		return;
	case X_STATE:			/* the entry's directory's session */
		zop_send(op, zklfs_session_of(fs, op->path, false), xattr_list_send);
		return;
	default:
		break;
	}
	reply_xattr_value(req, size, val, strlen(val));
	zop_free(op);
}

static void zklfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	char buf[256];
	size_t len = 0;

	for (size_t i = 1; i < sizeof(xattr_names) / sizeof(*xattr_names); i++) {
		if ((i == X_HOLDERS) != (n->type == NODE_DIR))
			continue;
		memcpy(buf + len, xattr_names[i], strlen(xattr_names[i]) + 1);
		len += strlen(xattr_names[i]) + 1;
	}
	reply_xattr_value(req, size, buf, len);
}

static void zklfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   const char *value, size_t size, int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	fuse_reply_err(req, ENOTSUP);
}

static void zklfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	fuse_reply_err(req, ENOTSUP);
}

static void zklfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = ZKN_NAME_MAX };

	(void)ino;
	fuse_reply_statfs(req, &st);
}

static void zklfs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* RELEASEs are background requests: let many be in flight */
	conn->max_background = 256;
	conn->congestion_threshold = 192;
}

/* No .flush: a lock ends at RELEASE, not at each close() of a copy.  Opens
 * set noflush, and a kernel that sends FLUSH anyway gets ENOSYS from
 * libfuse once and then stops (close() still returns 0). */
const struct fuse_lowlevel_ops zklfs_ops = {
	.init		= zklfs_init,
	.lookup		= zklfs_lookup,
	.forget		= zklfs_forget,
	.forget_multi	= zklfs_forget_multi,
	.getattr	= zklfs_getattr,
	.setattr	= zklfs_setattr,
	.mknod		= zklfs_mknod,
	.mkdir		= zklfs_mkdir,
	.unlink		= zklfs_unlink,
	.rmdir		= zklfs_rmdir,
	.symlink	= zklfs_symlink,
	.rename		= zklfs_rename,
	.link		= zklfs_link,
	.open		= zklfs_open,
	.read		= zklfs_read,
	.write		= zklfs_write,
	.release	= zklfs_release,
	.fsync		= zklfs_fsync,
	.poll		= zklfs_poll,
	.flock		= zklfs_flock,
	.getlk		= zklfs_getlk,
	.setlk		= zklfs_setlk,
	.opendir	= zklfs_opendir,
	.readdir	= zklfs_readdir,
	.releasedir	= zklfs_releasedir,
	.statfs		= zklfs_statfs,
	.setxattr	= zklfs_setxattr,
	.getxattr	= zklfs_getxattr,
	.listxattr	= zklfs_listxattr,
	.removexattr	= zklfs_removexattr,
};
