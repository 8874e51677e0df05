/*
 * fs/mount.h - the mount: the state every fs/ module shares.
 *
 * It is the bottom of fs/: every module includes it, it includes none of
 * them, so a field whose type belongs to a module is a pointer to a type
 * that module defines privately or in its own header.  Each field says
 * which module owns it and which lock guards it.
 *
 * Threads: one FUSE loop thread runs every handler and drives the
 * ZooKeeper sessions, so the completions that answer requests later run
 * there too (zk/drive.h); the sessions' supervisors run ticks
 * (zklfs_zlater()).  fs->lock guards the
 * inode table (fs/node.h), every lock request (fs/lockreq.h) and the
 * holders' data (fs/wbuf.h); it is never held across a fuse_reply_*() or
 * a call into the lock engine, but it is taken under the engine's lock by
 * lockreq_lost().  The nesting order of every mutex is the lock map
 * in zk/mutex.h, checked in the sanitizer builds.
 */
#ifndef FS_MOUNT_H
#define FS_MOUNT_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fs/opts.h"
#include "zk/mutex.h"

struct node;
struct lockreq;
struct listcache;
struct dirowner;
struct dirlist;
struct zklfs;
struct zklfs_pool;
struct zks;
struct zklfs_reply;
struct zklfs_pending;
struct zklfs_watchdog;
struct zklfs_observe;

#define ZKLFS_PID_BUCKETS 256

/*
 * zklfs_node_end_fn - a lock node ends (fs/node.c frees it): forget
 * everything that still names it and free its lock request.  Under
 * fs->lock.  Set at zklfs_nodes_init() by fs/main.c, so that the inode
 * table calls up into the lock modules without depending on them.
 */
typedef void zklfs_node_end_fn(struct zklfs *fs, struct node *n);

struct zklfs {
	/* the mount's own (fs/main.c): set at start-up, then read only */
	struct zklfs_conf *conf;
	struct fuse_session *se;
	char *mountpoint;
	char host[256];
	uid_t uid;
	gid_t gid;
	struct zkmx lock;		/* fs->lock: see above */
	const struct zklfs_reply *reply;	/* the kernel's side (fs/reply.h) */

	struct zklfs_pool *pool;	/* the sessions (fs/pool.c) */

	/* the inode table (fs/node.c); all under fs->lock */
	struct node *root;		/* FUSE_ROOT_ID */
	struct node **htab;		/* path -> node */
	struct node *all;		/* every node but root, to free at exit */
	size_t hsize;
	struct listcache *listcache;		/* listings of busy lock dirs */
	zklfs_node_end_fn *node_end;	/* read only */

	/* lock requests with a live waiter, by their process (fs/lockreq.c:
	 * F_GETLK's pid, the notice of a process that waits behind itself;
	 * never a grant); fs->lock */
	struct lockreq *locks[ZKLFS_PID_BUCKETS];

	/* the directories made through this mount (fs/attr.c) */
	struct zkmx owners_mu;	/* owners, nowners, owners_sweep */
	struct dirowner **owners;
	size_t nowners;
	size_t owners_sweep;		/* the next bucket to look at */

	struct dirlist *dirlists;	/* opened directories (fs/readdir.c); fs->lock */

	struct xcache *xc;		/* what a process just read (fs/xcache.h) */

	/* requests waiting on ZooKeeper, answered once (fs/pending.h) */
	struct zklfs_pending *pend;

	/* zklock's watchdog file (fs/watchdog.h): set at start-up, or NULL */
	struct zklfs_watchdog *wd;

	/* observed locks, LOCKDIR/.holders (fs/observe.h) */
	struct zklfs_observe *obs;

	/* the holders' data (fs/wbuf.c) */
	struct zkmx wb_send;	/* held across taking data and sending it,
					   so that sets go out in the order the
					   data was taken: never an older one last */
	struct node *dirty;		/* nodes with data to send; fs->lock */
	struct wb_tick {		/* a zklfs_zlater() flush per session */
		struct zklfs *fs;
		struct zks *zks;
		bool queued;		/* fs->lock */
	} wb_ticks[ZKLFS_SESSIONS_MAX];
};

#endif
