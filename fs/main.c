/*
 * fs/main.c - zklockfs [-f] [-d] [-o OPT,...] CONNECT[/ROOT] MOUNTPOINT
 *
 * Start-up order matters (docs/DESIGN.md): fork first (our threads would
 * not survive it), block the termination signals before the sessions
 * start so their supervisors inherit the mask, connect, make the mount
 * point immutable (fs/mountpoint.h: as root), mount, and only then tell
 * the waiting parent that the mount is up.  Then this thread serves FUSE
 * and drives the ZooKeeper sessions (serve_loop(), zk/drive.h).
 * Shutdown: answer pending opens, close the sessions (the server drops
 * every entry at once), unmount; the mount point stays immutable.
 */
#include "fs/attr.h"
#include "fs/ender.h"
#include "fs/handlers.h"
#include "fs/lockreq.h"
#include "fs/mntwatch.h"
#include "fs/mountpoint.h"
#include "fs/node.h"
#include "fs/observe.h"
#include "fs/pending.h"
#include "fs/pool.h"
#include "fs/ready.h"
#include "fs/reply.h"
#include "fs/watchdog.h"
#include "fs/xcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "zk/connect.h"
#include "zk/drive.h"
#include "zk/log.h"


#ifndef ZKLOCKFS_VERSION
#error "ZKLOCKFS_VERSION comes from debian/changelog (the Makefile passes it)"
#endif

static int ready_fd = -1;

static void pend_arm(struct zklfs *fs);

/* The deadline sweep of pending requests (fs/pending.h): at the looks of
 * the root's session supervisor, a tenth of the session timeout apart;
 * those of a session declared silent are answered at once. */
static void pend_sweep(void *arg, bool go)
{
	struct zklfs *fs = arg;
	struct zks *s;

	for (int i = 0; go && (s = zklfs_session_at(fs, i)); i++)
		if (zklfs_zquiet(fs, s))
			zpend_silent(fs, s);
	if (zpend_sweep(fs, zklfs_now_ms(), !go))
		pend_arm(fs);
}

static void pend_arm(struct zklfs *fs)
{
	/* on the first session, which never closes */
	if (zklfs_zlater(fs, zklfs_session_at(fs, 0), pend_sweep, fs) != 0)
		zpend_sweep(fs, 0, true);	/* closing: none armed */
}

/* Fork; the parent exits with the status the child reports via daemon_ready(). */
static int daemon_start(void)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		char status = 1;

		close(fds[1]);
		if (read(fds[0], &status, 1) != 1)
			status = 1;	/* the child died before mounting */
		_exit(status);
	}
	close(fds[0]);
	setsid();
	ready_fd = fds[1];
	return 0;
}

/*
 * No syslog listens here: may the log stay on standard error?  A terminal,
 * a file or a socket (the journal's stream) takes it; a pipe would keep
 * whoever reads it (mount(8), a script capturing the output) waiting for
 * an end that never comes.  One line says which.
 */
static bool stderr_keeps_log(void)
{
	struct stat st;
	bool keep = fstat(2, &st) == 0 &&
		    (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode));

	if (keep)
		zklog(LOG_WARNING, "no syslog here (/dev/log): the log goes on to "
		      "standard error");
	else
		zklog(LOG_WARNING, "no syslog here (/dev/log), and standard error is "
		      "a pipe: the daemon's log is lost from now on (run it with -f, "
		      "or under a syslog)");
	return keep;
}

/* Tell the waiting parent we are mounted; let the terminal go (standard
 * error too unless @keep_stderr: the log's only way out). */
static void daemon_ready(bool keep_stderr)
{
	char status = 0;
	int null;

	if (ready_fd < 0)
		return;
	if (write(ready_fd, &status, 1) != 1)
		zklog(LOG_WARNING, "cannot tell the parent we are mounted");
	close(ready_fd);
	ready_fd = -1;
	if (chdir("/") != 0)
		zklog(LOG_WARNING, "chdir /: %s", strerror(errno));
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		if (!keep_stderr)
			dup2(null, 2);
		if (null > 2)
			close(null);
	}
}

static void usage(const char *prog)
{
	printf("usage: %s [-f] [-d] [-o OPT[,OPT...]] CONNECT[/ROOT] MOUNTPOINT\n\n"
	       "Mount ZooKeeper's locks at MOUNTPOINT: a directory is a lock, open(O_CREAT)\n"
	       "in it waits for the lock, close() gives it back.\n\n"
	       "zklockfs options:\n"
	       "    -o session_timeout=MS  ZooKeeper session timeout (default %d)\n"
	       "    -o naming=SCHEME       entry names: curator (default) or kazoo\n"
	       "    -o auth_file=PATH      ZooKeeper digest credentials (user:password),\n"
	       "                           a file of the daemon's user, mode 600\n"
	       "    -o acl=ACL             with auth_file, the ACL of every znode made:\n"
	       "                           creator-read (default), creator or open\n"
	       "    -o sessions=N          exactly N ZooKeeper sessions (1..%d); by default\n"
	       "                           one, and more while locks wait behind its pace\n"
	       "    -o sessions_idle=MS    close an extra session idle that long (default %d)\n"
	       "    -o containers          mkdir makes container znodes, which the server\n"
	       "                           deletes once their last entry is gone\n"
	       "    -o linger=MS           keep an entry up to MS ms after its last close,\n"
	       "                           for the next open on this mount (0..%d)\n"
	       "    -o lockfiles           regular files are lock files, locked with\n"
	       "                           flock(2), fcntl(2) or lockf(3): a cluster's /var/lock\n"
	       "    -o create_root         make ROOT if it is missing (else the mount fails:\n"
	       "                           a mistyped ROOT must not become a lock tree of its own)\n\n",
	       prog, ZKLFS_DEFAULT_SESSION_TIMEOUT, ZKLFS_SESSIONS_MAX, ZKLFS_DEFAULT_SESSIONS_IDLE,
	       ZKLFS_LINGER_MAX);
}

/* Is @path (absolute) the mount point of a zklockfs mount now? */
static bool zklockfs_mounted_at(const char *path)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char line[4096], dir[PATH_MAX], type[64];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *o = dir;

		if (sscanf(line, "%*s %4095s %63s", dir, type) != 2 ||
		    strcmp(type, "fuse.zklockfs") != 0)
			continue;
		/* the kernel writes space, tab, newline and backslash as \ooo */
		for (const char *i = dir; *i; o++)
			if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' && i[2] >= '0' &&
			    i[2] <= '7' && i[3] >= '0' && i[3] <= '7') {
				*o = (char)((i[1] - '0') * 64 + (i[2] - '0') * 8 + (i[3] - '0'));
				i += 4;
			} else {
				*o = *i++;
			}
		*o = '\0';
		found = strcmp(dir, path) == 0;
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * Can zklockfs mount at @mp?  One line saying why not, on stderr: a dead
 * FUSE mount (its daemon gone: ENOTCONN), not a directory, or already a
 * zklockfs mount (a second one stacked there would hide the first).
 * Return: the real path (to free), or NULL.
 */
static char *mountpoint_check(const char *mp)
{
	struct statfs sfs;
	struct stat st;
	char *real;

	/* statfs always reaches a FUSE daemon, where stat may be answered
	 * from the kernel's cache for a second after the daemon died */
	if (statfs(mp, &sfs) != 0 || stat(mp, &st) != 0) {
		if (errno == ENOTCONN)
			fprintf(stderr, "zklockfs: mount point %s is a dead FUSE mount (its "
				"daemon is gone): run fusermount3 -u %s first\n", mp, mp);
		else
			fprintf(stderr, "zklockfs: mount point %s: %s\n", mp, strerror(errno));
		return NULL;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "zklockfs: mount point %s is not a directory\n", mp);
		return NULL;
	}
	real = realpath(mp, NULL);
	if (!real) {
		fprintf(stderr, "zklockfs: mount point %s: %s\n", mp, strerror(errno));
		return NULL;
	}
	if (zklockfs_mounted_at(real)) {
		fprintf(stderr, "zklockfs: %s is a zklockfs mount already: unmount it "
			"first (umount %s)\n", real, real);
		free(real);
		return NULL;
	}
	return real;
}

/* The FUSE side of the loop: the requests /dev/fuse has, then the exit flag. */
struct serving {
	struct fuse_session *se;
	struct fuse_buf buf;
	int rc;				/* a negative errno of /dev/fuse */
};

/* Requests served in a row before the sessions' I/O gets a turn */
#define SERVE_BATCH 32
/* A turn's longest wait: a signal's exit flag is seen this soon */
#define SERVE_TICK_MS 250

/* Serve at most @max of the requests /dev/fuse (non-blocking) has now.
 * Return: false, with sv->rc, if reading it failed. */
static bool serve_some(struct serving *sv, int max)
{
	for (int i = 0; i < max && !fuse_session_exited(sv->se); i++) {
		int res = fuse_session_receive_buf(sv->se, &sv->buf);

		if (res == -EINTR || res == -EAGAIN)
			break;
		if (res < 0) {
			sv->rc = res;
			return false;
		}
		if (res == 0)		/* unmounted: libfuse ended the session */
			break;
		fuse_session_process_buf(sv->se, &sv->buf);
	}
	return true;
}

static bool serve(void *arg, bool ready)
{
	struct serving *sv = arg;

	if (ready && !serve_some(sv, SERVE_BATCH))
		return false;
	return !fuse_session_exited(sv->se);
}

/*
 * Serve what /dev/fuse holds already, then stop: the closes of processes
 * that just ended (the stop's holders), which the kernel queued as they
 * exited.  After serve_loop(), which left the session ready again.
 */
static void serve_queued(struct fuse_session *se)
{
	struct serving sv = { .se = se };

	serve_some(&sv, 64 * SERVE_BATCH);
	free(sv.buf.mem);
}

/*
 * The termination signals end the loop, as libfuse's own handlers do, and
 * say which one came (libfuse keeps that to itself): stop_holders() hurries
 * at a second one.
 */
static struct fuse_session *signal_se;
static volatile sig_atomic_t signal_came;

static void on_exit_signal(int sig)
{
	signal_came = sig;
	fuse_session_exit(signal_se);
}

/* Ours for SIGHUP, SIGINT and SIGTERM (@on), or the default again. */
static int exit_signals(struct fuse_session *se, bool on)
{
	struct sigaction sa = { .sa_handler = on ? on_exit_signal : SIG_DFL };
	const int sigs[] = { SIGHUP, SIGINT, SIGTERM };

	signal_se = se;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) != 0)
			return -errno;
	return 0;
}

/*
 * Serve FUSE and drive the ZooKeeper sessions on this thread
 * (zk/drive.h) until the session ends: unmounted, or a signal's handler
 * set its exit flag, which a turn sees within its tick.  As
 * fuse_session_loop(), it leaves the session ready to serve again.
 * Return: 0, the signal that ended it, or a negative errno of /dev/fuse.
 */
static int serve_loop(struct fuse_session *se)
{
	struct serving sv = { .se = se };
	int fd = fuse_session_fd(se);

	/* read until there is nothing, then poll with the sessions */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
		return -errno;
	signal_came = 0;
	zkd_run(fd, serve, &sv, SERVE_TICK_MS);
	free(sv.buf.mem);
	fuse_session_reset(se);
	return sv.rc ? sv.rc : signal_came;
}

/*
 * The exit status for what serve_loop() returned: a clean stop is 0,
 * whether by unmount (ENODEV), by a connection ended from outside (umount
 * -f, or the last close on a lazily unmounted mount: ECONNABORTED), or by
 * a terminating signal (libfuse returns its number).
 */
static int loop_status(int rc)
{
	if (rc == 0 || rc == -ENODEV || rc == -ECONNABORTED ||
	    rc == SIGTERM || rc == SIGINT || rc == SIGHUP)
		return 0;
	zklog(LOG_ERR, "FUSE session ended: %s", rc < 0 ? strerror(-rc) : "signal");
	return 1;
}

static atomic_bool holders_gone;	/* stop_holders(): its work is done */

/* The holders are ended (the ender's thread): the loop that served their
 * closes ends, at once (zkd_wake(): it sees the exit flag). */
static void holders_stopped(void *arg)
{
	struct zklfs *fs = arg;

	atomic_store(&holders_gone, true);
	fuse_session_exit(fs->se);
	zkd_wake();
}

/*
 * on_loss=end, an orderly stop: the processes that hold a lock through
 * this mount end before its sessions close (SIGTERM, kill_grace, SIGKILL:
 * fs/ender.h), and the FUSE loop goes on meanwhile, since their closes
 * (FLUSH, RELEASE) wait for it.  Another signal meanwhile: SIGKILL now.
 * A connection gone (unmounted) serves nothing and waits for the schedule.
 */
static void stop_holders(struct zklfs *fs)
{
	struct zklfs_held *held;
	size_t n = lockreq_ends_held(fs, &held);
	int rc;

	if (!n)
		return;
	if (zklfs_ender_stopping(held, n, fs->conf->kill_grace_ms, holders_stopped, fs) != 0) {
		zklog(LOG_ERR, "stopping: no thread to end the holders of %zu locks", n);
		free(held);
		return;
	}
	free(held);
	for (;;) {
		rc = serve_loop(fs->se);
		if (atomic_load(&holders_gone)) {
			serve_queued(fs->se);	/* the last ones' closes */
			break;
		}
		if (rc != SIGTERM && rc != SIGINT && rc != SIGHUP)
			break;		/* unmounted: nothing to serve */
		/* another signal: SIGKILL now, and serve their closes */
		zklfs_ender_hurry();
	}
	zklfs_ender_stopped();
}

/* fsname=zklockfs@SOURCE,subtype=zklockfs, with SOURCE's commas escaped. */
static int add_mount_name(struct fuse_args *args, const char *source)
{
	char *opt = malloc(strlen(source) * 2 + 64), *p;

	if (!opt)
		return -1;
	p = opt + sprintf(opt, "-osubtype=zklockfs,fsname=");
	for (const char *s = source; *s; s++) {
		if (*s == ',' || *s == '\\')
			*p++ = '\\';
		*p++ = *s;
	}
	*p = '\0';
	int rc = fuse_opt_add_arg(args, opt);
	free(opt);
	return rc;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts = { 0 };
	struct zklfs_conf conf;
	struct zklfs fs;
	struct zk_heartbeat *hb;
	sigset_t sigs, old;
	char why[320];
	bool keep_stderr;
	int ret = 1, err;

	memset(&fs, 0, sizeof(fs));
	if (zklfs_opts_parse(&args, &conf) != 0)
		goto out_args;
	if (conf.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out_args;
	}
	if (conf.show_version) {
		printf("zklockfs %s (libfuse %s)\n", ZKLOCKFS_VERSION, fuse_pkgversion());
		ret = 0;
		goto out_args;
	}
	if (add_mount_name(&args, conf.source) != 0 ||
	    fuse_parse_cmdline(&args, &opts) != 0)
		goto out_args;
	if (!opts.mountpoint) {
		fprintf(stderr, "zklockfs: missing MOUNTPOINT (try --help)\n");
		goto out_args;
	}
	fs.conf = &conf;
	fs.mountpoint = mountpoint_check(opts.mountpoint);
	if (!fs.mountpoint)
		goto out_args;
	/* a bad connect string fails here, at once, naming the part */
	err = zkc_check(conf.connect, conf.session_timeout_ms < 1000 ? conf.session_timeout_ms
								  : 1000, why, sizeof(why));
	if (err) {
		fprintf(stderr, err == -EINVAL ? "zklockfs: bad ZooKeeper address '%s': %s\n"
					       : "zklockfs: cannot reach ZooKeeper at %s: %s\n",
			conf.connect, why);
		goto out_args;
	}
	fs.uid = getuid();
	fs.gid = getgid();
	if (gethostname(fs.host, sizeof(fs.host) - 1) != 0)
		strcpy(fs.host, "localhost");
	zkmx_init(&fs.wb_send, ZKMX_RANK_WBSEND, "fs->wb_send");
	zkmx_init(&fs.lock, ZKMX_RANK_FS, "fs->lock");
	fs.reply = &zklfs_fuse_reply;
	zklog_init("zklockfs", false, opts.debug);
	if (!opts.foreground && daemon_start() != 0) {
		fprintf(stderr, "zklockfs: cannot fork: %s\n", strerror(errno));
		goto out_args;
	}

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	err = zklfs_pool_open(&fs, lockreq_lost, lockreq_revoked, lockreq_doubted);
	if (err)
		goto out_nodes;
	if (zklfs_nodes_init(&fs, zklfs_lock_node_end) != 0 || zklfs_owners_init(&fs) != 0 ||
	    zklfs_xc_init(&fs) != 0 || zpend_init(&fs, pend_arm) != 0 ||
	    zklfs_observe_init(&fs) != 0) {
		zklog(LOG_ERR, "out of memory");
		goto out_nodes;
	}
	zpend_timeout(&fs, zklfs_ztimeout_ms(&fs, zklfs_session(&fs, fs.root->path)));
	hb = zklfs_watchdog_open(&fs, zklfs_pool_max(&fs));	/* none: said, no mount */
	if (!hb || zklfs_pool_start(&fs, hb) != 0)
		goto out_nodes;
	fs.se = fuse_session_new(&args, &zklfs_ops, sizeof(zklfs_ops), &fs);
	if (!fs.se)
		goto out_nodes;
	if (fuse_set_signal_handlers(fs.se) != 0)
		goto out_session;
	if (exit_signals(fs.se, true) != 0)
		goto out_signals;
	/* unwritable while nothing is mounted: never a host-local lock file */
	zklfs_mp_guard(fs.mountpoint);
	if (fuse_session_mount(fs.se, fs.mountpoint) != 0)
		goto out_signals;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	zklog(LOG_INFO, "mounted %s at %s", conf.source, fs.mountpoint);
	keep_stderr = opts.foreground || !zklog_init("zklockfs", true, opts.debug);
	if (!opts.foreground && keep_stderr)
		keep_stderr = stderr_keeps_log();
	daemon_ready(keep_stderr);
	zklfs_ready_start(&fs);			/* systemd's READY=1, once it answers */
	zklfs_mntwatch_start(&fs);		/* an umount here ends us, copies or not */
	if (conf.on_loss_end)
		zklfs_ender_start();		/* a lost lock's work ends */

	ret = loop_status(serve_loop(fs.se));
	zklfs_ready_stopping(&fs);
	zklfs_pool_shutdown(&fs);		/* answer every waiting open: no grant
						   from now on */
	stop_holders(&fs);
	zklfs_mntwatch_stop();

	zklfs_pool_close(&fs);			/* the server drops our entries */
	zklfs_ender_stop();			/* after the losses it was told */
	/* gone from here already: its path may be another mount's now */
	if (zklfs_mntwatch_may_unmount(&fs))
		fuse_session_unmount(fs.se);
	zklfs_ready_join(&fs);
out_signals:
	exit_signals(fs.se, false);
	fuse_remove_signal_handlers(fs.se);
out_session:
	fuse_session_destroy(fs.se);
out_nodes:
	zklfs_pool_close(&fs);
	zklfs_observe_free(&fs);		/* gives its holds back to the pool */
	zklfs_pool_free(&fs);
	zklfs_dirlists_free(&fs);
	zklfs_nodes_free(&fs);
	zklfs_owners_free(&fs);
	zklfs_xc_free(&fs);
	zpend_free(&fs);
	zklfs_watchdog_close(&fs);
	zkmx_destroy(&fs.lock);
	zkmx_destroy(&fs.wb_send);
out_args:
	free(fs.mountpoint);		/* NULL before the mount point's check */
	free(opts.mountpoint);
	zklfs_conf_free(&conf);
	fuse_opt_free_args(&args);
	return ret;
}
