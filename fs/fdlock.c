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

/*
 * LOCK_SH, LOCK_EX or LOCK_UN on the holder's descriptor of @n; with @nb
 * fail rather than wait.
 */
void fdlock_op(fuse_req_t req, struct node *n, int op, bool nb)
{
	struct zklfs *fs = n->fs;
	enum zkl_kind want = op == LOCK_EX ? ZKL_EXCLUSIVE : ZKL_SHARED;
	bool busy, has, holds;

	zkl_mutex_lock(&fs->lock);
	busy = lockreq_asking(n->lr);
	has = n->lr->w != NULL;
	holds = has && n->lr->state == LR_HELD && n->lr->kind == want;
	zkl_mutex_unlock(&fs->lock);
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
		zkl_log(LOG_NOTICE, "lock request on a descriptor that already waits: %s",
			nb ? "EAGAIN" : "EDEADLK");
		fs->reply->err(req, nb ? EAGAIN : EDEADLK);
		return;
	}
	if (op != LOCK_UN && holds) {
		fs->reply->err(req, 0);
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

