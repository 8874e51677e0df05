/* Unit tests: the lock map's checks (zk/mutex.c, built with ZKL_LOCKCHECK). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "zk/mutex.h"

static struct zkmx outer, inner;

static int setup(void **state)
{
	(void)state;
	zkmx_init(&outer, ZKMX_RANK_ENGINE, "outer");
	zkmx_init(&inner, ZKMX_RANK_FS, "inner");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	zkmx_destroy(&outer);
	zkmx_destroy(&inner);
	return 0;
}

/* Run @fn in a child: did it die of SIGABRT (the check)? */
static bool aborts(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void in_order(void)
{
	zkmx_lock(&outer);
	zkmx_lock(&inner);
	ZKMX_ASSERT_HELD(&outer);
	ZKMX_ASSERT_HELD(&inner);
	zkmx_unlock(&outer);	/* released in any order */
	zkmx_unlock(&inner);
}

static void out_of_order(void)
{
	zkmx_lock(&inner);
	zkmx_lock(&outer);
}

static void twice(void)
{
	zkmx_lock(&outer);
	zkmx_lock(&outer);
}

static void not_held(void)
{
	zkmx_lock(&inner);
	ZKMX_ASSERT_HELD(&outer);
}

static void unlock_not_held(void)
{
	zkmx_unlock(&inner);
}

static void test_in_order_passes(void **state)
{
	(void)state;
	assert_false(aborts(in_order));
	in_order();
}

static void test_violations_abort(void **state)
{
	(void)state;
	assert_true(aborts(out_of_order));
	assert_true(aborts(twice));
	assert_true(aborts(not_held));
	assert_true(aborts(unlock_not_held));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_passes),
		cmocka_unit_test(test_violations_abort),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
