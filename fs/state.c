/* fs/state.c - writes of a lock znode's data that ZooKeeper fences: the
 * holder's .state, zklock --once-per's runs (state.h). */
#include "fs/state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/zklockfs.h"
#include "fs/lockreq.h"
#include "fs/pending.h"
#include "fs/pool.h"
#include "fs/xcache.h"
#include "zk/errno.h"
#include "zk/log.h"
#include "zk/statedata.h"

/* A write whose lock's data changed between our read and our multi is read
 * again, this many times at most: then EAGAIN (a limit set in a loop). */
#define STATE_TRIES 16

/* What a fenced write does with the lock's data. */
enum step {
	SET_STATE,		/* its state line becomes s->state */
	RUN_PROBE,		/* a run line "0 - LABEL": the ensemble stamps
				   its time, the previous run is read */
	RUN_RECORD,		/* the run line "STAMP - LABEL": ours counts */
	RUN_RESTORE,		/* the previous run line back: a skip */
	RUN_EXIT,		/* our run line gets its exit status */
};

/* One write in flight: its request, and what the multi needs. */
struct setop {
	struct zpend pend;
	struct zklfs *fs;
	struct zks *zks;		/* the entry's session */
	struct node *ln;		/* the holder's node: alive while the
					   ioctl waits (its file is open) */
	char *dir, *entry;		/* the lock's znode, the holder's entry */
	enum step step;
	bool unsure;			/* a multi's outcome was unknown */
	bool verify;			/* reading whether that one was applied */
	char *state;			/* SET_STATE */
	size_t len;
	uint64_t period_ms;		/* RUN_* */
	struct zksd_run run;		/* ours (RUN_EXIT: its start and exit) */
	struct zksd_run prev;		/* RUN_*: what the probe replaced */
	bool had_prev;
	int tries;
	char *data;			/* the lock's data, edited */
	zoo_op_t ops[2];
	zoo_op_result_t results[2];
	struct Stat stat;		/* of the lock, after our set */
};

static void setop_free(struct setop *s)
{
	free(s->dir);
	free(s->entry);
	free(s->state);
	free(s->data);
	free(s);
}

/* Answer @s's ioctl with @err (0: done; a run's answer then), unless a
 * signal or the deadline did; let it go. */
static void finish(struct setop *s, int err)
{
	struct zklfs_ioc_run out;

	zklfs_xc_changed(s->fs);	/* the lock's data, changed or not */
	if (zpend_claim(s->fs, &s->pend)) {
		if (err) {
			fuse_reply_err(s->pend.req, err);
		} else if (s->step == SET_STATE || s->step == RUN_EXIT) {
			fuse_reply_ioctl(s->pend.req, 0, NULL, 0);
		} else {
			const struct zksd_run *r = s->step == RUN_RECORD ? &s->run : &s->prev;

			memset(&out, 0, sizeof(out));
			out.ran = s->step == RUN_RECORD;
			out.start_ms = r->start_ms;
			memcpy(out.label, r->label, sizeof(out.label));
			out.label[sizeof(out.label) - 1] = '\0';
			fuse_reply_ioctl(s->pend.req, 0, &out, sizeof(out));
		}
	}
	setop_free(s);
}

static void read_lock(struct setop *s);

static void again(void *arg, bool go)
{
	struct setop *s = arg;

	if (!go)
		finish(s, ESHUTDOWN);
	else if (zpend_answered(s->fs, &s->pend))
		finish(s, 0);		/* nobody waits: nothing more is sent */
	else
		read_lock(s);
}

/*
 * May the multi go out?  Only while the ioctl still waits (a set its
 * caller was told failed must not land later) and the node still has the
 * entry it checks, held or lost: a lingering entry given back and granted
 * again to another holder would pass the check on the server.
 */
static bool still_ours(struct setop *s)
{
	struct lockreq *lr;
	bool ours;

	if (zpend_answered(s->fs, &s->pend))
		return false;
	zkmx_lock(&s->fs->lock);
	lr = s->ln->lr;
	/* lost too: the server says so, whatever the mount heard */
	ours = lr && lockreq_granted(lr) && s->ln->path && strcmp(s->ln->path, s->entry) == 0;
	zkmx_unlock(&s->fs->lock);
	return ours;
}

/* Whatever failed for a moment: the step again once the session is back,
 * or now (@later false). */
static void retry(struct setop *s, bool later)
{
	if (zpend_answered(s->fs, &s->pend)) {	/* nobody waits for it */
		finish(s, 0);
		return;
	}
	if (!later)
		read_lock(s);
	else if (zklfs_zlater(s->fs, s->zks, again, s) != 0)
		finish(s, ESHUTDOWN);
}

/* The probe's stamp is in: record ours, or put the previous run back. */
static void decide(struct setop *s)
{
	int64_t now = s->stat.mtime;

	s->tries = 0;
	if (s->had_prev && s->prev.start_ms > 0 &&
	    now - s->prev.start_ms < (int64_t)s->period_ms) {
		s->step = RUN_RESTORE;		/* a run this period counts */
	} else {
		s->step = RUN_RECORD;
		s->run.start_ms = now;
	}
	read_lock(s);
}

static void multi_done(int rc, const void *data)
{
	struct setop *s = (struct setop *)data;

	if (rc == ZOK && s->step == RUN_PROBE) {
		decide(s);
	} else if (rc == ZOK) {
		finish(s, 0);
	} else if ((s->results[0].err == ZNONODE || rc == ZSESSIONEXPIRED) &&
		   s->unsure && s->step == SET_STATE) {
		s->verify = true;	/* did the one whose answer was lost land? */
		read_lock(s);
	} else if (s->results[0].err == ZNONODE || rc == ZSESSIONEXPIRED) {
		/* the holder's entry is gone: the server changed nothing */
		zklog(LOG_NOTICE, "%s of %s not set: its holder's entry is gone",
		      s->step == SET_STATE ? "state" : "run", s->dir);
		finish(s, EIO);
	} else if (s->results[1].err == ZBADVERSION && ++s->tries < STATE_TRIES) {
		retry(s, false);	/* the lock's data changed: read it again */
	} else if (zk_rc_transient(rc)) {
		s->unsure = true;	/* it may have been applied */
		retry(s, true);
	} else {
		finish(s, s->results[1].err == ZNONODE ? EIO : rc == ZBADVERSION ? EAGAIN :
			  -zk_errno(rc));
	}
}

/* @value (@len bytes) as this step makes it, into s->data (@cap bytes).
 * Return: its length, or a negative errno. */
static ssize_t compose(struct setop *s, const char *value, size_t len, size_t cap)
{
	struct zksd_run now;

	switch (s->step) {
	case SET_STATE:
		return zksd_edit(value, len, s->state, s->len, s->data, cap);
	case RUN_PROBE:		/* what it replaces is the previous run */
		s->had_prev = zksd_run_read(value, len, &s->prev);
		s->run.start_ms = 0;
		return zksd_run_edit(value, len, &s->run, s->data, cap);
	case RUN_RECORD:
		return zksd_run_edit(value, len, &s->run, s->data, cap);
	case RUN_RESTORE:
		return zksd_run_edit(value, len, s->had_prev ? &s->prev : NULL, s->data, cap);
	case RUN_EXIT:		/* only while the line is still ours */
		if (!zksd_run_read(value, len, &now) || now.start_ms != s->run.start_ms ||
		    strcmp(now.label, s->run.label) != 0)
			return -ESTALE;
		return zksd_run_edit(value, len, &s->run, s->data, cap);
	}
	return -EINVAL;
}

static void data_done(int rc, const char *value, int len, const struct Stat *st,
		      const void *data)
{
	struct setop *s = (struct setop *)data;
	const struct zkt_transport *t = zklfs_transport(s->fs, s->zks);
	size_t cap = zklfs_data_max(s->fs, s->dir);
	ssize_t n;

	if (zk_rc_transient(rc)) {
		retry(s, true);
		return;
	}
	if (rc != ZOK) {		/* the lock is gone, its entries with it */
		finish(s, rc == ZNONODE ? EIO : -zk_errno(rc));
		return;
	}
	if (s->verify) {		/* applied before the entry went, or not */
		char *now = malloc(s->len + 1);
		ssize_t k = now ? zksd_read(value, len > 0 ? (size_t)len : 0, now, s->len + 1) : -1;

		finish(s, k == (ssize_t)s->len && memcmp(now, s->state, s->len) == 0 ? 0 : EIO);
		free(now);
		return;
	}
	if (!still_ours(s)) {
		finish(s, zpend_answered(s->fs, &s->pend) ? 0 : EIO);
		return;
	}
	free(s->data);
	s->data = malloc(cap);
	if (!s->data) {
		finish(s, ENOMEM);
		return;
	}
	n = compose(s, value, len > 0 ? (size_t)len : 0, cap);
	if (n == -ESTALE) {		/* another run is recorded since: keep it */
		finish(s, 0);
		return;
	}
	if (n < 0) {
		finish(s, n == -E2BIG ? EFBIG : (int)-n);
		return;
	}
	zoo_check_op_init(&s->ops[0], s->entry, -1);
	zoo_set_op_init(&s->ops[1], s->dir, s->data, (int)n, st->version, &s->stat);
	memset(s->results, 0, sizeof(s->results));
	rc = t->ops->multi(t->ctx, 2, s->ops, s->results, multi_done, s);
	if (rc != ZOK)
		multi_done(rc, s);
}

static void read_lock(struct setop *s)
{
	int rc = zklfs_zget(s->fs, s->zks, s->dir, data_done, s);

	if (rc != ZOK)
		data_done(rc, NULL, 0, NULL, s);
}

/* A write of the lock held through @ln, by its exclusive holder, for @req:
 * NULL when refused (answered). */
static struct setop *start(fuse_req_t req, struct zklfs *fs, struct node *ln)
{
	struct zkl_info own;
	struct setop *s;
	int err = 0;

	if (!ln || !lockreq_own_state(fs, ln, &own)) {
		fuse_reply_err(req, EACCES);	/* holds nothing: a reader, a waiter */
		return NULL;
	}
	if (own.lost) {
		fuse_reply_err(req, EIO);
		return NULL;
	}
	if (own.kind != ZKN_EXCLUSIVE || own.limit) {
		fuse_reply_err(req, EACCES);	/* one of several holders */
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	s->fs = fs;
	s->ln = ln;
	zkmx_lock(&fs->lock);
	if (!ln->lr || !ln->path)
		err = EACCES;		/* given back meanwhile */
	else if (!(s->dir = strdup(ln->lr->dir)) || !(s->entry = strdup(ln->path)))
		err = ENOMEM;
	zkmx_unlock(&fs->lock);
	if (err) {
		fuse_reply_err(req, err);
		setop_free(s);
		return NULL;
	}
	s->zks = zklfs_session(fs, s->dir);
	return s;
}

void zklfs_state_set(fuse_req_t req, struct zklfs *fs, struct node *ln,
		     const char *state, size_t len)
{
	struct setop *s = start(req, fs, ln);

	if (!s)
		return;
	s->step = SET_STATE;
	s->len = len;
	s->state = malloc(len ? len : 1);
	if (!s->state) {
		fuse_reply_err(req, ENOMEM);
		setop_free(s);
		return;
	}
	memcpy(s->state, state, len);
	zpend_start(fs, &s->pend, req);
	read_lock(s);
}

void zklfs_state_run(fuse_req_t req, struct zklfs *fs, struct node *ln,
		     const struct zklfs_ioc_run *in)
{
	struct setop *s;

	if (!memchr(in->label, '\0', sizeof(in->label)) || (!in->period_ms &&
	    (in->start_ms <= 0 || in->exit_status < 0 || in->exit_status > 255))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	s = start(req, fs, ln);
	if (!s)
		return;
	snprintf(s->run.label, sizeof(s->run.label), "%s", in->label);
	s->period_ms = in->period_ms;
	if (in->period_ms) {
		s->step = RUN_PROBE;
	} else {
		s->step = RUN_EXIT;
		s->run.start_ms = in->start_ms;
		s->run.exited = true;
		s->run.exit_status = in->exit_status;
	}
	zpend_start(fs, &s->pend, req);
	read_lock(s);
}
