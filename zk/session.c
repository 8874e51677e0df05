/* zk/session.c - connecting, authenticating, closing. */
#include "zk/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zk/errno.h"
#include "zk/log.h"

/* The client's own lines repeat per retry: only with -d.  We log events. */
static void zks_log_cb(const char *message)
{
	zkl_log(LOG_DEBUG, "zookeeper: %s", message);
}

static void zks_watcher(zhandle_t *zh, int type, int state, const char *path,
			void *ctx)
{
	struct zks *s = ctx;

	(void)zh;
	(void)path;
	if (type != ZOO_SESSION_EVENT)
		return;
	pthread_mutex_lock(&s->lock);
	s->state = state;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static int read_auth(const char *file, char *buf, size_t size)
{
	FILE *f = fopen(file, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return strchr(buf, ':') ? 0 : -EINVAL;
}

int zks_open(struct zks *s, const char *connect, int timeout_ms,
	     const char *auth_file)
{
	struct timespec deadline;
	int err = 0;

	memset(s, 0, sizeof(*s));
	s->inited = true;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->timeout_ms = timeout_ms;
	s->connect = strdup(connect);
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	s->zh = zookeeper_init2(connect, zks_watcher, timeout_ms, NULL, s, 0,
				zks_log_cb);
	if (!s->zh) {
		zkl_log(LOG_ERR, "cannot start a ZooKeeper client for '%s': %s",
			connect, strerror(errno));
		return -EINVAL;
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (s->state != ZOO_CONNECTED_STATE && err == 0) {
		if (s->state == ZOO_AUTH_FAILED_STATE ||
		    s->state == ZOO_EXPIRED_SESSION_STATE)
			err = -EACCES;
		else if (pthread_cond_timedwait(&s->cond, &s->lock, &deadline) == ETIMEDOUT)
			err = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&s->lock);
	if (err) {
		zkl_log(LOG_ERR, "cannot reach ZooKeeper at %s within %d ms", connect,
			timeout_ms);
		return err;
	}
	if (auth_file) {
		char cred[512];
		int rc;

		err = read_auth(auth_file, cred, sizeof(cred));
		if (err) {
			zkl_log(LOG_ERR, "auth_file %s: %s (want one line user:password)",
				auth_file, strerror(-err));
			return err;
		}
		rc = zoo_add_auth(s->zh, "digest", cred, (int)strlen(cred), NULL, NULL);
		memset(cred, 0, sizeof(cred));
		if (rc != ZOK) {
			zkl_log(LOG_ERR, "ZooKeeper digest auth: %s", zerror(rc));
			return zk_errno(rc);
		}
	}
	return 0;
}

int zks_ensure_path(struct zks *s, const char *path)
{
	char *p = strdup(path), *slash;
	int rc = ZOK;

	if (!p)
		return -ENOMEM;
	for (slash = strchr(p + 1, '/');; slash = strchr(slash + 1, '/')) {
		struct Stat st;

		if (slash)
			*slash = '\0';
		if (strcmp(p, "/") != 0) {
			rc = zoo_exists(s->zh, p, 0, &st);
			if (rc == ZNONODE) {
				rc = zoo_create(s->zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
						0, NULL, 0);
				if (rc == ZNODEEXISTS)
					rc = ZOK;
			} else if (rc == ZOK && st.ephemeralOwner != 0) {
				zkl_log(LOG_ERR, "%s is an ephemeral znode, not a directory", p);
				free(p);
				return -ENOTDIR;
			}
			if (rc != ZOK) {
				zkl_log(LOG_ERR, "cannot use root znode %s: %s", p, zerror(rc));
				break;
			}
		}
		if (!slash)
			break;
		*slash = '/';
	}
	free(p);
	return zk_errno(rc);
}

void zks_close(struct zks *s)
{
	if (!s->inited)
		return;
	s->inited = false;
	if (s->zh)
		zookeeper_close(s->zh);
	s->zh = NULL;
	free(s->connect);
	s->connect = NULL;
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}
