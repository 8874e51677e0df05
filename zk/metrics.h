/*
 * zk/metrics.h - the mount's figures, for user.zklockfs.metrics (the
 * Prometheus text format, version 0.0.4).
 *
 * One set per process (one daemon serves one mount).  Every figure is a
 * C11 atomic updated with relaxed order: no lock, no allocation, safe
 * from any thread, including with the engine's lock held; a plain lock's
 * open and close pay a few atomic adds.  A reader sees each figure whole,
 * not all of them at one instant.  The time in doubt alone is kept under
 * a mutex of its own (its parts are read together), taken by the
 * session's supervisor and the reader, never under another lock.
 *
 * Writers: the engine (zk/waiter.c, zk/retry.c, zk/release.c, zk/lock.c,
 * zk/linger.c: answers, losses, releases, local grants), the session
 * (zk/session.c: connection losses, expiries, doubt, state) and fs/attr.c (the
 * directory owners it keeps).
 * Reader: zkm_format(), on a FUSE thread.
 */
#ifndef ZK_METRICS_H
#define ZK_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum zkm_loss { ZKM_LOSS_DELETED, ZKM_LOSS_SILENT, ZKM_LOSS_EXPIRED, ZKM_LOSS_N };

/* zkm_loss_name() - "deleted", "silent" or "expired": the word the metrics,
 * ZKLFS_IOC_LOSS and the log use for @cause ("?" out of range).  Pure. */
const char *zkm_loss_name(enum zkm_loss cause);
/* Grants made without waiting for the server: docs/DESIGN.md §12, §13. */
enum zkm_local { ZKM_LOCAL_COHORT, ZKM_LOCAL_LINGER, ZKM_LOCAL_N };

/* zkm_now_us() - the monotonic clock the durations are read on. */
uint64_t zkm_now_us(void);

/* A waiter was enqueued (+1 waiting). */
void zkm_enqueued(void);
/* It was answered: granted after @waited_us (a holder from now on), or
 * refused with @err (EAGAIN and EINTR are counted). */
void zkm_granted(uint64_t waited_us);
void zkm_refused(int err);
/* A grant was a cohort hand-off, or on a lingering entry. */
void zkm_local_grant(enum zkm_local how);
/* An entry began (+1) or ended (-1) to linger. */
void zkm_lingering(int delta);
/* The table of directory owners (fs/attr.c) grew (+1) or shrank (-1). */
void zkm_dir_owners(int delta);
/* A holder gave its lock back after holding it @held_us. */
void zkm_released(uint64_t held_us);
/* A holder's lock was lost. */
void zkm_lost(enum zkm_loss cause);
/* The session lost its connection, expired, or changed state (a
 * ZOO_*_STATE). */
void zkm_connection_lost(void);
void zkm_expired(void);
/* +1: the mount opened a session; -1: it closed one it no longer needed */
void zkm_session_opened(int delta);
/* a free lock directory moved to a less busy session of the mount */
void zkm_lock_moved(void);
void zkm_session_state(int state);
/* A session entered doubt (zks_doubtful()): returns when, for
 * zkm_doubt_ended(), which says it left it. */
uint64_t zkm_doubt_began(void);
void zkm_doubt_ended(uint64_t began_us);

/*
 * zkm_status() - one line for a service manager (systemd's
 * STATUS=): the session's state, the locks held and waited for, the losses
 * so far, into @buf (@cap bytes, truncated).  Return: @buf.
 */
char *zkm_status(char *buf, size_t cap);

/*
 * zkm_format() - every figure, in the Prometheus text format, into
 * @buf (@cap bytes).  Return: the length, or the length it would need if
 * more than @cap (as snprintf()).
 */
size_t zkm_format(char *buf, size_t cap);

#endif
