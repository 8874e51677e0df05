/*
 * abi/zklockfs.h - the interface between the daemon and the programs that
 * talk to it beside the file system calls: the ioctls on a lock's
 * descriptor, and the heartbeat file zklock's watchdog reads.  Two
 * programs built apart (zklockfs, zklock, and anyone's own) must agree on
 * every number and layout here, so it lives apart from both: fs/ and zk/
 * implement it, tools/zklock uses it, and it includes no other header of
 * ours.  Changing a layout changes its magic or its ioctl number.
 */
#ifndef ABI_ZKLOCKFS_H
#define ABI_ZKLOCKFS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>

/*
 * The ioctls: what a program asks of its own descriptor of a lock.
 * FUSE's getxattr carries no descriptor, so the
 * state and fencing token of a lock file's holder (which has no entry
 * file to ask) are read through the descriptor that holds it:
 *
 *	struct zklfs_ioc_text t;
 *	ioctl(fd, ZKLFS_IOC_TOKEN, &t);		// t.text: "CZXID SEQ"
 *
 * ZKLFS_IOC_STATE gives what user.zklockfs.state gives an entry: "held",
 * "waiting", "revoking", "doubt" (the mount cannot tell whether ZooKeeper
 * still keeps the entry) or "lost".  ZKLFS_IOC_TOKEN gives the fencing
 * token, as user.zklockfs.token does.  Both also work on an entry's
 * holder descriptor.  A descriptor that holds and waits for nothing:
 * ENOLCK; another ioctl: ENOTTY.  The numbers, for other languages:
 * ZKLFS_IOC_STATE 0x80405a01, ZKLFS_IOC_TOKEN 0x80405a02, each filling
 * 64 bytes with a NUL-terminated text (Python:
 * fcntl.ioctl(fd, 0x80405a02, bytes(64)).rstrip(b"\0")).
 *
 * ZKLFS_IOC_KIND (0x80405a05) gives the kind of the lock the descriptor
 * holds, "exclusive" or "shared" (a nested zklock under a shared one must
 * not run as if it held the lock exclusive); ENOLCK if it holds none.
 *
 * ZKLFS_IOC_LOSS (0x80405a04) says why a lost lock was lost: "deleted"
 * (its entry was deleted by someone else), "silent" (the mount heard
 * nothing from ZooKeeper for the session timeout less the margin) or
 * "expired" (ZooKeeper expired the session); ENOLCK if it is not lost.
 *
 * ZKLFS_IOC_TELL (0x5a06, no argument) says that the program holding
 * through the descriptor handles a loss itself (a service that steps
 * down when poll() reports POLLERR): with -o on_loss=end the mount then
 * ends none of the processes that have its open file description open
 * when its lock is lost.  On a lock file it holds for the description,
 * before and after it locks; on an entry's holder descriptor, from then
 * on; a reader's descriptor of an entry: ENOLCK.
 *
 * ZKLFS_IOC_SETSTATE (0x7ffc5a07) sets the state of the lock the
 * descriptor holds exclusively (LOCKDIR/.state: docs/SPEC.md, "State that
 * only the holder may change") to the first len bytes of data, at most
 * ZKLFS_STATE_MAX (0: empty); ZooKeeper applies it only if the holder's
 * entry still exists, in the same multi.  It returns once applied: EIO if
 * the lock is gone (even if the mount had not heard so yet), EACCES from a
 * descriptor that does not hold the lock exclusively (a shared holder, a
 * semaphore slot, a reader, a waiter), EFBIG if the lock's data would not
 * fit, EINVAL for a len past the data; EINTR or ETIMEDOUT as any request
 * that waits on ZooKeeper (whether that set lands is then unknown, as for
 * a write), EAGAIN if the lock's data kept changing under it.  Python: struct.pack("I", len(s)) +
 * s padded to 16380 bytes, in a bytearray (fcntl.ioctl copies an immutable
 * argument only up to 1024 bytes).
 *
 * ZKLFS_IOC_RUN (0xc0d85a08) is zklock --once-per's, on the descriptor
 * that holds a lock exclusively, fenced as ZKLFS_IOC_SETSTATE: with a
 * period, record a run in the lock znode's data unless one recorded there
 * started less than the period ago, on the times the ensemble stamps on
 * the lock's znode (ran 1: recorded, start_ms its stamp; ran 0: skip,
 * start_ms and label the run that counts); with period 0, record the exit
 * status of the run of start_ms if the lock's data still names it.
 *
 * ZKLFS_IOC_WATCHDOG (0x81005a03) gives a holder what zklock's watchdog
 * reads without asking the daemon (the heartbeat file below, fs/watchdog.h): the
 * path of the daemon's heartbeat file, its owner (the daemon's uid: zklock
 * trusts no other), the slot of the lock's session in it, and that
 * session's generation now.  A descriptor that does not hold
 * its lock: ENOLCK; a daemon without the file: EOPNOTSUPP.
 *
 * No code; included by fs/fdops.c and tools/zklock.
 */

struct zklfs_ioc_text {
	char text[64];
};

struct zklfs_ioc_watchdog {
	char path[240];			/* NUL-terminated */
	uint32_t slot;
	uint32_t uid;			/* the daemon's: the file's owner */
	uint64_t gen;
};

#define ZKLFS_IOC_STATE _IOR('Z', 1, struct zklfs_ioc_text)
#define ZKLFS_IOC_TOKEN _IOR('Z', 2, struct zklfs_ioc_text)
#define ZKLFS_IOC_WATCHDOG _IOR('Z', 3, struct zklfs_ioc_watchdog)
#define ZKLFS_IOC_LOSS _IOR('Z', 4, struct zklfs_ioc_text)
#define ZKLFS_IOC_KIND _IOR('Z', 5, struct zklfs_ioc_text)
#define ZKLFS_IOC_TELL _IO('Z', 6)

/* The most state one ZKLFS_IOC_SETSTATE sets: an ioctl's argument is at
 * most 16 KiB less one byte. */
#define ZKLFS_STATE_MAX 16376

struct zklfs_ioc_state {
	uint32_t len;			/* bytes of data that are the state */
	char data[ZKLFS_STATE_MAX];
};

#define ZKLFS_IOC_SETSTATE _IOW('Z', 7, struct zklfs_ioc_state)

struct zklfs_ioc_run {
	uint64_t period_ms;	/* in: claim this period's run; 0: record
				   exit_status for the run of start_ms */
	int64_t start_ms;	/* out: the run that counts, as the ensemble
				   stamped it (ms since the epoch); in, with
				   period_ms 0: ours */
	int32_t exit_status;	/* in, with period_ms 0 */
	uint32_t ran;		/* out: 1: ours counts (recorded), 0: skip */
	char label[192];	/* in: ours ("HOST PID"); out: the one that
				   counts; NUL-terminated */
};

#define ZKLFS_IOC_RUN _IOWR('Z', 8, struct zklfs_ioc_run)

/*
 * The heartbeat file: how long a session is surely alive, published in
 * memory that another process reads without asking the daemon.
 *
 * zklock runs a command under a lock; if the daemon holding that lock
 * stops (SIGSTOP, a freeze, swapped out), it can no longer say that the
 * lock is lost, and a question to the mount would hang with it.  So each
 * session of the daemon publishes, in a file it maps shared (fs/watchdog.c
 * makes it; its path reaches zklock through ZKLFS_IOC_WATCHDOG, above),
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
 * Lock-free 64-bit atomics.
 */

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
