/*
 * fs/lrmoves.h - a lock request's machines (struct lockreq, fs/lockreq.h):
 * their states and every legal move, one list each, as zk/moves.h lists
 * the waiter's.  The enums and the checker of fs/lockreq.c (sanitizer
 * builds: any other move aborts, naming it) are made from them, and so
 * are docs/DESIGN.md's tables (build/moves prints them; make check-docs
 * compares).  No code of its own; any thread.
 *
 * The request's state: what its node's entry is to this descriptor.  The
 * owner of an entry is the open file description that made it, never a
 * thread or a process: dup(2), fork(2) and a passed descriptor share it
 * because the kernel gives them one description, and nothing else does.
 * A lock file's lock owners each have a request of their own, on a lock
 * node of their own (fs/lockfile.h): the same machine.
 */
#ifndef FS_LRMOVES_H
#define FS_LRMOVES_H

/* enum lrstate, LR_<STATE> */
#define ZKLFS_LR_STATES(X)						\
	X(IDLE,     "no entry and no request: made by MKNOD, refused, or given back") \
	X(ASKING,   "a request (its OPEN, or flock/fcntl on the holder's descriptor) is enqueued; its interrupt is not armed yet") \
	X(ANSWERED, "the engine answered before the interrupt was armed: the answer waits for it") \
	X(WAITING,  "the request waits for the engine's answer, its interrupt armed") \
	X(HELD,     "granted: the entry holds the lock for this descriptor") \
	X(LOST,     "granted, then lost: EIO, POLLERR|POLLHUP")

#define ZKLFS_LR_MOVES(X)						\
	X(IDLE,     ASKING,   "a request enqueues (lockreq_open(), lockreq_request())") \
	X(ASKING,   IDLE,     "the engine refused it at once")		\
	X(ASKING,   ANSWERED, "the engine answered first (lock_done())")	\
	X(ASKING,   WAITING,  "the interrupt is armed (fs->reply->on_interrupt())") \
	X(ANSWERED, HELD,     "granted: answered once armed")		\
	X(ANSWERED, IDLE,     "refused: answered once armed, its entry given back") \
	X(WAITING,  HELD,     "granted")					\
	X(WAITING,  IDLE,     "refused (EAGAIN, EINTR, EIO, ...): its entry given back") \
	X(WAITING,  ASKING,   "its caller interrupted, a request that joined it takes the wait over; that one's interrupt is not armed yet") \
	X(HELD,     LOST,     "lost (its entry deleted, the session silent or expired)") \
	X(HELD,     IDLE,     "given back: RELEASE, LOCK_UN, a conversion, the opener gone") \
	X(LOST,     IDLE,     "given back")

/* enum lrintr, LI_<STATE>: a hold on the waiter by a call into the engine
 * outside the FUSE thread that owns it (lockreq_pin_locked()) */
#define ZKLFS_LI_STATES(X)						\
	X(NONE,  "no such call uses the waiter")			\
	X(BUSY,  "an interrupt's zkl_cancel() or a confirmation's zkl_entry_gone() uses the waiter: it may not be let go") \
	X(DEFER, "... and a give-back came meanwhile: lockreq_unpin() does it")

#define ZKLFS_LI_MOVES(X)						\
	X(NONE,  BUSY,  "FUSE_INTERRUPT of a waiting request, or a confirmation that found the entry gone") \
	X(BUSY,  NONE,  "the call returned, nothing came meanwhile")	\
	X(BUSY,  DEFER, "lockreq_drop() came during the call")		\
	X(DEFER, NONE,  "the call returned: lockreq_unpin() gives the entry back")

#endif
