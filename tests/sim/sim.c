/*
 * tests/sim/sim.c - the deterministic simulation driver (see README.md).
 *
 *   sim FIRST COUNT [SKIP...]  run seeds FIRST .. FIRST+COUNT-1 but the
 *                          SKIP ones (known engine bugs), print failures
 *   sim -r SEED            replay one seed with a trace of every step
 *   sim -s [NAME]          run the scripted scenarios (scenarios.c), or
 *                          replay one with a trace
 *
 * Each seed builds a world (sim.h), takes SIM_STEPS steps chosen by the
 * seeded PRNG (the server applying a request, the client reading a reply
 * or delivering it, the engine's session events, connection losses,
 * expiries, and the driver's enqueue, cancel, release, unlink and foreign
 * entries), checks the invariants after each, then heals every session,
 * releases everything, drains, and checks what must hold at the end.
 * Exit status: 0 if every seed passed, 1 otherwise.  One thread.
 */
#include "tests/sim/sim.h"
#include "tests/sim/simfs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zk/log.h"

#define SIM_STEPS	600
#define END_ROUNDS	64
#define DRAIN_STEPS	100000

/* the engine's world: log and chance ---------------------------------------- */

/* zklog() - the engine's log goes into the replay trace (zk/log.c is not
 * linked: its rate limit reads the clock). */
void zklog(int level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	if (!sim_world || !sim_world->verbose)
		return;
	printf("        log: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

bool zklog_init(const char *ident, bool to_syslog, bool debug)
{
	(void)ident, (void)to_syslog, (void)debug;
	return false;
}

/* getrandom() - the engine's nonces, from the seed, so that a run replays. */
ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	struct sim_rng fallback = { 42 };
	struct sim_rng *r = sim_world ? &sim_world->nonce_rng : &fallback;

	(void)flags;
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = (unsigned char)sim_rng_next(r);
	return (ssize_t)len;
}

/* the scheduler -------------------------------------------------------------- */

enum act { A_APPLY, A_READ, A_DELIVER, A_READ_OLD, A_DELIVER_OLD, A_TICK,
	   A_CONNECTED, A_EXPIRED, A_SILENT, A_DROP, A_RECONNECT, A_EXPIRE,
	   A_REPLACE, A_DOUBT, A_LOOK, A_ENQUEUE, A_CANCEL, A_RELEASE, A_UNLINK, A_FOREIGN_ENQ,
	   A_FOREIGN_REL, A_SETDATA, A_FDLOCK, A_FSDATA, A_OBSERVE, A_FSREAD, A_FSMKNOD, A_N };

/* Weights: network steps dominate; faults scale with the seed's fault rate. */
static int weight(struct world *wd, enum act a, struct sn_mount *m)
{
	struct sn_handle *h = m->cur;
	struct sn_handle *o = m->old;
	int f = wd->ending ? 0 : wd->fault_rate;
	bool drv = !wd->ending;

	switch (a) {
	case A_APPLY:	  return h->state == SN_CONNECTED && h->out.n ? 60 : 0;
	case A_READ:	  return h->wire.n ? 50 : 0;
	case A_DELIVER:	  return h->in.n ? 60 : 0;
	case A_READ_OLD:  return o && o->wire.n ? 50 : 0;
	case A_DELIVER_OLD: return o && o->in.n ? 50 : 0;
	case A_TICK:	  return drv && h->state == SN_CONNECTED && !m->expired_due ? 4 : 0;
	case A_CONNECTED: return m->connected_due && !m->expired_due ? 20 : 0;
	case A_EXPIRED:	  return m->expired_due && !(o && (o->in.n || o->wire.n)) ? 20 : 0;
	case A_SILENT:	  return h->state == SN_DISCONNECTED && !m->silent_done &&
				 !m->expired_due ? (wd->ending ? 0 : 3) : 0;
	case A_DROP:	  return h->state == SN_CONNECTED ? f : 0;
	case A_RECONNECT: return h->state == SN_DISCONNECTED ? (wd->ending ? 30 : 8) : 0;
	case A_EXPIRE:	  return h->state == SN_DISCONNECTED && m->silent_done &&
				 h->connected_once &&
				 szk_session_alive(&wd->net.zk, h->sid) ? 2 * f : 0;
	case A_REPLACE:	  return h->state == SN_EXPIRED && !m->expired_due ? 20 : 0;
	case A_DOUBT:	  return m->engine_doubt ? (h->state == SN_CONNECTED && !m->expired_due ?
						    (wd->ending ? 30 : 8) : 0) :
				 h->state != SN_CONNECTED ? (wd->ending ? 0 : 10) : f;
	case A_LOOK:	  return m->later ? 5 : 0;
	default:	  return 0;
	}
}

static int driver_weight(struct world *wd, enum act a)
{
	if (wd->ending)
		return 0;
	switch (a) {
	case A_ENQUEUE:	    return 25;
	case A_CANCEL:	    return 5;
	case A_RELEASE:	    return 20;
	case A_UNLINK:	    return 2;
	case A_FOREIGN_ENQ: return 3;
	case A_FOREIGN_REL: return 4;
	case A_SETDATA:	    return 2;
	case A_FDLOCK:	    return 5;
	case A_FSDATA:	    return 20;
	case A_OBSERVE:	    return 6;
	case A_FSREAD:	    return 6;
	case A_FSMKNOD:	    return 2;
	default:	    return 0;
	}
}

static bool run_mount_act(struct world *wd, enum act a, struct sn_mount *m)
{
	static const char *const names[] = { "apply", "read", "deliver", "read (old)",
		"deliver (old)", "tick", "connected event", "expired event", "silent event",
		"drop connection", "reconnect", "server expiry", "new handle", "doubt event",
		"supervisor's look" };

	sn_trace(&wd->net, "  m%d %s", m->id, names[a]);
	switch (a) {
	case A_APPLY:	    return sn_apply(m);
	case A_READ:	    return sn_read(m->cur);
	case A_DELIVER:	    return sn_deliver(m->cur);
	case A_READ_OLD:    return sn_read(m->old);
	case A_DELIVER_OLD: return sn_deliver(m->old);
	case A_TICK:	    return sn_ev_tick(m);
	case A_CONNECTED:   return sn_ev_connected(m);
	case A_EXPIRED:	    return sn_ev_expired(m);
	case A_SILENT:	    return sn_ev_silent(m);
	case A_DROP:	    return sn_drop(m);
	case A_RECONNECT:   return sn_reconnect(m);
	case A_EXPIRE:	    return sn_expire(m);
	case A_REPLACE:	    return sn_replace(m);
	case A_DOUBT:	    return sn_ev_doubt(m);
	case A_LOOK:	    return sn_look(m);
	default:	    return false;
	}
}

static bool run_driver_act(struct world *wd, enum act a)
{
	switch (a) {
	case A_ENQUEUE:	    return act_enqueue(wd);
	case A_CANCEL:	    return act_cancel(wd);
	case A_RELEASE:	    return act_release(wd);
	case A_UNLINK:	    return act_unlink(wd);
	case A_FOREIGN_ENQ: return act_foreign_enqueue(wd);
	case A_FOREIGN_REL: return act_foreign_release(wd);
	case A_SETDATA:	    return act_setdata(wd);
	case A_FDLOCK:	    return act_fdlock(wd);
	case A_FSDATA:	    return act_fsdata(wd);
	case A_OBSERVE:	    return act_observe(wd);
	case A_FSREAD:	    return act_fsread(wd);
	case A_FSMKNOD:	    return act_fsmknod(wd);
	default:	    return false;
	}
}

/*
 * A semaphore's limit goes 2 -> 3 -> none -> 2 (or from 3 on), set by a
 * mount (as setfattr does, fs/): every 200 steps, not by the world's
 * generator, so that seeds without a semaphore keep their schedules.
 * Removing it makes d0 a plain lock while the holders let in under the
 * limit still hold.
 */
static void change_limit(struct world *wd)
{
	static const unsigned next[] = { [0] = 2, [2] = 3, [3] = 0 };

	sim_set_limit(wd, (int)((wd->seed + (uint64_t)wd->step) % SIM_MOUNTS),
		      next[wd->limit[0]]);
}

void sim_set_limit(struct world *wd, int m, unsigned now)
{
	unsigned before = wd->limit[0];
	char data[16];
	int n = now ? snprintf(data, sizeof(data), "limit=%u\n", now) : 0;

	sn_trace(&wd->net, "  m%d sets the limit of %s: %u -> %u", m, wd->dirs[0],
		 before, now);
	szk_set(&wd->net.zk, wd->dirs[0], data, n, -1);
	sim_limit_at(wd, szk_find(&wd->net.zk, wd->dirs[0])->version, now);
	wd->limit[0] = now;
	zkl_limit_changed(wd->eng[m], wd->dirs[0], before, now);
}

/*
 * One step: pick an enabled action by weight and take it.
 * Return: false if nothing was enabled (quiescent).
 */
static bool step(struct world *wd)
{
	int total = 0, k;

	for (int i = 0; i < SIM_MOUNTS; i++)
		for (int a = A_APPLY; a <= A_LOOK; a++)
			total += weight(wd, (enum act)a, &wd->net.mounts[i]);
	for (int a = A_ENQUEUE; a < A_N; a++)
		total += driver_weight(wd, (enum act)a);
	if (!total)
		return false;
	k = (int)sim_rng_below(&wd->rng, (uint32_t)total);
	wd->step++;
	wd->net.now = (uint64_t)wd->step + wd->net.skip;
	wd->steps_total++;
	if (wd->verbose)
		printf("step %ld:\n", wd->step);
	for (int i = 0; i < SIM_MOUNTS; i++)
		for (int a = A_APPLY; a <= A_LOOK; a++) {
			k -= weight(wd, (enum act)a, &wd->net.mounts[i]);
			if (k < 0) {
				run_mount_act(wd, (enum act)a, &wd->net.mounts[i]);
				goto checked;
			}
		}
	for (int a = A_ENQUEUE; a < A_N; a++) {
		k -= driver_weight(wd, (enum act)a);
		if (k < 0) {
			if (!run_driver_act(wd, (enum act)a))
				sn_trace(&wd->net, "  (driver: nothing to do)");
			break;
		}
	}
checked:
	if (wd->semaphore && !wd->ending && wd->step % 200 == 0)
		change_limit(wd);
	sim_check_step(wd);
	return true;
}

/* Run steps until quiescent (or failed). */
static void drain(struct world *wd)
{
	for (long i = 0; i < DRAIN_STEPS && !wd->fail[0]; i++)
		if (!step(wd))
			return;
	sim_failf(wd, "drain: still busy after %d steps", DRAIN_STEPS);
}

/* The end: heal, give everything back, drain, until nothing more happens. */
void sim_end_phase(struct world *wd)
{
	wd->ending = true;
	sn_trace(&wd->net, "end phase: no more faults; heal, release, drain");
	for (int round = 0; round < END_ROUNDS && !wd->fail[0]; round++) {
		bool left = false;

		drain(wd);
		if (round == 0 && !wd->fail[0])
			simobs_check(wd);	/* the world quiet: what observers read */
		simobs_end(wd);
		for (int i = 0; i < wd->ndriven && !wd->fail[0]; i++)
			if (act_is_answered(&wd->driven[i]))
				act_release_driven(wd, &wd->driven[i]);
		simfs_end(wd);
		foreign_leaves(wd);
		drain(wd);
		sn_clock_jump(&wd->net, 1000000, -1);	/* every linger runs out */
		for (int i = 0; i < SIM_MOUNTS && !wd->fail[0]; i++) {
			sn_trace(&wd->net, "  m%d tick (end)", i);
			sn_ev_tick(&wd->net.mounts[i]);
		}
		drain(wd);
		for (int i = 0; i < wd->ndriven; i++)
			left |= !wd->driven[i].released;
		if (!left)
			break;
	}
	if (!wd->fail[0])
		sim_check_end(wd);
	if (!wd->fail[0])
		simfs_check_joins(wd);
	if (!wd->fail[0])
		simfs_check_data(wd);
	if (!wd->fail[0])
		simobs_check_end(wd);
	if (!wd->fail[0])
		sim_check_zops(wd);
}

/* one seed ---------------------------------------------------------------- */

/* The trace's name of a call's argument: the driver's waiter, if it is one. */
static const char *name_of(void *ctx, const void *arg)
{
	struct world *wd = ctx;
	static char buf[16];

	for (int i = 0; i < wd->ndriven; i++)
		if (!wd->driven[i].released && (const void *)wd->driven[i].w == arg) {
			snprintf(buf, sizeof(buf), "(w%d)", i);
			return buf;
		}
	return "";
}

void sim_world_init(struct world *wd, uint64_t seed, bool verbose)
{
	memset(wd, 0, sizeof(*wd));
	wd->seed = seed;
	wd->verbose = verbose;
	wd->rng.s = seed;
	wd->nonce_rng.s = seed ^ 0x6e6f6e6365ULL;
	sim_world = wd;
	sn_init(&wd->net, &wd->rng, SIM_MOUNTS, verbose);
	wd->net.hook = sim_watch_hook;
	wd->net.listed = sim_list_hook;
	wd->net.applied = sim_applied;
	wd->net.hook_ctx = wd;
	wd->net.zk.changed = sim_zk_changed;
	wd->net.zk.changed_ctx = wd;
	if (verbose)
		wd->net.name_of = name_of;
	wd->foreign = szk_session_new(&wd->net.zk);
	szk_create(&wd->net.zk, 0, "/locks", "", 0, 0, NULL, NULL);
	for (int k = 0; k < SIM_DIRS; k++) {
		snprintf(wd->dirs[k], sizeof(wd->dirs[k]), "/locks/d%d", k);
		szk_create(&wd->net.zk, 0, wd->dirs[k], "", 0, 0, NULL, NULL);
	}
	/*
	 * One seed in three makes d0 a semaphore of 2 or 3.  Chosen from the
	 * seed, not the world's generator, so that the other seeds' schedules
	 * are those they were before semaphores.
	 */
	if (seed % 3 == 2) {
		char data[16];
		int n;

		wd->semaphore = true;
		wd->limit[0] = 2 + (unsigned)(seed / 3 % 2);
		n = snprintf(data, sizeof(data), "limit=%u\n", wd->limit[0]);
		szk_set(&wd->net.zk, wd->dirs[0], data, n, -1);
		sim_limit_at(wd, szk_find(&wd->net.zk, wd->dirs[0])->version, wd->limit[0]);
		for (int i = 0; i < SIM_MOUNTS; i++)
			wd->rule[i][0] = wd->limit[0];
	}
	/* one seed in two starts a queue just before the counter's wrap */
	if (sim_rng_chance(&wd->rng, 1, 2))
		szk_find(&wd->net.zk, wd->dirs[1])->seqctr = INT32_MAX - 12;
	{
		static const int rates[] = { 0, 1, 3, 8 };

		wd->fault_rate = rates[sim_rng_below(&wd->rng, 4)];
	}
	for (int i = 0; i < SIM_MOUNTS; i++) {
		struct zkt_transport t = sn_transport(&wd->net.mounts[i]);

		wd->naming[i] = sim_rng_chance(&wd->rng, 1, 3) ? ZKN_KAZOO : ZKN_CURATOR;
		wd->eng[i] = zkl_engine_new(&t, wd->naming[i], sim_lost);
		if (!wd->eng[i])
			abort();
		zkl_engine_on_doubt(wd->eng[i], sim_doubted);
		/* one seed in four lingers (zk/linger.c): 10 to 70 steps */
		wd->lingers = seed % 4 == 3;
		if (wd->lingers)
			zkl_engine_set_linger(wd->eng[i], 10 + (unsigned)(seed / 4 % 61));
		wd->net.mounts[i].ev = zkl_engine_events(wd->eng[i]);
	}
	/* one seed in three has a lockfiles mount, whose fs/ opens are of
	 * lock files (a mount is one or the other: none of its entries can
	 * be opened again as another's) */
	wd->lockfiles = seed % 3 == 2 ? (int)(seed / 3 % SIM_MOUNTS) : -1;
	simfs_init(wd);
	sn_trace(&wd->net, "seed %" PRIu64 ": %d mounts, fault rate %d", seed,
		 SIM_MOUNTS, wd->fault_rate);
}

void sim_world_free(struct world *wd)
{
	for (int i = 0; i < SIM_MOUNTS; i++)
		zkl_engine_shutdown(wd->eng[i]);
	simfs_free(wd);
	for (int i = 0; i < SIM_MOUNTS; i++)
		zkl_engine_free(wd->eng[i]);
	sn_free(&wd->net);
	for (int i = 0; i < wd->nherd; i++)
		free(wd->herd[i].path);
	free(wd->herd);
	for (int i = 0; i < wd->ndriven; i++)
		free(wd->driven[i].wbuf);
	free(wd->driven);
	for (int k = 0; k < wd->nzops; k++) {
		for (int i = 0; i < wd->zops[k].nvals; i++)
			free(wd->zops[k].vals[i].data);
		free(wd->zops[k].vals);
		free(wd->zops[k].text);
	}
	free(wd->zops);
	free(wd->wsets);
	free(wd->gone);
	free(wd->lhist);
	sim_world = NULL;
}

/* A failed world is kept, reachable, so LeakSanitizer says nothing of it. */
static struct world **graveyard;
static size_t ngrave;

void sim_world_bury(struct world *wd)
{
	graveyard = realloc(graveyard, (ngrave + 1) * sizeof(*graveyard));
	if (!graveyard)
		abort();
	graveyard[ngrave++] = wd;
	sim_world = NULL;
}

/* run_seed() - one run. Return: true if every invariant held. */
static bool run_seed(uint64_t seed, bool verbose, long *steps)
{
	struct world *wd = calloc(1, sizeof(*wd));
	bool ok;

	if (!wd)
		abort();
	sim_world_init(wd, seed, verbose);
	for (int i = 0; i < SIM_STEPS && !wd->fail[0]; i++)
		step(wd);
	if (!wd->fail[0])
		sim_end_phase(wd);
	ok = !wd->fail[0];
	*steps += wd->steps_total;
	if (!ok) {
		printf("seed %" PRIu64 ": FAILED at step %ld: %s\n", seed, wd->step, wd->fail);
		sim_world_bury(wd);
		return false;
	}
	sim_world_free(wd);
	free(wd);
	return true;
}

/*
 * A range runs in a child process, watched by the parent: a seed that
 * crashes it (a sanitizer's report, an abort) or runs for SEED_HANG_S
 * seconds (the engine looping with its lock held) is reported as failed,
 * and a new child goes on with the next seed.  What the children did is
 * counted in a shared page.
 */
#define SEED_HANG_S 3

struct progress {
	uint64_t seed;			/* the seed being run */
	double started;			/* when (now_s()) */
	long cohort;			/* cohort hand-offs seen */
	long linger;			/* grants on a lingering entry */
	long data;			/* sets of the holders' data */
	long reads, again;		/* READs of entries, and sent again */
	long fsreq;			/* FUSE requests to fs/ */
	long preempt;			/* the FUSE thread preempted */
	uint64_t done;			/* seeds finished */
	uint64_t failed;
	long steps;
	bool finished;			/* the child ran to the end of the range */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seeds known to fail (engine bugs, README.md), skipped by a range. */
static uint64_t *skip;
static int nskip;

static bool skipped(uint64_t s)
{
	for (int i = 0; i < nskip; i++)
		if (skip[i] == s)
			return true;
	return false;
}

/* LeakSanitizer's check of what is unreachable now, in the sanitizer build
 * (weak: sim-fast has none).  A child ends with _exit(), which runs no
 * check at exit, so it asks for one itself. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static void run_range(struct progress *pg, uint64_t first, uint64_t end)
{
	for (uint64_t s = first; s < end; s++) {
		long c0 = sim_cohort_grants, l0 = sim_linger_grants, d0 = sim_data_sets;
		long r0 = sim_reads, a0 = sim_reads_again;
		long f0 = sim_fs_requests, p0 = sim_preemptions;

		if (skipped(s))
			continue;
		pg->seed = s;
		pg->started = now_s();
		pg->failed += !run_seed(s, false, &pg->steps);
		pg->cohort += sim_cohort_grants - c0;
		pg->linger += sim_linger_grants - l0;
		pg->data += sim_data_sets - d0;
		pg->reads += sim_reads - r0;
		pg->again += sim_reads_again - a0;
		pg->fsreq += sim_fs_requests - f0;
		pg->preempt += sim_preemptions - p0;
		pg->done++;
	}
	/* a failed seed's world is buried, reachable: a leak is a passing one's */
	if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
		printf("seeds %" PRIu64 "..%" PRIu64 ": FAILED: memory leaked (the report above; "
		       "replay each seed with -r)\n", first, end - 1);
		pg->failed++;
	}
	pg->finished = true;
}

/* Watch one child on its way through [@pg->seed, @end). */
static void watch_child(struct progress *pg, pid_t pid)
{
	int status;

	for (;;) {
		struct timespec ts = { 0, 20 * 1000000L };

		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (now_s() - pg->started > SEED_HANG_S) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("seed %" PRIu64 ": FAILED: hang: still running after %d s\n",
			       pg->seed, SEED_HANG_S);
			break;
		}
		nanosleep(&ts, NULL);
	}
	if (!pg->finished && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
		printf("seed %" PRIu64 ": FAILED: crashed (see the report above)\n", pg->seed);
}

int main(int argc, char **argv)
{
	bool replay = argc == 3 && strcmp(argv[1], "-r") == 0;

	if (argc >= 2 && strcmp(argv[1], "-s") == 0) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		return sim_scenarios(argc > 2 ? argv[2] : NULL) ? 0 : 1;
	}
	uint64_t first, count, next;
	struct progress *pg;
	double t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: sim FIRST COUNT [SKIP...] | sim -r SEED | sim -s [NAME]\n");
		return 2;
	}
	skip = calloc((size_t)argc, sizeof(*skip));
	for (int i = 3; !replay && skip && i < argc; i++)
		skip[nskip++] = strtoull(argv[i], NULL, 0);
	first = strtoull(argv[replay ? 2 : 1], NULL, 0);
	if (replay) {
		long steps = 0;

		return run_seed(first, true, &steps) ? 0 : 1;
	}
	count = strtoull(argv[2], NULL, 0);
	pg = mmap(NULL, sizeof(*pg), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	if (pg == MAP_FAILED)
		return 2;
	memset(pg, 0, sizeof(*pg));
	t0 = now_s();
	for (next = first; next < first + count && !pg->finished;) {
		pid_t pid;

		pg->seed = next;
		pg->started = now_s();
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			run_range(pg, next, first + count);
			fflush(stdout);
			_exit(0);
		}
		watch_child(pg, pid);
		if (!pg->finished) {	/* that seed took the child down */
			pg->failed++;
			pg->done++;
			next = pg->seed + 1;
		}
	}
	{
		double dt = now_s() - t0;

		printf("sim: %" PRIu64 " seeds from %" PRIu64 ", %" PRIu64 " failed, "
		       "%d known bad skipped; %ld steps, %ld cohort hand-offs, %ld lingering "
		       "grants, %ld FUSE requests, %ld preemptions, %ld data sets, %ld READs "
		       "(%ld across a loss); %.2f s: %.0f seeds/s, %.0f steps/s\n",
		       pg->done, first, pg->failed, nskip, pg->steps, pg->cohort, pg->linger,
		       pg->fsreq, pg->preempt, pg->data, pg->reads, pg->again, dt, pg->done / dt,
		       pg->steps / dt);
	}
	return pg->failed ? 1 : 0;
}
