/* fs/opts.c - command-line and -o option parsing. */
#define FUSE_USE_VERSION 314
#include "fs/opts.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KEY_DISCARD, KEY_HELP, KEY_VERSION, KEY_RO };

#define ZOPT(t, p) { t, offsetof(struct zklfs_conf, p), 1 }

static const struct fuse_opt zklfs_opts[] = {
	ZOPT("session_timeout=%s", session_timeout_str),
	ZOPT("naming=%s", naming_str),
	ZOPT("auth_file=%s", auth_file),
	ZOPT("acl=%s", acl_str),
	ZOPT("sessions=%s", sessions_str),
	ZOPT("sessions_idle=%s", sessions_idle_str),
	ZOPT("containers", containers),
	ZOPT("linger=%s", linger_str),
	ZOPT("containers=%s", containers_str),
	ZOPT("lockfiles", lockfiles),
	ZOPT("lockfiles=%s", lockfiles_str),
	ZOPT("create_root", create_root),
	ZOPT("create_root=%s", create_root_str),
	ZOPT("on_loss=%s", on_loss_str),
	ZOPT("kill_grace=%s", kill_grace_str),
	FUSE_OPT_KEY("_netdev", KEY_DISCARD),
	FUSE_OPT_KEY("nofail", KEY_DISCARD),
	FUSE_OPT_KEY("noauto", KEY_DISCARD),
	FUSE_OPT_KEY("auto", KEY_DISCARD),
	FUSE_OPT_KEY("user", KEY_DISCARD),
	FUSE_OPT_KEY("users", KEY_DISCARD),
	FUSE_OPT_KEY("defaults", KEY_DISCARD),
	FUSE_OPT_KEY("comment=", KEY_DISCARD),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

int zklfs_parse_source(const char *src, char **connect, char **root)
{
	const char *slash = strchr(src, '/');
	size_t clen = slash ? (size_t)(slash - src) : strlen(src);
	char *r, *p;

	*connect = *root = NULL;
	if (clen == 0 || src[0] == ',' || src[clen - 1] == ',')
		return -EINVAL;
	r = strdup(slash ? slash : "/");
	if (!r)
		return -ENOMEM;
	for (size_t n = strlen(r); n > 1 && r[n - 1] == '/'; n--)
		r[n - 1] = '\0';
	/* every component must be a real name */
	for (p = r + 1; *p; ) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.')) {
			free(r);
			return -EINVAL;
		}
		p += n + (p[n] == '/');
	}
	*connect = strndup(src, clen);
	if (!*connect) {
		free(r);
		return -ENOMEM;
	}
	*root = r;
	return 0;
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct zklfs_conf *conf = data;

	(void)out;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (!conf->source) {
			conf->source = strdup(arg);
			return 0;
		}
		return 1;		/* the mount point, for libfuse */
	case KEY_DISCARD:
		return 0;
	case KEY_HELP:
		conf->show_help = 1;
		return 1;
	case KEY_RO:			/* noted, and left for libfuse */
		conf->ro = 1;
		return 1;
	case KEY_VERSION:
		conf->show_version = 1;
		return 1;
	default:		/* FUSE_OPT_KEY_OPT: for libfuse, but fstab's own */
		return strncmp(arg, "x-systemd.", 10) != 0;
	}
}

/*
 * The value @s of option @name, as typed: a whole number in [@min, @max]
 * of @unit, digits only ("5000x", "10s", "+5" and " 5" are refused, with
 * one line that quotes them).  Unset (@s NULL): @out keeps its default.
 * Return: 0 or -EINVAL.
 */
static int opt_number(const char *name, const char *s, long min, long max,
		      const char *unit, int *out)
{
	char *end;
	long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end || errno || v < min || v > max) {
		fprintf(stderr, "zklockfs: %s=%s: want a whole number of %s, %ld to %ld\n",
			name, s, unit, min, max);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

int zklfs_opts_parse(struct fuse_args *args, struct zklfs_conf *conf)
{
	int err;

	memset(conf, 0, sizeof(*conf));
	conf->session_timeout_ms = ZKLFS_DEFAULT_SESSION_TIMEOUT;
	conf->sessions_idle_ms = ZKLFS_DEFAULT_SESSIONS_IDLE;
	conf->kill_grace_ms = ZKLFS_DEFAULT_KILL_GRACE;
	if (fuse_opt_parse(args, conf, zklfs_opts, opt_proc) == -1)
		return -EINVAL;
	if (conf->show_help || conf->show_version)
		return 0;
	if (!conf->source) {
		fprintf(stderr, "zklockfs: missing CONNECT[/ROOT] (try --help)\n");
		return -EINVAL;
	}
	err = zklfs_parse_source(conf->source, &conf->connect, &conf->root);
	if (err) {
		fprintf(stderr, "zklockfs: bad ZooKeeper address '%s' (want host:port[,host:port...][/root])\n",
			conf->source);
		return err;
	}
	if (opt_number("session_timeout", conf->session_timeout_str, 100, 3600000,
		       "milliseconds", &conf->session_timeout_ms) ||
	    opt_number("sessions", conf->sessions_str, 1, ZKLFS_SESSIONS_MAX, "sessions",
		       &conf->sessions) ||
	    opt_number("sessions_idle", conf->sessions_idle_str, 100, ZKLFS_SESSIONS_IDLE_MAX,
		       "milliseconds", &conf->sessions_idle_ms) ||
	    opt_number("linger", conf->linger_str, 0, ZKLFS_LINGER_MAX, "milliseconds",
		       &conf->linger_ms) ||
	    opt_number("kill_grace", conf->kill_grace_str, 0, ZKLFS_KILL_GRACE_MAX,
		       "milliseconds", &conf->kill_grace_ms))
		return -EINVAL;
	/* flock(1) and `exec 9>` never look at their descriptor: on a mount
	 * of lock files the lost lock's work ends unless told otherwise */
	conf->on_loss_end = conf->lockfiles;
	if (conf->on_loss_str) {
		if (strcmp(conf->on_loss_str, "end") == 0) {
			conf->on_loss_end = 1;
		} else if (strcmp(conf->on_loss_str, "tell") == 0) {
			conf->on_loss_end = 0;
		} else {
			fprintf(stderr, "zklockfs: unknown on_loss=%s (want end or tell)\n",
				conf->on_loss_str);
			return -EINVAL;
		}
	}
	if (conf->containers_str) {
		fprintf(stderr, "zklockfs: containers takes no value (write -o containers)\n");
		return -EINVAL;
	}
	if (conf->create_root_str) {
		fprintf(stderr, "zklockfs: create_root takes no value (write -o create_root)\n");
		return -EINVAL;
	}
	if (conf->lockfiles_str) {
		fprintf(stderr, "zklockfs: lockfiles takes no value (write -o lockfiles)\n");
		return -EINVAL;
	}
	if (conf->naming_str && zkn_parse_scheme(conf->naming_str, &conf->naming)) {
		fprintf(stderr, "zklockfs: unknown naming=%s (want curator or kazoo)\n",
			conf->naming_str);
		return -EINVAL;
	}
	/* credentials choose the ACL; without them only the open one works */
	conf->acl = conf->auth_file ? ZKACL_CREATOR_READ : ZKACL_OPEN;
	if (conf->acl_str && zkacl_parse(conf->acl_str, &conf->acl)) {
		fprintf(stderr, "zklockfs: unknown acl=%s (want creator-read, creator or open)\n",
			conf->acl_str);
		return -EINVAL;
	}
	if (!conf->auth_file && conf->acl != ZKACL_OPEN) {
		fprintf(stderr, "zklockfs: acl=%s needs credentials: add auth_file=PATH\n",
			conf->acl_str);
		return -EINVAL;
	}
	return 0;
}

void zklfs_conf_free(struct zklfs_conf *conf)
{
	free(conf->source);
	free(conf->connect);
	free(conf->root);
	free(conf->naming_str);
	free(conf->auth_file);
	free(conf->acl_str);
	free(conf->containers_str);
	free(conf->lockfiles_str);
	free(conf->session_timeout_str);
	free(conf->sessions_str);
	free(conf->sessions_idle_str);
	free(conf->linger_str);
	free(conf->create_root_str);
	free(conf->on_loss_str);
	free(conf->kill_grace_str);
	memset(conf, 0, sizeof(*conf));
}
