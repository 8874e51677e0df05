/* Unit tests: command-line and option parsing (fs/opts.c). */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fuse_opt.h>

#include "fs/opts.h"

static void source(const char *src, const char *connect, const char *root)
{
	char *c, *r;

	assert_int_equal(zklfs_parse_source(src, &c, &r), 0);
	assert_string_equal(c, connect);
	assert_string_equal(r, root);
	free(c);
	free(r);
}

static void bad_source(const char *src)
{
	char *c, *r;

	assert_int_equal(zklfs_parse_source(src, &c, &r), -EINVAL);
	assert_null(c);
	assert_null(r);
}

static void test_source(void **state)
{
	(void)state;
	source("zk1:2181", "zk1:2181", "/");
	source("zk1:2181/", "zk1:2181", "/");
	source("zk1:2181,zk2:2181,zk3:2181/locks", "zk1:2181,zk2:2181,zk3:2181", "/locks");
	source("127.0.0.1:2181/a/b//", "127.0.0.1:2181", "/a/b");
	bad_source("");
	bad_source("/locks");
	bad_source(",zk1:2181");
	bad_source("zk1:2181,");
	bad_source("zk1:2181/a//b");
	bad_source("zk1:2181/a/../b");
	bad_source("zk1:2181/.");
}

/* Parse an argv; return the result and leave what libfuse would see in *left. */
static int parse(struct zklfs_conf *conf, struct fuse_args *args, int argc,
		 const char **argv)
{
	args->argc = argc;
	args->argv = (char **)argv;
	args->allocated = 0;
	return zklfs_opts_parse(args, conf);
}

static void test_defaults(void **state)
{
	const char *argv[] = { "zklockfs", "zk:2181/locks", "/mnt" };
	struct fuse_args args;
	struct zklfs_conf conf;

	(void)state;
	assert_int_equal(parse(&conf, &args, 3, argv), 0);
	assert_string_equal(conf.connect, "zk:2181");
	assert_string_equal(conf.root, "/locks");
	assert_int_equal(conf.session_timeout_ms, ZKLFS_DEFAULT_SESSION_TIMEOUT);
	assert_int_equal(conf.naming, ZKN_CURATOR);
	assert_null(conf.auth_file);
	assert_int_equal(conf.acl, ZKACL_OPEN);	/* no credentials */
	assert_int_equal(conf.sessions, 0);
	assert_int_equal(conf.sessions_idle_ms, ZKLFS_DEFAULT_SESSIONS_IDLE);
	assert_int_equal(conf.containers, 0);	/* mkdir makes persistent znodes */
	/* the mount point stays for fuse_parse_cmdline */
	assert_int_equal(args.argc, 2);
	assert_string_equal(args.argv[1], "/mnt");
	zklfs_conf_free(&conf);
	fuse_opt_free_args(&args);
}

static void test_our_options_and_fstab_ones(void **state)
{
	const char *argv[] = { "zklockfs", "-o",
		"session_timeout=4000,naming=kazoo,_netdev,allow_other,nofail,x-systemd.automount,auth_file=/etc/zk.auth,sessions=4,containers",
		"zk:2181", "/mnt", "-f" };
	struct fuse_args args;
	struct zklfs_conf conf;

	(void)state;
	assert_int_equal(parse(&conf, &args, 6, argv), 0);
	assert_int_equal(conf.session_timeout_ms, 4000);
	assert_int_equal(conf.naming, ZKN_KAZOO);
	assert_string_equal(conf.auth_file, "/etc/zk.auth");
	assert_int_equal(conf.acl, ZKACL_CREATOR_READ);	/* the default with them */
	assert_int_equal(conf.sessions, 4);
	assert_int_equal(conf.containers, 1);
	assert_string_equal(conf.root, "/");
	/* only allow_other is left for libfuse, with -f and the mount point */
	int seen_allow = 0;
	for (int i = 1; i < args.argc; i++) {
		assert_null(strstr(args.argv[i], "_netdev"));
		assert_null(strstr(args.argv[i], "nofail"));
		assert_null(strstr(args.argv[i], "x-systemd"));
		assert_null(strstr(args.argv[i], "naming"));
		assert_null(strstr(args.argv[i], "sessions"));
		assert_null(strstr(args.argv[i], "containers"));
		seen_allow |= strstr(args.argv[i], "allow_other") != NULL;
	}
	assert_true(seen_allow);
	zklfs_conf_free(&conf);
	fuse_opt_free_args(&args);
}

/* zklfs_opts_parse refuses argv (argc words) with -EINVAL */
static void refused(int argc, const char **argv)
{
	struct fuse_args args;
	struct zklfs_conf conf;

	assert_int_equal(parse(&conf, &args, argc, argv), -EINVAL);
	zklfs_conf_free(&conf);
	fuse_opt_free_args(&args);
}

static void test_bad_options(void **state)
{
	/* each as "zklockfs -o OPTS zk:2181 /mnt" */
	static const char *const opts[] = {
		"naming=etcd",
		"session_timeout=5",
		"sessions=0",
		"sessions=9",
		/* numbers as typed: nothing after, before or instead of digits */
		"session_timeout=5000x",
		"session_timeout=10s",
		"session_timeout=+5000",
		"session_timeout=",
		"linger=1e3",
		"sessions= 2",
		"sessions_idle=50",
		"sessions_idle=1m",
		"create_root=yes",
		"lockfiles=1",
		/* a flag: no value, not even an empty one */
		"containers=1",
		"containers=",
		"containers=no",
		"on_loss=kill",
		"on_loss=",
		"kill_grace=2s",
		"kill_grace=600001",
	};
	const char *nosource[] = { "zklockfs" };
	const char *badsrc[] = { "zklockfs", "zk:2181/a/../b", "/mnt" };

	(void)state;
	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++) {
		const char *argv[] = { "zklockfs", "-o", opts[i], "zk:2181", "/mnt" };

		refused(5, argv);
	}
	refused(1, nosource);
	refused(3, badsrc);
}

static void test_acl(void **state)
{
	static const struct { const char *opts; int rc; enum zkacl acl; } cases[] = {
		{ "auth_file=/a,acl=creator", 0, ZKACL_CREATOR },
		{ "auth_file=/a,acl=creator-read", 0, ZKACL_CREATOR_READ },
		{ "auth_file=/a,acl=open", 0, ZKACL_OPEN },
		{ "acl=open", 0, ZKACL_OPEN },
		{ "acl=creator", -EINVAL, 0 },		/* needs credentials */
		{ "acl=creator-read", -EINVAL, 0 },
		{ "auth_file=/a,acl=world", -EINVAL, 0 },
		{ "auth_file=/a,acl=", -EINVAL, 0 },
	};
	struct fuse_args args;
	struct zklfs_conf conf;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *argv[] = { "zklockfs", "-o", cases[i].opts, "zk:2181", "/mnt" };

		assert_int_equal(parse(&conf, &args, 5, argv), cases[i].rc);
		if (cases[i].rc == 0)
			assert_int_equal(conf.acl, cases[i].acl);
		zklfs_conf_free(&conf);
		fuse_opt_free_args(&args);
	}
}

/* on_loss=: end by default on a mount of lock files, tell otherwise */
static void test_on_loss(void **state)
{
	static const struct { const char *opts; int end, grace; } cases[] = {
		{ "sessions=1", 0, ZKLFS_DEFAULT_KILL_GRACE },
		{ "lockfiles", 1, ZKLFS_DEFAULT_KILL_GRACE },
		{ "lockfiles,on_loss=tell", 0, ZKLFS_DEFAULT_KILL_GRACE },
		{ "on_loss=end,kill_grace=0", 1, 0 },
		{ "on_loss=tell,lockfiles,kill_grace=500", 0, 500 },
	};
	struct fuse_args args;
	struct zklfs_conf conf;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *argv[] = { "zklockfs", "-o", cases[i].opts, "zk:2181", "/mnt" };

		assert_int_equal(parse(&conf, &args, 5, argv), 0);
		assert_int_equal(conf.on_loss_end, cases[i].end);
		assert_int_equal(conf.kill_grace_ms, cases[i].grace);
		zklfs_conf_free(&conf);
		fuse_opt_free_args(&args);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_source),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_our_options_and_fstab_ones),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_acl),
		cmocka_unit_test(test_on_loss),
	};

	return cmocka_run_group_tests_name("opts", tests, NULL, NULL);
}
