/*
 * fs/lockreq.c - a lock request: enqueue, the grant or refusal answered,
 * the interrupt handshake, the give-back, the loss (see lockreq.h).
 *
 * open(O_CREAT) of a new NAME reaches us as MKNOD, under the directory's
 * lock, then OPEN, outside it (we have no create op, see docs/DESIGN.md).
 * MKNOD makes a lock node and its request and touches no ZooKeeper, so
 * mknod(2) alone leaves nothing behind; OPEN enqueues and is answered
 * later, from the engine's done callback, when the lock is granted or
 * refused.  A flock(2)/fcntl(2) request on the holder's descriptor
 * (fs/flock.c) that must enqueue anew is answered the same way.
 */
#include "fs/lockreq.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/attr.h"
#include "fs/reply.h"
#include "fs/tid.h"
#include "fs/xcache.h"
#include "zk/log.h"
#include "zk/moves.h"

struct node *lockreq_node(struct zklfs *fs, const char *dir, const char *name,
			  uid_t uid)
{
	struct lockreq *lr = calloc(1, sizeof(*lr));
	struct node *n = NULL;

	if (!lr)
		return NULL;
	lr->dir = strdup(dir);
	lr->name = strdup(name);
	lr->uid = uid;
	if (lr->dir && lr->name) {
		zkmx_lock(&fs->lock);
		n = node_new_pending_locked(fs);
		if (n) {
			n->lr = lr;
			lr->node = n;
		}
		zkmx_unlock(&fs->lock);
	}
	if (!n)
		lockreq_free(lr);
	return n;
}

void lockreq_free(struct lockreq *lr)
{
	free(lr->dir);
	free(lr->name);
	free(lr->wb.buf);
	free(lr);
}

/* The machines' names and moves, from fs/lrmoves.h. */
#define NAME(s, why) #s,
#define LR_MOVE(f, t, why) { LR_##f, LR_##t },
#define LI_MOVE(f, t, why) { LI_##f, LI_##t },
static const char *const lr_names[] = { ZKLFS_LR_STATES(NAME) };
static const char *const li_names[] = { ZKLFS_LI_STATES(NAME) };
static const struct zke_move lr_moves[] = { ZKLFS_LR_MOVES(LR_MOVE) };
static const struct zke_move li_moves[] = { ZKLFS_LI_MOVES(LI_MOVE) };
#undef NAME
#undef LR_MOVE
#undef LI_MOVE

/* A move of one of @lr's machines: listed, or (sanitizer builds) abort. */
static void check_move(const struct lockreq *lr, const char *what,
		       const struct zke_move *moves, size_t n, const char *const *names,
		       int from, int to)
{
#ifdef ZKL_LOCKCHECK
	if (zke_move_listed(moves, n, from, to))
		return;
	fprintf(stderr, "zklockfs: lock request '%s' in %s: illegal move of its %s: %s -> %s\n",
		lr->name, lr->dir, what, names[from], names[to]);
	abort();
#else
	(void)lr, (void)what, (void)moves, (void)n, (void)names, (void)from, (void)to;
#endif
}

void lockreq_set_state_locked(struct lockreq *lr, enum lrstate to)
{
	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	check_move(lr, "state", lr_moves, sizeof(lr_moves) / sizeof(lr_moves[0]), lr_names,
		   lr->state, to);
	lr->state = to;
}

void lockreq_set_intr_locked(struct lockreq *lr, enum lrintr to)
{
	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	check_move(lr, "interrupt", li_moves, sizeof(li_moves) / sizeof(li_moves[0]),
		   li_names, lr->intr, to);
	lr->intr = to;
}

/* The holder lines of a new entry (docs/SPEC.md: host, pid, uid, cmd, since, mount). */
static int holder_data(struct zklfs *fs, struct zklfs_caller *c, char *buf, size_t size)
{
	char since[32], *cmd = c->cmd;
	time_t now = time(NULL);
	struct tm tm;
	size_t n = strnlen(cmd, sizeof(c->cmd) - 1);

	/*
	 * The process's name only: its arguments may hold secrets, and every
	 * user and ZooKeeper client reads this.  A name is whatever the
	 * process set (prctl): no control character may break the lines.
	 */
	while (n > 0 && cmd[n - 1] == '\n')
		n--;
	cmd[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)cmd[i] < 0x20 || cmd[i] == 0x7f)
			cmd[i] = '?';
	gmtime_r(&now, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return snprintf(buf, size, "host=%s\npid=%d\nuid=%u\ncmd=%s\nsince=%s\nmount=%s\n",
			fs->host, (int)c->pid, (unsigned)c->uid, cmd, since,
			fs->mountpoint);
}

/* The holder's descriptor for the OPEN of @lr (its copy of @fi). */
static void holder_fi(const struct lockreq *lr, struct fuse_file_info *fi)
{
	*fi = lr->fi;
	fi->fh = FH_HOLDER;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->noflush = 1;	/* close() owes us nothing: the lock ends at RELEASE */
}

/*
 * Answer the request waiting on @n with @err, or with the lock: its OPEN
 * (the holder's descriptor), or with @fdreq a flock/fcntl request on that
 * descriptor (0).  A refused request leaves @n holding nothing.
 */
static void lock_answer(struct zklfs *fs, struct node *n, fuse_req_t req,
			bool fdreq, int err)
{
	struct lockreq *lr = n->lr;
	struct fuse_file_info fi;
	struct zkl_info info;
	char *path;

	zklfs_xc_changed(fs);		/* an entry made, or gone */
	if (err) {
		if (err != -EAGAIN && err != -EINTR)
			zklog(LOG_WARNING, "lock '%s' in %s failed: %s", lr->name,
			      lr->dir, strerror(-err));
		if (err == -ENOENT)	/* the directory is gone: its maker too */
			zklfs_dir_gone(fs, lr->dir);
		lockreq_drop(fs, n);		/* IDLE */
		fs->reply->err(req, -err);
		return;
	}
	zkl_info(lr->w, &info, &path);
	zkmx_lock(&fs->lock);
	lockreq_set_state_locked(lr, LR_HELD);
	if (info.lost || lr->lost_early)	/* lost before it was answered */
		lockreq_set_state_locked(lr, LR_LOST);
	if (info.revoking)		/* asked while it waited */
		lr->revoking = true;
	lr->seq = info.seq;
	lr->czxid = info.czxid;
	lr->grants = info.grants;
	free(n->path);
	n->path = path;
	if (path)
		node_hash_locked(fs, n);
	holder_fi(lr, &fi);
	zkmx_unlock(&fs->lock);
	if (fdreq) {
		fs->reply->err(req, 0);
		return;
	}
	if (fs->reply->open(req, &fi) == -ENOENT)	/* the opener is gone */
		lockreq_drop(fs, n);
}

/* The engine's answer: on the ZooKeeper thread, or inside zkl_cancel(). */
static void lock_done(struct zkl_waiter *w, int err, void *arg)
{
	struct node *n = arg;
	struct lockreq *lr = n->lr;
	struct zklfs *fs = n->fs;
	fuse_req_t req;
	bool fdreq;

	(void)w;
	zkmx_lock(&fs->lock);
	if (lr->state == LR_ASKING) {	/* the handler is still setting up */
		lockreq_set_state_locked(lr, LR_ANSWERED);
		lr->result = err;
		zkmx_unlock(&fs->lock);
		return;
	}
	req = lr->req;
	fdreq = lr->fdreq;
	lr->req = NULL;
	zkmx_unlock(&fs->lock);
	if (req)
		lock_answer(fs, n, req, fdreq, err);
}

/*
 * FUSE_INTERRUPT of a waiting OPEN: runs with the request's lock held, which
 * the reply does not take: the answer may come on a ZooKeeper thread at the
 * same time, and its lockreq_drop() would let @w go while we use it.  So
 * that drop waits (lockreq_pin_locked(): LI_BUSY -> LI_DEFER) and is done
 * by lockreq_unpin(), after zkl_cancel().
 */
static void lock_interrupt(fuse_req_t req, void *arg)
{
	struct node *n = arg;
	struct zklfs *fs = n->fs;
	struct zkl_waiter *w;

	(void)req;
	zkmx_lock(&fs->lock);
	w = lockreq_pin_locked(n->lr);
	zkmx_unlock(&fs->lock);
	if (!w)
		return;
	zkl_cancel(w);			/* answers EINTR through lock_done */
	lockreq_unpin(fs, n);
}

struct zkl_waiter *lockreq_pin_locked(struct lockreq *lr)
{
	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	if (!lr->w || lr->intr != LI_NONE)
		return NULL;
	lockreq_set_intr_locked(lr, LI_BUSY);
	return lr->w;
}

void lockreq_unpin(struct zklfs *fs, struct node *n)
{
	struct lockreq *lr = n->lr;
	bool drop;

	zkmx_lock(&fs->lock);
	drop = lr->intr == LI_DEFER;
	lockreq_set_intr_locked(lr, LI_NONE);
	zkmx_unlock(&fs->lock);
	if (drop)
		lockreq_drop(fs, n);
}

void lockreq_entry_gone(struct zklfs *fs, const char *path)
{
	struct zkl_waiter *w = NULL;
	struct node *n;

	/* a held entry's node is found by its path (lock_answer()) */
	zkmx_lock(&fs->lock);
	n = node_find_locked(fs, path);
	if (n && n->lr && n->lr->state == LR_HELD)
		w = lockreq_pin_locked(n->lr);
	zkmx_unlock(&fs->lock);
	if (!w)
		return;
	zkl_entry_gone(w);		/* lost: lockreq_lost() records it */
	lockreq_unpin(fs, n);
}

/*
 * Enqueue @n's entry of @kind for @req (its OPEN, or with @fdreq a
 * flock/fcntl request) and leave the answer to lock_done().  The thread
 * that asks may already hold that lock: an OPEN then stands for its entry
 * at once (fs/reenter.c); a thread that waits there, or would wait on
 * itself, gets EDEADLK; one that lost it, EIO.
 */
static void lock_enqueue(fuse_req_t req, struct node *n, enum zkn_kind kind,
			 int flags, bool fdreq)
{
	struct lockreq *lr = n->lr;
	struct zklfs *fs = n->fs;
	struct zkl_waiter *w = NULL;
	struct zklfs_caller c = { 0 };
	char data[1024];
	fuse_req_t late = NULL;
	struct lockreq **head;
	int len, err, result = 0;

	switch (fdreq ? (lockreq_deadlocks(req, n) ? LR_DEADLOCK : LR_NEW) :
		lockreq_reenter(req, n, kind)) {
	case LR_NEW:
		break;
	case LR_JOIN: {
		struct fuse_file_info fi;

		zkmx_lock(&fs->lock);
		holder_fi(lr, &fi);
		zkmx_unlock(&fs->lock);
		if (fs->reply->open(req, &fi) == -ENOENT) {	/* the opener is gone */
			struct node *ended = lockreq_close(fs, n);

			if (ended)	/* JOINED ones write nothing: no data to send */
				lockreq_end(fs, ended);
		}
		return;
	}
	case LR_DEADLOCK:
		fs->reply->err(req, EDEADLK);
		return;
	case LR_LOSTLOCK:
		fs->reply->err(req, EIO);
		return;
	}
	/* while the thread waits in @req its id is its own: read it now */
	fs->reply->caller(req, &c);
	len = holder_data(fs, &c, data, sizeof(data));
	if (len >= (int)sizeof(data))
		len = sizeof(data) - 1;
	zkmx_lock(&fs->lock);
	lr->tid = c.tid;
	lr->pid = c.pid;
	lr->tid_start = c.start;
	lr->kind = kind;
	lr->req = req;
	lr->fdreq = fdreq;
	lr->lost_early = false;
	lockreq_set_state_locked(lr, LR_ASKING);
	zkmx_unlock(&fs->lock);
	/* lr->uid: the opener's, whoever asks for a conversion on its fd */
	err = zkl_enqueue(zklfs_engine(fs, lr->dir), lr->dir, lr->name, kind, flags,
			  data, len, lr->uid, lock_done, n, &w);
	if (err) {
		zkmx_lock(&fs->lock);
		lr->req = NULL;
		lockreq_set_state_locked(lr, LR_IDLE);
		zkmx_unlock(&fs->lock);
		zklog(LOG_WARNING, "lock '%s' in %s: %s", lr->name, lr->dir, strerror(-err));
		fs->reply->err(req, -err);
		return;
	}
	zkmx_lock(&fs->lock);
	lr->w = w;
	n->pinned = true;		/* until lockreq_drop() */
	head = &fs->locks[(unsigned)lr->tid % ZKLFS_TID_BUCKETS];
	lr->lnext = *head;
	lr->lprev = NULL;
	if (*head)
		(*head)->lprev = lr;
	*head = lr;
	zkmx_unlock(&fs->lock);
	fs->reply->on_interrupt(req, lock_interrupt, n);	/* last: may run now */
	zkmx_lock(&fs->lock);
	if (lr->state == LR_ANSWERED) {
		late = lr->req;
		lr->req = NULL;
		result = lr->result;
	} else if (lr->state == LR_ASKING) {
		lockreq_set_state_locked(lr, LR_WAITING);
	}
	zkmx_unlock(&fs->lock);
	if (late)
		lock_answer(fs, n, late, fdreq, result);
}

void lockreq_open(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	struct lockreq *lr = n->lr;
	enum zkn_kind kind = (fi->flags & O_ACCMODE) == O_RDONLY ? ZKN_SHARED : ZKN_EXCLUSIVE;

	zkmx_lock(&n->fs->lock);
	lr->fi = *fi;
	zkmx_unlock(&n->fs->lock);
	lock_enqueue(req, n, kind, (fi->flags & O_NONBLOCK) ? ZKL_NONBLOCK : 0, false);
}

void lockreq_request(fuse_req_t req, struct node *n, enum zkn_kind kind,
		     int flags)
{
	lock_enqueue(req, n, kind, flags, true);
}

/*
 * The fsyncs waiting on @lr's confirmation, all taken (to answer EIO: the
 * lock is lost or given back); with @let_go the round trip out forgets
 * its node (fs/confirm.c then frees it).  Under fs->lock.
 */
static struct lr_wait *confirm_take_locked(struct lockreq *lr, bool let_go)
{
	struct lr_confirm *cf = lr->cf;
	struct lr_wait *all, *w;

	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	if (!cf)
		return NULL;
	all = cf->now;
	cf->now = NULL;
	while ((w = cf->next)) {
		cf->next = w->next;
		w->next = all;
		all = w;
	}
	if (let_go) {
		cf->n = NULL;
		lr->cf = NULL;
	}
	return all;
}

void lockreq_answer_waits(struct zklfs *fs, struct lr_wait *all, bool held, int derr)
{
	while (all) {
		struct lr_wait *next = all->next;

		if (zpend_claim(fs, &all->pend))
			all->answer(fs, all->pend.req, all->size,
				    !held ? EIO : all->data ? derr : 0);
		free(all);
		all = next;
	}
}

void lockreq_drop(struct zklfs *fs, struct node *n)
{
	struct lockreq *lr = n->lr;
	struct lr_wait *fsyncs;
	struct zkl_waiter *w;
	bool forgotten;

	zkmx_lock(&fs->lock);
	if (lr->intr == LI_BUSY || lr->intr == LI_DEFER) {
		/* lock_interrupt() drops it when done */
		if (lr->intr == LI_BUSY)
			lockreq_set_intr_locked(lr, LI_DEFER);
		zkmx_unlock(&fs->lock);
		return;
	}
	w = lr->w;
	lr->w = NULL;
	fsyncs = confirm_take_locked(lr, true);
	if (lr->state != LR_IDLE)
		lockreq_set_state_locked(lr, LR_IDLE);
	if (w) {
		if (lr->lprev)
			lr->lprev->lnext = lr->lnext;
		else if (fs->locks[(unsigned)lr->tid % ZKLFS_TID_BUCKETS] == lr)
			fs->locks[(unsigned)lr->tid % ZKLFS_TID_BUCKETS] = lr->lnext;
		if (lr->lnext)
			lr->lnext->lprev = lr->lprev;
		lr->lnext = lr->lprev = NULL;
		n->pinned = false;
	}
	forgotten = w && n->nlookup == 0;	/* FORGET came while it held w */
	if (forgotten && n->hashed)
		node_unhash_locked(fs, n);
	zkmx_unlock(&fs->lock);
	lockreq_answer_waits(fs, fsyncs, false, 0);
	if (w) {
		zkl_release(w);
		zklfs_xc_changed(fs);	/* its entry goes */
	}
	if (forgotten)
		node_free(n);
}

void lockreq_giveback(struct zklfs *fs, struct node *n)
{
	struct lockreq *lr = n->lr;

	/* from then on a loss of the old entry is not this descriptor's
	 * (lockreq_lost() checks lr->w) */
	lockreq_drop(fs, n);
	zkmx_lock(&fs->lock);
	if (n->path && n->hashed)
		node_unhash_path_locked(fs, n->path);
	free(n->path);
	n->path = NULL;
	lr->revoking = false;
	lr->parted = false;
	lr->seq = 0;
	lr->czxid = 0;
	zkmx_unlock(&fs->lock);
}

/* Under the engine's lock: record that @w's lock is lost (else that its
 * holder is asked to let go), and wake the holder's poller. */
static void holder_event(struct zkl_waiter *w, void *arg, bool lost)
{
	struct node *n = arg;
	struct lockreq *lr = n->lr;
	struct zklfs *fs = n->fs;
	struct fuse_pollhandle *ph, **joined = NULL;
	struct lr_wait *fsyncs = NULL;
	unsigned nj = 0;

	zkmx_lock(&fs->lock);
	if (lr->w != w) {		/* given back, or not yet taken in */
		zkmx_unlock(&fs->lock);
		return;
	}
	/* the pollers of the descriptors JOINED to it are woken too (if
	 * memory allows: else they see it at their next poll) */
	if (lr->njoined)
		joined = calloc(lr->njoined, sizeof(*joined));
	for (struct lockreq *j = lr->joined; joined && j; j = j->jnext)
		if (j->ph) {
			joined[nj++] = j->ph;
			j->ph = NULL;
		}
	if (lost)
		lr->loss = zkl_loss_locked(w);	/* the engine's lock is held */
	if (!lost)
		lr->revoking = true;
	else if (lr->state == LR_HELD)
		lockreq_set_state_locked(lr, LR_LOST);
	else
		lr->lost_early = true;	/* its answer is on its way: lock_answer() */
	if (lost)
		fsyncs = confirm_take_locked(lr, false);
	ph = lr->ph;
	lr->ph = NULL;
	zkmx_unlock(&fs->lock);
	lockreq_answer_waits(fs, fsyncs, false, 0);
	if (ph)
		fs->reply->notify_poll(ph);
	for (unsigned i = 0; i < nj; i++)
		fs->reply->notify_poll(joined[i]);
	free(joined);
}

void lockreq_lost(struct zkl_waiter *w, void *arg)
{
	holder_event(w, arg, true);
}

void lockreq_revoked(struct zkl_waiter *w, void *arg)
{
	holder_event(w, arg, false);
}
