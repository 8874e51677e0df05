/*
 * fs/fdlock.c - flock(2)/fcntl(2) on the holder's descriptor of an entry
 * (see fdlock.h; the rules, as a table: fs/flock.c).
 */
#include "fs/fdlock.h"

#include <errno.h>
#include <sys/file.h>

#include "fs/lockreq.h"
#include "fs/reply.h"
#include "fs/wbuf.h"
#include "zk/log.h"

/*
 * The holder's descriptor of @n gives its lock back (LOCK_UN, or before a
 * conversion) and stays open.  The data written first, on the session the
 * delete goes to: it is in the old entry before the entry goes.
 */
static void giveback(struct zklfs *fs, struct node *n)
{
	zklfs_wbuf_close(fs, n);
	lockreq_giveback(fs, n);
}

void fdlock_end(struct zklfs *fs, struct node *ended)
{
	zklfs_wbuf_close(fs, ended);	/* the data before the delete */
	lockreq_end(fs, ended);
}

/*
 * @op on a descriptor whose entry others stand for too (reentrant opens:
 * it is JOINED, or JOINED ones stand for its entry): the kind held is 0,
 * LOCK_UN gives up this descriptor's part alone, another kind is EDEADLK
 * (a conversion would take the lock from under the others), and any on a
 * lost lock EIO.  Return: the answer.  Under fs->lock.
 */
static int shared_entry_err_locked(struct lockreq *lr, int op, enum zkn_kind want)
{
	struct lockreq *e = lockreq_entry(lr);

	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	if (op == LOCK_UN)
		return 0;
	if (e->state == LR_LOST)
		return EIO;
	if (e->state == LR_HELD && e->kind == want && !(lr == e && lr->parted))
		return 0;
	return EDEADLK;
}

/* ... and the answer @err to @req, the part given up first on LOCK_UN. */
static void shared_entry_answer(fuse_req_t req, struct node *n, int op, int err)
{
	struct zklfs *fs = n->fs;
	struct node *ended;

	if (op == LOCK_UN) {
		ended = lockreq_part(fs, n);
		if (ended)
			fdlock_end(fs, ended);
	} else if (err == EDEADLK) {
		zklog(LOG_NOTICE, "lock request on a descriptor whose entry other "
		      "descriptors stand for: EDEADLK");
	}
	fs->reply->err(req, err);
}

void fdlock_op(fuse_req_t req, struct node *n, int op, bool nb)
{
	struct zklfs *fs = n->fs;
	enum zkn_kind want = op == LOCK_EX ? ZKN_EXCLUSIVE : ZKN_SHARED;
	bool busy, has, holds, shared, lost;
	int err = 0;

	/* one look decides, whatever the ZooKeeper thread does meanwhile */
	zkmx_lock(&fs->lock);
	shared = n->lr->state == LR_JOINED || n->lr->njoined;
	if (shared)
		err = shared_entry_err_locked(n->lr, op, want);
	busy = lockreq_asking(n->lr);
	has = n->lr->w != NULL;
	holds = has && n->lr->state == LR_HELD && n->lr->kind == want;
	lost = has && n->lr->state == LR_LOST;
	zkmx_unlock(&fs->lock);
	if (shared) {
		shared_entry_answer(req, n, op, err);
		return;
	}
	if (busy) {
		/*
		 * Another process sharing this descriptor waits for its lock
		 * right now: one request at a time per descriptor.  An unlock
		 * has nothing to give back meanwhile (as with a local flock,
		 * the waiting request goes on).
		 */
		if (op == LOCK_UN) {
			fs->reply->err(req, 0);
			return;
		}
		zklog(LOG_NOTICE, "lock request on a descriptor that already waits: %s",
		      nb ? "EAGAIN" : "EDEADLK");
		fs->reply->err(req, nb ? EAGAIN : EDEADLK);
		return;
	}
	if (op != LOCK_UN && holds) {
		fs->reply->err(req, 0);
		return;
	}
	/* a lost lock is told, not silently taken anew: LOCK_UN first */
	if (op != LOCK_UN && lost) {
		fs->reply->err(req, EIO);
		return;
	}
	/* refused before the entry is given back, not after */
	if (op != LOCK_UN && lockreq_deadlocks(req, n)) {
		fs->reply->err(req, EDEADLK);
		return;
	}
	if (has)
		giveback(fs, n);
	if (op == LOCK_UN) {
		fs->reply->err(req, 0);
		return;
	}
	lockreq_request(req, n, want, nb ? ZKL_NONBLOCK : 0);
}

