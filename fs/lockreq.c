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
			lr->ino = n->ino;	/* a lock file's record: its file's */
		}
		zkmx_unlock(&fs->lock);
	}
	if (!n)
		lockreq_free(lr);
	return n;
}

void lockreq_free(struct lockreq *lr)
{
	if (lr->ph)		/* a holder still polling when the mount ends */
		lr->node->fs->reply->drop_poll(lr->ph);
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

void lockreq_set_state_locked(struct lockreq *lr, enum lrstate to)
{
	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	zke_check_move(ZKE_MOVES(lr_moves), lr_names, "state", lr->state, to,
		       "lock request '%s' in %s", lr->name, lr->dir);
	lr->state = to;
}

void lockreq_set_intr_locked(struct lockreq *lr, enum lrintr to)
{
	ZKMX_ASSERT_HELD(&lr->node->fs->lock);
	zke_check_move(ZKE_MOVES(li_moves), li_names, "interrupt", lr->intr, to,
		       "lock request '%s' in %s", lr->name, lr->dir);
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
 * Answer the requests that joined a wait (lockreq_join(), taken from the
 * request with its answer) with that wait's answer @err (0: granted).  One
 * whose interrupt is not armed yet is left to lockreq_join(), which answers
 * it once armed.  Without fs->lock.
 */
static void joins_answer(struct zklfs *fs, struct lr_join *all, int err)
{
	struct lr_join *j, *armed = NULL, **tail = &armed;

	zkmx_lock(&fs->lock);
	while ((j = all)) {
		all = j->next;
		j->next = NULL;
		if (j->armed) {
			*tail = j;
			tail = &j->next;
		} else {
			j->answered = true;
			j->result = err;
		}
	}
	zkmx_unlock(&fs->lock);
	while ((j = armed)) {
		armed = j->next;
		fs->reply->err(j->req, -err);
		free(j);
	}
}

/*
 * Answer the request waiting on @n with @err, or with the lock: its OPEN
 * (the holder's descriptor), or with @fdreq a flock/fcntl request on that
 * descriptor (0), and @joins, the requests that joined it (taken with
 * @req).  A refused request leaves @n holding nothing.
 */
static void lock_answer(struct zklfs *fs, struct node *n, fuse_req_t req,
			bool fdreq, int err, struct lr_join *joins)
{
	struct lockreq *lr = n->lr;
	struct fuse_file_info fi;
	struct zkl_info info;
	unsigned moves;
	char *path;

	zklfs_xc_changed(fs);		/* an entry made, or gone */
	if (err) {
		if (err != -EAGAIN && err != -EINTR && err != -ETIMEDOUT)	/* a
							   silence is logged once, when declared */
			zklog(LOG_WARNING, "lock '%s' in %s failed: %s", lr->name,
			      lr->dir, strerror(-err));
		if (err == -ENOENT)	/* the directory is gone: its maker too */
			zklfs_dir_gone(fs, lr->dir);
		lockreq_drop(fs, n);		/* IDLE */
		fs->reply->err(req, -err);
		joins_answer(fs, joins, err);
		return;
	}
	zkmx_lock(&fs->lock);
	moves = lr->doubt_moves;
	zkmx_unlock(&fs->lock);
	zkl_info(lr->w, &info, &path);
	zkmx_lock(&fs->lock);
	lockreq_set_state_locked(lr, LR_HELD);
	if (info.lost || lr->lost_early)	/* lost before it was answered */
		lockreq_set_state_locked(lr, LR_LOST);
	if (info.revoking)		/* asked while it waited */
		lr->revoking = true;
	if (lr->doubt_moves == moves)	/* else the doubted callback's is newer */
		lr->doubt = info.doubt;
	lr->seq = info.seq;
	lr->czxid = info.czxid;
	lr->grants = info.grants;
	lr->limit = info.limit;
	free(n->path);
	n->path = path;
	if (path)
		node_hash_locked(fs, n);
	holder_fi(lr, &fi);
	zkmx_unlock(&fs->lock);
	if (fdreq) {
		fs->reply->err(req, 0);
		joins_answer(fs, joins, 0);
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
	struct lr_join *joins;
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
	joins = lr->joins;		/* with the request: none joins after */
	lr->joins = NULL;
	zkmx_unlock(&fs->lock);
	if (req)
		lock_answer(fs, n, req, fdreq, err, joins);
}

/*
 * @lr's request is armed now (ASKING): WAITING, or the answer that came
 * meanwhile (ANSWERED) given, with the requests joined to it.  Without
 * fs->lock.
 */
static void lock_armed(struct zklfs *fs, struct node *n)
{
	struct lockreq *lr = n->lr;
	struct lr_join *joins = NULL;
	fuse_req_t late = NULL;
	bool fdreq;
	int result = 0;

	zkmx_lock(&fs->lock);
	fdreq = lr->fdreq;
	if (lr->state == LR_ANSWERED) {
		late = lr->req;
		lr->req = NULL;
		joins = lr->joins;
		lr->joins = NULL;
		result = lr->result;
	} else if (lr->state == LR_ASKING) {
		lockreq_set_state_locked(lr, LR_WAITING);
	}
	zkmx_unlock(&fs->lock);
	if (late)
		lock_answer(fs, n, late, fdreq, result, joins);
}

/*
 * FUSE_INTERRUPT of a waiting OPEN or lock request: runs with the request's
 * lock held, which the reply does not take: the answer may come on a
 * ZooKeeper thread at the same time, and its lockreq_drop() would let @w go
 * while we use it.  So that drop waits (lockreq_pin_locked(): LI_BUSY ->
 * LI_DEFER) and is done by lockreq_unpin(), after zkl_cancel().
 *
 * A wait that other requests of the same description joined is theirs too:
 * it is not cancelled, but handed to the first of them whose interrupt is
 * armed (ASKING until this callback is registered on it, so that an answer
 * meanwhile waits: lock_armed()), and only the interrupted request is
 * answered EINTR.  The entry keeps its place in the queue.
 */
static void lock_interrupt(fuse_req_t req, void *arg)
{
	struct node *n = arg;
	struct zklfs *fs = n->fs;
	struct lockreq *lr = n->lr;
	struct lr_join *heir = NULL, **pp;
	struct zkl_waiter *w = NULL;

	zkmx_lock(&fs->lock);
	if (lr->req == req && lr->fdreq &&
	    (lr->state == LR_WAITING || lr->state == LR_ASKING))
		for (pp = &lr->joins; *pp; pp = &(*pp)->next)
			if ((*pp)->armed) {
				heir = *pp;
				*pp = heir->next;
				lr->req = heir->req;
				if (lr->state == LR_WAITING)
					lockreq_set_state_locked(lr, LR_ASKING);
				break;
			}
	if (!heir)
		w = lockreq_pin_locked(lr);
	zkmx_unlock(&fs->lock);
	if (heir) {
		fs->reply->err(req, EINTR);
		fs->reply->on_interrupt(heir->req, lock_interrupt, n);	/* may run now */
		free(heir);
		lock_armed(fs, n);
		return;
	}
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

/* The bucket of fs->locks for process @pid. */
static struct lockreq **pid_bucket(struct zklfs *fs, pid_t pid)
{
	return &fs->locks[(unsigned)pid % ZKLFS_PID_BUCKETS];
}

/*
 * Does @lr's process hold @lr's lock already, through another descriptor?
 * Then it waits behind itself, as a local flock on a second descriptor
 * does: told once per entry it waits behind, never refused (the tasks of
 * one process exclude each other as two hosts do).  Under fs->lock.
 * Return: the seq of that entry, or -1.
 */
static int32_t waits_behind_self_locked(struct zklfs *fs, struct lockreq *lr)
{
	ZKMX_ASSERT_HELD(&fs->lock);
	if (!lr->pid)
		return -1;
	for (struct lockreq *l = *pid_bucket(fs, lr->pid); l; l = l->lnext)
		if (l != lr && l->pid == lr->pid && l->state == LR_HELD &&
		    (l->kind == ZKN_EXCLUSIVE || lr->kind == ZKN_EXCLUSIVE) &&
		    !l->selfwait_told && strcmp(l->dir, lr->dir) == 0) {
			l->selfwait_told = true;
			return l->seq;
		}
	return -1;
}

/*
 * on_loss=end: note where the description @req locks through is found at
 * a loss or an orderly stop (fs/ender.h).  A caller the daemon could not
 * end is refused, unless its holder handles a loss itself: ENOLCK,
 * rather than a lock whose work would run on after its loss.  Return:
 * whether to go on (else @req is answered).  FUSE thread, without
 * fs->lock.
 */
static bool holders_noted(struct zklfs *fs, fuse_req_t req, struct lockreq *lr,
			  const struct zklfs_caller *c)
{
	struct zklfs_holders h = { 0 };
	bool tell;

	if (!fs->conf->on_loss_end)
		return true;
	zkmx_lock(&fs->lock);
	tell = lr->tell;
	zkmx_unlock(&fs->lock);
	if (fs->reply->holders(req, c->pid, c->uid, lr->ino, &h) != 0 && !tell) {
		if (c->pid)
			zklog(LOG_WARNING, "lock '%s' in %s refused (ENOLCK) to process %d of "
			      "uid %u: on_loss=end, and this daemon could not end it at a "
			      "loss", lr->name, lr->dir, (int)c->pid, (unsigned)c->uid);
		else
			zklog(LOG_WARNING, "lock '%s' in %s refused (ENOLCK) to a process "
			      "outside its pid namespace (uid %u): on_loss=end, and this "
			      "daemon could not end it at a loss", lr->name, lr->dir,
			      (unsigned)c->uid);
		fs->reply->err(req, ENOLCK);
		return false;
	}
	zkmx_lock(&fs->lock);
	lr->holders = h;
	zkmx_unlock(&fs->lock);
	return true;
}

/*
 * Enqueue @n's entry of @kind for @req (its OPEN, or with @fdreq a
 * flock/fcntl request) and leave the answer to lock_done().  Whoever asks,
 * a new entry queues: the owner of a lock is the open file description,
 * so nothing here looks at who the caller is but to write it in the
 * entry's data and the log.
 */
static void lock_enqueue(fuse_req_t req, struct node *n, enum zkn_kind kind,
			 int flags, bool fdreq)
{
	struct lockreq *lr = n->lr;
	struct zklfs *fs = n->fs;
	struct zkl_waiter *w = NULL;
	struct zkl_engine *e;
	struct zklfs_caller c = { 0 };
	char data[1024];
	struct lockreq **head;
	int len, err;
	int32_t self;

	fs->reply->caller(req, &c);
	if (!holders_noted(fs, req, lr, &c))
		return;
	len = holder_data(fs, &c, data, sizeof(data));
	if (len >= (int)sizeof(data))
		len = sizeof(data) - 1;
	zkmx_lock(&fs->lock);
	lr->pid = c.pid;
	lr->asked_ms = (int64_t)time(NULL) * 1000;	/* the since= line's clock */
	lr->kind = kind;
	lr->req = req;
	lr->fdreq = fdreq;
	lr->nb = flags & ZKL_NONBLOCK;
	lr->lost_early = false;
	lr->selfwait_told = false;
	lockreq_set_state_locked(lr, LR_ASKING);
	zkmx_unlock(&fs->lock);
	/* lr->uid: the opener's, whoever asks for a conversion on its fd;
	 * the lock stays on the engine picked until its waiter holds it */
	e = zklfs_engine_hold(fs, lr->dir);
	err = zkl_enqueue(e, lr->dir, lr->name, kind, flags, data, len, lr->uid,
			  lock_done, n, &w);
	zklfs_engine_unhold(fs, lr->dir, e);
	if (err) {
		zkmx_lock(&fs->lock);
		lr->req = NULL;
		lockreq_set_state_locked(lr, LR_IDLE);
		zkmx_unlock(&fs->lock);
		if (err != -ETIMEDOUT)	/* a try while ZooKeeper is silent */
			zklog(LOG_WARNING, "lock '%s' in %s: %s", lr->name, lr->dir,
			      strerror(-err));
		fs->reply->err(req, -err);
		return;
	}
	zkmx_lock(&fs->lock);
	lr->w = w;
	n->pinned = true;		/* until lockreq_drop() */
	head = pid_bucket(fs, lr->pid);
	lr->lnext = *head;
	lr->lprev = NULL;
	if (*head)
		(*head)->lprev = lr;
	*head = lr;
	self = lr->state == LR_ASKING && !(flags & ZKL_NONBLOCK) ?
	       waits_behind_self_locked(fs, lr) : -1;
	zkmx_unlock(&fs->lock);
	if (self >= 0)
		zklog(LOG_NOTICE, "process %d waits for %s behind its own entry %010d, "
		      "held through another descriptor: it waits until that one is closed, "
		      "as with a local flock on a second descriptor", (int)c.pid, lr->dir,
		      (int)self);
	fs->reply->on_interrupt(req, lock_interrupt, n);	/* last: may run now */
	lock_armed(fs, n);
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

void lockreq_answer_waits(struct zklfs *fs, struct lr_wait *all, bool held)
{
	while (all) {
		struct lr_wait *next = all->next;

		if (zpend_claim(fs, &all->pend))
			all->answer(fs, all->pend.req, all->size, held ? all->err : EIO);
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
		else if (*pid_bucket(fs, lr->pid) == lr)
			*pid_bucket(fs, lr->pid) = lr->lnext;
		if (lr->lnext)
			lr->lnext->lprev = lr->lprev;
		lr->lnext = lr->lprev = NULL;
		n->pinned = false;
	}
	forgotten = w && n->nlookup == 0;	/* FORGET came while it held w */
	if (forgotten && n->hashed)
		node_unhash_locked(fs, n);
	zkmx_unlock(&fs->lock);
	lockreq_answer_waits(fs, fsyncs, false);
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
	lr->doubt = false;
	lr->doubt_polled = lr->doubt_moves;	/* the next hold starts afresh */
	lr->seq = 0;
	lr->czxid = 0;
	zkmx_unlock(&fs->lock);
}

void lockreq_close(struct zklfs *fs, struct node *n)
{
	struct fuse_pollhandle *ph;

	zkmx_lock(&fs->lock);
	ph = n->lr->ph;
	n->lr->ph = NULL;
	zkmx_unlock(&fs->lock);
	if (ph)
		fs->reply->drop_poll(ph);
}

size_t lockreq_ends_held(struct zklfs *fs, struct zklfs_held **out)
{
	size_t n = 0, cap = 0;
	struct zklfs_held *all = NULL, *more;

	*out = NULL;
	if (!fs->conf->on_loss_end)
		return 0;
	zkmx_lock(&fs->lock);
	for (int b = 0; b < ZKLFS_PID_BUCKETS; b++)
		for (struct lockreq *lr = fs->locks[b]; lr; lr = lr->lnext) {
			if (lr->state != LR_HELD)
				continue;
			if (n == cap) {
				more = realloc(all, (cap = cap ? 2 * cap : 16) * sizeof(*all));
				if (!more) {
					zkmx_unlock(&fs->lock);
					free(all);
					return 0;
				}
				all = more;
			}
			all[n].h = lr->holders;
			snprintf(all[n].what, sizeof(all[n].what), "%s",
				 lr->node->path ? lr->node->path : lr->dir);
			n++;
		}
	zkmx_unlock(&fs->lock);
	*out = all;
	return n;
}

void lockreq_tell(struct zklfs *fs, struct node *n)
{
	zkmx_lock(&fs->lock);
	n->lr->tell = true;
	zkmx_unlock(&fs->lock);
}

/*
 * FUSE_INTERRUPT of a request that joined another's wait: answered EINTR
 * alone if it is still joined (else its answer is on its way).  Found by
 * its address among the waits of the mount (a wait with joins holds a
 * waiter, so it is in fs->locks): libfuse keeps @req alive while this
 * runs.  One not armed yet is only marked: lockreq_join() answers it.
 */
static void join_interrupt(fuse_req_t req, void *arg)
{
	struct zklfs *fs = arg;
	struct lr_join *found = NULL;

	zkmx_lock(&fs->lock);
	for (unsigned i = 0; i < ZKLFS_PID_BUCKETS && !found; i++)
		for (struct lockreq *l = fs->locks[i]; l && !found; l = l->lnext)
			for (struct lr_join **pp = &l->joins; *pp; pp = &(*pp)->next)
				if ((*pp)->req == req) {
					found = *pp;
					if (!found->armed) {
						found->interrupted = true;
						found = NULL;
						goto out;
					}
					*pp = found->next;
					break;
				}
out:
	zkmx_unlock(&fs->lock);
	if (!found)
		return;
	fs->reply->err(req, EINTR);
	free(found);
}

enum lr_joined lockreq_join(fuse_req_t req, struct node *n, enum zkn_kind kind)
{
	struct zklfs *fs = n->fs;
	struct lockreq *lr = n->lr;
	struct lr_join *j = calloc(1, sizeof(*j)), **pp;
	enum lr_joined r = LR_JOIN_GONE;
	int err = 0;
	bool done = false;

	if (!j)
		return LR_JOIN_UNFIT;
	j->req = req;
	zkmx_lock(&fs->lock);
	if (lr->req && lr->fdreq && lr->state == LR_WAITING) {
		r = lr->nb || (lr->kind != ZKN_EXCLUSIVE && kind != lr->kind) ?
		    LR_JOIN_UNFIT : LR_JOINED;
	}
	if (r == LR_JOINED) {		/* at the tail: the first to join is the heir */
		for (pp = &lr->joins; *pp; pp = &(*pp)->next)
			;
		*pp = j;
	}
	zkmx_unlock(&fs->lock);
	if (r != LR_JOINED) {
		free(j);
		return r;
	}
	fs->reply->on_interrupt(req, join_interrupt, fs);	/* may run now */
	zkmx_lock(&fs->lock);
	j->armed = true;
	if (j->answered) {		/* taken with the wait's answer meanwhile */
		err = j->result;
		done = true;
	} else if (j->interrupted) {	/* still joined: it leaves */
		for (pp = &lr->joins; *pp && *pp != j; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = j->next;
		err = -EINTR;
		done = true;
	}
	zkmx_unlock(&fs->lock);
	if (done) {
		fs->reply->err(req, -err);
		free(j);
	}
	return LR_JOINED;
}

enum holder_news { NEWS_LOST, NEWS_REVOKED, NEWS_DOUBT };

/* Under the engine's lock: record that @w's lock is lost (or that its
 * holder is asked to let go, or entered doubt or left it), and wake the
 * holder's poller. */
static void holder_event(struct zkl_waiter *w, void *arg, enum holder_news news)
{
	struct node *n = arg;
	struct lockreq *lr = n->lr;
	struct zklfs *fs = n->fs;
	struct fuse_pollhandle *ph;
	struct lr_wait *fsyncs = NULL;
	struct zklfs_holders h;
	char what[512];
	const char *why = NULL;
	bool end, lost = news == NEWS_LOST;

	zkmx_lock(&fs->lock);
	if (lr->w != w) {		/* given back, or not yet taken in */
		zkmx_unlock(&fs->lock);
		return;
	}
	if (news == NEWS_DOUBT) {	/* the engine's lock is held */
		lr->doubt = zkl_doubt_locked(w);
		lr->doubt_moves++;
	} else if (!lost)
		lr->revoking = true;
	else
		lr->loss = zkl_loss_locked(w);
	if (!lost)
		;
	else if (lr->state == LR_HELD)
		lockreq_set_state_locked(lr, LR_LOST);
	else
		lr->lost_early = true;	/* its answer is on its way: lock_answer() */
	if (lost)
		fsyncs = confirm_take_locked(lr, false);
	end = lost && fs->conf->on_loss_end && !lr->tell;
	if (end) {
		h = lr->holders;
		why = zkm_loss_name(lr->loss);
		snprintf(what, sizeof(what), "%s", n->path ? n->path : lr->dir);
	}
	ph = lr->ph;
	lr->ph = NULL;
	zkmx_unlock(&fs->lock);
	if (end)		/* only queued: the ender's thread does it */
		fs->reply->end(&h, what, why);
	lockreq_answer_waits(fs, fsyncs, false);
	if (ph)
		fs->reply->notify_poll(ph);
}

void lockreq_lost(struct zkl_waiter *w, void *arg)
{
	holder_event(w, arg, NEWS_LOST);
}

void lockreq_revoked(struct zkl_waiter *w, void *arg)
{
	holder_event(w, arg, NEWS_REVOKED);
}

void lockreq_doubted(struct zkl_waiter *w, void *arg)
{
	holder_event(w, arg, NEWS_DOUBT);
}
