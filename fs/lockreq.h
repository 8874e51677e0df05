/*
 * fs/lockreq.h - a lock request: a lock node's place in its lock's queue.
 *
 * Its engine is the one of the lock's directory (fs/pool.h).  Calls up
 * into no module: the holder's data (fs/wbuf.h) and the handlers
 * (fs/handlers.h) sit above it.
 *
 * A lock node (NODE_PENDING, made by MKNOD) owns one struct lockreq,
 * n->lr, for its whole life: the lock asked for, the request waiting for
 * the grant (its OPEN, or a flock/fcntl request on the holder's
 * descriptor), the interrupt handshake, the entry once granted, its
 * loss, the holder's poller and data.  Every field is under fs->lock.
 *
 * Threads: a request is made on the FUSE thread and answered from the
 * engine's done callback: on the ZooKeeper thread, or on a FUSE thread
 * inside zkl_cancel() (the one that interrupts) or zkl_release() (a cohort
 * hand-off to another request of this mount); the engine's lost callback,
 * lockreq_lost(), runs under the engine's lock and takes fs->lock.  Every
 * answer and every call into the kernel goes through fs->reply
 * (fs/reply.h), so the simulator drives this file as the kernel does.
 */
#ifndef FS_LOCKREQ_H
#define FS_LOCKREQ_H

#include "fs/lrmoves.h"
#include "fs/node.h"
#include "fs/pending.h"
#include "fs/pool.h"
#include "fs/reply.h"

/* The request's machines and their moves: fs/lrmoves.h. */
#define LR_ENUM(s, why) LR_##s,
#define LI_ENUM(s, why) LI_##s,
enum lrstate { ZKLFS_LR_STATES(LR_ENUM) };
enum lrintr { ZKLFS_LI_STATES(LI_ENUM) };
#undef LR_ENUM
#undef LI_ENUM

/* What the holder's descriptor of a lock node is (fuse_file_info.fh). */
#define FH_PLAIN	0	/* opened without O_CREAT: read only */
#define FH_HOLDER	1	/* the lock's own descriptor */

struct wflight;

/*
 * The data written through a holder's descriptor.  Its fields are
 * fs/wbuf.c's alone; lockreq_free() frees @buf.  Every field under
 * fs->lock.
 */
struct zklfs_wbuf {
	char *buf;			/* the latest data written */
	size_t len;
	bool dirty;			/* newer than what was sent */
	struct node *dnext, *dprev;	/* fs->dirty, while dirty */
	struct zks *zks;		/* the lock's session, once written */
	struct wflight *flights;	/* sends not yet answered */
	uint64_t ver;			/* versions written (writes, truncates) */
	uint64_t answered;		/* the latest version ZooKeeper
					   answered a set of for good: applied,
					   or refused (its error in err); below
					   ver, a set may yet fail with the
					   connection, or go again */
	int err;			/* -errno of a send no fsync reported */
	bool retrying;			/* a send met a connection loss: logged */
};

/*
 * How a request waiting for a confirmation (fs/confirm.h) is answered:
 * @err 0 once confirmed, else an errno; @size is what the caller of
 * zklfs_confirm() gave for its request.  Any thread, without fs->lock.
 */
typedef void zklfs_confirm_answer_fn(struct zklfs *fs, fuse_req_t req, size_t size,
				     int err);

/* A request waiting for a confirmation (an FSYNC); pending
 * (fs/pending.h): a signal or its deadline may answer it first. */
struct lr_wait {
	struct zpend pend;
	zklfs_confirm_answer_fn *answer;
	size_t size;
	bool data;			/* an FSYNC: reports a data send's error */
	uint64_t want;			/* ... and needs ZooKeeper to hold this
					   version of the data (lr->wb.ver as
					   it asked) */
	int err;			/* its answer if the lock held: 0, or
					   (an FSYNC) a data send's errno */
	struct lr_wait *next;
};

/* A flock/fcntl request that joined the wait of another request of the
 * same description (lockreq_join()); every field under fs->lock. */
struct lr_join {
	fuse_req_t req;
	bool armed;			/* its interrupt is registered: whoever
					   takes it answers it */
	bool interrupted;		/* FUSE_INTERRUPT came before that */
	bool answered;			/* ... the wait's answer came before
					   that: @result, for lockreq_join() */
	int result;
	struct lr_join *next;
};

/*
 * A confirmation's round trip (fs/confirm.c), as a lock request sees it:
 * the requests it answers, and those that wait for the next one.  A loss or
 * a give-back answers them all EIO at once (fs/lockreq.c, confirm_take_locked())
 * and, a give-back, lets the round trip's node go.  Under fs->lock.
 */
struct lr_confirm {
	struct node *n;			/* NULL once its node let the entry go */
	struct lr_wait *now, *next;
};

/*
 * lockreq_answer_waits() - answer the requests @all and free the list: EIO
 * unless @held, else each its own err.  Any thread, without fs->lock.
 */
void lockreq_answer_waits(struct zklfs *fs, struct lr_wait *all, bool held);

/* A lock node's request; every field under fs->lock. */
struct lockreq {
	struct node *node;		/* whose: fixed */
	char *dir;			/* the lock's znode: fixed */
	char *name;			/* the NAME asked for: fixed */
	uid_t uid;			/* the opener's (MKNOD's caller): fixed */
	struct zkl_waiter *w;		/* our place in the queue, until
					   given back (n->pinned meanwhile) */
	enum lrstate state;		/* lockreq_set_state_locked() */
	enum lrintr intr;		/* lockreq_set_intr_locked() */
	fuse_req_t req;			/* the request waiting for the grant:
					   the OPEN, or a lock request */
	bool fdreq;			/* req is a flock/fcntl lock request
					   on the holder's descriptor, not
					   the OPEN */
	bool nb;			/* ... with LOCK_NB (or O_NONBLOCK) */
	struct fuse_file_info fi;	/* copied from that OPEN */
	enum zkn_kind kind;		/* of w */
	int64_t asked_ms;		/* when its entry was asked for (ms
					   since the epoch): its ctime while
					   ZooKeeper is silent */
	pid_t pid;			/* the process that asked: told in
					   F_GETLK and in the notice of a
					   process waiting behind itself,
					   never a grant or a refusal */
	uint64_t ino;			/* the inode its description is open
					   on: its node's, or a record's lock
					   file's: fixed */
	bool tell;			/* its holder handles a loss itself
					   (ZKLFS_IOC_TELL): nothing is ended */
	struct zklfs_holders holders;	/* on_loss=end: where its description
					   is found at a loss (fs/ender.h) */
	int result;			/* LR_ANSWERED: the engine's answer */
	enum zkm_loss loss;		/* why, once lost */
	bool lost_early;		/* lost while its grant was on its way
					   to lock_answer(): LOST once answered */
	bool opened;			/* an OPEN took this node; only set */
	bool revoking;			/* its holder is asked to let go:
					   POLLPRI; until given back */
	bool doubt;			/* its session is in doubt, and no read
					   since showed the entry (zk/watch.c) */
	unsigned doubt_moves;		/* times doubt changed: POLLPRI for a
					   poller that saw fewer */
	unsigned doubt_polled;		/* ... doubt_moves a poll reported */
	bool selfwait_told;		/* the notice that its process waits
					   behind it was logged (once an entry) */
	int32_t seq;			/* of our entry, once granted */
	int64_t czxid;
	uint32_t grants;		/* its entry's grants before (lingering) */
	unsigned limit;			/* the semaphore's it was granted under
					   (0: a plain lock) */
	struct fuse_pollhandle *ph;	/* the holder's poller to wake */
	struct zklfs_wbuf wb;		/* written through the holder's fd */
	struct lr_confirm *cf;		/* its confirmation out (fs/confirm.c),
					   while HELD */
	struct lr_join *joins;		/* flock/fcntl requests of the same
					   description that joined the wait
					   of req, first first; taken with req
					   (lockreq_join()) */
	struct lockreq *lnext, *lprev;	/* fs->locks[pid % ZKLFS_PID_BUCKETS],
					   while w is set */
};

/* lockreq_granted() - was the entry granted (HELD or LOST)?  Under fs->lock. */
static inline bool lockreq_granted(const struct lockreq *lr)
{
	return lr->state == LR_HELD || lr->state == LR_LOST;
}

/* lockreq_asking() - does a request wait on the entry?  Under fs->lock. */
static inline bool lockreq_asking(const struct lockreq *lr)
{
	return lr->state == LR_ASKING || lr->state == LR_ANSWERED ||
	       lr->state == LR_WAITING;
}

/*
 * lockreq_set_state_locked(), lockreq_set_intr_locked() - the one way each
 * machine of @lr moves; a move fs/lrmoves.h does not list aborts in the
 * sanitizer builds (ZKL_LOCKCHECK).  Under fs->lock.
 */
void lockreq_set_state_locked(struct lockreq *lr, enum lrstate to);
void lockreq_set_intr_locked(struct lockreq *lr, enum lrintr to);

/*
 * lockreq_node() - MKNOD: a fresh lock node (one lookup) for the lock
 * NAME @name in the directory @dir, asked for by @uid, with its request,
 * which holds nothing yet.  FUSE thread, without fs->lock.
 * Return: NULL on ENOMEM.
 */
struct node *lockreq_node(struct zklfs *fs, const char *dir, const char *name,
			  uid_t uid);

/* lockreq_free() - free @lr (its node ends: see zklfs_node_end_fn). */
void lockreq_free(struct lockreq *lr);

/*
 * lockreq_open() - the first OPEN @req of lock node @n (@fi copied):
 * enqueue an entry, shared for O_RDONLY, exclusive otherwise, and answer
 * @req later: the holder's descriptor (FH_HOLDER) once granted, or an
 * errno (EAGAIN with O_NONBLOCK, EINTR, ...).  A new entry always queues,
 * whoever asks: a process that holds the lock through another
 * descriptor waits behind itself, as with a local flock on a second
 * descriptor, and the mount logs a notice naming it (once an entry,
 * rate-limited).  FUSE thread, without fs->lock.
 */
void lockreq_open(fuse_req_t req, struct node *n, struct fuse_file_info *fi);

/*
 * lockreq_request() - a flock(2)/fcntl(2) lock request @req on the
 * holder's descriptor of @n, which holds no waiter (lockreq_giveback()
 * first): enqueue an entry of @kind (@flags: ZKL_NONBLOCK) and answer @req
 * later, 0 once it is granted or an errno.  FUSE thread, without fs->lock.
 */
void lockreq_request(fuse_req_t req, struct node *n, enum zkn_kind kind,
		     int flags);

/*
 * lockreq_pid() - the process that opened the entry @seq of the lock @dir
 * through this mount, as the daemon saw it (never the pid= line of the
 * entry's data, which its holder may rewrite); 0 if no descriptor of this
 * mount holds it.  Any thread, without fs->lock.
 */
pid_t lockreq_pid(struct zklfs *fs, const char *dir, int32_t seq);

/*
 * lockreq_table_stat() - is @path an entry this mount was granted (held,
 * or lost and not given back), its lock, or a directory on the way?  Then
 * *@zs is what the mount's own tables say of it (an entry's czxid, the
 * time it was asked for, the data its holder wrote; a directory's bare
 * existence): the answer to a LOOKUP or GETATTR while ZooKeeper is
 * silent, so that a holder can always reach and read its own state.
 * Return: whether the tables know it; then *@type is NODE_FILE, NODE_DIR,
 * or on a lockfiles mount NODE_LOCKFILE for a lock itself.  Any thread,
 * without fs->lock.
 */
bool lockreq_table_stat(struct zklfs *fs, const char *path, struct Stat *zs,
			enum node_type *type);

/*
 * lockreq_join() - a blocking flock/fcntl request @req for @kind on the
 * holder's descriptor of @n while another request of that description
 * waits for the lock (threads or processes sharing one description): @req
 * joins that wait and is answered with it, as a local flock on one
 * description is.  The wait must be a blocking one that satisfies it (a
 * wait for the exclusive lock, or for @kind).  A FUSE_INTERRUPT of @req
 * answers it alone (EINTR); a FUSE_INTERRUPT of the request that waits
 * hands the wait, with its place in the queue, to the first request that
 * joined it (lock_interrupt()), so no joined request is refused for
 * another's signal.  Nothing here makes or deletes an entry.
 * Return: LR_JOINED (@req is answered, now or later); LR_JOIN_GONE if no
 * request waits on @n any more (decide again); LR_JOIN_UNFIT if the wait
 * is a LOCK_NB one or does not satisfy @kind (@req is the caller's to
 * answer).  FUSE thread, without fs->lock.
 */
enum lr_joined { LR_JOINED, LR_JOIN_GONE, LR_JOIN_UNFIT };
enum lr_joined lockreq_join(fuse_req_t req, struct node *n, enum zkn_kind kind);

/*
 * lockreq_drop() - give back @n's place in its queue (deleting the entry)
 * and free @n if the kernel has already forgotten it.  Send the holder's
 * data first (zklfs_wbuf_close()).  Any thread; without fs->lock.  While
 * an interrupt handler is using the waiter, the drop is left to it.
 */
void lockreq_drop(struct zklfs *fs, struct node *n);

/*
 * lockreq_close() - RELEASE of the holder's descriptor of @n: its poller
 * let go.  The caller then sends the data (zklfs_wbuf_close()) and
 * lockreq_drop()s the entry: the last close of the open file description
 * is the only one the kernel sends, so the entry goes with it.  FUSE
 * thread, without fs->lock.
 */
void lockreq_close(struct zklfs *fs, struct node *n);

/*
 * lockreq_giveback() - the holder's descriptor of @n gives its lock back
 * (LOCK_UN, or before a conversion) and stays open: lockreq_drop(), and
 * the entry forgotten: @n holds nothing.  Send the data first
 * (zklfs_wbuf_close()).  FUSE thread, without fs->lock.
 */
void lockreq_giveback(struct zklfs *fs, struct node *n);

/*
 * lockreq_entry_gone() - the server says the entry @path is gone (a lookup,
 * or an exists after a sync, answered "no node" on its session): if a lock
 * request of this mount holds it, the lock is lost, as its own watch would
 * say later.  Any thread but the engine's callbacks; without fs->lock.
 */
void lockreq_entry_gone(struct zklfs *fs, const char *path);

/*
 * lockreq_pin_locked() - keep @lr's waiter from being let go while a call
 * into the engine uses it outside the FUSE thread that owns it (an
 * interrupt's zkl_cancel(), a confirmation's zkl_entry_gone()): a
 * give-back meanwhile waits (LI_BUSY, LI_DEFER).  Return: the waiter, or
 * NULL if @lr holds none or another such call uses it.  Under fs->lock.
 * lockreq_unpin() - that call is done: the give-back that came meanwhile,
 * if any, is made now.  Without fs->lock.
 */
struct zkl_waiter *lockreq_pin_locked(struct lockreq *lr);
void lockreq_unpin(struct zklfs *fs, struct node *n);

/* lockreq_lost() - the engines' lost callback (see zkl_lost_fn): record
 * the loss and wake the holder's poller.  Under the engine's lock. */
void lockreq_lost(struct zkl_waiter *w, void *arg);

/* lockreq_revoked() - the engines' revoke callback (zkl_engine_on_revoke()):
 * record the request and wake the holder's poller.  Under the engine's lock. */
void lockreq_revoked(struct zkl_waiter *w, void *arg);

/* lockreq_doubted() - the engines' doubt callback (zkl_engine_on_doubt()):
 * record that the holder entered doubt or left it, and wake its poller.
 * Under the engine's lock. */
void lockreq_doubted(struct zkl_waiter *w, void *arg);

/* lockreq_holder_poll() - what poll() reports on @n's holder descriptor:
 * POLLERR|POLLHUP once lost; else readable, writable, POLLPRI while its
 * holder is asked to let go, and POLLPRI once for each move into doubt or
 * out of it, to the first poll that asks for POLLPRI in @events (an edge:
 * the poll after it waits for the next).  Keeps @ph (or frees it) to wake
 * the poller. */
unsigned lockreq_holder_poll(struct zklfs *fs, struct node *n, unsigned events,
			     struct fuse_pollhandle *ph);

/*
 * What the handlers ask of a request; each takes fs->lock briefly, so
 * call them without it.  Any node: a node with no request holds nothing.
 *
 * lockreq_holder_lost() - is @fi the holder's descriptor of a lost lock?
 * lockreq_holder_idle() - is @fi the holder's descriptor of @n while it
 * holds no entry (given back with LOCK_UN or F_UNLCK, or a conversion
 * under way)?  Its read, write and truncate are ENOLCK.
 * lockreq_waiting() - does a request (OPEN or lock) wait on @n's entry?
 * lockreq_own_state() - for a lock we hold through @n: its state, seq and
 * czxid, from memory (even while ZooKeeper is away).  Return: false if
 * @n is not a lock held (or lost) through this mount.
 */
bool lockreq_holder_lost(struct zklfs *fs, struct node *n,
			 const struct fuse_file_info *fi);
bool lockreq_holder_idle(struct zklfs *fs, struct node *n,
			 const struct fuse_file_info *fi);
/* lockreq_holder_errno() - EIO if lost, ENOLCK if idle, else 0: the
 * answer of the holder's read, write and truncate when not 0. */
int lockreq_holder_errno(struct zklfs *fs, struct node *n,
			 const struct fuse_file_info *fi);
bool lockreq_waiting(struct zklfs *fs, struct node *n);
/* lockreq_opener() - the process that took the lock held (or lost) through
 * @n, as the daemon saw it; 0 if @n holds none. */
pid_t lockreq_opener(struct zklfs *fs, struct node *n);
bool lockreq_own_state(struct zklfs *fs, struct node *n, struct zkl_info *info);
/*
 * lockreq_ends_held() - with on_loss=end, the locks held through this
 * mount, whose holders an orderly stop ends before the sessions close
 * (those that asked to be told of a loss too: a stop is no loss, and
 * zklock passes the SIGTERM on to its command), into *@out (to free).
 * Return: how many; 0 on ENOMEM or none.  Without fs->lock.
 */
size_t lockreq_ends_held(struct zklfs *fs, struct zklfs_held **out);
/* lockreq_tell() - the holder's descriptor of @n handles a loss itself
 * (ZKLFS_IOC_TELL): with on_loss=end, nothing is ended at its loss. */
void lockreq_tell(struct zklfs *fs, struct node *n);
/* lockreq_held_kind() - the kind of the lock held (not lost) through @n,
 * into *@kind.  Return: false if @n holds none. */
bool lockreq_held_kind(struct zklfs *fs, struct node *n, enum zkn_kind *kind);
/* lockreq_own_text() - that state as user.zklockfs.state says it (held,
 * revoking, doubt, lost: the first of these that is so, from the last), or with @token the fencing token ("CZXID SEQ", and the
 * grants of a lingering entry), into @buf.  Return: its length, or -1 if
 * @n holds no lock of this mount. */
int lockreq_own_text(struct zklfs *fs, struct node *n, bool token, char *buf,
		     size_t size);

#endif
