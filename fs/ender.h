/*
 * fs/ender.h - on_loss=end: the work that holds a lost lock ends.
 *
 * flock(1), a shell's `exec 9>F; flock -n 9` and most scripts never look
 * at their descriptor, so a lock lost under them (its entry deleted, the
 * session silent or expired) would leave their job running beside the
 * next holder's.  With -o on_loss=end the mount ends every process that
 * has the holding open file description open, and their descendants.
 *
 * The owner of a lock is the open file description, which /proc does not
 * name; two of its descriptors are the same description exactly when
 * kcmp(2) KCMP_FILE says so.  So a lock request notes, while its caller
 * waits in it, where the description can be found later (its anchors:
 * the caller's process and the descriptor its flock(2)/fcntl(2) names,
 * and the ancestors that hold that same description under the same
 * number, as the shell of `exec 9>` does), and at a loss a thread of its
 * own finds every descriptor of the lock's inode in /proc, keeps those
 * KCMP_FILE-equal to a live anchor's, and ends their processes.  An OPEN
 * that takes an entry has no descriptor yet: its anchor is the process
 * alone, and every descriptor of the entry's inode in it counts.
 * Nothing that decides a grant reads any of this.
 *
 * Who is never signalled: PID 1, the daemon itself and its ancestors (the
 * supervisor that runs it in the foreground: a lock one of them holds is
 * granted, and at a loss only told), a process that does
 * not have the description open (another waiter of the host, a reader)
 * unless it descends from one that has, and one whose start time is not
 * the anchor's (a reused pid).  When no anchor is alive and the inode has
 * more than one description open on the host, nothing is ended and one
 * line says so.
 *
 * The daemon's fs/reply.c calls it, the simulator never does.  Threads:
 * zklfs_holders_read() runs on the FUSE thread while its caller waits in
 * the request (a few reads of /proc: no walk of the whole table);
 * zklfs_ender_post() on any thread, under any lock (it only queues);
 * zklfs_ender_start() and zklfs_ender_stop() on the main thread.  The
 * ender's thread takes no lock of the mount's.
 */
#ifndef FS_ENDER_H
#define FS_ENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Where the open file description a lock request locks through can be
 * found again at a loss or an orderly stop: processes that had it
 * open when the request was made, each with the descriptor that names it
 * (-1: any of its descriptors of @ino) and its start time (a reused pid
 * is not the anchor).
 */
#define ZKLFS_ANCHORS 4
struct zklfs_anchor {
	pid_t pid;
	int fd;
	unsigned long long start;	/* /proc/PID/stat's starttime */
};
struct zklfs_holders {
	uint64_t ino;			/* the inode it is open on */
	int n;				/* anchors; 0: none known */
	bool unendable;			/* PID 1 has it open: no loss could
					   end it */
	struct zklfs_anchor a[ZKLFS_ANCHORS];
};

/* A lock held, whose holders an orderly stop ends (lockreq_ends_held()). */
struct zklfs_held {
	struct zklfs_holders h;
	char what[256];			/* its entry, for the log */
};

/*
 * zklfs_proc_text() - up to @size - 1 bytes of /proc/@pid/@what into @buf,
 * NUL-terminated.  Return: their length; 0 if it cannot be read (the
 * process gone, or not ours to read).  Any thread.
 */
size_t zklfs_proc_text(pid_t pid, const char *what, char *buf, size_t size);

/*
 * zklfs_holders_read() - the anchors of the description a lock request
 * of thread @tid (of process @pid) is made on, for the inode @ino: @pid,
 * the descriptor its blocked flock(2)/fcntl(2) names (from
 * /proc/TID/syscall; none for an OPEN), and the ancestors that hold the
 * same description under that number.  Into *@h.
 */
void zklfs_holders_read(pid_t tid, pid_t pid, uint64_t ino, struct zklfs_holders *h);

/*
 * zklfs_holders_reachable() - could this daemon end @pid, of uid @uid,
 * whose anchors are @h?  No for a process outside its pid namespace (@pid
 * 0), for PID 1 or a process sharing the description with it (never
 * signalled), and, unless the daemon runs as root, for another
 * uid's: such a lock is refused (ENOLCK) rather than granted to work no
 * one could end.
 */
bool zklfs_holders_reachable(pid_t pid, uid_t uid, const struct zklfs_holders *h);

/*
 * zklfs_ender_post() - the lock @what (its entry, for the log) whose
 * holders @h describe is lost, for the reason @why ("deleted", ...): end
 * them, SIGKILL at once (another host may hold the lock from now on), on
 * the ender's thread.  Never blocks; without a started ender, or out of
 * memory, one log line and nothing ended.
 */
void zklfs_ender_post(const struct zklfs_holders *h, const char *what, const char *why);

/*
 * zklfs_ender_stopping() - an orderly stop (SIGTERM to the daemon, the
 * unit stopped, `umount -l`): the holders of the @n locks @held end
 * before the sessions close, on a thread of its own while the caller
 * goes on serving their closes: SIGTERM, then after @grace_ms SIGKILL
 * for those left (and the children they forked meanwhile), then @done
 * (@arg), which ends the caller's serving.  One line says who ended how.
 * Return: 0, or a negative errno (no thread: @done is not called).
 * zklfs_ender_hurry() - another signal: SIGKILL now.
 * zklfs_ender_stopped() - wait for that thread.  Main thread.
 */
int zklfs_ender_stopping(const struct zklfs_held *held, size_t n, int grace_ms,
			 void (*done)(void *arg), void *arg);
void zklfs_ender_hurry(void);
void zklfs_ender_stopped(void);

/* zklfs_ender_start() - start the thread.  Return: 0 or a negative errno
 * (one log line: losses then end nothing). */
int zklfs_ender_start(void);

/* zklfs_ender_stop() - end what was posted, then stop the thread. */
void zklfs_ender_stop(void);

#endif
