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

void fdlock_end(struct zklfs *fs, struct node *n)
{
	lockreq_close(fs, n);
	zklfs_wbuf_close(fs, n);	/* the data before the delete */
	lockreq_drop(fs, n);		/* may free it: FORGET came */
}

void fdlock_op(fuse_req_t req, struct node *n, int op, bool nb)
{
	struct zklfs *fs = n->fs;
	enum zkn_kind want = op == LOCK_EX ? ZKN_EXCLUSIVE : ZKN_SHARED;
	bool busy, has, holds, lost;
	int looks = 0;

again:	/* one look decides, whatever the ZooKeeper thread does meanwhile */
	zkmx_lock(&fs->lock);
	busy = lockreq_asking(n->lr);
	has = n->lr->w != NULL;
	holds = has && n->lr->state == LR_HELD && n->lr->kind == want;
	lost = has && n->lr->state == LR_LOST;
	zkmx_unlock(&fs->lock);
	if (busy) {
		/*
		 * Another thread or process sharing this description waits
		 * for its lock right now.  As with a local flock on one
		 * description: an unlock has nothing to give back meanwhile
		 * (the waiting request goes on); LOCK_NB fails, the lock not
		 * being free; a blocking request joins that wait.  One the
		 * wait cannot satisfy (the exclusive lock over a wait for the
		 * shared one, or a blocking request beside a LOCK_NB one) is
		 * refused rather than answered with a lock it did not get.
		 */
		if (op == LOCK_UN || nb) {
			fs->reply->err(req, op == LOCK_UN ? 0 : EWOULDBLOCK);
			return;
		}
		switch (lockreq_join(req, n, want)) {
		case LR_JOINED:
			return;
		case LR_JOIN_GONE:	/* answered meanwhile: look again */
			if (++looks < 3)
				goto again;
			break;
		case LR_JOIN_UNFIT:
			break;
		}
		zklog(LOG_NOTICE, "lock request on a descriptor whose other request "
		      "waits for a lock that would not satisfy it: ENOLCK");
		fs->reply->err(req, ENOLCK);
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
	if (has)
		giveback(fs, n);
	if (op == LOCK_UN) {
		fs->reply->err(req, 0);
		return;
	}
	lockreq_request(req, n, want, nb ? ZKL_NONBLOCK : 0);
}
