/*
 * tests/sim/script.h - the tools of the scripted scenarios (scenarios.c,
 * fsscenarios.c): the network moved by hand, the driver's acts, and what
 * a script expects.  Each tool checks the invariants after each step it
 * takes (did()).  One thread.
 */
#ifndef SIM_SCRIPT_H
#define SIM_SCRIPT_H

#include "tests/sim/sim.h"

/* The world of every scenario is seed SC_SEED's (a plain lock in d0, no
 * linger, no faults); a script sets a limit or a linger itself. */
#define SC_SEED 1

/* expect() - record a violation "expected: ..." unless @ok */
void expect(struct world *wd, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* did() - a step the script took, if @moved: the clock moves, the
 * invariants are checked.  Return: @moved. */
bool did(struct world *wd, bool moved);
struct sn_mount *M(struct world *wd, int m);
/* every request queued on mount @m applied by the server; every reply read;
 * every reply delivered (old handle first); the supervisor's due events */
bool apply_all(struct world *wd, int m);
bool read_all(struct world *wd, int m);
bool deliver_all(struct world *wd, int m);
bool events(struct world *wd, int m);
/* quiesce() - every mount, round by round, until nothing moves (no tick);
 * quiesce_mount() - mount @m alone */
void quiesce(struct world *wd);
void quiesce_mount(struct world *wd, int m);
/* the driver's own waiters (the engine called directly): enqueue() returns
 * the driven id; release() gives it back */
int enqueue(struct world *wd, int m, int dir, enum zkn_kind kind, int flags);
void release(struct world *wd, int id);
void tick(struct world *wd, int m);
/* unlink_entry() - another client deletes @id's entry */
void unlink_entry(struct world *wd, int id);
bool granted(const struct world *wd, int id);
bool waits(const struct world *wd, int id);
/* suspend() - mount @m's host sleeps past the session timeout */
void suspend(struct world *wd, int m);

/* sim_walk() - tools/walk records the engine's calls while on (walk.c) */
void sim_walk(bool on);

/* fsscenarios.c: the scenarios of the FUSE side */
void interrupt_races_the_grant(struct world *wd);
void lost_before_its_answer(struct world *wd);
void second_open_queues(struct world *wd);
void lockfile_close_of_a_copy(struct world *wd);
void data_before_the_delete(struct world *wd);
void fsync_after_a_lost_flush(struct world *wd);
void second_fsync_after_lost_sets(struct world *wd);
void observer_follows_the_queue(struct world *wd);
void read_sent_again_after_a_loss(struct world *wd);
void read_answered_by_its_deadline(struct world *wd);

#endif
