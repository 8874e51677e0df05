/*
 * bench/zkbench.c - lock cycles per second, two ways, same server:
 *
 *   zkbench recipe HOST:PORT LOCKPATH CYCLES   the textbook recipe on the
 *       ZooKeeper C client (create ephemeral-sequential, get children,
 *       delete; uncontended, so the first listing grants)
 *   zkbench fs LOCKDIR CYCLES                  open(O_CREAT)+close on a mount
 *
 * Prints one line: "MODE cycles=N seconds=S rate=R/s p50_us=A p99_us=B".
 * Warm-up cycles (10) are not counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#define WARMUP 10

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *mode, double *lat, int n, double secs)
{
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	printf("%s cycles=%d seconds=%.3f rate=%.1f/s p50_us=%.0f p99_us=%.0f\n", mode, n,
	       secs, n / secs, lat[n / 2] * 1e6, lat[(n * 99) / 100] * 1e6);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int connected;

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh, (void)path, (void)ctx;
	if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
		pthread_mutex_lock(&mu);
		connected = 1;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}


static int recipe(const char *connect, const char *lock, int cycles)
{
	char prefix[512], path[512], dir[512];
	struct String_vector kids;
	double *lat = calloc((size_t)cycles, sizeof(*lat)), t0 = 0;
	zhandle_t *zh;
	int rc;

	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zh = zookeeper_init(connect, watcher, 10000, NULL, NULL, 0);
	pthread_mutex_lock(&mu);
	while (!connected)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	snprintf(dir, sizeof(dir), "%s", lock);
	rc = zoo_create(zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	if (rc != ZOK && rc != ZNODEEXISTS) {
		fprintf(stderr, "create %s: %s\n", dir, zerror(rc));
		return 1;
	}
	snprintf(prefix, sizeof(prefix), "%s/bench-lock-", lock);
	for (int i = -WARMUP; i < cycles; i++) {
		double t = now_s();

		if (i == 0)
			t0 = t;
		rc = zoo_create(zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
				ZOO_EPHEMERAL_SEQUENTIAL, path, sizeof(path));
		if (rc == ZOK)
			rc = zoo_get_children(zh, dir, 0, &kids);
		if (rc != ZOK) {
			fprintf(stderr, "recipe: %s\n", zerror(rc));
			return 1;
		}
		if (kids.count != 1)
			fprintf(stderr, "recipe: contended (%d children)\n", kids.count);
		deallocate_String_vector(&kids);
		rc = zoo_delete(zh, path, -1);
		if (rc != ZOK) {
			fprintf(stderr, "delete: %s\n", zerror(rc));
			return 1;
		}
		if (i >= 0)
			lat[i] = now_s() - t;
	}
	report("recipe", lat, cycles, now_s() - t0);
	zookeeper_close(zh);
	free(lat);
	return 0;
}

static int fs(const char *dir, int cycles)
{
	double *lat = calloc((size_t)cycles, sizeof(*lat)), t0 = 0;
	char path[512];

	snprintf(path, sizeof(path), "%s/bench", dir);
	for (int i = -WARMUP; i < cycles; i++) {
		double t = now_s();
		int fd;

		if (i == 0)
			t0 = t;
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd < 0) {
			fprintf(stderr, "open %s: %s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
		if (i >= 0)
			lat[i] = now_s() - t;
	}
	report("zklockfs", lat, cycles, now_s() - t0);
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "recipe") == 0)
		return recipe(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "fs") == 0)
		return fs(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: zkbench recipe HOST:PORT LOCKPATH CYCLES | fs LOCKDIR CYCLES\n");
	return 2;
}
