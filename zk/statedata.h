/*
 * zk/statedata.h - the state a lock's holder publishes (LOCKDIR/.state),
 * as it lives in the lock znode's own data.
 *
 * The lock znode's data is a list of lines: settings (zk/limit.h:
 * "limit=N", "linger=MS"), a lock file's mark, anything another client
 * wrote.  The state is one more line, "state=" and the state's bytes in
 * base64 (RFC 4648, with padding), so that whatever bytes a holder
 * publishes, newlines included, never read as a line of its own: a
 * state of "x\nlimit=1" must not set a limit.  No line: the state is
 * empty.  Another client reads it with any base64 decoder.
 *
 * Pure code: no ZooKeeper, no FUSE, no locks, no allocation; any thread.
 */
#ifndef ZK_STATEDATA_H
#define ZK_STATEDATA_H

#include <stddef.h>
#include <sys/types.h>

#define ZKSD_KEY "state="

/* zksd_encoded_len() - the length of the line that holds @len bytes of
 * state, its newline included. */
size_t zksd_encoded_len(size_t len);

/*
 * zksd_edit() - @data (@len bytes, anyone's, may be NULL) with its state
 * line replaced by one holding @state (@slen bytes; 0: the line removed),
 * where the first one was, or appended; every other line kept as it is.
 * Into @out (@cap bytes; not overlapping @data).
 * Return: the new length, or -E2BIG if it does not fit.
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

#endif
