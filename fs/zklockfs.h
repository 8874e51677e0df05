/*
 * fs/zklockfs.h - the FUSE side's shared state: the mount, its inode table.
 *
 * Threads: one FUSE loop thread runs every handler; the ZooKeeper completion
 * thread runs the completions that answer requests later.  fs->lock guards
 * the inode table and every node field marked so; it is never held across a
 * fuse_reply_*() or a call into the lock engine, but it is taken under the
 * engine's lock by zklfs_lock_lost().  The nesting order of every mutex is
 * the lock map in zk/mutex.h, checked in the sanitizer builds.
 */
#ifndef FS_ZKLOCKFS_H
#define FS_ZKLOCKFS_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fs/opts.h"
#include "fs/slots.h"
#include "zk/lock.h"
#include "zk/mutex.h"
#include "zk/session.h"

enum node_type {
	NODE_DIR,	/* persistent znode: a lock and/or a folder of locks */
	NODE_FILE,	/* ephemeral znode: a queue entry */
	NODE_PENDING,	/* made by MKNOD: becomes a lock request at OPEN */
};

/* What the holder's descriptor of a lock node is (fuse_file_info.fh). */
#define FH_PLAIN	0	/* opened without O_CREAT: read only */
#define FH_HOLDER	1	/* the lock's own descriptor */

struct wflight;

/*
 * The data written through a holder's descriptor (fs/wbuf.c).  It reaches
 * ZooKeeper coalesced: the latest data at most once per fsync, close or
 * supervisor tick.  Every field under fs->lock.
 */
struct zklfs_wbuf {
	char *buf;			/* the latest data written */
	size_t len;
	bool dirty;			/* newer than what was sent */
	struct node *dnext, *dprev;	/* fs->dirty, while dirty */
	struct zks *zks;		/* the lock's session, once written */
	struct wflight *flights;	/* sends not yet answered */
	int err;			/* -errno of a send no fsync reported */
	bool retrying;			/* a send met a connection loss: logged */
};

struct node {
	struct zklfs *fs;
	fuse_ino_t ino;			/* (uintptr_t)node; FUSE_ROOT_ID for root */
	enum node_type type;
	char *path;			/* znode path; NULL while pending */
	uint64_t nlookup;		/* fs->lock */
	bool hashed;			/* in fs->htab; fs->lock */
	struct node *hnext;		/* fs->lock */
	struct node *anext, *aprev;	/* fs->all; fs->lock */

	/* lock nodes (NODE_PENDING) only; all under fs->lock */
	char *dir;			/* the lock's znode */
	char *name;			/* the NAME asked for */
	struct zkl_waiter *w;		/* our place in the queue, until RELEASE */
	fuse_req_t req;			/* the request waiting for the grant:
					   the OPEN, or a lock request */
	bool lockreq;			/* req is a flock/fcntl lock request
					   on the holder's descriptor, not
					   the OPEN */
	bool inflight;			/* a request waits on w, until its
					   answer has set the node's state */
	struct fuse_file_info fi;	/* copied from that OPEN */
	enum zkl_kind kind;		/* of w */
	pid_t tid;			/* the thread that asked (EDEADLK) */
	unsigned long long tid_start;	/* and when it started, 0 if unknown:
					   its id may be given again (fs/tid.h) */
	uid_t uid;
	bool armed;			/* interrupt handler registered */
	bool intr_busy;			/* lock_interrupt() is using w */
	bool drop_deferred;		/* node_drop_lock() came meanwhile */
	bool have_result;		/* answer arrived before armed */
	int result;
	bool opened;			/* an OPEN took this node */
	bool granted;			/* OPEN answered with the lock */
	bool lost;			/* the lock was lost: EIO, POLLERR */
	int32_t seq;			/* of our entry, once granted */
	int64_t czxid;
	struct fuse_pollhandle *ph;	/* the holder's poller to wake */
	struct zklfs_wbuf wb;		/* written through the holder's fd */
	struct node *lnext, *lprev;	/* fs->locks[tid % ZKLFS_TID_BUCKETS] */
};

#define ZKLFS_TID_BUCKETS 256

struct zklfs_pool;

/* A sync sent on pool slot @slot (its completion's argument). */
struct pool_sync {
	struct zklfs_pool *pool;
	int slot;
};

/* The mount's sessions; see fs/pool.c. */
struct zklfs_pool {
	int n;					/* conf->sessions, once opened */
	struct zks zks[ZKLFS_SESSIONS_MAX];
	struct zkl_engine *engines[ZKLFS_SESSIONS_MAX];	/* engine i on zks[i] */
	struct zkl_mutex mu;			/* slots */
	struct zklfs_slots slots;
	struct pool_sync sync[ZKLFS_SESSIONS_MAX];
	uint64_t links[ZKLFS_SESSIONS_MAX];	/* zks_links() at the last look */
};

struct zklfs {
	struct zklfs_conf *conf;
	struct zklfs_pool pool;
	struct fuse_session *se;
	char *mountpoint;
	char host[256];
	uid_t uid;
	gid_t gid;

	struct zkl_mutex lock;
	struct node root;
	struct node **htab;		/* path -> node */
	struct node *all;		/* every node but root, to free at exit */
	size_t hsize;
	struct node *locks[ZKLFS_TID_BUCKETS];	/* lock nodes with a live waiter,
						   by n->tid (EDEADLK) */
	struct lsc *lsc;		/* listings of busy lock dirs; fs->lock */
	struct zkl_mutex owners_mu;	/* owners, nowners (fs/attr.c) */
	struct dirowner **owners;	/* directories made through this mount */
	size_t nowners;
	struct dirlist *dirlists;	/* opened directories; fs->lock */
	/* the holders' data (fs/wbuf.c) */
	struct zkl_mutex wb_send;	/* held across taking data and sending it,
					   so that sets go out in the order the
					   data was taken: never an older one last */
	struct node *dirty;		/* nodes with data to send; fs->lock */
	struct wb_tick {		/* a zks_later() flush per session */
		struct zklfs *fs;
		struct zks *zks;
		bool queued;		/* fs->lock */
	} wb_ticks[ZKLFS_SESSIONS_MAX];
};

extern const struct fuse_lowlevel_ops zklfs_ops;

/* Largest entry data we write: ZooKeeper refuses packets of 1 MiB. */
#define ZKLFS_DATA_MAX (1024 * 1024 - 1024)

/* fs/attr.c ------------------------------------------------------------- */

struct Stat;

/*
 * zklfs_fill_attr() - the stat of a znode: a directory (mode 01777, like
 * /tmp) or an entry (0644, times = creation), owned by @uid (zklfs_owner()).
 */
void zklfs_fill_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino,
		     enum node_type type, const struct Stat *zs, uid_t uid);

/*
 * Who owns a znode (docs/SPEC.md, "Users and permissions"): an entry made
 * through this mount, the uid that opened it (the engine's record); a
 * directory made through this mount (zklfs_dir_made(), until
 * zklfs_dir_gone()), its maker, as long as its czxid is the one made;
 * anything else, the mount's owner.  Never the uid= line of an entry's
 * data.  Any thread; fs->owners_mu and the engine's lock, briefly.
 */
int zklfs_owners_init(struct zklfs *fs);
void zklfs_owners_free(struct zklfs *fs);
void zklfs_dir_made(struct zklfs *fs, const char *path, int64_t czxid, uid_t uid);
void zklfs_dir_gone(struct zklfs *fs, const char *path);
uid_t zklfs_owner(struct zklfs *fs, const char *path, enum node_type type,
		  const struct Stat *zs);

/* zklfs_pending_attr() - the stat of a lock node whose entry is not made yet. */
void zklfs_pending_attr(struct zklfs *fs, struct stat *st, struct node *n);

/* zklfs_hidden() - is @name under @dir not shown (/zookeeper at ROOT "/")? */
bool zklfs_hidden(struct zklfs *fs, const char *dir, const char *name);

/* zklfs_dirlists_free() - at exit: the listings of directories still open. */
void zklfs_dirlists_free(struct zklfs *fs);

/* fs/readdir.c: listings; fs/read.c: an entry's data and the xattrs ------- */

void zklfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void zklfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void zklfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void zklfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void zklfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags);
void zklfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* fs/pool.c: the mount's sessions ----------------------------------------- */

/*
 * Start-up, main thread: zklfs_pool_open() (every session, the root,
 * every engine), zklfs_pool_start() (the supervisors).  Shutdown:
 * zklfs_pool_shutdown() (every engine answers its waiters), then
 * zklfs_pool_close() (the server drops our entries), zklfs_pool_free().
 * Each may follow a failed or partial earlier step.  Return: 0 or -errno.
 */
int zklfs_pool_open(struct zklfs *fs);
int zklfs_pool_start(struct zklfs *fs);
void zklfs_pool_shutdown(struct zklfs *fs);
void zklfs_pool_close(struct zklfs *fs);
void zklfs_pool_free(struct zklfs *fs);

/*
 * zklfs_session() - the session every request about the directory @dir
 * (or about a child of it) goes to; zklfs_engine() - its lock engine.
 * Any thread.
 */
struct zks *zklfs_session(struct zklfs *fs, const char *dir);
struct zkl_engine *zklfs_engine(struct zklfs *fs, const char *dir);

/* zklfs_session_of() - the session of requests about the znode @path: a
 * directory's (@is_dir) own, a file's its directory's. */
struct zks *zklfs_session_of(struct zklfs *fs, const char *path, bool is_dir);

/*
 * zklfs_ns_changed() - a mkdir or rmdir of @dir through this mount is done
 * (or its outcome unknown): the other sessions sync before their next
 * request.  Call it before replying.
 */
void zklfs_ns_changed(struct zklfs *fs, const char *dir);

/* fs/lockops.c: the handlers of taking and giving back a lock ----------- */

void zklfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev);
void zklfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void zklfs_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct fuse_pollhandle *ph);

/*
 * zklfs_lock_request() - a flock(2)/fcntl(2) lock request @req on the
 * holder's descriptor of @n, which holds no waiter (zklfs_lock_giveback()
 * first): enqueue an entry of @kind (@flags: ZKL_NONBLOCK) and answer @req
 * later, 0 once it is granted or an errno.  FUSE thread.
 */
void zklfs_lock_request(fuse_req_t req, struct node *n, enum zkl_kind kind,
			int flags);

/*
 * zklfs_lock_deadlocks() - would @req's thread wait on itself: does it
 * already hold or wait for another entry in @n's directory?  A thread is
 * its id and its start time (fs/tid.h): an entry asked for by a thread
 * gone since, whose id was given again, is not the caller's.  Reads the
 * caller's /proc/TID/stat only if its id has an entry there.  Logs why.
 * FUSE thread, without fs->lock.
 */
bool zklfs_lock_deadlocks(fuse_req_t req, struct node *n);

/*
 * zklfs_lock_giveback() - the holder's descriptor of @n gives its lock back
 * (LOCK_UN, or before a conversion) and stays open: its entry is deleted
 * and forgotten, and it holds nothing.  FUSE thread, without fs->lock.
 */
void zklfs_lock_giveback(struct zklfs *fs, struct node *n);

/* zklfs_lock_lost() - the engine's lost callback (see zkl_lost_fn). */
void zklfs_lock_lost(struct zkl_waiter *w, void *arg);

/* zklfs_holder_lost() - is @fi the holder's descriptor of a lost lock? */
bool zklfs_holder_lost(struct zklfs *fs, struct node *n, struct fuse_file_info *fi);

/* zklfs_lock_waiting() - does a request (OPEN or lock) wait on @n's entry? */
bool zklfs_lock_waiting(struct zklfs *fs, struct node *n);

/*
 * zklfs_holder_idle() - is @fi the holder's descriptor of @n while it holds
 * no entry (given back with LOCK_UN or F_UNLCK, or a conversion under
 * way)?  Its read, write and truncate are ENOLCK.
 */
bool zklfs_holder_idle(struct zklfs *fs, struct node *n, struct fuse_file_info *fi);

/*
 * zklfs_own_state() - for a lock we hold through @n: its state, seq and
 * czxid, from memory (even while ZooKeeper is away).  Return: false if @n
 * is not a lock held (or lost) through this mount.
 */
bool zklfs_own_state(struct zklfs *fs, struct node *n, struct zkl_info *info);

/* zklfs_node_path() - a malloc'ed copy of @n's znode path, or NULL. */
char *zklfs_node_path(struct zklfs *fs, struct node *n);

/* fs/wbuf.c: the holder's data, coalesced writes -------------------------- */

/*
 * A holder's write() and truncate change its data in memory and answer at
 * once; the data goes to ZooKeeper as one setData of the latest bytes, at
 * the next supervisor tick of the lock's session (zks_later()), at fsync,
 * or at the give-back (close, LOCK_UN) before the entry's delete.  Every
 * set goes on the lock's session, where the create and the delete go, so
 * ZooKeeper does them in that order.  Taking, sending and answering:
 * fs->wb_send, then fs->lock; completions take fs->lock alone.
 */

/* FUSE WRITE on the holder's descriptor.  FUSE thread. */
void zklfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off, struct fuse_file_info *fi);

/*
 * FUSE FSYNC: on the holder's descriptor, sends the data if not sent and
 * answers once ZooKeeper has done every set sent so far: 0, or the error
 * of one of them that no fsync reported yet (EIO: the entry is gone, the
 * lock lost; EAGAIN: the connection was lost, the data is sent again at
 * the next tick; else as zk_errno()).  FUSE thread.
 */
void zklfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);

/*
 * zklfs_wbuf_setsize() - SETATTR of the size (truncate, O_TRUNC) through
 * @fi: on the holder's descriptor, the data is cut or zero-filled to @size
 * and the attributes answered at once.  FUSE thread.
 */
void zklfs_wbuf_setsize(fuse_req_t req, struct node *n, off_t size,
			struct fuse_file_info *fi);

/*
 * zklfs_wbuf_read() - while @n has data ZooKeeper has not answered for,
 * READ is answered from it (what this mount wrote, it reads back).
 * Return: true if @req was answered.  FUSE thread, without fs->lock.
 */
bool zklfs_wbuf_read(struct zklfs *fs, struct node *n, fuse_req_t req,
		     size_t size, off_t off);

/* zklfs_wbuf_attr() - the same for the size in @st.  Without fs->lock. */
void zklfs_wbuf_attr(struct zklfs *fs, struct node *n, struct stat *st);

/*
 * zklfs_wbuf_close() - @n's holder lets its entry go (RELEASE, LOCK_UN):
 * its unsent data is sent now, so call it before the delete (same
 * session: the data is in ZooKeeper before the entry is deleted), and
 * the data is forgotten.  FUSE thread, without fs->lock.
 */
void zklfs_wbuf_close(struct zklfs *fs, struct node *n);

/* zklfs_wbuf_forget_locked() - @n is freed: off fs->dirty, and the sends
 * in flight no longer name it.  Under fs->lock. */
void zklfs_wbuf_forget_locked(struct zklfs *fs, struct node *n);

/* fs/flock.c: flock(2) and fcntl(2) record locks on entries ------------- */

void zklfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 int op);
void zklfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock);
void zklfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 struct flock *lock, int sleep);

/* fs/node.c ------------------------------------------------------------- */

/* zklfs_nodes_init() - the table and the root node. Return: 0 or -ENOMEM. */
int zklfs_nodes_init(struct zklfs *fs);
void zklfs_nodes_free(struct zklfs *fs);

/* zklfs_now_ms() - CLOCK_MONOTONIC in milliseconds. */
uint64_t zklfs_now_ms(void);

/* node_of() - the node of an inode number the kernel gave us. */
struct node *node_of(struct zklfs *fs, fuse_ino_t ino);

/*
 * node_lookup_locked() - the node for @path of @type, counting one lookup;
 * a node of another type at that path is unhashed and replaced.
 * Return: NULL on ENOMEM.  Under fs->lock.
 */
struct node *node_lookup_locked(struct zklfs *fs, const char *path,
				enum node_type type);

/* node_new_pending_locked() - a fresh lock node for MKNOD (one lookup). */
struct node *node_new_pending_locked(struct zklfs *fs, const char *dir,
				     const char *name);

/* node_hash_locked() - make @n findable by its path (once it has one). */
void node_hash_locked(struct zklfs *fs, struct node *n);

/* node_unhash_path_locked() - forget whatever node stands for @path. */
void node_unhash_path_locked(struct zklfs *fs, const char *path);

/* node_forget() - drop @n lookups; frees an unreferenced node. FUSE thread. */
void node_forget(struct zklfs *fs, struct node *n, uint64_t nlookup);

/*
 * node_drop_lock() - give back @n's place in its queue (deleting the entry)
 * and free @n if the kernel has already forgotten it.  Any thread; without
 * fs->lock.  While an interrupt handler is using the waiter, the drop is
 * left to it.
 */
void node_drop_lock(struct zklfs *fs, struct node *n);

/*
 * The listing cache.  In a directory where this mount queued a lock during
 * the last ZKLFS_LSC_TTL_MS (lsc_busy() at MKNOD), a name that cannot be a
 * queue entry is looked up in a listing of that directory at most as old:
 * the kernel serialises the LOOKUPs that precede open(O_CREAT) in one
 * directory, and a round trip for each new lock name would bound how fast
 * waiters can queue.  Only the names that are not queue entries are kept
 * (sub-directories, mostly).  Direct-mapped, ZKLFS_LSC_SLOTS slots; any
 * thread, takes fs->lock.
 */
#define ZKLFS_LSC_SLOTS 256
#define ZKLFS_LSC_TTL_MS 1000
struct lsc {
	char *dir;
	uint64_t busy_until_ms;		/* MKNOD seen here until then */
	uint64_t fresh_until_ms;	/* @names valid until then; 0: none */
	char **names;			/* sorted (strcmp) */
	size_t n;
};
enum lsc_answer {
	LSC_UNKNOWN,	/* not a busy lock directory: ask ZooKeeper */
	LSC_STALE,	/* busy, but the listing is old: list it (lsc_fill()) */
	LSC_ABSENT,	/* no such child */
	LSC_PRESENT,	/* a child of that name exists: ask ZooKeeper its stat */
};
void lsc_busy(struct zklfs *fs, const char *dir);
enum lsc_answer lsc_lookup(struct zklfs *fs, const char *dir, const char *name);
/* lsc_fill() - a listing of @dir came; keeps its non-entry names if busy. */
void lsc_fill(struct zklfs *fs, const char *dir, char *const *names, int count);
/* lsc_forget() - @dir changed through this mount (mkdir, rmdir). */
void lsc_forget(struct zklfs *fs, const char *dir);


#endif
