/*
 * fs/attr.c - what stat says of znodes, and who owns them.
 *
 * Ownership is what this daemon saw, never what an entry's data says (its
 * holder, or any ZooKeeper client, can rewrite the uid= line): an entry
 * belongs to the uid that opened it through this mount, as the lock engine
 * recorded; a directory to the uid that made it through this mount, kept
 * here while the mount runs; anything else to the mount's owner.
 */
#include "fs/attr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/pool.h"
#include "zk/metrics.h"

static void ms_to_ts(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

void zklfs_fill_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino,
		     enum node_type type, const struct Stat *zs, uid_t uid)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	if (type == NODE_DIR) {
		st->st_mode = S_IFDIR | 01777;
		st->st_nlink = 2;
		st->st_size = zs->numChildren;
		ms_to_ts(zs->ctime, &st->st_ctim);
		ms_to_ts(zs->mtime, &st->st_mtim);
		st->st_atim = st->st_mtim;
	} else if (type == NODE_LOCKFILE) {
		/* anyone may open it (exec 9>F); only a holder writes */
		st->st_mode = S_IFREG | 0666;
		st->st_nlink = 1;
		ms_to_ts(zs->ctime, &st->st_ctim);
		ms_to_ts(zs->mtime, &st->st_mtim);
		st->st_atim = st->st_mtim;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = zs->dataLength;
		ms_to_ts(zs->ctime, &st->st_ctim);
		st->st_mtim = st->st_atim = st->st_ctim;
	}
	st->st_blocks = (st->st_size + 511) / 512;
}

void zklfs_pending_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino,
			uid_t uid)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_uid = uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_atim = st->st_ctim = st->st_mtim;
}

bool zklfs_hidden(struct zklfs *fs, const char *dir, const char *name)
{
	return strcmp(dir, "/") == 0 && strcmp(fs->conf->root, "/") == 0 &&
	       strcmp(name, "zookeeper") == 0;
}

/* The directories made through this mount ------------------------------- */

#define OWNERS_BUCKETS 4096
#ifndef OWNERS_MAX		/* -D: a small table, to watch it sweep */
#define OWNERS_MAX 65536	/* beyond: the mount's owner's, as if made elsewhere */
#endif
/*
 * From this size on, each directory made has OWNERS_SWEEP of those kept
 * looked at (an exists each): the ones gone meanwhile, never looked up
 * again through this mount (a container the server reaped), are forgotten
 * before the table fills.  The cost follows the mkdirs that cause it.
 */
#define OWNERS_SWEEP_AT (OWNERS_MAX - OWNERS_MAX / 8)
#define OWNERS_SWEEP 2

struct dirowner {
	char *path;
	int64_t czxid;		/* that directory, not one made again since */
	uid_t uid;
	struct dirowner *next;
};

int zklfs_owners_init(struct zklfs *fs)
{
	zkmx_init(&fs->owners_mu, ZKMX_RANK_OWNERS, "fs->owners_mu");
	fs->owners = calloc(OWNERS_BUCKETS, sizeof(*fs->owners));
	return fs->owners ? 0 : -ENOMEM;
}

void zklfs_owners_free(struct zklfs *fs)
{
	for (size_t i = 0; fs->owners && i < OWNERS_BUCKETS; i++) {
		for (struct dirowner *d = fs->owners[i], *next; d; d = next) {
			next = d->next;
			free(d->path);
			free(d);
		}
	}
	free(fs->owners);
	fs->owners = NULL;
	zkmx_destroy(&fs->owners_mu);
}

static struct dirowner **owner_slot(struct zklfs *fs, const char *path)
{
	struct dirowner **pp = &fs->owners[zkn_hash(path) % OWNERS_BUCKETS];

	while (*pp && strcmp((*pp)->path, path) != 0)
		pp = &(*pp)->next;
	return pp;
}

/* Forget @path if its record is still the directory @czxid. */
static void forget_if(struct zklfs *fs, const char *path, int64_t czxid)
{
	struct dirowner **pp, *d;

	zkmx_lock(&fs->owners_mu);
	pp = owner_slot(fs, path);
	d = *pp;
	if (d && d->czxid == czxid) {
		*pp = d->next;
		fs->nowners--;
		zkm_dir_owners(-1);
	} else {
		d = NULL;
	}
	zkmx_unlock(&fs->owners_mu);
	if (d) {
		free(d->path);
		free(d);
	}
}

struct sweep {
	struct zklfs *fs;
	char *path;
	int64_t czxid;
};

static void sweep_done(int rc, const struct Stat *zs, const void *data)
{
	struct sweep *sw = (struct sweep *)data;

	if (rc == ZNONODE || (rc == ZOK && zs->czxid != sw->czxid))
		forget_if(sw->fs, sw->path, sw->czxid);
	free(sw->path);
	free(sw);
}

/*
 * Take the next @max records after the last one taken, into @out: the
 * sweep's place is a bucket and a position in its chain (owners_sweep:
 * bucket * OWNERS_CHAIN_MAX + position), so every record is looked at in
 * turn.  Under owners_mu.
 */
#define OWNERS_CHAIN_MAX 65536
static size_t sweep_take_locked(struct zklfs *fs, struct sweep **out, size_t max)
{
	size_t k = 0;

	ZKMX_ASSERT_HELD(&fs->owners_mu);
	for (size_t b = 0; b <= OWNERS_BUCKETS && k < max; b++) {
		size_t i = fs->owners_sweep / OWNERS_CHAIN_MAX % OWNERS_BUCKETS;
		size_t pos = fs->owners_sweep % OWNERS_CHAIN_MAX, at = 0;
		struct dirowner *d = fs->owners[i];

		for (; d && at < pos; d = d->next)
			at++;
		for (; d && k < max; d = d->next, pos++) {
			struct sweep *sw = calloc(1, sizeof(*sw));

			if (!sw || !(sw->path = strdup(d->path))) {
				free(sw);
				return k;
			}
			sw->fs = fs;
			sw->czxid = d->czxid;
			out[k++] = sw;
		}
		if (d) {		/* more in this chain: on from there next time */
			fs->owners_sweep = i * OWNERS_CHAIN_MAX + pos;
			break;
		}
		fs->owners_sweep = (i + 1) % OWNERS_BUCKETS * OWNERS_CHAIN_MAX;
	}
	return k;
}

void zklfs_dir_made(struct zklfs *fs, const char *path, int64_t czxid, uid_t uid)
{
	struct sweep *sw[OWNERS_SWEEP];
	struct dirowner **pp, *d;
	size_t nsw = 0;

	zkmx_lock(&fs->owners_mu);
	if (fs->nowners >= OWNERS_SWEEP_AT)
		nsw = sweep_take_locked(fs, sw, OWNERS_SWEEP);
	pp = owner_slot(fs, path);
	if (*pp) {
		(*pp)->czxid = czxid;
		(*pp)->uid = uid;
	} else if (fs->nowners < OWNERS_MAX && (d = calloc(1, sizeof(*d)))) {
		d->path = strdup(path);
		d->czxid = czxid;
		d->uid = uid;
		if (d->path) {
			*pp = d;
			fs->nowners++;
			zkm_dir_owners(1);
		} else {
			free(d);
		}
	}
	zkmx_unlock(&fs->owners_mu);
	for (size_t i = 0; i < nsw; i++)
		if (zklfs_zexists(fs, zklfs_session(fs, sw[i]->path), sw[i]->path,
				sweep_done, sw[i]) != ZOK) {
			free(sw[i]->path);
			free(sw[i]);
		}
}

void zklfs_dir_gone(struct zklfs *fs, const char *path)
{
	struct dirowner **pp, *d;

	zkmx_lock(&fs->owners_mu);
	pp = owner_slot(fs, path);
	d = *pp;
	if (d) {
		*pp = d->next;
		fs->nowners--;
		zkm_dir_owners(-1);
	}
	zkmx_unlock(&fs->owners_mu);
	if (d) {
		free(d->path);
		free(d);
	}
}

uid_t zklfs_owner(struct zklfs *fs, const char *path, enum node_type type,
		  const struct Stat *zs)
{
	uid_t uid = fs->uid;

	if (node_persistent(type)) {
		struct dirowner *d;

		zkmx_lock(&fs->owners_mu);
		d = *owner_slot(fs, path);
		if (d && d->czxid == zs->czxid)
			uid = d->uid;
		zkmx_unlock(&fs->owners_mu);
	} else {
		char *dir = strndup(path, zkn_parent_len(path));
		uint32_t owner;

		if (dir && zkl_owner(zklfs_engine(fs, dir), dir, path, &owner))
			uid = (uid_t)owner;
		free(dir);
	}
	return uid;
}

bool zklfs_may_own(struct zklfs *fs, uid_t uid, const char *path,
		   enum node_type type, const struct Stat *zs)
{
	return uid == 0 || uid == fs->uid || uid == zklfs_owner(fs, path, type, zs);
}
