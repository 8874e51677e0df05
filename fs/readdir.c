/*
 * fs/readdir.c - listing a directory: a lock's queue in order, then its
 * subdirectories.  OPENDIR lists the znode once; READDIR pages through
 * that listing; RELEASEDIR frees it.
 *
 * OPENDIR refuses flock(1)'s open of a lock directory, known by the
 * caller's name (fs/reply.h).
 */
#include "fs/handlers.h"

#include "fs/attr.h"
#include "fs/reply.h"
#include "fs/zop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zk/errno.h"
#include "zk/grant.h"
#include "zk/log.h"

/* readdir ---------------------------------------------------------------- */

struct dirent_s {
	char *name;
	bool dir;
	struct zkg_child c;
	bool seq;
	bool unknown;			/* lockfiles: a folder or a lock file */
	bool hide;			/* lockfiles: an entry */
};

struct dirlist {
	struct dirent_s *e;
	size_t n;
	size_t waiting;			/* type look-ups in flight */
	struct zkmx lock;
	struct dirlist *next, *prev;	/* fs->dirlists once opened; fs->lock */
};

static void dirlist_free(struct dirlist *dl)
{
	for (size_t i = 0; dl && i < dl->n; i++)
		free(dl->e[i].name);
	if (dl) {
		free(dl->e);
		zkmx_destroy(&dl->lock);
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
	zkmx_lock(&fs->lock);
	dl->next = fs->dirlists;
	if (dl->next)
		dl->next->prev = dl;
	fs->dirlists = dl;
	zkmx_unlock(&fs->lock);
}

static void dirlist_unlink(struct zklfs *fs, struct dirlist *dl)
{
	zkmx_lock(&fs->lock);
	if (dl->prev)
		dl->prev->next = dl->next;
	else
		fs->dirlists = dl->next;
	if (dl->next)
		dl->next->prev = dl->prev;
	zkmx_unlock(&fs->lock);
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
	if (!zop_claim(op)) {		/* interrupted, or too late */
		dirlist_free(dl);
		zop_free(op);
		return;
	}
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
	if (op->fs->conf->lockfiles) {	/* a lookup tells which */
		dl->e[tq->i].unknown = dl->e[tq->i].dir;
		dl->e[tq->i].hide = !dl->e[tq->i].dir;
	}
	free(tq);
	zkmx_lock(&dl->lock);
	last = --dl->waiting == 0;
	zkmx_unlock(&dl->lock);
	if (last)
		opendir_finish(op);
}

static void opendir_done(int rc, const struct String_vector *sv, const struct Stat *dir,
			 const void *data)
{
	struct zop *op = (struct zop *)data;
	struct dirlist *dl;
	struct zks *zs;

	(void)dir;		/* the listing alone */
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
		zop_reply_err(op, ENOMEM);
		zop_free(op);
		return;
	}
	zkmx_init(&dl->lock, ZKMX_RANK_DIRLIST, "dirlist->lock");
	op->dl = dl;
	for (int i = 0; i < sv->count; i++) {
		struct dirent_s *d = &dl->e[dl->n];

		if (zklfs_hidden(op->fs, op->path, sv->data[i]))
			continue;
		d->name = strdup(sv->data[i]);
		if (!d->name)
			continue;
		d->seq = zkn_parse(d->name, &d->c);
		if (d->seq && op->fs->conf->lockfiles) {
			free(d->name);	/* a lock file's entries are not shown */
			d->name = NULL;
			continue;
		}
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
		zkmx_lock(&dl->lock);
		dl->waiting++;
		zkmx_unlock(&dl->lock);
		if (!p || zklfs_zexists(op->fs, zs, p, type_done, tq) != ZOK) {
			zkmx_lock(&dl->lock);
			dl->waiting--;
			zkmx_unlock(&dl->lock);
			dl->e[i].dir = true;
			free(tq);
		}
		free(p);
	}
	zkmx_lock(&dl->lock);
	bool last = --dl->waiting == 0;
	zkmx_unlock(&dl->lock);
	if (last)
		opendir_finish(op);
}

static int opendir_send(struct zop *op)
{
	return zklfs_zchildren(op->fs, op->zks, op->path, opendir_done, op);
}

/*
 * flock(1)'s open of a lock directory (`flock DIR cmd`): the kernel keeps
 * locks on a FUSE directory to itself, so it would lock this host only.
 * Nothing in that open sets it apart (O_RDONLY, as Python's os.open(DIR,
 * O_RDONLY), Go's os.Open and Java's Files.list open a directory to list
 * or remove it), so the caller's name decides: util-linux's and BusyBox's
 * flock(1) are both "flock".  Neither sets O_DIRECTORY, which opendir(3)
 * always does: such an open (ls, find, every walker on libc) is not
 * flock(1)'s, and costs no read of /proc.  A name decides a refusal,
 * never a grant: every other open of a directory succeeds.  A caller
 * the daemon cannot see (pid 0: another pid namespace; or gone) is let
 * through, and said once.  On a lockfiles mount a directory is a folder,
 * no lock: flock(1) on it is the kernel's, as on any FUSE mount.  FUSE
 * thread (the only one that reads or sets told_unseen).
 */
static bool flock_open(struct zklfs *fs, fuse_req_t req, int flags, const char *path)
{
	static bool told_unseen;
	pid_t tid = fuse_req_ctx(req)->pid;
	char comm[32];

	if (fs->conf->lockfiles || (flags & O_DIRECTORY))
		return false;
	zklfs_process_comm(tid, comm, sizeof(comm));
	if (!comm[0]) {
		if (!told_unseen)
			zklog(LOG_NOTICE, "a directory opened by a process this mount cannot "
			      "see (pid %d): if it is flock(1), its lock of %s holds on this "
			      "host only (said once)", (int)tid, path);
		told_unseen = true;
		return false;
	}
	if (strcmp(comm, "flock") != 0)
		return false;
	zklog(LOG_NOTICE, "flock(1) on directory %s refused (pid %d): its lock would "
	      "hold on this host only; use zklock DIR", path, (int)tid);
	return true;
}

void zklfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zklfs *fs = fs_of(req);
	struct node *n = node_of(fs, ino);
	struct zop *op;

	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (flock_open(fs, req, fi->flags, op->path)) {
		zop_reply_err(op, EISDIR);
		zop_free(op);
		return;
	}
	op->fi = *fi;
	zop_send(op, zklfs_session(fs, op->path), opendir_send);
}

void zklfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
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

		if (i >= 2 && dl->e[i - 2].hide)
			continue;
		if (i < 2) {
			name = i == 0 ? "." : "..";
			st.st_mode = S_IFDIR;
		} else {
			struct dirent_s *d = &dl->e[i - 2];

			name = d->name;
			st.st_mode = d->unknown ? 0 : d->dir ? S_IFDIR : S_IFREG;
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

void zklfs_releasedir(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	(void)ino;
	dirlist_unlink(fs_of(req), (struct dirlist *)(uintptr_t)fi->fh);
	dirlist_free((struct dirlist *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}
