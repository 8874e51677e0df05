/*
 * tests/sim/script.c - the scripted scenarios' tools (see script.h).
 */
#include "tests/sim/script.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void expect(struct world *wd, bool ok, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	if (ok)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	sim_failf(wd, "expected: %s", what);
}

/* A step the script took: the clock moves and the invariants are checked. */
bool did(struct world *wd, bool moved)
{
	if (moved) {
		wd->step++;
		wd->steps_total++;
		wd->net.now = (uint64_t)wd->step + wd->net.skip;
		sim_check_step(wd);
	}
	return moved;
}

struct sn_mount *M(struct world *wd, int m)
{
	return &wd->net.mounts[m];
}

bool apply_all(struct world *wd, int m)
{
	bool moved = false;

	while (!wd->fail[0] && did(wd, sn_apply(M(wd, m))))
		moved = true;
	return moved;
}

/* @step (sn_read, sn_deliver) on mount @m's handles, old first, until done. */
bool all_of(struct world *wd, int m, bool (*step)(struct sn_handle *))
{
	bool moved = false;

	while (!wd->fail[0] && M(wd, m)->old && did(wd, step(M(wd, m)->old)))
		moved = true;
	while (!wd->fail[0] && did(wd, step(M(wd, m)->cur)))
		moved = true;
	return moved;
}

bool read_all(struct world *wd, int m)
{
	return all_of(wd, m, sn_read);
}

bool deliver_all(struct world *wd, int m)
{
	return all_of(wd, m, sn_deliver);
}

/* The supervisor's events that are due: connected, expired. */
bool events(struct world *wd, int m)
{
	bool moved = false;

	while (!wd->fail[0] && (did(wd, sn_ev_connected(M(wd, m))) ||
				did(wd, sn_ev_expired(M(wd, m)))))
		moved = true;
	return moved;
}

/* Every mount, round by round, until nothing moves (no ticks). */
void quiesce(struct world *wd)
{
	for (bool moved = true; moved && !wd->fail[0];) {
		moved = false;
		for (int m = 0; m < SIM_MOUNTS; m++)
			moved |= apply_all(wd, m);
		for (int m = 0; m < SIM_MOUNTS; m++)
			moved |= read_all(wd, m);
		for (int m = 0; m < SIM_MOUNTS; m++)
			moved |= deliver_all(wd, m);
		for (int m = 0; m < SIM_MOUNTS; m++)
			moved |= events(wd, m);
	}
}

/* One mount alone, until nothing moves. */
void quiesce_mount(struct world *wd, int m)
{
	while (!wd->fail[0] && (apply_all(wd, m) | read_all(wd, m) | deliver_all(wd, m) |
				events(wd, m)))
		;
}

int enqueue(struct world *wd, int m, int dir, enum zkn_kind kind, int flags)
{
	int id = act_enqueue_on(wd, m, dir, kind, flags);

	did(wd, true);
	return id;
}

void release(struct world *wd, int id)
{
	act_release_driven(wd, &wd->driven[id]);
	did(wd, true);
}

void tick(struct world *wd, int m)
{
	sn_trace(&wd->net, "  m%d tick", m);
	did(wd, sn_ev_tick(M(wd, m)));
}

/* Another client deletes @id's entry. */
void unlink_entry(struct world *wd, int id)
{
	struct zkl_info info;
	char *path = NULL;

	zkl_info(wd->driven[id].w, &info, &path);
	if (!path) {
		sim_failf(wd, "script: w%d has no entry to unlink", id);
		return;
	}
	act_unlink_path(wd, path, id);
	free(path);
	did(wd, true);
}

bool granted(const struct world *wd, int id)
{
	return wd->driven[id].ndone == 1 && wd->driven[id].result == 0;
}

bool waits(const struct world *wd, int id)
{
	return wd->driven[id].ndone == 0;
}

/*
 * The host of mount @m sleeps past the session timeout (sn_suspend()).
 * Its holders then believe in a lock the server has let go: a suspend of
 * the whole host is beyond any client's reach, and only the fencing
 * token protects there (SPEC), so the belief checks leave them out.
 */
void suspend(struct world *wd, int m)
{
	for (int i = 0; i < wd->ndriven; i++)
		if (wd->driven[i].mount == m && granted(wd, i) && !wd->driven[i].released)
			wd->driven[i].asleep = true;
	did(wd, sn_suspend(M(wd, m), SN_QUIET_MS + 1));
}

