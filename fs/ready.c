/* fs/ready.c - systemd's notifications (see ready.h). */
#include "fs/ready.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "zk/log.h"
#include "zk/metrics.h"

/* How often the status is looked at (local figures, no ZooKeeper request). */
#define READY_STATUS_MS 1000

static struct {
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;		/* stop */
	pthread_cond_t cond;
	bool stop;
} rd = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void *ready_main(void *arg)
{
	struct zklfs *fs = arg;
	char status[160], sent[160] = "";
	struct statfs st;
	int err;

	/* the loop answers the kernel's INIT, then this: the mount answers */
	while ((err = statfs(fs->mountpoint, &st) < 0 ? errno : 0) == EINTR)
		;
	if (err) {
		zklog(LOG_ERR, "the mount at %s does not answer (%s): not telling "
		      "systemd it is ready", fs->mountpoint, strerror(err));
		return NULL;
	}
	pthread_mutex_lock(&rd.mu);
	while (!rd.stop) {
		struct timespec at;

		zkm_status(status, sizeof(status));
		if (strcmp(status, sent) != 0) {
			pthread_mutex_unlock(&rd.mu);
			sd_notifyf(0, "%sSTATUS=%s", sent[0] ? "" : "READY=1\n", status);
			memcpy(sent, status, sizeof(sent));
			pthread_mutex_lock(&rd.mu);
			continue;	/* stop may have come meanwhile */
		}
		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += READY_STATUS_MS % 1000 * 1000000L;
		at.tv_sec += READY_STATUS_MS / 1000 + at.tv_nsec / 1000000000L;
		at.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&rd.cond, &rd.mu, &at);
	}
	pthread_mutex_unlock(&rd.mu);
	return NULL;
}

int zklfs_ready_start(struct zklfs *fs)
{
	int err;

	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	err = pthread_create(&rd.thread, NULL, ready_main, fs);
	if (err) {
		zklog(LOG_ERR, "cannot start the thread that tells systemd: %s", strerror(err));
		return -err;
	}
	rd.started = true;
	return 0;
}

void zklfs_ready_stopping(struct zklfs *fs)
{
	(void)fs;
	if (!rd.started)
		return;
	pthread_mutex_lock(&rd.mu);
	rd.stop = true;
	pthread_cond_signal(&rd.cond);
	pthread_mutex_unlock(&rd.mu);
	sd_notify(0, "STOPPING=1\nSTATUS=unmounting: every lock of the mount is given back");
}

void zklfs_ready_join(struct zklfs *fs)
{
	(void)fs;
	if (rd.started)
		pthread_join(rd.thread, NULL);
	rd.started = false;
}
