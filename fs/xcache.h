/*
 * fs/xcache.h - what one process just read, for its next few requests.
 *
 * `getfattr -d ENTRY` is an lstat, a listxattr and, per attribute, a
 * getxattr for the size and one for the value, and the kernel looks the
 * entry up again before each: it keeps no entry (they come and go behind
 * its back).  Answered one by one that was 18 reads on the server for one
 * command, and `zklock --list` of 5 entries 78.  So what the daemon reads
 * for a process is kept for ZKLFS_XCACHE_MS, for that process alone (the
 * thread FUSE names): the rest of its command shares it, and no other
 * process is ever answered from a read older than its own request.  Kept:
 * an entry's Stat and its data if small (LOOKUP, GETATTR, READ,
 * user.zklockfs.token), a lock directory's limit and listing
 * (user.zklockfs.state), a lock file's queue as text
 * (user.zklockfs.queue, asked twice by every getxattr: its size, then its
 * value).  Anything this mount changes (mkdir, rmdir,
 * unlink, a grant, a give-back, a write sent, a setting) drops it all
 * (zklfs_xc_changed()); a change by another client is seen at most
 * ZKLFS_XCACHE_MS late, by the process that just looked.
 *
 * Its state is under its own mutex, which takes no other; any thread.
 */
#ifndef FS_XCACHE_H
#define FS_XCACHE_H

#include <stdbool.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

#include "fs/mount.h"

#define ZKLFS_XCACHE_MS 200
/* An entry's data is kept with its Stat up to this size (holder lines). */
#define ZKLFS_XCACHE_DATA_MAX 4096

/* zklfs_xc_init(), zklfs_xc_free() - main thread, start and exit. */
int zklfs_xc_init(struct zklfs *fs);
void zklfs_xc_free(struct zklfs *fs);

/*
 * zklfs_xc_put_stat() - @pid just read the znode @path: its Stat @zs and,
 * if @data is not NULL, its @len bytes of data.  zklfs_xc_stat() - the Stat
 * @pid read of @path, if fresh, into *@zs; with @data, only if the data was
 * kept too: then *@data is a malloc'ed copy and *@len its length.
 */
void zklfs_xc_put_stat(struct zklfs *fs, pid_t pid, const char *path,
		       const struct Stat *zs, const char *data, int len);
bool zklfs_xc_stat(struct zklfs *fs, pid_t pid, const char *path,
		   struct Stat *zs, char **data, int *len);

/*
 * zklfs_xc_put_list() - @pid just read the lock @dir: its @limit (0: a
 * plain lock) and children @sv.  zklfs_xc_list() - those, if fresh: *@sv
 * a copy to free with deallocate_String_vector().
 */
void zklfs_xc_put_list(struct zklfs *fs, pid_t pid, const char *dir,
		       unsigned limit, const struct String_vector *sv);
bool zklfs_xc_list(struct zklfs *fs, pid_t pid, const char *dir,
		   unsigned *limit, struct String_vector *sv);

/*
 * zklfs_xc_put_queue() - @pid just read the queue of the lock file @path
 * as @text (@len bytes; kept up to ZKLFS_XCACHE_QUEUE_MAX).
 * zklfs_xc_queue() - that text, if fresh: *@text a malloc'ed copy.
 */
#define ZKLFS_XCACHE_QUEUE_MAX 65536
void zklfs_xc_put_queue(struct zklfs *fs, pid_t pid, const char *path,
			const char *text, size_t len);
bool zklfs_xc_queue(struct zklfs *fs, pid_t pid, const char *path, char **text,
		    size_t *len);

/* zklfs_xc_changed() - this mount changed something: forget every read. */
void zklfs_xc_changed(struct zklfs *fs);

#endif
