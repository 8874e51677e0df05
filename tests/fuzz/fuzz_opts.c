/*
 * tests/fuzz/fuzz_opts.c - the command line (zklfs_opts_parse, fs/opts.c),
 * driven through libfuse's fuse_opt_parse() as fs/main.c does, without a
 * mount (as tests/unit/test_opts.c).
 *
 * Input: the arguments after "zklockfs", separated by NUL bytes (at most
 * 32), e.g. "-o\0sessions=4,naming=kazoo\0zk:2181/locks\0/mnt".
 * Invariants: it never crashes, leaks (LeakSanitizer) or reads past an
 * argument (ASan); it answers 0 or -EINVAL; on 0 (other than --help and
 * --version) the source obeys check_source() (ROOT starts with '/', ...)
 * and is what zklfs_parse_source() makes of it, session_timeout=,
 * sessions= (0 when not given) and sessions_idle= are in range, naming is what naming= said (curator if
 * absent), containers is a flag that no value came with; what is left for libfuse still starts with argv[0].
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse_log.h>

#include "fs/opts.h"
#include "tests/fuzz/source_check.h"

#define MAX_ARGS 32

static FILE *devnull;

/* libfuse's complaints about bad options: not wanted a million times */
static void quiet(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	fuse_set_log_func(quiet);
	return 0;
}

static void check_conf(const struct zklfs_conf *conf)
{
	char *c, *r;
	enum zkn_naming naming = ZKN_CURATOR;

	CHECK(conf->source && conf->connect && conf->root);
	check_source(conf->source, conf->connect, conf->root);
	CHECK(zklfs_parse_source(conf->source, &c, &r) == 0);
	CHECK(strcmp(c, conf->connect) == 0 && strcmp(r, conf->root) == 0);
	free(c);
	free(r);
	CHECK(conf->session_timeout_ms >= 100 && conf->session_timeout_ms <= 3600000);
	/* 0: the default, one session and more while busy */
	CHECK(conf->sessions >= 0 && conf->sessions <= ZKLFS_SESSIONS_MAX);
	CHECK(conf->sessions > 0 || !conf->sessions_str);
	CHECK(conf->sessions_idle_ms >= 100 && conf->sessions_idle_ms <= ZKLFS_SESSIONS_IDLE_MAX);
	if (conf->naming_str)
		CHECK(zkn_parse_scheme(conf->naming_str, &naming) == 0);
	CHECK(conf->naming == naming);
	CHECK((conf->containers == 0 || conf->containers == 1) && !conf->containers_str);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 2], *arg0 = fuzz_str((const uint8_t *)"zklockfs", 8);
	struct fuse_args args;
	struct zklfs_conf conf;
	FILE *err_out = stderr;
	int argc = 0, err;

	argv[argc++] = arg0;
	for (size_t at = 0; at < size && argc <= MAX_ARGS; ) {
		const uint8_t *nul = memchr(data + at, '\0', size - at);
		size_t len = nul ? (size_t)(nul - (data + at)) : size - at;

		argv[argc++] = fuzz_str(data + at, len);
		at += len + 1;
	}
	argv[argc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);

	/* its one line on stderr per refusal: stderr is a variable in glibc */
	fuzz_report = err_out;
	stderr = devnull;
	err = zklfs_opts_parse(&args, &conf);
	stderr = err_out;

	CHECK(err == 0 || err == -EINVAL);
	if (err == 0 && !conf.show_help && !conf.show_version)
		check_conf(&conf);
	if (err == 0)
		CHECK(args.argc >= 1 && strcmp(args.argv[0], "zklockfs") == 0);

	zklfs_conf_free(&conf);
	fuse_opt_free_args(&args);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return 0;
}
