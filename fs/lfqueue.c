/*
 * fs/lfqueue.c - user.zklockfs.queue of a lock: its queue as text, for
 * `zklock --list` of a lock file, whose entries have no file to read.
 *
 * One line per queue entry, in queue order, six fields separated by tabs:
 *
 *	NAME  STATE  KIND  CTIME_MS  HOST  PID
 *
 * STATE is held or waiting (as user.zklockfs.state), KIND exclusive or
 * shared, CTIME_MS the entry's creation (ms since the epoch), HOST and PID
 * the host= and pid= lines of its data ("-" if absent).  The data is
 * anyone's writing: HOST and PID are escaped as the log escapes (zk/escape.h:
 * no tab, newline or control byte survives), and are information, never
 * authority.  An entry gone between the listing and its read is left out.
 * One listing, one read of the lock's limit and one read per entry: what
 * `zklock --list` of a lock directory costs too, once per command: the
 * text is kept for the process that asked (fs/xcache.h), so a getxattr's
 * second call (the value, after its size) and the rest of its command
 * read no more; a queue longer than
 * LF_QUEUE_MAX entries (more than the 64 KiB an xattr value may take) is
 * E2BIG, after the listing alone.
 *
 * Completions on the ZooKeeper thread; a queue being built is its own
 * (its count under q->mu).
 */
#include "fs/lockfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/xcache.h"
#include "fs/zop.h"
#include "zk/escape.h"
#include "zk/grant.h"
#include "zk/settings.h"
#include "zk/log.h"

#define LF_QUEUE_MAX 1000

struct qent {
	struct qbuild *q;
	char host[256 * 4 + 1], pid[16 * 4 + 1];
	int64_t ctime;
	bool found;
};

struct qbuild {
	struct zop *op;
	struct String_vector sv;	/* the children, kept until the answer */
	struct zkg_child *kids;
	size_t n;
	unsigned limit;
	struct qent *e;			/* one per kid */
	size_t waiting;			/* q->mu */
	struct zkmx mu;
};

static void q_free(struct qbuild *q)
{
	free(q->kids);
	free(q->e);
	deallocate_String_vector(&q->sv);
	zkmx_destroy(&q->mu);
	free(q);
}

/* Every entry read: the text, in queue order; the answer; free @q. */
static void q_answer(struct qbuild *q)
{
	struct zop *op = q->op;
	char *val = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&val, &len);

	for (size_t k = 0; f && k < q->n; k++) {
		size_t i = 0;
		const struct zkg_child *c;

		/* queue order: the next lowest of those left (n is small) */
		for (size_t j = 0; j < q->n; j++)
			if (q->e[j].found && (!q->e[i].found ||
					      zkn_seq_cmp(q->kids[j].seq, q->kids[i].seq) < 0))
				i = j;
		if (!q->e[i].found)
			break;
		c = &q->kids[i];
		fprintf(f, "%s\t%s\t%s\t%lld\t%s\t%s\n", c->name,
			(q->limit ? zkg_decide_limit(q->kids, q->n, c->seq, q->limit)
				  : zkg_decide(q->kids, q->n, c->seq, c->kind, NULL)) ==
			ZKG_GRANTED ? "held" : "waiting",
			c->kind == ZKN_SHARED ? "shared" : "exclusive",
			(long long)q->e[i].ctime, q->e[i].host, q->e[i].pid);
		q->e[i].found = false;
	}
	if (!f || fclose(f) != 0) {
		zop_reply_err(op, ENOMEM);
	} else {
		zklfs_xc_put_queue(op->fs, zop_pid(op), op->path, val, len);
		zop_reply_value(op, val, len);
	}
	free(val);
	zop_free(op);
	q_free(q);
}

/* One fewer read out; the last one answers. */
static void q_done_one(struct qbuild *q)
{
	bool last;

	zkmx_lock(&q->mu);
	last = --q->waiting == 0;
	zkmx_unlock(&q->mu);
	if (last)
		q_answer(q);
}

static void q_entry_done(int rc, const char *value, int len, const struct Stat *zs,
			 const void *data)
{
	struct qent *e = (struct qent *)data;

	if (rc == ZOK) {		/* else gone meanwhile, or unknown: left out */
		e->found = true;
		e->ctime = zs->ctime;
		zkset_data_field(value, len > 0 ? (size_t)len : 0, "host=", e->host, sizeof(e->host));
		zkset_data_field(value, len > 0 ? (size_t)len : 0, "pid=", e->pid, sizeof(e->pid));
	}
	q_done_one(e->q);
}

static void q_children_done(int rc, const struct String_vector *sv,
			    const struct Stat *dir, const void *data)
{
	struct qbuild *q = (struct qbuild *)data;
	struct zop *op = q->op;
	struct String_vector *copy = &q->sv;

	(void)dir;
	if (rc != ZOK) {
		q_free(q);
		zop_fail(op, rc);
		return;
	}
	/* the names outlive this callback: a copy of the listing */
	copy->count = 0;
	copy->data = calloc((size_t)sv->count + 1, sizeof(char *));
	for (int i = 0; copy->data && i < sv->count; i++) {
		copy->data[i] = strdup(sv->data[i]);
		if (!copy->data[i])
			break;
		copy->count++;
	}
	q->kids = copy->count == sv->count ? zkg_parse_children(copy->data, copy->count, &q->n)
					   : NULL;
	if (q->kids && q->n > LF_QUEUE_MAX) {	/* past what an xattr can hold */
		zklog(LOG_NOTICE, "queue of %zu entries refused: at most %d are listed",
		      q->n, LF_QUEUE_MAX);
		zop_reply_err(op, E2BIG);
		zop_free(op);
		q_free(q);
		return;
	}
	q->e = q->kids ? calloc(q->n + 1, sizeof(*q->e)) : NULL;
	if (!q->e) {
		zop_reply_err(op, ENOMEM);
		zop_free(op);
		q_free(q);
		return;
	}
	q->waiting = 1;
	for (size_t i = 0; i < q->n; i++) {
		char *path = zkn_join(op->path, q->kids[i].name);

		q->e[i].q = q;
		zkmx_lock(&q->mu);
		q->waiting++;
		zkmx_unlock(&q->mu);
		if (!path || zklfs_zget(op->fs, op->zks, path, q_entry_done, &q->e[i]) != ZOK)
			q_done_one(q);
		free(path);
	}
	q_done_one(q);
}

static void q_limit_done(int rc, const char *value, int len, const struct Stat *zs,
			 const void *data)
{
	struct qbuild *q = (struct qbuild *)data;
	struct zop *op = q->op;

	(void)zs;
	if (rc == ZOK) {
		q->limit = zkset_parse(value, len > 0 ? (size_t)len : 0);
		rc = zklfs_zchildren(op->fs, op->zks, op->path, q_children_done, q);
	}
	if (rc != ZOK) {
		q_free(q);
		zop_fail(op, rc);
	}
}

void lf_queue_xattr(fuse_req_t req, struct node *n, size_t size)
{
	struct zop *op = zop_new(req, n, zklfs_node_path(n->fs, n));
	struct qbuild *q;
	char *text;
	size_t len;
	int rc;

	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->size = size;
	if (zklfs_xc_queue(n->fs, zop_pid(op), op->path, &text, &len)) {
		zop_reply_value(op, text, len);	/* this process asked a moment ago */
		free(text);
		zop_free(op);
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		zop_reply_err(op, ENOMEM);
		zop_free(op);
		return;
	}
	zkmx_init(&q->mu, ZKMX_RANK_DIRLIST, "lfqueue->mu");
	q->op = op;
	op->zks = zklfs_session(n->fs, op->path);
	rc = zklfs_zget(n->fs, op->zks, op->path, q_limit_done, q);
	if (rc != ZOK) {
		q_free(q);
		zop_fail(op, rc);
	}
}
