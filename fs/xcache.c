/* fs/xcache.c - what one process just read (see xcache.h). */
#include "fs/xcache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/node.h"
#include "fs/pool.h"
#include "zk/mutex.h"
#include "zk/naming.h"

/* Direct-mapped: a busy daemon forgets early, which costs a read, no more. */
#define XC_SLOTS 64

enum xc_kind { XC_NONE, XC_STAT, XC_LIST, XC_QUEUE };

struct xc_slot {
	enum xc_kind kind;
	char *path;
	pid_t pid;
	uint64_t at_ms;			/* read then */
	uint64_t gen;			/* xcache.gen then */
	struct Stat st;			/* XC_STAT */
	char *data;			/* XC_STAT, if kept; XC_QUEUE */
	int len;
	unsigned limit;			/* XC_LIST */
	struct String_vector sv;	/* XC_LIST */
};

struct xcache {
	struct zkmx mu;		/* everything here */
	uint64_t gen;			/* zklfs_xc_changed() calls */
	struct xc_slot slots[XC_SLOTS];
};

int zklfs_xc_init(struct zklfs *fs)
{
	fs->xc = calloc(1, sizeof(*fs->xc));
	if (!fs->xc)
		return -1;
	zkmx_init(&fs->xc->mu, ZKMX_RANK_XCACHE, "fs->xc->mu");
	return 0;
}

static void slot_clear(struct xc_slot *s)
{
	free(s->path);
	free(s->data);
	deallocate_String_vector(&s->sv);
	memset(s, 0, sizeof(*s));
}

void zklfs_xc_free(struct zklfs *fs)
{
	if (!fs->xc)
		return;
	for (size_t i = 0; i < XC_SLOTS; i++)
		slot_clear(&fs->xc->slots[i]);
	zkmx_destroy(&fs->xc->mu);
	free(fs->xc);
	fs->xc = NULL;
}

static struct xc_slot *slot_of(struct xcache *xc, enum xc_kind kind, pid_t pid,
			       const char *path)
{
	uint64_t h = zkn_hash(path) ^ ((uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ULL) ^ kind;

	return &xc->slots[h % XC_SLOTS];
}

/* The slot of (@kind, @pid, @path) if it holds a fresh read.  Under mu. */
static struct xc_slot *fresh_locked(struct xcache *xc, enum xc_kind kind,
				    pid_t pid, const char *path)
{
	struct xc_slot *s = slot_of(xc, kind, pid, path);

	ZKMX_ASSERT_HELD(&xc->mu);
	if (s->kind != kind || s->pid != pid || s->gen != xc->gen ||
	    zklfs_now_ms() - s->at_ms >= ZKLFS_XCACHE_MS || strcmp(s->path, path) != 0)
		return NULL;
	return s;
}

/* A fresh slot for (@kind, @pid, @path), emptied.  Under mu; NULL: ENOMEM. */
static struct xc_slot *claim_locked(struct xcache *xc, enum xc_kind kind,
				    pid_t pid, const char *path)
{
	struct xc_slot *s = slot_of(xc, kind, pid, path);

	ZKMX_ASSERT_HELD(&xc->mu);
	slot_clear(s);
	s->path = strdup(path);
	if (!s->path)
		return NULL;
	s->kind = kind;
	s->pid = pid;
	s->at_ms = zklfs_now_ms();
	s->gen = xc->gen;
	return s;
}

/* A malloc'ed copy of @len bytes at @p (one byte at least); NULL: ENOMEM. */
static char *bytes_dup(const char *p, size_t len)
{
	char *c = malloc(len ? len : 1);

	if (c)
		memcpy(c, p, len);
	return c;
}

void zklfs_xc_put_stat(struct zklfs *fs, pid_t pid, const char *path,
		       const struct Stat *zs, const char *data, int len)
{
	struct xc_slot *s;

	if (!pid)		/* outside our pid namespace: callers are not told apart */
		return;
	zkmx_lock(&fs->xc->mu);
	s = claim_locked(fs->xc, XC_STAT, pid, path);
	if (s) {
		s->st = *zs;
		if (data && len >= 0 && len <= ZKLFS_XCACHE_DATA_MAX &&
		    (s->data = bytes_dup(data, (size_t)len)))
			s->len = len;
	}
	zkmx_unlock(&fs->xc->mu);
}

bool zklfs_xc_stat(struct zklfs *fs, pid_t pid, const char *path,
		   struct Stat *zs, char **data, int *len)
{
	struct xc_slot *s;
	bool hit = false;

	if (!pid)
		return false;
	zkmx_lock(&fs->xc->mu);
	s = fresh_locked(fs->xc, XC_STAT, pid, path);
	if (s && data) {
		*data = s->data ? bytes_dup(s->data, (size_t)s->len) : NULL;
		if (*data)
			*len = s->len;
		hit = *data != NULL;
	} else {
		hit = s != NULL;
	}
	if (hit)
		*zs = s->st;
	zkmx_unlock(&fs->xc->mu);
	return hit;
}

void zklfs_xc_put_queue(struct zklfs *fs, pid_t pid, const char *path,
			const char *text, size_t len)
{
	struct xc_slot *s;

	if (!pid || len > ZKLFS_XCACHE_QUEUE_MAX)
		return;
	zkmx_lock(&fs->xc->mu);
	s = claim_locked(fs->xc, XC_QUEUE, pid, path);
	if (s && (s->data = bytes_dup(text, len))) {
		s->len = (int)len;
	} else if (s) {
		slot_clear(s);
	}
	zkmx_unlock(&fs->xc->mu);
}

bool zklfs_xc_queue(struct zklfs *fs, pid_t pid, const char *path, char **text,
		    size_t *len)
{
	struct xc_slot *s;
	bool hit = false;

	if (!pid)
		return false;
	zkmx_lock(&fs->xc->mu);
	s = fresh_locked(fs->xc, XC_QUEUE, pid, path);
	if (s && (*text = bytes_dup(s->data, (size_t)s->len))) {
		*len = (size_t)s->len;
		hit = true;
	}
	zkmx_unlock(&fs->xc->mu);
	return hit;
}

/* Copy @from into @to (empty).  Return: false on ENOMEM (@to then empty). */
static bool sv_copy(struct String_vector *to, const struct String_vector *from)
{
	memset(to, 0, sizeof(*to));
	if (from->count <= 0)
		return true;
	to->data = calloc((size_t)from->count, sizeof(*to->data));
	if (!to->data)
		return false;
	to->count = from->count;
	for (int i = 0; i < from->count; i++)
		if (!(to->data[i] = strdup(from->data[i]))) {
			deallocate_String_vector(to);
			return false;
		}
	return true;
}

void zklfs_xc_put_list(struct zklfs *fs, pid_t pid, const char *dir,
		       unsigned limit, const struct String_vector *sv)
{
	struct xc_slot *s;

	if (!pid)
		return;
	zkmx_lock(&fs->xc->mu);
	s = claim_locked(fs->xc, XC_LIST, pid, dir);
	if (s && sv_copy(&s->sv, sv))
		s->limit = limit;
	else if (s)
		slot_clear(s);
	zkmx_unlock(&fs->xc->mu);
}

bool zklfs_xc_list(struct zklfs *fs, pid_t pid, const char *dir,
		   unsigned *limit, struct String_vector *sv)
{
	struct xc_slot *s;
	bool hit;

	if (!pid)
		return false;
	zkmx_lock(&fs->xc->mu);
	s = fresh_locked(fs->xc, XC_LIST, pid, dir);
	hit = s && sv_copy(sv, &s->sv);
	if (hit)
		*limit = s->limit;
	zkmx_unlock(&fs->xc->mu);
	return hit;
}

void zklfs_xc_changed(struct zklfs *fs)
{
	zkmx_lock(&fs->xc->mu);
	fs->xc->gen++;
	zkmx_unlock(&fs->xc->mu);
}
