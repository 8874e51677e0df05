/* fs/node.c - the inode table: inode numbers are node addresses (node.h). */
#include "fs/node.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/pool.h"
#include "zk/naming.h"

#define HSIZE 16384

/* A slot of the listing cache (see node.h); fs->lock. */
struct listcache {
	char *dir;
	uint64_t busy_until_ms;		/* MKNOD seen here until then */
	uint64_t fresh_until_ms;	/* @names valid until then; 0: none */
	char **names;			/* sorted (strcmp) */
	size_t n;
};

static void listcache_drop_names(struct listcache *l);


int zklfs_nodes_init(struct zklfs *fs, zklfs_node_end_fn *end)
{
	fs->node_end = end;
	fs->hsize = HSIZE;
	fs->htab = calloc(fs->hsize, sizeof(*fs->htab));
	fs->listcache = calloc(ZKLFS_LISTCACHE_SLOTS, sizeof(*fs->listcache));
	fs->root = calloc(1, sizeof(*fs->root));
	if (!fs->htab || !fs->listcache || !fs->root)
		return -ENOMEM;
	fs->root->fs = fs;
	fs->root->ino = FUSE_ROOT_ID;
	fs->root->type = NODE_DIR;
	fs->root->path = strdup(fs->conf->root);
	fs->root->nlookup = 1;
	return fs->root->path ? 0 : -ENOMEM;
}

static void link_locked(struct zklfs *fs, struct node *n)
{
	ZKMX_ASSERT_HELD(&fs->lock);
	n->anext = fs->all;
	if (fs->all)
		fs->all->aprev = n;
	fs->all = n;
}

static void node_destroy(struct node *n)
{
	free(n->path);
	free(n);
}

void node_free(struct node *n)
{
	struct zklfs *fs = n->fs;

	zkmx_lock(&fs->lock);
	if (n->aprev)
		n->aprev->anext = n->anext;
	else
		fs->all = n->anext;
	if (n->anext)
		n->anext->aprev = n->aprev;
	if (n->lr)
		fs->node_end(fs, n);	/* frees n->lr */
	zkmx_unlock(&fs->lock);
	node_destroy(n);
}

void zklfs_nodes_free(struct zklfs *fs)
{
	while (fs->all) {
		struct node *n = fs->all;

		fs->all = n->anext;
		if (n->lr) {
			zkmx_lock(&fs->lock);
			fs->node_end(fs, n);
			zkmx_unlock(&fs->lock);
		}
		node_destroy(n);
	}
	free(fs->htab);
	for (size_t i = 0; fs->listcache && i < ZKLFS_LISTCACHE_SLOTS; i++) {
		listcache_drop_names(&fs->listcache[i]);
		free(fs->listcache[i].dir);
	}
	free(fs->listcache);
	if (fs->root)
		free(fs->root->path);
	free(fs->root);
	fs->root = NULL;
}

struct node *node_of(struct zklfs *fs, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? fs->root : (struct node *)(uintptr_t)ino;
}

void node_unhash_locked(struct zklfs *fs, struct node *n)
{
	struct node **pp = &fs->htab[zkn_hash(n->path) % fs->hsize];

	ZKMX_ASSERT_HELD(&fs->lock);
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	}
	n->hashed = false;
	n->hnext = NULL;
}

void node_hash_locked(struct zklfs *fs, struct node *n)
{
	struct node **b = &fs->htab[zkn_hash(n->path) % fs->hsize];

	ZKMX_ASSERT_HELD(&fs->lock);
	node_unhash_path_locked(fs, n->path);
	n->hnext = *b;
	*b = n;
	n->hashed = true;
}

struct node *node_find_locked(struct zklfs *fs, const char *path)
{
	struct node *n = fs->htab[zkn_hash(path) % fs->hsize];

	ZKMX_ASSERT_HELD(&fs->lock);
	while (n && strcmp(n->path, path) != 0)
		n = n->hnext;
	return n;
}

void node_unhash_path_locked(struct zklfs *fs, const char *path)
{
	struct node *n = node_find_locked(fs, path);

	if (n)
		node_unhash_locked(fs, n);
}

struct node *node_lookup_locked(struct zklfs *fs, const char *path,
				enum node_type type)
{
	struct node *n;

	ZKMX_ASSERT_HELD(&fs->lock);
	if (strcmp(path, fs->root->path) == 0) {
		fs->root->nlookup++;
		return fs->root;
	}
	n = node_find_locked(fs, path);
	if (n && (n->type == type || (n->type == NODE_PENDING && type == NODE_FILE))) {
		n->nlookup++;
		return n;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->path = strdup(path);
	if (!n->path) {
		free(n);
		return NULL;
	}
	n->fs = fs;
	n->ino = (fuse_ino_t)(uintptr_t)n;
	n->type = type;
	n->nlookup = 1;
	node_hash_locked(fs, n);
	link_locked(fs, n);
	return n;
}

struct node *node_new_pending_locked(struct zklfs *fs)
{
	struct node *n = calloc(1, sizeof(*n));

	ZKMX_ASSERT_HELD(&fs->lock);
	if (!n)
		return NULL;
	n->fs = fs;
	n->ino = (fuse_ino_t)(uintptr_t)n;
	n->type = NODE_PENDING;
	n->nlookup = 1;
	link_locked(fs, n);
	return n;
}

void node_forget(struct zklfs *fs, struct node *n, uint64_t nlookup)
{
	bool freeable;

	if (n == fs->root)
		return;
	zkmx_lock(&fs->lock);
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	freeable = n->nlookup == 0 && !n->pinned;
	if (freeable && n->hashed)
		node_unhash_locked(fs, n);
	zkmx_unlock(&fs->lock);
	if (freeable)
		node_free(n);
}

char *zklfs_node_path(struct zklfs *fs, struct node *n)
{
	char *p;

	zkmx_lock(&fs->lock);
	p = n->path ? strdup(n->path) : NULL;
	zkmx_unlock(&fs->lock);
	return p;
}

static void listcache_drop_names(struct listcache *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	l->names = NULL;
	l->n = 0;
	l->fresh_until_ms = 0;
}

/* The slot of @dir, taken over if another directory had it. Under fs->lock. */
static struct listcache *listcache_slot_locked(struct zklfs *fs, const char *dir, bool take)
{
	struct listcache *l = &fs->listcache[zkn_hash(dir) % ZKLFS_LISTCACHE_SLOTS];
	char *d;

	ZKMX_ASSERT_HELD(&fs->lock);
	if (l->dir && strcmp(l->dir, dir) == 0)
		return l;
	if (!take || !(d = strdup(dir)))
		return NULL;
	listcache_drop_names(l);
	free(l->dir);
	l->dir = d;
	l->busy_until_ms = 0;
	return l;
}

void listcache_busy(struct zklfs *fs, const char *dir)
{
	struct listcache *l;

	zkmx_lock(&fs->lock);
	l = listcache_slot_locked(fs, dir, true);
	if (l)
		l->busy_until_ms = zklfs_now_ms() + ZKLFS_LISTCACHE_TTL_MS;
	zkmx_unlock(&fs->lock);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

enum listcache_answer listcache_lookup(struct zklfs *fs, const char *dir, const char *name)
{
	enum listcache_answer a = LISTCACHE_UNKNOWN;
	uint64_t now = zklfs_now_ms();
	struct listcache *l;

	zkmx_lock(&fs->lock);
	l = listcache_slot_locked(fs, dir, false);
	if (l && l->busy_until_ms > now) {
		if (l->fresh_until_ms <= now)
			a = LISTCACHE_STALE;
		else if (l->n && bsearch(&name, l->names, l->n, sizeof(*l->names), cmp_str))
			a = LISTCACHE_PRESENT;
		else
			a = LISTCACHE_ABSENT;
	}
	zkmx_unlock(&fs->lock);
	return a;
}

void listcache_fill(struct zklfs *fs, const char *dir, char *const *names, int count)
{
	char **v = calloc((size_t)count + 1, sizeof(*v));
	struct zkg_child c;
	struct listcache *l;
	size_t n = 0;

	if (!v)
		return;
	for (int i = 0; i < count; i++) {
		if (zkn_parse(names[i], &c))
			continue;	/* entries come and go: never kept */
		if (!(v[n] = strdup(names[i])))
			goto fail;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_str);
	zkmx_lock(&fs->lock);
	l = listcache_slot_locked(fs, dir, false);
	if (l) {
		listcache_drop_names(l);
		l->names = v;
		l->n = n;
		l->fresh_until_ms = zklfs_now_ms() + ZKLFS_LISTCACHE_TTL_MS;
		v = NULL;
		n = 0;
	}
	zkmx_unlock(&fs->lock);
fail:
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void listcache_forget(struct zklfs *fs, const char *dir)
{
	struct listcache *l;

	zkmx_lock(&fs->lock);
	l = listcache_slot_locked(fs, dir, false);
	if (l)
		listcache_drop_names(l);
	zkmx_unlock(&fs->lock);
}
