/*
 * zk/heartbeat.h - how long a session is surely alive, published in
 * memory that another process reads without asking the daemon.
 *
 * zklock runs a command under a lock; if the daemon holding that lock
 * stops (SIGSTOP, a freeze, swapped out), it can no longer say that the
 * lock is lost, and a question to the mount would hang with it.  So each
 * session of the daemon publishes, in a file it maps shared (fs/watchdog.c
 * makes it; its path reaches zklock through ZKLFS_IOC_WATCHDOG, fs/ioctl.h),
 * until when the server surely still keeps the session: the last time the
 * server was heard (a ping's send), plus the session timeout, less the
 * margin.  That is the very instant at which the daemon itself declares
 * its held locks lost (zk/session.h, zks_quiet()): the daemon and zklock
 * use one margin, a tenth of the session timeout, 20 ms to 1 s.  The
 * server expires the session a margin later at the earliest, and only
 * then may another client be granted the lock.
 *
 * The clock is CLOCK_BOOTTIME in milliseconds: it runs through a suspend.
 * Writers: the session's supervisor and ZooKeeper threads (zk/session.c),
 * gen first, then until_ms, with release stores; readers load until_ms,
 * then gen: an until_ms of a new session is never seen with the old gen.
 *
 * No code and no other header: included by zk/session.c, fs/watchdog.c
 * and tools/zklock, whose layouts must agree.  Lock-free 64-bit atomics.
 */
#ifndef ZK_HEARTBEAT_H
#define ZK_HEARTBEAT_H

#include <stdatomic.h>
#include <stdint.h>

/* One session's.  All zero until the session is first connected. */
struct zk_heartbeat {
	_Atomic uint64_t gen;		/* the session's handle: another value
					   once it was replaced (an expiry) */
	_Atomic uint64_t until_ms;	/* surely alive on the server until then */
	_Atomic uint64_t alive_ms;	/* the supervisor's last look: the
					   daemon ran then */
	_Atomic uint64_t margin_ms;	/* the margin taken off until_ms */
};

/* The file: a header, then one slot per session of the mount. */
#define ZK_HEARTBEAT_MAGIC	"zklhb01"	/* and its NUL: 8 bytes */
#define ZK_HEARTBEAT_SLOTS	16

struct zk_heartbeat_file {
	char magic[8];
	uint32_t slots;			/* in use */
	uint32_t pid;			/* the daemon's */
	struct zk_heartbeat slot[ZK_HEARTBEAT_SLOTS];
};

#endif
