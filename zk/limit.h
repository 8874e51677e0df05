/*
 * zk/limit.h - a semaphore's limit, as the lock znode's data keeps it.
 *
 * `setfattr -n user.zklockfs.limit -v N DIR` stores a line "limit=N" (1 <=
 * N <= ZKL_LIMIT_MAX, zk/grant.h) in the data of DIR's znode, where every
 * mount and client reads it; other lines of that data are kept as they
 * are.  Pure code: no ZooKeeper, no FUSE, no locks, no allocation; any
 * thread.
 */
#ifndef ZK_LIMIT_H
#define ZK_LIMIT_H

#include <stddef.h>

/*
 * zkl_limit_parse() - the limit @data (@len bytes, not NUL-terminated, may
 * hold anything another client wrote) sets.
 * Return: N from the first line that reads exactly "limit=N" with N in
 * range and no leading zero; 0 (no limit: a plain lock) otherwise.
 */
unsigned zkl_limit_parse(const char *data, size_t len);

/*
 * zkl_limit_value() - the value a user gives setfattr: decimal digits, no
 * sign, no leading zero, an optional final newline.
 * Return: 0 and *@out, or -EINVAL (not a number, or out of range: 0 and
 * anything over ZKL_LIMIT_MAX are refused, not clamped).
 */
int zkl_limit_value(const char *val, size_t len, unsigned *out);

/*
 * zkl_limit_edit() - @data with its "limit=" lines replaced by one line
 * "limit=@limit" (first, where the first one was, or appended), or removed
 * when @limit is 0, into @out (@cap bytes; @out may not overlap @data).
 * Return: the new length, or -E2BIG if it does not fit.
 */
int zkl_limit_edit(const char *data, size_t len, unsigned limit, char *out,
		   size_t cap);

#endif
