/* fs/watchdog.c - the file zklock's watchdog reads (see watchdog.h). */
#include "fs/watchdog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zk/log.h"

#define HB_PREFIX "zklockfs-hb-"

_Static_assert(ZK_HEARTBEAT_SLOTS >= ZKLFS_SESSIONS_MAX, "a slot per session");

struct zklfs_watchdog {
	char path[sizeof(((struct zklfs_ioc_watchdog *)0)->path)];
	struct zk_heartbeat_file *map;
};

/*
 * Where the file goes: $ZKLOCKFS_HEARTBEAT_DIR if set (tests), else for
 * root /run/zklockfs, which only root writes, else /dev/shm (or /tmp):
 * every user of an allow_other mount runs zklock and must read the file,
 * which $XDG_RUNTIME_DIR (mode 0700) would hide.  In a directory anyone
 * writes, zklock trusts only a regular file of the daemon's uid that no
 * one else may write (tools/zklock/watchdog.c), so a file planted there
 * is refused, never believed.  /dev/shm is memory no tmp cleaner sweeps.
 */
static const char *hb_dir(void)
{
	const char *env = getenv("ZKLOCKFS_HEARTBEAT_DIR");
	struct stat st;

	if (env && env[0] == '/')
		return env;
	if (geteuid() == 0)
		return "/run/zklockfs";
	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
}

/* Remove the files of daemons of ours that died without removing theirs
 * (kill -9): their pid is in the name, and /proc has no such process. */
static void sweep_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat st;
	char proc[32];

	if (!d)
		return;
	while ((de = readdir(d))) {
		long pid;

		if (strncmp(de->d_name, HB_PREFIX, strlen(HB_PREFIX)) != 0)
			continue;
		pid = strtol(de->d_name + strlen(HB_PREFIX), NULL, 10);
		snprintf(proc, sizeof(proc), "/proc/%ld", pid);
		if (pid > 0 && stat(proc, &st) < 0 && errno == ENOENT &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_uid == geteuid())
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

struct zk_heartbeat *zklfs_watchdog_open(struct zklfs *fs, int slots)
{
	struct zklfs_watchdog *wd = calloc(1, sizeof(*wd));
	const char *dir = hb_dir();
	void *map = MAP_FAILED;
	int fd = -1;

	if (!wd)
		goto fail;
	if (geteuid() == 0 && mkdir(dir, 0755) < 0 && errno != EEXIST)
		goto fail;
	if (geteuid() == 0)
		sweep_stale(dir);
	if (snprintf(wd->path, sizeof(wd->path), "%s/" HB_PREFIX "%d-XXXXXX", dir,
		     (int)getpid()) >= (int)sizeof(wd->path))
		goto fail;
	fd = mkostemp(wd->path, O_CLOEXEC);
	if (fd < 0)
		goto fail;
	/* every holder's zklock reads it: it says nothing but times.  Its
	 * blocks are taken now: a store into a mapped page that a full
	 * tmpfs cannot back would be SIGBUS, later, with no message */
	if (fchmod(fd, 0644) < 0 || ftruncate(fd, sizeof(struct zk_heartbeat_file)) < 0)
		goto fail_unlink;
	errno = posix_fallocate(fd, 0, sizeof(struct zk_heartbeat_file));
	if (errno)
		goto fail_unlink;
	map = mmap(NULL, sizeof(struct zk_heartbeat_file), PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail_unlink;
	close(fd);
	wd->map = map;
	memcpy(wd->map->magic, ZK_HEARTBEAT_MAGIC, sizeof(wd->map->magic));
	wd->map->slots = (uint32_t)slots;
	wd->map->pid = (uint32_t)getpid();
	wd->map->boottime_offset_ms = zk_boottime_offset_ms();
	fs->wd = wd;
	return wd->map->slot;

fail_unlink:
	unlink(wd->path);
fail:
	zklog(LOG_ERR, "cannot make the watchdog file in %s: %s (zklock could not end "
	      "its command if this daemon stopped answering)", dir, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(wd);
	return NULL;
}

void zklfs_watchdog_close(struct zklfs *fs)
{
	struct zklfs_watchdog *wd = fs->wd;

	if (!wd)
		return;
	unlink(wd->path);
	munmap(wd->map, sizeof(*wd->map));
	free(wd);
	fs->wd = NULL;
}

int zklfs_watchdog_info(struct zklfs *fs, int slot, struct zklfs_ioc_watchdog *out)
{
	struct zklfs_watchdog *wd = fs->wd;

	if (!wd || slot < 0 || slot >= (int)wd->map->slots)
		return -EOPNOTSUPP;
	memset(out, 0, sizeof(*out));
	memcpy(out->path, wd->path, sizeof(out->path));
	out->slot = (uint32_t)slot;
	out->uid = (uint32_t)geteuid();
	out->gen = atomic_load_explicit(&wd->map->slot[slot].gen, memory_order_acquire);
	return 0;
}
