/*
 * fs/opts.h - the command line: zklockfs [-f] [-d] [-o OPT,...] CONNECT[/ROOT] MNT
 *
 * Our own -o options (session_timeout=, naming=, auth_file=, acl=, sessions=,
 * sessions_idle=, containers, linger=, lockfiles, create_root, on_loss=, kill_grace=) are
 * taken out of @args; the FUSE ones and the mount point are left for libfuse.
 * fstab-only options (_netdev, nofail, noauto, auto, user, users, defaults,
 * x-systemd.*, comment=) are accepted and dropped.  Main thread only.
 */
#ifndef FS_OPTS_H
#define FS_OPTS_H

#include <fuse_opt.h>

#include "zk/acl.h"
#include "zk/naming.h"

struct zklfs_conf {
	char *source;		/* CONNECT[/ROOT] as given */
	char *connect;		/* host:port[,host:port...] */
	char *root;		/* "/" or "/a/b", no trailing slash */
	int session_timeout_ms;
	enum zkn_naming naming;
	char *naming_str;
	char *auth_file;
	enum zkacl acl;	/* ZKACL_OPEN without auth_file */
	char *acl_str;
	int sessions;		/* -o sessions=N: that many sessions, always;
				   0: one, and more while busy (fs/pool.c) */
	int sessions_idle_ms;	/* -o sessions_idle=MS: an extra session idle
				   this long is closed */
	int containers;		/* -o containers: mkdir makes container znodes */
	int linger_ms;		/* -o linger=MS: lingering locks (zk/linger.c) */
	char *containers_str;	/* "containers=..." given: refused */
	int lockfiles;		/* -o lockfiles: regular files are lock files
				   (fs/lockfile.h) */
	char *lockfiles_str;	/* "lockfiles=..." given: refused */
	int create_root;	/* -o create_root: make a missing ROOT */
	int on_loss_end;	/* -o on_loss=end (the default with lockfiles):
				   a lost lock's holders end (fs/ender.h);
				   else on_loss=tell, descriptors only */
	char *on_loss_str;	/* as typed */
	int kill_grace_ms;	/* -o kill_grace=MS: SIGTERM to SIGKILL of the
				   holders at an orderly stop */
	char *kill_grace_str;
	int ro;			/* -o ro (kept for libfuse): no credentials probe */
	char *session_timeout_str, *sessions_str, *linger_str;	/* as typed */
	char *sessions_idle_str;
	char *create_root_str;	/* "create_root=..." given: refused */
	int show_help, show_version;
};

#define ZKLFS_DEFAULT_SESSION_TIMEOUT 10000
#define ZKLFS_SESSIONS_MAX 8		/* and the most a default mount opens */
#define ZKLFS_DEFAULT_SESSIONS_IDLE 30000	/* ms */
#define ZKLFS_SESSIONS_IDLE_MAX 3600000		/* ms */
#define ZKLFS_LINGER_MAX 3600000	/* ms */
#define ZKLFS_DEFAULT_KILL_GRACE 2000	/* ms */
#define ZKLFS_KILL_GRACE_MAX 600000	/* ms */

/*
 * zklfs_parse_source() - split "h1:p1,h2:p2/a/b" into its connect string and
 * root ("/a/b"; "/" when absent).  Trailing slashes are dropped.
 * Return: 0, or -EINVAL (empty host list, empty root component, "." or "..").
 */
int zklfs_parse_source(const char *src, char **connect, char **root);

/*
 * zklfs_opts_parse() - fill @conf from @args and validate it.
 * Return: 0, or -EINVAL after one message on stderr.
 */
int zklfs_opts_parse(struct fuse_args *args, struct zklfs_conf *conf);

/* zklfs_conf_free() - free what zklfs_opts_parse() allocated. */
void zklfs_conf_free(struct zklfs_conf *conf);

#endif
