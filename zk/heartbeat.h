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
 * A time namespace (a container, `unshare -T`, a CRIU restore) shifts that
 * clock by its offset, so the file also says the daemon's offset
 * (/proc/self/timens_offsets), and a reader in another namespace adds the
 * difference: both then measure the initial namespace's boot time.
 * Writers: the session's supervisor and ZooKeeper threads (zk/session.c),
 * gen first, then until_ms, with release stores; readers load until_ms,
 * then gen: an until_ms of a new session is never seen with the old gen.
 *
 * Two inline functions and no other header of ours: included by
 * zk/session.c, fs/watchdog.c and tools/zklock, whose layouts must agree.
 * Lock-free 64-bit atomics.
 */
#ifndef ZK_HEARTBEAT_H
#define ZK_HEARTBEAT_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

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
#define ZK_HEARTBEAT_MAGIC	"zklhb02"	/* and its NUL: 8 bytes */
#define ZK_HEARTBEAT_SLOTS	16

struct zk_heartbeat_file {
	char magic[8];
	uint32_t slots;			/* in use */
	uint32_t pid;			/* the daemon's */
	int64_t boottime_offset_ms;	/* of the daemon's time namespace: its
					   CLOCK_BOOTTIME less the initial one's */
	struct zk_heartbeat slot[ZK_HEARTBEAT_SLOTS];
};

/*
 * zk_heartbeat_verdict() - what a watcher that saw generation @armed when
 * its lock was held makes of the slot's @gen and @until at @now (on the
 * daemon's clock): ZK_HB_REPLACED once the session is another (an expiry:
 * its locks went with the old one, whatever the new one's instants say),
 * ZK_HB_DUE from @until on (the lock may be another host's a margin
 * later), else ZK_HB_ALIVE (an @until of 0: not connected yet).  Pure.
 */
enum zk_hb_verdict { ZK_HB_ALIVE, ZK_HB_REPLACED, ZK_HB_DUE };

static inline enum zk_hb_verdict zk_heartbeat_verdict(uint64_t armed, uint64_t gen,
						      uint64_t until, uint64_t now)
{
	if (gen != armed)
		return ZK_HB_REPLACED;
	return until && now >= until ? ZK_HB_DUE : ZK_HB_ALIVE;
}

/*
 * zk_boottime_offset_ms() - the CLOCK_BOOTTIME offset of this process's
 * time namespace, in ms, from /proc/self/timens_offsets ("boottime SECS
 * NSECS"); 0 without time namespaces.  Inline: zklock and the daemon
 * read it alike.
 */
static inline int64_t zk_boottime_offset_ms(void)
{
	FILE *f = fopen("/proc/self/timens_offsets", "re");
	char line[128];
	long long sec, nsec;
	int64_t off = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "boottime %lld %lld", &sec, &nsec) == 2 ||
		    sscanf(line, "7 %lld %lld", &sec, &nsec) == 2)	/* CLOCK_BOOTTIME */
			off = (int64_t)sec * 1000 + (int64_t)nsec / 1000000;
	fclose(f);
	return off;
}

#endif
