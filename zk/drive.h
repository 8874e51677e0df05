/*
 * zk/drive.h - the one loop that does the ZooKeeper client's I/O.
 *
 * The mount links the ZooKeeper C client built single-threaded
 * (libzookeeper_st): a handle does nothing on its own; a loop asks it what
 * it waits for (zookeeper_interest()), polls, and hands it what came
 * (zookeeper_process()), which runs the completions and watchers there
 * and then.  The multi-threaded client runs two threads per session for
 * this, and every request crossed three of them (the caller queues it and
 * wakes the I/O thread through a pipe, which sends; the answer is read by
 * the I/O thread, which wakes the completion thread through a condition
 * variable).  Here the thread that serves FUSE drives every session too
 * (fs/main.c: zkd_run() with /dev/fuse), so a FUSE request's ZooKeeper call
 * is sent by the thread that made it, and its answer is read, completed
 * and answered to the kernel by that same thread.
 *
 * The token.  One thread at a time drives: it holds the token, and only a
 * thread holding the token touches a handle (calls zoo_*() on it,
 * replaces it, closes it).  zkd_run() holds it for as long as it runs;
 * before it runs (the mount's start) and after (its stop), a thread that
 * waits for ZooKeeper takes it for a turn at a time (zkd_wait()).  Any
 * other thread's call is queued for the driver and the driver woken
 * (zk/calls.c); completions and watchers therefore run on the driving
 * thread, never two at once.
 *
 * Clients.  A session is a client of the loop (struct zkd_client): before
 * each poll the driver asks it for its descriptor, what to wait for and
 * until when (prepare, which also sends what other threads queued), and
 * after it hands it what came (process).  Both run with the token.
 *
 * Locks: the token (a mutex), and the clients' list, guarded by the token
 * too (added and removed only by a thread that holds it).
 */
#ifndef ZK_DRIVE_H
#define ZK_DRIVE_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct zkd_client {
	/*
	 * What to poll for: *@fd (-1: nothing), *@events (POLLIN, POLLOUT),
	 * and a wait of at most *@timeout_ms (already at most the caller's).
	 * With the token.
	 */
	void (*prepare)(struct zkd_client *c, int *fd, short *events, int *timeout_ms);
	/* what the poll saw on that descriptor (0: it timed out). With the token. */
	void (*process)(struct zkd_client *c, short revents);
	struct zkd_client *next;	/* the token's */
};

/*
 * zkd_add() - drive @c from the next turn on; zkd_remove() - no more.
 * Any thread that holds no lock a completion takes: they take the token
 * (wait for a turn, or a run, to let it go).  zkd_remove() returns once
 * no turn uses @c any more.
 */
void zkd_add(struct zkd_client *c);
void zkd_remove(struct zkd_client *c);

/* zkd_driving() - does the calling thread hold the token? */
bool zkd_driving(void);

/*
 * zkd_wake() - have the driver look again at once (a call was queued for
 * it, a handle was replaced).  Any thread; never blocks.
 */
void zkd_wake(void);

/*
 * zkd_run() - drive every client, and @fd (-1: none) beside them, until
 * @serve says to stop.  Takes the token for the whole run.  Each turn
 * calls @serve(@arg, ready), ready saying whether @fd is readable; it
 * returns true to go on, false to end the run.  A turn waits at most
 * @tick_ms (-1: only for the clients and @fd), so a @serve that watches a
 * flag set by a signal handler sees it.  One thread; never from a
 * completion.
 */
void zkd_run(int fd, bool (*serve)(void *arg, bool ready), void *arg, int tick_ms);

/*
 * zkd_wait() - wait until @done(@arg) is true, at most until @deadline
 * (CLOCK_MONOTONIC; NULL: no bound).  Called with @mu held, which guards
 * what @done reads, and returns with it held; @cv is broadcast (under @mu)
 * by whoever makes @done true.  When no thread drives, the caller drives
 * a turn at a time meanwhile, and then runs the completions.  Never from a
 * completion, nor holding a lock a completion takes (but @mu, released
 * while it drives).  Return: true if @done, false at the deadline.
 */
bool zkd_wait(pthread_mutex_t *mu, pthread_cond_t *cv, bool (*done)(void *arg),
	      void *arg, const struct timespec *deadline);

#endif
