/*
 * Unit tests: a session's calls (zk/calls.c) through the loop's token
 * (zk/drive.c), on a real single-threaded client handle that never
 * connects (port 1 refuses), so every request stays queued in the client
 * and zookeeper_close() completes them all, with ZCLOSING, in the order
 * the client got them.  That order, and what a queued call copied, are
 * what these check.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "zk/clock.h"
#include "zk/drive.h"
#include "zk/session.h"

static struct zks s;
static bool opened;		/* setup() opened s, not yet closed */

/* the order the completions ran in, and with what */
static char order[64];
static int rcs[64];
static int ncalls;

static void done_void(int rc, const void *data)
{
	rcs[ncalls] = rc;
	order[ncalls++] = (char)(intptr_t)data;
}

static void done_string_stat(int rc, const char *name, const struct Stat *st, const void *data)
{
	(void)name, (void)st;
	done_void(rc, data);
}

static void done_stat(int rc, const struct Stat *st, const void *data)
{
	(void)st;
	done_void(rc, data);
}

static int setup(void **state)
{
	zhandle_t *zh;

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(order, 0, sizeof(order));
	ncalls = 0;
	pthread_rwlock_init(&s.rw, NULL);
	pthread_mutex_init(&s.lock, NULL);
	zk_cond_init_monotonic(&s.cond);
	s.acl = &ZOO_OPEN_ACL_UNSAFE;
	zks_calls_init(&s, NULL);
	zkd_add(&s.client);
	zoo_set_debug_level((ZooLogLevel)0);	/* port 1 refuses: quietly */
	zh = zookeeper_init("127.0.0.1:1", NULL, 10000, NULL, NULL, 0);
	assert_non_null(zh);
	zks_replace(&s, zh, false);	/* no driver: this thread drives */
	opened = true;
	return 0;
}

/* Close the handle: every call still pending completes now, in order. */
static void close_session(void)
{
	zks_replace(&s, NULL, false);
	zkd_remove(&s.client);
	zks_calls_destroy(&s);
	opened = false;
}

/* a test that failed before it closed the session */
static int teardown(void **state)
{
	(void)state;
	if (opened)
		close_session();
	return 0;
}

static int serve_calls;

/* As the FUSE thread: the token held, a call or two, then stop. */
static bool serve_direct(void *arg, bool ready)
{
	(void)ready;
	assert_true(zkd_driving());
	for (const char *c = arg; *c; c++)
		assert_int_equal(zks_adelete(&s, "/d", done_void, (void *)(intptr_t)*c), ZOK);
	serve_calls++;
	return false;
}

/* Calls made on another thread are queued and go first, in their order;
 * a call the driver makes meanwhile goes behind them, not ahead. */
static void test_queued_calls_keep_their_order(void **state)
{
	(void)state;
	assert_false(zkd_driving());
	assert_int_equal(zks_acreate(&s, "/a", "x", 1, 0, done_string_stat,
				     (void *)'A', NULL), ZOK);
	assert_int_equal(zks_adelete(&s, "/b", done_void, (void *)'B'), ZOK);
	assert_int_equal(zks_aexists(&s, "/c", done_stat, (void *)'C'), ZOK);
	zkd_run(-1, serve_direct, "D", 10);
	assert_int_equal(serve_calls, 1);
	assert_int_equal(zks_adelete(&s, "/e", done_void, (void *)'E'), ZOK);
	close_session();
	assert_string_equal(order, "ABCDE");
	for (int i = 0; i < ncalls; i++)
		assert_int_equal(rcs[i], ZCLOSING);
}

/* With nothing queued, the driver's call goes to the client at once. */
static void test_a_direct_call_goes_at_once(void **state)
{
	(void)state;
	zkd_run(-1, serve_direct, "FG", 10);
	assert_int_equal(zks_adelete(&s, "/h", done_void, (void *)'H'), ZOK);
	close_session();
	assert_string_equal(order, "FGH");
}

/*
 * A server of our own, for one connection: it answers the handshake, then
 * keeps what the client sends, until it has seen @want (or the client
 * closes).  Enough to see the bytes a queued call became.
 */
struct fake {
	int lfd;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char got[4096];
	size_t len;
	const char *want;
	size_t wantlen;
	bool seen;
};

static bool has(const struct fake *f)
{
	return memmem(f->got, f->len, f->want, f->wantlen) != NULL;
}

static bool read_full(int fd, void *buf, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t r = read(fd, (char *)buf + off, n - off);

		if (r <= 0)
			return false;
		off += (size_t)r;
	}
	return true;
}

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	/* ConnectResponse: protocol 0, timeout 10 s, session 1, a 16-byte
	 * password, not read-only; after its length */
	unsigned char hello[4 + 37] = { 0, 0, 0, 37, 0, 0, 0, 0, 0, 0, 0x27, 0x10,
					0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 16 };
	char req[256];
	uint32_t len;
	int c = accept(f->lfd, NULL, NULL);

	if (c < 0 || !read_full(c, &len, 4) || ntohl(len) > sizeof(req) ||
	    !read_full(c, req, ntohl(len)) || write(c, hello, sizeof(hello)) != sizeof(hello))
		goto out;
	for (;;) {
		char buf[512];
		ssize_t r = read(c, buf, sizeof(buf));

		pthread_mutex_lock(&f->mu);
		if (r > 0 && f->len + (size_t)r <= sizeof(f->got)) {
			memcpy(f->got + f->len, buf, (size_t)r);
			f->len += (size_t)r;
		}
		f->seen = r <= 0 || has(f);
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		if (f->seen)
			break;
	}
out:
	if (c >= 0)
		close(c);	/* the client's close then ends at once */
	return NULL;
}

static bool connected(void *arg)
{
	(void)arg;
	return zoo_state(s.zh) == ZOO_CONNECTED_STATE;
}

static bool seen(void *arg)
{
	return ((struct fake *)arg)->seen;
}

/*
 * A queued multi copies its ops, their paths and data: the caller's
 * buffers are scribbled on and freed before the driver sends it, and the
 * server still reads what the caller asked.
 */
static void test_a_queued_multi_copies_its_ops(void **state)
{
	static const char set[] = "\0\0\0\5/lock\0\0\0\5state";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct fake f = { .want = set, .wantlen = sizeof(set) - 1 };
	zoo_op_t *ops = calloc(3, sizeof(*ops));
	zoo_op_result_t res[3];
	char *p1 = strdup("/lock/e-1"), *p2 = strdup("/lock"), *data = strdup("state");
	char created[64], host[64];
	struct timespec deadline;
	struct Stat st;

	(void)state;
	close_session();		/* setup()'s, on port 1 */
	f.lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(f.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f.lfd, 1), 0);
	assert_int_equal(getsockname(f.lfd, (struct sockaddr *)&a, &alen), 0);
	pthread_mutex_init(&f.mu, NULL);
	zk_cond_init_monotonic(&f.cv);
	assert_int_equal(pthread_create(&f.thread, NULL, fake_serve, &f), 0);
	snprintf(host, sizeof(host), "127.0.0.1:%d", ntohs(a.sin_port));
	zks_calls_init(&s, NULL);
	zkd_add(&s.client);
	zks_replace(&s, zookeeper_init(host, NULL, 10000, NULL, NULL, 0), false);
	opened = true;
	zk_deadline_in(&deadline, CLOCK_MONOTONIC, 5000);
	pthread_mutex_lock(&f.mu);
	assert_true(zkd_wait(&f.mu, &f.cv, connected, NULL, &deadline));
	pthread_mutex_unlock(&f.mu);

	zoo_delete_op_init(&ops[0], p1, -1);
	zoo_set_op_init(&ops[1], p2, data, 5, 3, &st);
	zoo_create_op_init(&ops[2], p1, data, 5, &ZOO_OPEN_ACL_UNSAFE, 0, created,
			   sizeof(created));
	assert_int_equal(zks_amulti(&s, 3, ops, res, done_void, (void *)'M'), ZOK);
	memset(p1, 'x', strlen(p1));
	memset(p2, 'x', strlen(p2));
	memset(data, 'x', 5);
	free(p1);
	free(p2);
	free(data);
	free(ops);
	pthread_mutex_lock(&f.mu);
	assert_true(zkd_wait(&f.mu, &f.cv, seen, &f, &deadline));
	assert_true(has(&f));
	assert_non_null(memmem(f.got, f.len, "\0\0\0\x09/lock/e-1", 13));
	pthread_mutex_unlock(&f.mu);
	close_session();
	pthread_join(f.thread, NULL);
	close(f.lfd);
	assert_string_equal(order, "M");
}

/* A call on a hibernated session is refused at once, unsent. */
static void test_no_handle_refuses_at_once(void **state)
{
	(void)state;
	zks_replace(&s, NULL, true);
	assert_int_equal(zks_generation(&s), 1);
	assert_int_equal(zks_adelete(&s, "/z", done_void, (void *)'Z'), ZINVALIDSTATE);
	assert_int_equal(ncalls, 0);
	/* and again with a handle: teardown() closes it */
	zks_replace(&s, zookeeper_init("127.0.0.1:1", NULL, 10000, NULL, NULL, 0), false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_queued_calls_keep_their_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_direct_call_goes_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_queued_multi_copies_its_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_handle_refuses_at_once, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
