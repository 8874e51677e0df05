/* fs/attr.c - what stat says of znodes. */
#include "fs/zklockfs.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The uid= line of an entry's holder data, or -1. */
static long data_uid(const char *data, int len)
{
	for (int i = 0; data && i + 4 < len; i++) {
		if ((i == 0 || data[i - 1] == '\n') && memcmp(data + i, "uid=", 4) == 0) {
			char num[16];
			int n = 0;

			for (i += 4; i < len && n < 15 && data[i] >= '0' && data[i] <= '9'; i++)
				num[n++] = data[i];
			num[n] = '\0';
			return n ? strtol(num, NULL, 10) : -1;
		}
	}
	return -1;
}

static void ms_to_ts(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

void zklfs_fill_attr(struct zklfs *fs, struct stat *st, fuse_ino_t ino,
		     enum node_type type, const struct Stat *zs,
		     const char *data, int len)
{
	long uid = data_uid(data, len);

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = uid >= 0 ? (uid_t)uid : fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	if (type == NODE_DIR) {
		st->st_mode = S_IFDIR | 01777;
		st->st_nlink = 2;
		st->st_size = zs->numChildren;
		ms_to_ts(zs->ctime, &st->st_ctim);
		ms_to_ts(zs->mtime, &st->st_mtim);
		st->st_atim = st->st_mtim;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = zs->dataLength;
		ms_to_ts(zs->ctime, &st->st_ctim);
		st->st_mtim = st->st_atim = st->st_ctim;
	}
	st->st_blocks = (st->st_size + 511) / 512;
}

void zklfs_pending_attr(struct zklfs *fs, struct stat *st, struct node *n)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_uid = n->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_atim = st->st_ctim = st->st_mtim;
}

bool zklfs_hidden(struct zklfs *fs, const char *dir, const char *name)
{
	return strcmp(dir, "/") == 0 && strcmp(fs->conf->root, "/") == 0 &&
	       strcmp(name, "zookeeper") == 0;
}
