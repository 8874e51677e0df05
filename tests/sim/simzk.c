/* tests/sim/simzk.c - the in-memory ZooKeeper server (see simzk.h). */
#include "tests/sim/simzk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);

	if (!q) {
		fprintf(stderr, "sim: out of memory\n");
		abort();
	}
	return q;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort();
	return d;
}

/* Length of the parent's part of @path ("/" for "/a"). */
static size_t parent_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash == path ? 1 : (size_t)(slash - path);
}

/* Is @child's parent @parent? */
static bool is_child(const char *child, const char *parent)
{
	size_t pl = strlen(parent);

	if (strcmp(child, "/") == 0 || parent_len(child) != pl ||
	    strncmp(child, parent, pl) != 0)
		return false;
	return true;
}

static struct szk_node *parent_of(struct szk *z, const char *path)
{
	size_t pl = parent_len(path);
	char *p = strndup(path, pl);
	struct szk_node *n;

	if (!p)
		abort();
	n = szk_find(z, p);
	free(p);
	return n;
}

static int count_children(struct szk *z, const char *path)
{
	int c = 0;

	for (int i = 0; i < z->nnodes; i++)
		c += is_child(z->nodes[i].path, path);
	return c;
}

static void fill_stat(struct szk *z, const struct szk_node *n, struct Stat *st)
{
	memset(st, 0, sizeof(*st));
	st->czxid = n->czxid;
	st->mzxid = n->mzxid;
	st->pzxid = n->pzxid;
	st->version = n->version;
	st->cversion = n->cversion;
	st->ephemeralOwner = n->owner;
	st->dataLength = n->len;
	st->numChildren = count_children(z, n->path);
}

/*
 * Fire and drop every watch on @path that @type reaches: a data change the
 * data watches, a child's create or delete the child watches, a delete
 * both.
 */
static void fire(struct szk *z, const char *path, int type)
{
	for (int i = 0; i < z->nwatches;) {
		struct szk_watch w = z->watches[i];

		if (strcmp(w.path, path) != 0 || (type == ZOO_CHANGED_EVENT && w.child) ||
		    (type == ZOO_CHILD_EVENT && !w.child)) {
			i++;
			continue;
		}
		z->watches[i] = z->watches[--z->nwatches];
		z->notify(z->notify_ctx, w.sid, type, path);	/* DELETED to both */
		free(w.path);
	}
}

void szk_init(struct szk *z, struct sim_rng *rng, szk_notify_fn notify,
	      void *ctx)
{
	memset(z, 0, sizeof(*z));
	z->rng = rng;
	z->notify = notify;
	z->notify_ctx = ctx;
	z->next_sid = 0x1000;
	z->cap = 16;
	z->nodes = xrealloc(NULL, (size_t)z->cap * sizeof(*z->nodes));
	memset(&z->nodes[0], 0, sizeof(z->nodes[0]));
	z->nodes[0].path = xstrdup("/");
	z->nnodes = 1;
}

void szk_free(struct szk *z)
{
	for (int i = 0; i < z->nnodes; i++) {
		free(z->nodes[i].path);
		free(z->nodes[i].data);
	}
	for (int i = 0; i < z->nwatches; i++)
		free(z->watches[i].path);
	free(z->nodes);
	free(z->watches);
	free(z->dead);
	memset(z, 0, sizeof(*z));
}

int64_t szk_session_new(struct szk *z)
{
	return z->next_sid++;
}

bool szk_session_alive(const struct szk *z, int64_t sid)
{
	for (int i = 0; i < z->ndead; i++)
		if (z->dead[i] == sid)
			return false;
	return sid != 0;
}

struct szk_node *szk_find(struct szk *z, const char *path)
{
	for (int i = 0; i < z->nnodes; i++)
		if (strcmp(z->nodes[i].path, path) == 0)
			return &z->nodes[i];
	return NULL;
}

static void remove_node(struct szk *z, struct szk_node *n)
{
	struct szk_node *parent = parent_of(z, n->path);
	char *path = n->path, *ppath = parent ? xstrdup(parent->path) : NULL;

	z->zxid++;
	if (parent) {
		parent->cversion = (int32_t)((uint32_t)parent->cversion + 1);
		parent->pzxid = z->zxid;
	}
	free(n->data);
	*n = z->nodes[--z->nnodes];
	if (z->changed)
		z->changed(z->changed_ctx, path, NULL);
	fire(z, path, ZOO_DELETED_EVENT);
	if (ppath)
		fire(z, ppath, ZOO_CHILD_EVENT);
	free(ppath);
	free(path);
}

void szk_session_expire(struct szk *z, int64_t sid)
{
	if (z->ndead == z->dcap) {
		z->dcap = z->dcap ? 2 * z->dcap : 8;
		z->dead = xrealloc(z->dead, (size_t)z->dcap * sizeof(*z->dead));
	}
	z->dead[z->ndead++] = sid;
	for (int i = 0; i < z->nwatches;) {
		if (z->watches[i].sid != sid) {
			i++;
			continue;
		}
		free(z->watches[i].path);
		z->watches[i] = z->watches[--z->nwatches];
	}
	for (int i = 0; i < z->nnodes;) {
		if (z->nodes[i].owner == sid)
			remove_node(z, &z->nodes[i]);	/* ephemerals have no children */
		else
			i++;
	}
}

int szk_create(struct szk *z, int64_t sid, const char *path, const char *data,
	       int len, int mode, char **out_path, struct Stat *stat)
{
	struct szk_node *parent = parent_of(z, path), *n;
	char *name;

	if (!parent)
		return ZNONODE;
	if (parent->owner)
		return ZNOCHILDRENFOREPHEMERALS;
	if (mode & ZOO_SEQUENCE) {
		if (asprintf(&name, "%s%010d", path, parent->seqctr) < 0)
			abort();
	} else {
		name = xstrdup(path);
	}
	if (szk_find(z, name)) {
		free(name);
		return ZNODEEXISTS;
	}
	if (z->nnodes == z->cap) {
		size_t off = (size_t)(parent - z->nodes);

		z->cap *= 2;
		z->nodes = xrealloc(z->nodes, (size_t)z->cap * sizeof(*z->nodes));
		parent = &z->nodes[off];
	}
	z->zxid++;
	parent->cversion = (int32_t)((uint32_t)parent->cversion + 1);	/* Java int: wraps */
	parent->seqctr = (int32_t)((uint32_t)parent->seqctr + 1);
	parent->pzxid = z->zxid;
	n = &z->nodes[z->nnodes++];
	memset(n, 0, sizeof(*n));
	n->path = name;
	n->len = len < 0 ? 0 : len;
	n->data = xrealloc(NULL, (size_t)n->len + 1);
	memcpy(n->data, data ? data : "", (size_t)n->len);
	n->czxid = n->mzxid = n->pzxid = z->zxid;
	n->owner = (mode & ZOO_EPHEMERAL) ? sid : 0;
	if (out_path)
		*out_path = xstrdup(name);
	if (stat)
		fill_stat(z, n, stat);
	if (z->changed)
		z->changed(z->changed_ctx, n->path, n);
	fire(z, parent->path, ZOO_CHILD_EVENT);
	return ZOK;
}

/* Would deleting @path now succeed? */
static int delete_rc(struct szk *z, const char *path, int version)
{
	struct szk_node *n = szk_find(z, path);

	if (!n)
		return ZNONODE;
	if (version != -1 && version != n->version)
		return ZBADVERSION;
	if (count_children(z, path) > 0)
		return ZNOTEMPTY;
	return ZOK;
}

int szk_delete(struct szk *z, const char *path, int version)
{
	int rc = delete_rc(z, path, version);

	if (rc == ZOK)
		remove_node(z, szk_find(z, path));
	return rc;
}

int szk_set(struct szk *z, const char *path, const char *data, int len,
	    int version)
{
	struct szk_node *n = szk_find(z, path);

	if (!n)
		return ZNONODE;
	if (version != -1 && version != n->version)
		return ZBADVERSION;
	char *copy = xrealloc(NULL, (size_t)len + 1);

	memcpy(copy, data, (size_t)len);	/* @data may be n->data */
	free(n->data);
	n->data = copy;
	n->len = len;
	n->version++;
	n->mzxid = ++z->zxid;
	if (z->changed)
		z->changed(z->changed_ctx, n->path, n);
	fire(z, path, ZOO_CHANGED_EVENT);
	return ZOK;
}

bool szk_watched(const struct szk *z, int64_t sid, const char *path, bool child)
{
	for (int i = 0; i < z->nwatches; i++)
		if (z->watches[i].sid == sid && z->watches[i].child == child &&
		    strcmp(z->watches[i].path, path) == 0)
			return true;
	return false;
}

static void watch_add(struct szk *z, int64_t sid, const char *path, bool child)
{
	if (szk_watched(z, sid, path, child))
		return;
	if (z->nwatches == z->wcap) {
		z->wcap = z->wcap ? 2 * z->wcap : 16;
		z->watches = xrealloc(z->watches, (size_t)z->wcap * sizeof(*z->watches));
	}
	z->watches[z->nwatches].sid = sid;
	z->watches[z->nwatches].child = child;
	z->watches[z->nwatches++].path = xstrdup(path);
}

void szk_watch_children(struct szk *z, int64_t sid, const char *path)
{
	watch_add(z, sid, path, true);
}

int szk_get(struct szk *z, const char *path, int64_t watch_sid,
	    const char **data, int *len, struct Stat *stat)
{
	struct szk_node *n = szk_find(z, path);

	if (!n)
		return ZNONODE;
	if (watch_sid)
		watch_add(z, watch_sid, path, false);
	if (data)
		*data = n->data;
	if (len)
		*len = n->len;
	if (stat)
		fill_stat(z, n, stat);
	return ZOK;
}

int szk_exists(struct szk *z, const char *path, struct Stat *stat)
{
	return szk_get(z, path, 0, NULL, NULL, stat);
}

int szk_children(struct szk *z, const char *path, struct String_vector *out)
{
	int n = 0;

	out->count = 0;
	out->data = NULL;
	if (!szk_find(z, path))
		return ZNONODE;
	out->data = xrealloc(NULL, ((size_t)z->nnodes + 1) * sizeof(char *));
	for (int i = 0; i < z->nnodes; i++)
		if (is_child(z->nodes[i].path, path))
			out->data[n++] = xstrdup(z->nodes[i].path + parent_len(z->nodes[i].path) +
						 (strcmp(path, "/") != 0));
	for (int i = n - 1; i > 0; i--) {	/* Fisher-Yates: no promised order */
		int j = (int)sim_rng_below(z->rng, (uint32_t)i + 1);
		char *t = out->data[i];

		out->data[i] = out->data[j];
		out->data[j] = t;
	}
	out->count = n;
	return ZOK;
}

void szk_free_strings(struct String_vector *sv)
{
	for (int i = 0; i < sv->count; i++)
		free(sv->data[i]);
	free(sv->data);
	sv->data = NULL;
	sv->count = 0;
}

int szk_unwatch(struct szk *z, int64_t sid, const char *path, bool child)
{
	for (int i = 0; i < z->nwatches; i++)
		if (z->watches[i].sid == sid && z->watches[i].child == child &&
		    strcmp(z->watches[i].path, path) == 0) {
			free(z->watches[i].path);
			z->watches[i] = z->watches[--z->nwatches];
			return ZOK;
		}
	return ZNOWATCHER;
}

int szk_multi(struct szk *z, int count, const int *types, char *const *paths,
	      const int *versions, int *errs)
{
	char **gone = calloc((size_t)count + 1, sizeof(*gone));
	int ngone = 0, rc = ZOK, i;

	if (!gone)
		abort();
	/* first decide, seeing the deletes before each op, then apply */
	for (i = 0; i < count && rc == ZOK; i++) {
		bool deleted = false;

		for (int k = 0; k < ngone; k++)
			deleted |= strcmp(gone[k], paths[i]) == 0;
		if (types[i] == ZOO_DELETE_OP) {
			errs[i] = deleted ? ZNONODE : delete_rc(z, paths[i], versions[i]);
			if (errs[i] == ZOK)
				gone[ngone++] = paths[i];
		} else if (types[i] == ZOO_CHECK_OP) {
			struct szk_node *n = szk_find(z, paths[i]);

			errs[i] = deleted || !n ? ZNONODE :
				  versions[i] != -1 && versions[i] != n->version ? ZBADVERSION : ZOK;
		} else {
			errs[i] = ZUNIMPLEMENTED;
		}
		rc = errs[i];
	}
	if (rc != ZOK) {
		for (int k = 0; k < i - 1; k++)
			errs[k] = ZOK;
		for (int k = i; k < count; k++)
			errs[k] = ZRUNTIMEINCONSISTENCY;
	} else {
		for (int k = 0; k < ngone; k++)
			remove_node(z, szk_find(z, gone[k]));
	}
	free(gone);
	return rc;
}
