/*
 * zk/statedata.h - the state a lock's holder publishes (LOCKDIR/.state),
 * as it lives in the lock znode's own data.
 *
 * The lock znode's data is a list of lines: settings (zk/settings.h:
 * "limit=N", "linger=MS"), a lock file's mark, anything another client
 * wrote.  The state is one more line, "state=" and the state's bytes in
 * base64 (RFC 4648, with padding), so that whatever bytes a holder
 * publishes, newlines included, never read as a line of its own: a
 * state of "x\nlimit=1" must not set a limit.  No line: the state is
 * empty.  Another client reads it with any base64 decoder.
 *
 * The last run of `zklock --once-per` is a line of its own, "run=START
 * EXIT LABEL": START the milliseconds since the epoch the ensemble stamped
 * on the lock's znode when the run was recorded (0: being recorded), EXIT
 * its exit status or "-" while it runs, LABEL (host and pid) in base64.
 *
 * Pure code: no ZooKeeper, no FUSE, no locks (zksd_edit() allocates its
 * line: -ENOMEM); any thread.
 */
#ifndef ZK_STATEDATA_H
#define ZK_STATEDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ZKSD_KEY "state="
#define ZKSD_RUN_KEY "run="
#define ZKSD_LABEL_MAX 192	/* a run's label, its NUL included */

/* zksd_encoded_len() - the length of the line that holds @len bytes of
 * state, its newline included. */
size_t zksd_encoded_len(size_t len);

/*
 * zksd_edit() - @data (@len bytes, anyone's, may be NULL) with its state
 * line replaced by one holding @state (@slen bytes; 0: the line removed),
 * where the first one was, or appended; every other line kept as it is.
 * Into @out (@cap bytes; not overlapping @data).
 * Return: the new length, or -E2BIG if it does not fit (-ENOMEM).
 */
ssize_t zksd_edit(const char *data, size_t len, const void *state, size_t slen,
		  char *out, size_t cap);

/*
 * zksd_read() - the state @data (@len bytes, anyone's) holds: the first
 * state line's bytes, decoded, into @out (@cap bytes).
 * Return: its length (0: no line, or an empty one), -EINVAL if the line
 * is not base64 (written by hand), -E2BIG if it does not fit @cap.
 */
ssize_t zksd_read(const char *data, size_t len, char *out, size_t cap);

/* A run of zklock --once-per, as its line says. */
struct zksd_run {
	int64_t start_ms;		/* the ensemble's stamp; 0: being recorded */
	bool exited;
	int exit_status;		/* if exited */
	char label[ZKSD_LABEL_MAX];	/* "HOST PID", NUL-terminated */
};

/*
 * zksd_run_read() - the run @data (@len bytes, anyone's) records into
 * *@run.  Return: false if none, or its line is garbled.
 */
bool zksd_run_read(const char *data, size_t len, struct zksd_run *run);

/*
 * zksd_run_edit() - @data with its run line replaced by @run's (NULL: the
 * line removed), where the first one was, or appended; into @out (@cap
 * bytes).  Return: the new length, or -E2BIG.
 */
ssize_t zksd_run_edit(const char *data, size_t len, const struct zksd_run *run,
		      char *out, size_t cap);

#endif
