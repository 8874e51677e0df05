/*
 * fs/node.h - the inode table: inode numbers are node addresses.
 *
 * Calls up into no module: when a lock node ends, the table calls
 * fs->node_end (set by fs/main.c).
 *
 * A node is an inode: a directory, an entry, or a lock node made by
 * MKNOD, whose lock request (fs/lockreq.h) hangs off n->lr.  The table
 * and every field marked so are under fs->lock.  A node lives while the
 * kernel knows it (nlookup) or a lock request pins it (its waiter).
 */
#ifndef FS_NODE_H
#define FS_NODE_H

#include <stdint.h>

#include "fs/mount.h"

enum node_type {
	NODE_DIR,	/* persistent znode: a lock and/or a folder of locks */
	NODE_FILE,	/* ephemeral znode: a queue entry */
	NODE_PENDING,	/* made by MKNOD: becomes a lock request at OPEN;
			   or a lock file's lock record (fs/lockfile.h) */
	NODE_LOCKFILE,	/* -o lockfiles: a persistent znode shown as a
			   regular file, locked with flock/fcntl */
	NODE_HOLDERS,	/* LOCKDIR/.holders or .state: no znode (fs/observe.h) */
};

struct lfrec;

struct node {
	struct zklfs *fs;
	fuse_ino_t ino;			/* (uintptr_t)node; FUSE_ROOT_ID for root */
	enum node_type type;
	char *path;			/* znode path; NULL while pending;
					   fs->lock */
	uint64_t nlookup;		/* fs->lock */
	bool pinned;			/* a lock request holds a waiter: the
					   node outlives FORGET; fs->lock */
	bool hashed;			/* in fs->htab; fs->lock */
	struct node *hnext;		/* fs->lock */
	struct node *anext, *aprev;	/* fs->all; fs->lock */
	struct lockreq *lr;		/* NODE_PENDING only: its lock request,
					   set at MKNOD, freed with the node
					   (fs/lockreq.h) */
	struct lfrec *recs;		/* NODE_LOCKFILE: its lock owners'
					   records (fs/lockfile.c); fs->lock */
	unsigned nopen;			/* NODE_LOCKFILE: its open descriptors;
					   fs->lock */
};

/*
 * zklfs_nodes_init() - the table and the root node; @end is called when a
 * node with a lock request ends.  Main thread.  Return: 0 or -ENOMEM.
 * zklfs_nodes_free() - at exit, every node (calling @end under fs->lock).
 */
int zklfs_nodes_init(struct zklfs *fs, zklfs_node_end_fn *end);
void zklfs_nodes_free(struct zklfs *fs);

/* node_persistent() - is a node of @type a persistent znode, a lock's own
 * or a folder: a directory, or a lock file? */
static inline bool node_persistent(enum node_type type)
{
	return type == NODE_DIR || type == NODE_LOCKFILE;
}

/* node_shown_type() - what stat and the kernel see of @n's type: a lock
 * node is a file.  Any thread (the type is fixed). */
static inline enum node_type node_shown_type(const struct node *n)
{
	return n->type == NODE_PENDING ? NODE_FILE : n->type;
}

/* node_of() - the node of an inode number the kernel gave us.  Any thread. */
struct node *node_of(struct zklfs *fs, fuse_ino_t ino);

/*
 * node_lookup_locked() - the node for @path of @type, counting one lookup;
 * a node of another type at that path is unhashed and replaced.
 * Return: NULL on ENOMEM.  Under fs->lock.
 */
struct node *node_lookup_locked(struct zklfs *fs, const char *path,
				enum node_type type);

/* node_new_pending_locked() - a fresh lock node for MKNOD (one lookup), with
 * no lock request yet.  Return: NULL on ENOMEM.  Under fs->lock. */
struct node *node_new_pending_locked(struct zklfs *fs);

/* node_hash_locked() - make @n findable by its path (once it has one). */
void node_hash_locked(struct zklfs *fs, struct node *n);

/* node_unhash_locked() - @n is no longer found by its path. */
void node_unhash_locked(struct zklfs *fs, struct node *n);

/* node_find_locked() - the node found by @path, or NULL; counts no lookup. */
struct node *node_find_locked(struct zklfs *fs, const char *path);

/* node_unhash_path_locked() - forget whatever node stands for @path. */
void node_unhash_path_locked(struct zklfs *fs, const char *path);

/* node_forget() - drop @n lookups; frees an unreferenced, unpinned node.
 * FUSE thread, without fs->lock. */
void node_forget(struct zklfs *fs, struct node *n, uint64_t nlookup);

/* node_free() - free @n, which nothing references or pins any more: off
 * fs->all, fs->node_end told.  Any thread, without fs->lock. */
void node_free(struct node *n);

/* zklfs_node_path() - a malloc'ed copy of @n's znode path, or NULL.  Any
 * thread, without fs->lock. */
char *zklfs_node_path(struct zklfs *fs, struct node *n);

/*
 * The listing cache.  In a directory where this mount queued a lock during
 * the last ZKLFS_LISTCACHE_TTL_MS (listcache_busy() at MKNOD), a name that
 * cannot be a queue entry is looked up in a listing of that directory at
 * most as old: the kernel serialises the LOOKUPs that precede open(O_CREAT)
 * in one directory, and a round trip for each new lock name would bound how
 * fast waiters can queue.  Only the names that are not queue entries are
 * kept (sub-directories, mostly).  Direct-mapped, ZKLFS_LISTCACHE_SLOTS
 * slots; any thread, takes fs->lock.
 */
#define ZKLFS_LISTCACHE_SLOTS 256
#define ZKLFS_LISTCACHE_TTL_MS 1000
enum listcache_answer {
	LISTCACHE_UNKNOWN,	/* not a busy lock directory: ask ZooKeeper */
	LISTCACHE_STALE,	/* busy, but the listing is old: list it (listcache_fill()) */
	LISTCACHE_ABSENT,	/* no such child */
	LISTCACHE_PRESENT,	/* a child of that name exists: ask ZooKeeper its stat */
};
void listcache_busy(struct zklfs *fs, const char *dir);
enum listcache_answer listcache_lookup(struct zklfs *fs, const char *dir, const char *name);
/* listcache_fill() - a listing of @dir came; keeps its non-entry names if busy. */
void listcache_fill(struct zklfs *fs, const char *dir, char *const *names, int count);
/* listcache_forget() - @dir changed through this mount (mkdir, rmdir). */
void listcache_forget(struct zklfs *fs, const char *dir);

#endif
