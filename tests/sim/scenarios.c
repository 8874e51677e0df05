/*
 * tests/sim/scenarios.c - scripted scenarios: races the random seeds reach
 * rarely or never, each driven step by step through the same world, the
 * same engine and the same invariants (check.c) as a seed, plus what the
 * script expects of that race.  Each one fails when the behaviour it
 * names is broken on purpose (README.md lists how each was broken).
 *
 * A script moves the network with quiesce() (every mount: the server
 * applies all that is queued, then the clients read all, then deliver
 * all, until nothing moves; never a tick) or one mount's step at a time,
 * and injects faults with the sn_*() calls of simnet.h.  The world is
 * seed 1's (a plain lock in d0, no linger, no faults); a script sets a
 * limit or a linger itself.  After the script, the end phase of a seed.
 */
#include "tests/sim/script.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * sim_walk() - record the engine's calls from here (tools/walk), or stop:
 * only build/walk/sim records (tests/sim/walk.c); here it does nothing.
 */
__attribute__((weak)) void sim_walk(bool on)
{
	(void)on;
}

/* the scenarios ------------------------------------------------------------ */

/*
 * One waiter's life with nobody else in its lock: created, granted at its
 * first listing, released.  tools/walk counts the engine's calls on it.
 */
static void one_waiter_alone(struct world *wd)
{
	int a;

	sim_walk(true);
	a = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, a), "w%d holds a lock nobody else asked for", a);
	release(wd, a);
	quiesce(wd);
	sim_walk(false);
}

/*
 * One waiter's life behind another mount's holder: created, it watches
 * the holder's entry, is granted when that entry goes, and released.
 * tools/walk counts the engine's calls on both mounts from its create on.
 */
static void one_waiter_behind_a_holder(struct world *wd)
{
	int h, a;

	h = enqueue(wd, 1, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	sim_walk(true);
	a = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, h) && waits(wd, a), "w%d waits behind w%d", a, h);
	release(wd, h);
	quiesce(wd);
	expect(wd, granted(wd, a), "w%d holds once w%d is gone", a, h);
	release(wd, a);
	quiesce(wd);
	sim_walk(false);
}

/*
 * A limit of 2 removed while this mount holds the second slot and waits
 * behind it: holders keep their lock, grants follow the plain lock from
 * the next listing on, so the second holder's release lets nobody in
 * while the first (on another mount) holds.
 */
static void limit_removed(struct world *wd)
{
	int a, l, x, t;

	sim_set_limit(wd, 1, 2);
	a = enqueue(wd, 1, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	l = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	x = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, a) && granted(wd, l) && waits(wd, x),
	       "two hold a limit of 2, a third waits");
	sim_set_limit(wd, 1, 0);
	t = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, ZKL_NONBLOCK);	/* lists: decides x too */
	quiesce(wd);
	expect(wd, wd->driven[t].ndone == 1 && wd->driven[t].result == -EAGAIN,
	       "a try behind two holders is EAGAIN");
	release(wd, l);
	quiesce(wd);
	expect(wd, waits(wd, x), "w%d waits while w%d holds a plain lock", x, a);
	release(wd, a);
	quiesce(wd);
	expect(wd, granted(wd, x), "w%d holds once w%d is gone", x, a);
}

/*
 * A limit of 2 set by this mount while its shared waiter watches the
 * exclusive entry at the head, two shared waiters of another mount
 * between them: when that entry goes, the waiter may not be granted by
 * its confirmation under the plain rule it was decided by (it would be a
 * third holder beside the two), since this mount knows the limit changed.
 * It lists, and waits for a slot (the release that frees one was granted
 * under the plain rule and pokes nobody: the tick lists for it).
 */
static void limit_set_here_before_a_confirmation(struct world *wd)
{
	char prefix[64], *x = NULL;
	int s1, s2, w;

	snprintf(prefix, sizeof(prefix), "%s/f-lock-", wd->dirs[0]);
	szk_create(&wd->net.zk, wd->foreign, prefix, "foreign\n", 8,
		   ZOO_EPHEMERAL | ZOO_SEQUENCE, &x, NULL);
	s1 = enqueue(wd, 1, 0, ZKN_SHARED, 0);
	s2 = enqueue(wd, 1, 0, ZKN_SHARED, 0);
	quiesce(wd);
	w = enqueue(wd, 0, 0, ZKN_SHARED, 0);
	quiesce(wd);
	expect(wd, waits(wd, s1) && waits(wd, s2) && waits(wd, w),
	       "three shared waiters behind an exclusive entry");
	sim_set_limit(wd, 0, 2);
	szk_delete(&wd->net.zk, x, -1);
	free(x);
	did(wd, true);
	quiesce(wd);
	expect(wd, waits(wd, w), "w%d waits: two hold a limit of 2", w);
	release(wd, s1);		/* granted under the plain rule: pokes nobody */
	quiesce(wd);
	tick(wd, 0);
	quiesce(wd);
	expect(wd, granted(wd, w), "w%d holds within a tick of a slot freed", w);
}

/*
 * A limit of 2 set while a shared waiter of this mount waits behind an
 * exclusive holder of its own, with two shared waiters of another mount
 * between them: once this mount has listed the limit, the holder's
 * release does not hand the lock to its waiter as a plain lock would (the
 * two shared entries before it fill the limit); it lists, and waits.
 */
static void limit_set_behind_a_plain_holder(struct world *wd)
{
	int l, s1, s2, x, t;

	l = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	s1 = enqueue(wd, 1, 0, ZKN_SHARED, 0);
	quiesce(wd);
	s2 = enqueue(wd, 1, 0, ZKN_SHARED, 0);
	quiesce(wd);
	x = enqueue(wd, 0, 0, ZKN_SHARED, 0);
	quiesce(wd);
	expect(wd, granted(wd, l) && waits(wd, s1) && waits(wd, s2) && waits(wd, x),
	       "one holds, three shared wait");
	sim_set_limit(wd, 2, 2);
	t = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, ZKL_NONBLOCK);	/* m0 lists the limit */
	quiesce(wd);
	expect(wd, wd->driven[t].ndone == 1 && wd->driven[t].result == -EAGAIN,
	       "a try behind the holder is EAGAIN");
	release(wd, l);
	quiesce(wd);
	expect(wd, granted(wd, s1) && granted(wd, s2) && waits(wd, x),
	       "the two shared entries before w%d fill the limit of 2", x);
	release(wd, s1);	/* m1 knows no limit: it pokes nobody */
	quiesce(wd);
	tick(wd, 0);		/* the first waiter of a semaphore lists */
	quiesce(wd);
	expect(wd, granted(wd, x), "w%d holds once one of them is gone", x);
}

/*
 * In d1: *@l holds on m0, *@x waits behind it on m0 (a cohort hand-off's
 * candidate), *@y waits behind both on m1.
 */
static void three_in_d1(struct world *wd, int *l, int *x, int *y)
{
	*l = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	*x = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	*y = enqueue(wd, 1, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, *l) && waits(wd, *x) && waits(wd, *y), "one holds, two wait");
}

/*
 * A cohort hand-off grants the waiter behind before the delete, which
 * checks that waiter's entry: someone deleted it meanwhile, so the
 * waiter is lost before anyone else is let in.
 */
static void cohort_checks_its_grants(struct world *wd)
{
	int l, x, y;

	three_in_d1(wd, &l, &x, &y);
	unlink_entry(wd, x);
	release(wd, l);
	expect(wd, granted(wd, x), "w%d granted by the cohort hand-off", x);
	quiesce(wd);
	expect(wd, wd->driven[x].lost, "w%d told its lock is lost", x);
	expect(wd, wd->driven[x].lost_at && (!wd->driven[y].granted_at ||
					   wd->driven[x].lost_at < wd->driven[y].granted_at),
	       "w%d lost before w%d (another mount) is let in", x, y);
	release(wd, x);
	quiesce(wd);
	expect(wd, granted(wd, y), "w%d holds", y);
}

/*
 * Two holders of a semaphore leave at once; each release pokes a waiter,
 * and the version each poke was read at keeps them from poking the same
 * one: both waiters hold without waiting for a tick.
 */
static void racing_pokes_wake_two(struct world *wd)
{
	int a, b, c, d;

	sim_set_limit(wd, 0, 2);
	a = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	b = enqueue(wd, 0, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	c = enqueue(wd, 1, 0, ZKN_EXCLUSIVE, 0);
	d = enqueue(wd, 1, 0, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, a) && granted(wd, b) && waits(wd, c) && waits(wd, d),
	       "two hold a limit of 2, two wait");
	release(wd, a);
	release(wd, b);
	quiesce(wd);
	expect(wd, granted(wd, c) && granted(wd, d),
	       "both waiters hold after both releases, without a tick");
}

/*
 * A grant read before the connection went and delivered after the mount
 * heard it is silent is withheld: the server may expire the session and
 * let the next one in meanwhile.
 */
static void no_grant_while_silent(struct world *wd)
{
	int h, w, v;

	h = enqueue(wd, 1, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	w = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, h) && waits(wd, w), "one holds, one waits on another mount");
	release(wd, h);
	apply_all(wd, 1);			/* the delete: w's watch fires */
	read_all(wd, 0);
	deliver_all(wd, 0);			/* w confirms its entry */
	apply_all(wd, 0);
	read_all(wd, 0);			/* the answer is read, not delivered */
	did(wd, sn_drop_n(M(wd, 0), 0, 0));
	did(wd, sn_ev_silent(M(wd, 0)));
	deliver_all(wd, 0);
	expect(wd, waits(wd, w), "no grant on a silent session");
	did(wd, sn_expire(M(wd, 0)));
	v = enqueue(wd, 1, 1, ZKN_EXCLUSIVE, 0);
	quiesce_mount(wd, 1);
	expect(wd, granted(wd, v), "the next holder, once m0's session expired");
	did(wd, sn_reconnect(M(wd, 0)));
	quiesce(wd);
	did(wd, sn_replace(M(wd, 0)));
	did(wd, sn_reconnect(M(wd, 0)));
	quiesce(wd);
	expect(wd, waits(wd, w), "w%d waits anew behind w%d", w, v);
	release(wd, v);
	quiesce(wd);
	expect(wd, granted(wd, w), "w%d holds", w);
}

/*
 * A shared entry left lingering is not reused by an exclusive open of the
 * same name: that one enqueues anew and another mount's shared open waits
 * behind it.
 */
static void linger_keeps_its_kind(struct world *wd)
{
	int s, x, y;

	wd->lingers = true;
	zkl_engine_set_linger(wd->eng[0], 1000);
	s = enqueue(wd, 0, 1, ZKN_SHARED, 0);
	quiesce(wd);
	expect(wd, granted(wd, s), "w%d holds", s);
	release(wd, s);
	quiesce(wd);
	x = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	expect(wd, granted(wd, x), "w%d holds", x);
	y = enqueue(wd, 1, 1, ZKN_SHARED, 0);
	quiesce(wd);
	expect(wd, waits(wd, y), "a shared open waits behind an exclusive holder");
}

/*
 * A revocation request written to a lingering entry, its notification
 * still on the way, when another process's open reuses the entry and
 * writes its own data: that write must not erase the request unseen.
 */
static void reuse_keeps_a_revocation(struct world *wd)
{
	struct zkl_info info;
	const struct szk_node *n;
	char *path = NULL;
	int a, b;

	wd->lingers = true;
	zkl_engine_set_linger(wd->eng[0], 1000);
	a = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	release(wd, a);
	quiesce(wd);
	zkl_info(wd->driven[a].w, &info, &path);
	if (!path) {
		sim_failf(wd, "script: w%d's entry does not linger", a);
		return;
	}
	sn_trace(&wd->net, "  another client asks %s to let go", path);
	szk_set(&wd->net.zk, path, ZKL_REVOKE_DATA, (int)strlen(ZKL_REVOKE_DATA), -1);
	b = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);	/* reuses it: new data */
	expect(wd, granted(wd, b), "w%d granted on the lingering entry", b);
	quiesce(wd);
	zkl_info(wd->driven[b].w, &info, NULL);
	n = szk_find(&wd->net.zk, path);
	expect(wd, info.revoking, "w%d told it is asked to let go", b);
	expect(wd, n && n->len == (int)strlen(ZKL_REVOKE_DATA) &&
	       memcmp(n->data, ZKL_REVOKE_DATA, (size_t)n->len) == 0,
	       "the request is still in the entry's data");
	free(path);
}

/* A try (O_NONBLOCK) on mount @m in d1: its driven id. */
static int try_lock(struct world *wd, int m)
{
	return enqueue(wd, m, 1, ZKN_EXCLUSIVE, ZKL_NONBLOCK);
}

static bool refused(const struct world *wd, int id)
{
	return wd->driven[id].ndone == 1 && wd->driven[id].result == -EAGAIN;
}

/* m0 lingers; @a held d1 and gave it back: its entry is kept. */
static int linger_one(struct world *wd)
{
	int a;

	wd->lingers = true;
	zkl_engine_set_linger(wd->eng[0], 1000);
	a = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	release(wd, a);
	quiesce(wd);
	expect(wd, zkl_cached(wd->eng[0], wd->dirs[1], wd->driven[a].path),
	       "w%d's entry lingers", a);
	return a;
}

/*
 * Nobody holds, but m0 keeps its entry lingering: a try on m1 is not
 * refused; m0 gives the entry back when the try's entry joins, and the
 * try holds (no tick: within the round trips that takes).
 */
static void try_behind_a_linger(struct world *wd)
{
	int t;

	linger_one(wd);
	t = try_lock(wd, 1);
	quiesce(wd);
	expect(wd, granted(wd, t), "the try holds once m0 gave its lingering entry back");
}

/*
 * The lingering entry was taken again by an open on m0: a try on m1 is
 * refused at once (m0 takes the mark out when the try's entry joins), not
 * at the end of the try's wait.
 */
static void try_behind_a_reused_linger(struct world *wd)
{
	int b, t;

	linger_one(wd);
	b = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	expect(wd, granted(wd, b), "w%d holds the lingering entry again", b);
	quiesce(wd);
	t = try_lock(wd, 1);
	quiesce(wd);
	expect(wd, refused(wd, t), "the try is refused while w%d holds, without a tick", b);
}

/* A holder that never lingered: a try is refused at once. */
static void try_behind_a_holder(struct world *wd)
{
	int h, t;

	h = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	t = try_lock(wd, 1);
	quiesce(wd);
	expect(wd, granted(wd, h) && refused(wd, t), "the try is refused, without a tick");
}

/*
 * A try whose create the server applied unseen, before the connection
 * went: once the mount declares the session silent it fails with
 * ETIMEDOUT (it may not wait out the outage), so does a try made while
 * the session stays silent, and the entry it left is deleted once the
 * session is back (the end phase finds no orphan).
 */
static void try_while_silent(struct world *wd)
{
	int h, t, u;

	h = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	t = try_lock(wd, 1);
	apply_all(wd, 1);			/* created; the reply never read */
	did(wd, sn_drop_n(M(wd, 1), 0, 0));
	expect(wd, wd->driven[t].ndone == 0, "the try waits while only the connection is gone");
	did(wd, sn_ev_silent(M(wd, 1)));
	expect(wd, wd->driven[t].ndone == 1 && wd->driven[t].result == -ETIMEDOUT,
	       "the try fails with ETIMEDOUT once its session is silent");
	u = try_lock(wd, 1);
	expect(wd, wd->driven[u].ndone == 1 && wd->driven[u].result == -ETIMEDOUT,
	       "a try on a silent session fails at once");
	did(wd, sn_reconnect(M(wd, 1)));
	quiesce(wd);
	expect(wd, granted(wd, h), "the holder on the other mount keeps its lock");
	u = try_lock(wd, 1);
	quiesce(wd);
	expect(wd, refused(wd, u), "a try once the session is back is decided again");
}

/*
 * A cohort hand-off whose delete meets a connection loss: applied unseen
 * (@applied) or not applied at all.  Either way the waiter granted holds
 * the lowest entry, or the released one keeps everyone else out, and the
 * other mount's waiter is let in only after it.
 */
static void cohort_loss(struct world *wd, int applied)
{
	int l, x, y;

	three_in_d1(wd, &l, &x, &y);
	release(wd, l);
	expect(wd, granted(wd, x), "w%d granted by the cohort hand-off", x);
	did(wd, sn_drop_n(M(wd, 0), 0, applied));
	quiesce(wd);
	did(wd, sn_reconnect(M(wd, 0)));
	quiesce(wd);
	expect(wd, granted(wd, x) && !wd->driven[x].lost && waits(wd, y),
	       "w%d holds through the loss, w%d waits", x, y);
	release(wd, x);
	quiesce(wd);
	expect(wd, granted(wd, y), "w%d holds", y);
}

static void cohort_delete_lost_applied(struct world *wd)
{
	cohort_loss(wd, 1);
}

static void cohort_delete_lost_unsent(struct world *wd)
{
	cohort_loss(wd, 0);
}

/*
 * The host of m0 sleeps past the session timeout while it holds a lock
 * with a waiter of its own behind: the server expires the session, and
 * the other mount's waiter holds.  Resumed, before its supervisor has
 * looked (no silent event yet), m0's holder gives back: the cohort
 * hand-off must not grant its waiter, whose entry went with the session.
 */
static void cohort_after_suspend(struct world *wd)
{
	int l, x, y;

	three_in_d1(wd, &l, &x, &y);
	suspend(wd, 0);
	quiesce_mount(wd, 1);
	expect(wd, granted(wd, y), "w%d holds once m0's session expired", y);
	release(wd, l);
	expect(wd, waits(wd, x), "no cohort grant on a session that may be gone");
}

/*
 * Likewise for a lingering entry: resumed past the session timeout, m0
 * must not grant a new open on the entry it kept, which the server
 * deleted with the session while another mount took the lock.
 */
static void linger_after_suspend(struct world *wd)
{
	int a, b, y;

	wd->lingers = true;
	zkl_engine_set_linger(wd->eng[0], 4000000000u);	/* longer than the sleep */
	a = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	quiesce(wd);
	release(wd, a);
	quiesce(wd);
	suspend(wd, 0);
	y = enqueue(wd, 1, 1, ZKN_EXCLUSIVE, 0);
	quiesce_mount(wd, 1);
	expect(wd, granted(wd, y), "w%d holds once m0's session expired", y);
	b = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	expect(wd, waits(wd, b), "no grant on a kept entry of a session that may be gone");
	zkl_engine_set_linger(wd->eng[0], 1000);	/* the end phase's run out */
}

/* Is @id's lock in doubt, as the engine tells its holder? */
static bool in_doubt(struct world *wd, int id)
{
	struct zkl_info info;

	zkl_info(wd->driven[id].w, &info, NULL);
	return info.doubt;
}

/* Mount @m's supervisor says its session entered doubt, or left it. */
static void doubt(struct world *wd, int m)
{
	if (!did(wd, sn_ev_doubt(M(wd, m))))
		sim_failf(wd, "script: m%d's doubt did not move", m);
}

/*
 * In doubt, a release hands nothing on without a round trip: the waiter
 * behind, on the same mount, is granted by its own listing, and is in
 * doubt as it is granted (the listing came in the doubt); it leaves the
 * doubt once the session does and a read shows its entry.
 */
static void no_cohort_in_doubt(struct world *wd)
{
	int l, x, y;

	three_in_d1(wd, &l, &x, &y);
	doubt(wd, 0);
	expect(wd, in_doubt(wd, l), "the holder w%d is in doubt", l);
	release(wd, l);
	expect(wd, waits(wd, x), "w%d not granted by a cohort hand-off in doubt", x);
	quiesce(wd);
	expect(wd, granted(wd, x) && in_doubt(wd, x),
	       "w%d granted by its listing, in doubt", x);
	doubt(wd, 0);
	expect(wd, in_doubt(wd, x), "w%d in doubt until a read shows its entry", x);
	quiesce(wd);
	expect(wd, !in_doubt(wd, x), "w%d out of doubt after the read", x);
	release(wd, x);
	quiesce(wd);
	expect(wd, granted(wd, y), "w%d holds", y);
}

/*
 * A doubt ends with a read of the entry on the session, not with the
 * session's word alone: the entry deleted meanwhile (its notification
 * not yet delivered), the read shows it gone and the lock is lost,
 * never held again.
 */
static void doubt_ends_with_a_read(struct world *wd)
{
	int l, x, y;

	three_in_d1(wd, &l, &x, &y);
	doubt(wd, 0);
	unlink_entry(wd, l);
	doubt(wd, 0);
	expect(wd, in_doubt(wd, l) && !wd->driven[l].lost,
	       "w%d in doubt until the read is answered", l);
	apply_all(wd, 0);
	read_all(wd, 0);
	deliver_all(wd, 0);
	expect(wd, wd->driven[l].lost, "w%d lost: the read showed its entry gone", l);
	release(wd, l);
	quiesce(wd);
	release(wd, x);
	quiesce(wd);
	expect(wd, granted(wd, y), "w%d holds", y);
}

/* A lingering entry is let go when its session enters doubt: nothing is
 * granted on it without a round trip. */
static void no_linger_in_doubt(struct world *wd)
{
	int b;

	linger_one(wd);
	doubt(wd, 0);
	expect(wd, !zkl_cached(wd->eng[0], wd->dirs[1], wd->driven[0].path),
	       "the lingering entry let go in doubt");
	b = enqueue(wd, 0, 1, ZKN_EXCLUSIVE, 0);
	expect(wd, waits(wd, b), "w%d not granted on a kept entry in doubt", b);
	doubt(wd, 0);
	quiesce(wd);
	expect(wd, granted(wd, b) && !in_doubt(wd, b), "w%d holds once out of doubt", b);
}

static const struct scenario {
	const char *name;
	void (*run)(struct world *wd);
} scenarios[] = {
	{ "one-waiter-alone", one_waiter_alone },
	{ "one-waiter-behind-a-holder", one_waiter_behind_a_holder },
	{ "limit-removed", limit_removed },
	{ "limit-set-behind-a-plain-holder", limit_set_behind_a_plain_holder },
	{ "limit-set-here-before-a-confirmation", limit_set_here_before_a_confirmation },
	{ "cohort-checks-its-grants", cohort_checks_its_grants },
	{ "racing-pokes-wake-two", racing_pokes_wake_two },
	{ "no-grant-while-silent", no_grant_while_silent },
	{ "linger-keeps-its-kind", linger_keeps_its_kind },
	{ "reuse-keeps-a-revocation", reuse_keeps_a_revocation },
	{ "try-behind-a-linger", try_behind_a_linger },
	{ "try-behind-a-reused-linger", try_behind_a_reused_linger },
	{ "try-behind-a-holder", try_behind_a_holder },
	{ "try-while-silent", try_while_silent },
	{ "cohort-after-suspend", cohort_after_suspend },
	{ "linger-after-suspend", linger_after_suspend },
	{ "cohort-delete-lost-applied", cohort_delete_lost_applied },
	{ "cohort-delete-lost-unsent", cohort_delete_lost_unsent },
	{ "interrupt-races-the-grant", interrupt_races_the_grant },
	{ "lost-before-its-answer", lost_before_its_answer },
	{ "second-open-queues", second_open_queues },
	{ "lockfile-close-of-a-copy", lockfile_close_of_a_copy },
	{ "data-before-the-delete", data_before_the_delete },
	{ "fsync-after-a-lost-flush", fsync_after_a_lost_flush },
	{ "second-fsync-after-lost-sets", second_fsync_after_lost_sets },
	{ "observer-follows-the-queue", observer_follows_the_queue },
	{ "read-sent-again-after-a-loss", read_sent_again_after_a_loss },
	{ "read-answered-by-its-deadline", read_answered_by_its_deadline },
	{ "no-cohort-in-doubt", no_cohort_in_doubt },
	{ "doubt-ends-with-a-read", doubt_ends_with_a_read },
	{ "no-linger-in-doubt", no_linger_in_doubt },
};

/* the runner ----------------------------------------------------------------- */

static bool run_one(const struct scenario *sc, bool verbose)
{
	struct world *wd = calloc(1, sizeof(*wd));
	bool ok;

	if (!wd)
		abort();
	sim_world_init(wd, SC_SEED, verbose);
	sn_trace(&wd->net, "scenario %s", sc->name);
	sc->run(wd);
	if (!wd->fail[0])
		sim_end_phase(wd);
	ok = !wd->fail[0];
	printf("scenario %s: %s%s\n", sc->name, ok ? "ok" : "FAILED: ", wd->fail);
	if (!ok) {
		sim_world_bury(wd);
		return false;
	}
	sim_world_free(wd);
	free(wd);
	return true;
}

bool sim_scenarios(const char *name)
{
	size_t n = sizeof(scenarios) / sizeof(scenarios[0]), failed = 0, ran = 0;

	for (size_t i = 0; i < n; i++)
		if (!name || strcmp(name, scenarios[i].name) == 0) {
			ran++;
			failed += !run_one(&scenarios[i], name != NULL);
		}
	if (!ran)
		fprintf(stderr, "sim: no scenario named %s\n", name);
	else
		printf("sim: %zu scenarios, %zu failed\n", ran, failed);
	return ran && !failed;
}
