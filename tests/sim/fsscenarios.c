/*
 * tests/sim/fsscenarios.c - scripted scenarios of the FUSE side: lock
 * requests through fs/ (simfs.h) in the orders that two threads of the
 * daemon can give them, and what each script expects of its race.  Each
 * one fails when the behaviour it names is broken on purpose (README.md).
 */
#include "tests/sim/script.h"
#include "tests/sim/simfs.h"

#include "fs/lockreq.h"

#include <errno.h>
#include <string.h>

/* The ZooKeeper thread runs until nothing moves: every mount settles. */
static void zk_thread_quiesces(struct world *wd)
{
	quiesce(wd);
}

/* An exclusive OPEN on m0 in d0, through fs/, behind the holder @h. */
static int fs_waiter_behind(struct world *wd, int h)
{
	int x;

	quiesce(wd);
	x = simfs_open(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	did(wd, true);
	quiesce(wd);
	expect(wd, granted(wd, h) && waits(wd, x), "w%d holds, w%d waits behind it", h, x);
	return x;
}

/*
 * FUSE_INTERRUPT of a waiting OPEN, whose caller dies of the signal,
 * while its grant comes on the ZooKeeper thread: the interrupt handler
 * has taken the waiter (LI_BUSY) and is about to cancel it when the grant
 * is answered, the reply finds nobody (-ENOENT), and lock_answer() lets
 * the entry go.  That give-back must wait for the handler (LI_DEFER):
 * done at once, it frees the waiter zkl_cancel() is about to use.  And
 * the entry goes: nobody is left holding it.
 */
void interrupt_races_the_grant(struct world *wd)
{
	int h, x;

	h = enqueue(wd, 1, 0, ZKN_EXCLUSIVE, 0);
	x = fs_waiter_behind(wd, h);
	release(wd, h);
	wd->preempt_rank = ZKMX_RANK_ENGINE;	/* zkl_cancel() takes its lock */
	wd->preempt_run = zk_thread_quiesces;
	simfs_interrupt(wd, &wd->driven[x], true);
	did(wd, true);
	expect(wd, !wd->preempt_run, "the interrupt reached zkl_cancel()");
	expect(wd, granted(wd, x) && wd->driven[x].released,
	       "w%d was granted while its interrupt ran, and given back", x);
	expect(wd, wd->fds[wd->driven[x].fd].n->lr->w == NULL,
	       "w%d's node holds no waiter once the interrupt is done", x);
	quiesce(wd);
}

/*
 * A cohort hand-off on the FUSE thread: the RELEASE of a holder grants the
 * next waiter of its mount inside zkl_release(), and that waiter's entry
 * was deleted by another client meanwhile.  The ZooKeeper thread runs
 * while the grant is being answered, after lock_answer() read the
 * waiter's state from the engine (not lost) and before it takes fs->lock
 * to record the grant: the delete that checks the grant fails and the
 * engine reports the loss then.  The descriptor must say lost (EIO,
 * POLLERR) from its first answer on (lockreq.lost_early), never hold a
 * lock nobody has.
 */
void lost_before_its_answer(struct world *wd)
{
	int h, x;

	h = simfs_open(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	x = fs_waiter_behind(wd, h);
	unlink_entry(wd, x);
	quiesce(wd);
	/* fs->lock: the RELEASE's poller, its drop, lock_done(), then
	 * lock_answer() records the grant */
	wd->preempt_rank = ZKMX_RANK_FS;
	wd->preempt_skip = 3;
	wd->preempt_run = zk_thread_quiesces;
	simfs_release(wd, &wd->driven[h]);
	did(wd, true);
	expect(wd, !wd->preempt_run, "the grant was answered on the FUSE thread");
	expect(wd, wd->driven[x].lost_early, "w%d was lost before its answer", x);
	expect(wd, granted(wd, x) && !simfs_believes(wd, &wd->driven[x]),
	       "w%d's OPEN holds the lock, and its descriptor says it is lost", x);
	quiesce(wd);
}

/*
 * The owner of a lock is the descriptor: a second open of the lock on the
 * same mount, whoever makes it, queues behind the first (no entry is
 * shared, nothing is granted at once), and is granted, through a cohort
 * hand-off, only once the first descriptor closes.
 */
void second_open_queues(struct world *wd)
{
	int h, a;

	h = simfs_open(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	did(wd, true);
	quiesce(wd);
	a = simfs_open(wd, 0, 0, ZKN_SHARED, 0);
	did(wd, true);
	quiesce(wd);
	expect(wd, granted(wd, h) && waits(wd, a),
	       "w%d, a second open of w%d's lock on its mount, waits", a, h);
	simfs_close(wd, wd->driven[h].fd, &wd->driven[h]);
	did(wd, true);
	quiesce(wd);
	expect(wd, wd->driven[h].released && granted(wd, a),
	       "w%d holds once w%d's descriptor closed", a, h);
}

/*
 * Lock files: the kernel does no unlock-on-close for locks a filesystem
 * keeps, and each close() sends a FLUSH naming the closing process.  A
 * POSIX owner's lock goes at its FLUSH, though the description stays open
 * (a child still has it): the waiter behind it is granted.  A lock of the
 * description (flock(2)) stays through the FLUSH of a process that shares
 * it, and goes at the description's RELEASE.
 */
void lockfile_close_of_a_copy(struct world *wd)
{
	int p, x, y, q;

	p = simfs_open_lockfile(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	wd->fds[wd->driven[p].fd].posix = true;
	q = simfs_open_lockfile(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	wd->fds[wd->driven[q].fd].posix = false;
	quiesce(wd);
	x = enqueue(wd, 1, 0, ZKN_EXCLUSIVE, 0);
	y = enqueue(wd, 1, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, p) && granted(wd, q) && waits(wd, x) && waits(wd, y),
	       "w%d and w%d hold their lock files; w%d and w%d wait", p, q, x, y);
	simfs_flush(wd, wd->driven[p].fd);
	simfs_flush(wd, wd->driven[q].fd);
	did(wd, true);
	quiesce(wd);
	expect(wd, wd->driven[p].released && granted(wd, x),
	       "the POSIX owner's close gave w%d back: w%d holds", p, x);
	expect(wd, !wd->driven[q].released && waits(wd, y),
	       "the description's lock w%d stays through a copy's close", q);
	simfs_release(wd, &wd->driven[q]);
	did(wd, true);
	quiesce(wd);
	expect(wd, granted(wd, y), "w%d holds once the description is released", y);
}

/*
 * Does the server hold @data at @path (another client's read of it now)?
 */
static bool reads(struct world *wd, const char *path, const char *data)
{
	const struct szk_node *n = szk_find(&wd->net.zk, path);

	return n && n->len == (int)strlen(data) && memcmp(n->data, data, strlen(data)) == 0;
}

/*
 * The server applies mount @m's requests one at a time until none is
 * left; just before it applies a delete of @path, another client reads
 * @path and must find @data.  Return: whether such a delete came.
 */
static bool apply_until_deleted(struct world *wd, int m, const char *path, const char *data)
{
	const char *op, *at;
	bool deleted = false;

	while (!wd->fail[0] && (op = sn_next_request(M(wd, m), &at))) {
		if (strcmp(at, path) == 0 && (strcmp(op, "delete") == 0 || strcmp(op, "multi") == 0)) {
			expect(wd, reads(wd, path, data), "a read of %s just before its delete "
			       "finds \"%s\", the holder's last write", path, data);
			deleted = true;
		}
		did(wd, sn_apply(M(wd, m)));
	}
	return deleted;
}

/*
 * An exclusive OPEN on m0 in d0 that holds at once: its descriptor, and
 * its entry in @path.
 */
static int fs_holder(struct world *wd, char path[64])
{
	int h = simfs_open(wd, 0, 0, ZKN_EXCLUSIVE, 0);

	did(wd, true);
	quiesce(wd);
	expect(wd, granted(wd, h), "w%d holds", h);
	snprintf(path, 64, "%s", wd->driven[h].path);
	return wd->driven[h].fd;
}

/* @fd writes @data, from offset 0. */
static void write_all(struct world *wd, int fd, const char *data)
{
	expect(wd, simfs_write(wd, fd, 0, data, strlen(data)) == 0, "fd%d's write of "
	       "\"%s\" is taken", fd, data);
	did(wd, true);
}

/* @fd closes; m0 applies its requests, the last write read just before
 * the delete of @path. */
static void close_holding(struct world *wd, int fd, const char *path, const char *last)
{
	int h = wd->fds[fd].driven;

	simfs_close(wd, fd, &wd->driven[h]);
	did(wd, true);
	expect(wd, apply_until_deleted(wd, 0, path, last), "w%d's RELEASE deletes %s", h, path);
}

/*
 * A holder's data and its give-back: what the holder wrote last is in its
 * entry before the entry goes, whether the supervisor's flush of it is
 * still on its way (its set queued, the newest write not yet taken) or
 * not made yet when the descriptor closes.  The give-back sends the
 * latest data on the lock's session just before the delete
 * (zklfs_wbuf_close(), then lockreq_drop()): ZooKeeper applies one
 * session's requests in order, so the set comes first.  The supervisor's
 * look that comes after the give-back finds nothing to send.
 */
void data_before_the_delete(struct world *wd)
{
	char path[64];
	const char *at;
	int fd;

	/* the flush's set in flight, and a newer write behind it */
	fd = fs_holder(wd, path);
	write_all(wd, fd, "first");
	expect(wd, did(wd, sn_look(M(wd, 0))), "the write asks for the supervisor's look, "
	       "whose flush sends it");
	write_all(wd, fd, "second");
	close_holding(wd, fd, path, "second");
	quiesce(wd);

	/* nothing sent yet when the descriptor closes */
	fd = fs_holder(wd, path);
	write_all(wd, fd, "third");
	close_holding(wd, fd, path, "third");
	expect(wd, did(wd, sn_look(M(wd, 0))) && !sn_next_request(M(wd, 0), &at),
	       "the supervisor's look after the give-back sends nothing");
	quiesce(wd);
}

/*
 * An FSYNC asked while the supervisor's flush of the data is out, on a
 * connection that then goes: the flush's set fails, and would be sent
 * again only at the next look, after the FSYNC's confirmation.  So the
 * FSYNC sends the latest data itself, before its confirmation, and answers
 * 0 only with the data in ZooKeeper (invariant 10), else EAGAIN.
 */
void fsync_after_a_lost_flush(struct world *wd)
{
	char path[64];
	int fd;

	fd = fs_holder(wd, path);
	write_all(wd, fd, "first");
	expect(wd, did(wd, sn_look(M(wd, 0))), "the write asks for the supervisor's look, "
	       "whose flush sends it");
	did(wd, sn_drop_n(M(wd, 0), 0, 0));	/* the set not applied */
	simfs_fsync(wd, fd);
	did(wd, true);
	did(wd, sn_reconnect(M(wd, 0)));
	quiesce(wd);
}

/*
 * Two FSYNCs, the second asked while the first's confirmation is out, and
 * both their sets lost with the connection before the server applied
 * them: the data goes again only at the supervisor's next look, so
 * neither FSYNC may answer 0 before ZooKeeper holds it (invariant 10).
 * What an FSYNC needs is the version written when it was asked, not an
 * error some other FSYNC's round trip may have reported first.
 */
void second_fsync_after_lost_sets(struct world *wd)
{
	char path[64];
	int fd;

	fd = fs_holder(wd, path);
	write_all(wd, fd, "first");
	simfs_fsync(wd, fd);
	did(wd, true);
	simfs_fsync(wd, fd);
	did(wd, true);
	did(wd, sn_drop_n(M(wd, 0), 0, 0));	/* neither set applied */
	did(wd, sn_reconnect(M(wd, 0)));
	quiesce(wd);
}

/*
 * An observer follows its lock from another mount: once the world is
 * quiet, .holders reads the holder's entry; a poller registered then is
 * woken when the holder leaves (the observer's child watch fires and it
 * lists again), and the text reads nobody; .state reads what another
 * client published.
 */
void observer_follows_the_queue(struct world *wd)
{
	char text[256], want[96];
	int h, o, st;

	h = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	o = simobs_open(wd, 1, 0, false);
	st = simobs_open(wd, 2, 0, true);
	did(wd, true);
	quiesce(wd);
	snprintf(want, sizeof(want), "%s\texclusive\t", strrchr(wd->driven[h].path, '/') + 1);
	expect(wd, simobs_read(wd, o, text, sizeof(text)) &&
	       strncmp(text, want, strlen(want)) == 0 && strchr(text, '\n') &&
	       !strchr(text, '\n')[1],
	       "o%d reads w%d, the one holder", o, h);
	simobs_poll(wd, o);
	did(wd, true);
	release(wd, h);
	quiesce(wd);
	expect(wd, simobs_wakes(wd, o) == 1, "o%d's poller is woken once w%d's entry goes",
	       o, h);
	expect(wd, simobs_read(wd, o, text, sizeof(text)) && !text[0], "o%d reads nobody", o);
	simobs_publish(wd, 0, "leader-a");
	did(wd, true);
	quiesce(wd);
	expect(wd, simobs_read(wd, st, text, sizeof(text)) && strcmp(text, "leader-a") == 0,
	       "o%d reads the state another client published", st);
}

/* READ #@r was answered once, with @err, or (0) the text @text. */
static bool read_answered(const struct world *wd, int r, int err, const char *text)
{
	const struct szop *rd = &wd->zops[r];

	return rd->replies == 1 && rd->result == err &&
	       (err || (rd->len == strlen(text) && memcmp(rd->text, text, rd->len) == 0));
}

/*
 * A READ of an entry by another mount (fs/read.c, one zop) meets a
 * connection loss before the server applied its get: it is not answered
 * with the loss (its deadline is far off) but sent again at the
 * supervisor's look once the session is back (zop_send()), and answered
 * once, with what the entry holds then: its holder wrote a newer version
 * meanwhile.
 */
void read_sent_again_after_a_loss(struct world *wd)
{
	char path[64];
	int fd, r;

	fd = fs_holder(wd, path);
	write_all(wd, fd, "first");
	expect(wd, did(wd, sn_look(M(wd, 0))), "the supervisor's look flushes w%d's write",
	       wd->fds[fd].driven);
	quiesce(wd);
	r = simfs_read(wd, 1, path, 0, 4096, 1000000);
	did(wd, true);
	expect(wd, !wd->zops[r].replies, "r%d waits for its get", r);
	did(wd, sn_drop_n(M(wd, 1), 0, 0));	/* the get not applied */
	deliver_all(wd, 1);
	expect(wd, !wd->zops[r].replies, "r%d, its get lost with the connection, waits to "
	       "be sent again", r);
	write_all(wd, fd, "second");
	did(wd, sn_look(M(wd, 0)));
	quiesce_mount(wd, 0);
	did(wd, sn_reconnect(M(wd, 1)));
	events(wd, 1);
	expect(wd, did(wd, sn_look(M(wd, 1))), "m1's supervisor looks once it is back");
	quiesce(wd);
	expect(wd, read_answered(wd, r, 0, "second"), "r%d is answered once, with \"second\" "
	       "(answered %d times: %d, \"%s\")", r, wd->zops[r].replies, -wd->zops[r].result,
	       wd->zops[r].text ? wd->zops[r].text : "");
}

/*
 * A READ whose get is still out when its deadline comes is answered
 * ETIMEDOUT by the sweep at the supervisor's look (fs/pending.c), once:
 * its completion, which comes later, finds it answered and only frees
 * the zop.  So is one whose caller a signal ends: EINTR at once, its
 * completion later only frees.
 */
void read_answered_by_its_deadline(struct world *wd)
{
	char path[64];
	int r;

	fs_holder(wd, path);
	r = simfs_read(wd, 1, path, 0, 4096, 50);
	did(wd, true);
	sn_clock_jump(&wd->net, 100, -1);	/* its get not applied yet */
	expect(wd, did(wd, sn_look(M(wd, 1))), "m1's supervisor looks");
	expect(wd, read_answered(wd, r, ETIMEDOUT, NULL), "r%d is answered ETIMEDOUT at its "
	       "deadline, its get out", r);
	quiesce(wd);
	expect(wd, read_answered(wd, r, ETIMEDOUT, NULL), "r%d's completion only frees it", r);
	r = simfs_read(wd, 2, path, 0, 4096, 1000000);
	did(wd, true);
	simfs_read_interrupt(wd, r, ZKLFS_SIG_ENDS);
	did(wd, true);
	expect(wd, read_answered(wd, r, EINTR, NULL), "r%d is answered EINTR at once, its get "
	       "out", r);
	quiesce(wd);
	expect(wd, read_answered(wd, r, EINTR, NULL), "r%d's completion only frees it", r);
}
