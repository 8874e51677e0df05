/* Unit tests: a connect string checked before the client gets it (zk/connect.c). */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "zk/connect.h"

static void part(const char *c, int i, int rc, const char *host, const char *port)
{
	char h[256], p[16];

	assert_int_equal(zkc_part(c, i, h, sizeof(h), p, sizeof(p)), rc);
	if (rc == 1) {
		assert_string_equal(h, host);
		assert_string_equal(p, port);
	}
}

static void test_parts(void **state)
{
	(void)state;
	part("zk1:2181,zk2:2182", 0, 1, "zk1", "2181");
	part("zk1:2181,zk2:2182", 1, 1, "zk2", "2182");
	part("zk1:2181,zk2:2182", 2, 0, NULL, NULL);
	part("[::1]:2181", 0, 1, "::1", "2181");
	/* what the client would take and then fail on, slowly or obscurely */
	part("zk1", 0, -EINVAL, NULL, NULL);
	part("zk1:", 0, -EINVAL, NULL, NULL);
	part(":2181", 0, -EINVAL, NULL, NULL);
	part("zk1:21x81", 0, -EINVAL, NULL, NULL);
	part("zk1:0", 0, -EINVAL, NULL, NULL);
	part("zk1:65536", 0, -EINVAL, NULL, NULL);
	part("zk1:2181,zk2", 1, -EINVAL, NULL, NULL);
}

/* A loopback port nobody listens on: bound, never listened to, closed. */
static int closed_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void test_check(void **state)
{
	char why[256], c[128];
	int port = closed_port();

	(void)state;
	snprintf(c, sizeof(c), "127.0.0.1:%d", port);
	assert_int_equal(zkc_check(c, 1000, why, sizeof(why)), -ECONNREFUSED);
	assert_non_null(strstr(why, "refused"));
	assert_int_equal(zkc_check("zk1,zk2:2181", 1000, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "part 1"));
	assert_int_equal(zkc_check("no-such-host.invalid:2181", 1000, why, sizeof(why)),
			 -ENOENT);
	assert_non_null(strstr(why, "no-such-host.invalid"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
