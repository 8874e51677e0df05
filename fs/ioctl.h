/*
 * fs/ioctl.h - what a program asks of its own descriptor of a lock: the
 * ioctls of zklockfs.  FUSE's getxattr carries no descriptor, so the
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
 * reads without asking the daemon (zk/heartbeat.h, fs/watchdog.h): the
 * path of the daemon's heartbeat file, its owner (the daemon's uid: zklock
 * trusts no other), the slot of the lock's session in it, and that
 * session's generation now.  A descriptor that does not hold
 * its lock: ENOLCK; a daemon without the file: EOPNOTSUPP.
 *
 * No code; included by fs/fdops.c and tools/zklock.
 */
#ifndef FS_IOCTL_H
#define FS_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

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

#endif
