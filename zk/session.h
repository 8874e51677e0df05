/*
 * zk/session.h - the mount's ZooKeeper session.
 *
 * One handle per mount.  zks_open() connects and waits (bounded by the
 * session timeout); afterwards everything goes through the asynchronous API
 * on the handle in @zh, whose completions and watchers all run on the
 * client's one completion thread.
 */
#ifndef ZK_SESSION_H
#define ZK_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <zookeeper/zookeeper.h>

struct zks {
	zhandle_t *zh;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;		/* last session state seen; protected by lock */
	int timeout_ms;
	char *connect;
	bool inited;		/* zks_open() ran: zks_close() has work */
};

/*
 * zks_open() - connect to @connect and wait until the session is
 * established, at most @timeout_ms.  Main thread, before any other use.
 * @auth_file, if not NULL, holds "user:password" for digest auth.
 * Return: 0, or a negative errno with one log line saying why.
 */
int zks_open(struct zks *s, const char *connect, int timeout_ms,
	     const char *auth_file);

/*
 * zks_ensure_path() - create @path and its missing ancestors as persistent
 * znodes.  Synchronous: only at start-up, never from a callback.
 * Return: 0, -ENOTDIR if a component is ephemeral, or a negative errno.
 */
int zks_ensure_path(struct zks *s, const char *path);

/*
 * zks_close() - close the session: the server deletes our ephemeral
 * entries at once.  Fires pending completions with ZCLOSING; may block for
 * seconds, so never call it holding a lock a completion takes.
 */
void zks_close(struct zks *s);

#endif
