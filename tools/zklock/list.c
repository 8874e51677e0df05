// SPDX-License-Identifier: MIT
/*
 * tools/zklock/list.c - zklock --list: print a lock directory's queue as a
 * table, one row per entry, from the entries' xattrs and holder data.
 */
#include "zk/escape.h"
#include "tools/zklock/list.h"

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/zklock/lockdir.h"
#include "tools/zklock/once.h"
#include "tools/zklock/text.h"
#include "tools/zklock/zklock.h"

/* One row of the --list table; every field allocated. */
struct cli_row {
	char *state, *kind, *entry, *host, *pid, *age, *since, *cmd;
};

/*
 * @src (@len bytes, anything a holder or a ZooKeeper client wrote) made
 * safe for a terminal, as zk/log.c writes it to the daemon's log
 * (zkesc(): printable UTF-8 kept, every other byte \xNN, the
 * backslash \\).  Return: an allocated string, or NULL (ENOMEM).
 */
static char *cli_printable(const char *src, size_t len)
{
	char *out = malloc(4 * len + 1);	/* room for every byte escaped */

	if (out)
		zkesc(out, 4 * len + 1, src, len);
	return out;
}

/*
 * The value of "@key=" in entry data @data (@len bytes, maybe binary), made
 * printable (cli_printable()); "-" if absent. Return: an allocated string,
 * or NULL (ENOMEM).
 */
static char *cli_kv(const char *data, size_t len, const char *key)
{
	size_t klen = strlen(key);
	const char *p = data, *end = data + len;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - p) > klen && !memcmp(p, key, klen) &&
		    p[klen] == '=') {
			if (eol == p + klen + 1)
				return strdup("-");
			return cli_printable(p + klen + 1, (size_t)(eol - p) - klen - 1);
		}
		p = nl ? nl + 1 : NULL;
	}
	return strdup("-");
}

/* @secs as 42s, 3m12s, 2h5m or 3d4h, into @buf. */
static void cli_format_age(long long secs, char *buf, size_t size)
{
	if (secs < 0)
		secs = 0;
	if (secs < 60)
		snprintf(buf, size, "%llds", secs);
	else if (secs < 3600)
		snprintf(buf, size, "%lldm%llds", secs / 60, secs % 60);
	else if (secs < 86400)
		snprintf(buf, size, "%lldh%lldm", secs / 3600, secs % 3600 / 60);
	else
		snprintf(buf, size, "%lldd%lldh", secs / 86400, secs % 86400 / 3600);
}

/* Free the fields of @row. */
static void cli_row_free(struct cli_row *row)
{
	free(row->state);
	free(row->kind);
	free(row->entry);
	free(row->host);
	free(row->pid);
	free(row->age);
	free(row->since);
	free(row->cmd);
}

/*
 * Fill @row for child @name of @dir. Return: 0; -ENOENT if it is not a
 * queue entry (a subdirectory, no sequence number, gone meanwhile);
 * another negative errno.
 */
static int cli_row_fill(const char *dir, const char *name, time_t now,
			struct cli_row *row)
{
	char *path, *seq, *data = NULL, age[32];
	ssize_t len;
	struct stat st;
	int fd, err;

	*row = (struct cli_row){ 0 };
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	err = lstat(path, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -ENOENT;
	if (err)
		goto out_free_path;
	len = cli_lockdir_xattr(-1, path, XATTR_SEQ, &seq);
	if (len < 0) {
		err = len == -ENODATA ? -ENOENT : (int)len;
		goto out_free_path;
	}
	free(seq);
	len = cli_lockdir_xattr(-1, path, XATTR_STATE, &row->state);
	if (len >= 0 && strcmp(row->state, "gone") == 0)
		len = -ENOENT;
	if (len >= 0)
		len = cli_lockdir_xattr(-1, path, XATTR_KIND, &row->kind);
	if (len < 0) {
		err = len == -ENODATA ? -ENOENT : (int)len;
		goto out_free_row;
	}
	/* holder data: no O_CREAT, so this reads and takes no lock */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	len = fd < 0 ? -errno : cli_read_all(fd, &data);
	if (fd >= 0)
		close(fd);
	if (len == -ENOENT) {
		err = -ENOENT;
		goto out_free_row;
	}
	row->host = cli_kv(data ? data : "", len > 0 ? (size_t)len : 0, "host");
	row->pid = cli_kv(data ? data : "", len > 0 ? (size_t)len : 0, "pid");
	row->since = cli_kv(data ? data : "", len > 0 ? (size_t)len : 0, "since");
	row->cmd = cli_kv(data ? data : "", len > 0 ? (size_t)len : 0, "cmd");
	free(data);
	cli_format_age((long long)(now - st.st_ctime), age, sizeof(age));
	row->age = strdup(age);
	row->entry = cli_printable(name, strlen(name));	/* any client's name */
	if (!row->host || !row->pid || !row->age || !row->entry || !row->since ||
	    !row->cmd) {
		err = -ENOMEM;
		goto out_free_row;
	}
	free(path);
	return 0;

out_free_row:
	cli_row_free(row);
out_free_path:
	free(path);
	return err;
}

/*
 * Mark the waiters of @rows (in queue order) that wait behind their own
 * process: a waiting row whose host and pid are those of a row ahead of
 * it that holds the lock.  Such a process opened the lock again through
 * another descriptor and waits until it closes the first (the owner of a
 * lock is the descriptor): "waiting-self".  The host and pid are the
 * entries' data, information as the mount's own notice is, never proof.
 */
static void cli_mark_self_waits(struct cli_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *mark;

		if (strcmp(rows[i].state, "waiting") != 0 || !strcmp(rows[i].pid, "-"))
			continue;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(rows[j].state, "held") != 0 ||
			    strcmp(rows[j].host, rows[i].host) != 0 ||
			    strcmp(rows[j].pid, rows[i].pid) != 0)
				continue;
			mark = strdup("waiting-self");
			if (mark) {
				free(rows[i].state);
				rows[i].state = mark;
			}
			break;
		}
	}
}

/* Print @rows as the aligned --list table, with its header; with @json,
 * one JSON object a row.  @limit: the lock's ("-" for a mutex). */
static void cli_print_table(const struct cli_row *rows, size_t n, const char *limit,
			    bool json)
{
	static const char *const head[] = {
		"POS", "STATE", "KIND", "ENTRY", "HOST", "PID", "AGE", "SINCE", "LIMIT", "CMD"
	};
	enum { NCOL = sizeof(head) / sizeof(head[0]) };
	int w[NCOL];
	char pos[24];

	for (size_t i = 0; json && i < n; i++) {
		const char *f[NCOL] = { NULL, rows[i].state, rows[i].kind, rows[i].entry,
					rows[i].host, rows[i].pid, rows[i].age,
					rows[i].since, limit, rows[i].cmd };

		printf("{\"pos\":%zu", i + 1);
		for (int c = 1; c < NCOL; c++) {
			char key[16];
			size_t k;

			for (k = 0; head[c][k] && k < sizeof(key) - 1; k++)
				key[k] = (char)(head[c][k] | 0x20);	/* lower case */
			key[k] = '\0';
			printf(",\"%s\":", key);
			cli_json_str(stdout, f[c]);
		}
		printf("}\n");
	}
	if (json)
		return;
	for (int c = 0; c < NCOL; c++)
		w[c] = (int)strlen(head[c]);
	for (size_t i = 0; i < n; i++) {
		const char *f[] = { rows[i].state, rows[i].kind, rows[i].entry,
				    rows[i].host, rows[i].pid, rows[i].age, rows[i].since, limit };
		int pl = snprintf(pos, sizeof(pos), "%zu", i + 1);

		if (pl > w[0])
			w[0] = pl;
		for (int c = 0; c < 8; c++)
			if ((int)strlen(f[c]) > w[c + 1])
				w[c + 1] = (int)strlen(f[c]);
	}
	printf("%*s  %-*s  %-*s  %-*s  %-*s  %*s  %-*s  %-*s  %-*s  %s\n", w[0], head[0],
	       w[1], head[1], w[2], head[2], w[3], head[3], w[4], head[4],
	       w[5], head[5], w[6], head[6], w[7], head[7], w[8], head[8], head[9]);
	for (size_t i = 0; i < n; i++)
		printf("%*zu  %-*s  %-*s  %-*s  %-*s  %*s  %-*s  %-*s  %-*s  %s\n", w[0], i + 1,
		       w[1], rows[i].state, w[2], rows[i].kind, w[3], rows[i].entry,
		       w[4], rows[i].host, w[5], rows[i].pid, w[6], rows[i].age,
		       w[7], rows[i].since, w[8], limit, rows[i].cmd);
}

/*
 * The rows of a lock file, whose entries have no file to read: its
 * "user.zklockfs.queue", one tab-separated line per entry in queue order
 * (NAME STATE KIND CTIME_MS HOST PID, HOST and PID escaped by the mount).
 * Return: the number of rows in *@out, or a negative errno.
 */
static ssize_t cli_queue_rows(const char *path, time_t now, struct cli_row **out)
{
	char *val, *line, *save = NULL, age[32];
	struct cli_row *rows;
	ssize_t len = cli_lockdir_xattr(-1, path, XATTR_QUEUE, &val);
	size_t n = 0, cap = 1;

	if (len < 0)
		return len;
	for (ssize_t i = 0; i < len; i++)
		cap += val[i] == '\n';
	rows = calloc(cap, sizeof(*rows));
	for (line = strtok_r(val, "\n", &save); rows && line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[6], *fs = NULL;
		int k = 0;

		for (char *t = strtok_r(line, "\t", &fs); t && k < 6; t = strtok_r(NULL, "\t", &fs))
			f[k++] = t;
		if (k != 6)
			continue;	/* not a line the mount writes */
		time_t made = (time_t)(strtoll(f[3], NULL, 10) / 1000);
		char since[32];
		struct tm tm;

		cli_format_age((long long)(now - made), age, sizeof(age));
		gmtime_r(&made, &tm);
		strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
		rows[n] = (struct cli_row){ .entry = cli_printable(f[0], strlen(f[0])),
					    .state = strdup(f[1]), .kind = strdup(f[2]),
					    .host = strdup(f[4]), .pid = strdup(f[5]),
					    .age = strdup(age), .since = strdup(since),
					    .cmd = strdup("-") };	/* not in the queue's text */
		n++;
		if (!rows[n - 1].entry || !rows[n - 1].state || !rows[n - 1].kind ||
		    !rows[n - 1].host || !rows[n - 1].pid || !rows[n - 1].age ||
		    !rows[n - 1].since || !rows[n - 1].cmd)
			break;
	}
	free(val);
	if (!rows)
		return -ENOMEM;
	*out = rows;
	return (ssize_t)n;
}

/* The limit of the lock @path ("-": a mutex, or unknown), into @buf. */
static const char *cli_limit_of(const char *path, char *buf, size_t size)
{
	char *v = NULL;

	snprintf(buf, size, "-");
	if (cli_lockdir_xattr(-1, path, XATTR_LIMIT, &v) > 0)
		snprintf(buf, size, "%s", v);
	free(v);
	return buf;
}

/* After the queue, the last run of zklock --once-per under @path, if any. */
static void cli_print_last_run(const char *path, bool json)
{
	char last[1024];

	if (!cli_once_last(path, last, sizeof(last)))
		return;
	if (json) {
		printf("{\"last_run\":");
		cli_json_str(stdout, last);
		printf("}\n");
	} else {
		printf("last run (--once-per): %s\n", last);
	}
}

/* --list of a lock file. */
static int cli_list_file(const char *path, bool json)
{
	char limit[16];
	struct cli_row *rows = NULL;
	ssize_t n;
	int status = 0;

	n = cli_lockdir_check(path);
	if (!n)
		n = cli_queue_rows(path, time(NULL), &rows);
	if (n < 0)
		return cli_lockdir_failed(path, (int)n);
	cli_mark_self_waits(rows, (size_t)n);
	cli_print_table(rows, (size_t)n, cli_limit_of(path, limit, sizeof(limit)), json);
	cli_print_last_run(path, json);
	if (fflush(stdout) == EOF)
		status = CLI_EXIT_OSERR;
	for (ssize_t i = 0; i < n; i++)
		cli_row_free(&rows[i]);
	free(rows);
	return status;
}

/* See list.h. */
int cli_list(const char *dir, bool json)
{
	char limit[16];
	struct cli_row *rows = NULL, *nrows;
	size_t n = 0, cap = 0;
	time_t now = time(NULL);
	struct dirent *de;
	int err, status = 0;
	DIR *d;

	err = cli_lockdir_lockfile(dir);
	if (err == 1)
		return cli_list_file(dir, json);
	if (err == -ETIMEDOUT)		/* asking again would wait as long */
		return cli_lockdir_failed(dir, err);
	err = cli_lockdir_is_dir(dir);
	if (!err)
		err = cli_lockdir_check(dir);
	if (err)
		return cli_lockdir_failed(dir, err);
	d = opendir(dir);
	if (!d)
		return cli_lockdir_failed(dir, -errno);
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			nrows = reallocarray(rows, cap, sizeof(*rows));
			if (!nrows) {
				err = -ENOMEM;
				break;
			}
			rows = nrows;
		}
		err = cli_row_fill(dir, de->d_name, now, &rows[n]);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (err) {
			warnx("%s/%s: %s", dir, de->d_name, strerror(-err));
			status = CLI_EXIT_OSERR;	/* show the rest anyway */
			err = 0;
			continue;
		}
		n++;
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	if (err) {
		warnx("%s: %s", dir, strerror(-err));
		status = CLI_EXIT_OSERR;
	} else {
		cli_mark_self_waits(rows, n);
		cli_print_table(rows, n, cli_limit_of(dir, limit, sizeof(limit)), json);
		cli_print_last_run(dir, json);
		if (fflush(stdout) == EOF)
			status = CLI_EXIT_OSERR;
	}
	for (size_t i = 0; i < n; i++)
		cli_row_free(&rows[i]);
	free(rows);
	return status;
}

/* @row as "NAME (host H, pid P, for AGE)" into @buf. */
static void cli_describe(const struct cli_row *row, char *buf, size_t size)
{
	snprintf(buf, size, "%s (host %s, pid %s, for %s)", row->entry, row->host,
		 row->pid, row->age);
}

/* See list.h. */
int cli_list_holder(const char *lock, bool lockfile, char *buf, size_t size)
{
	struct cli_row row, *rows = NULL;
	time_t now = time(NULL);
	char *names = NULL, *nl;
	ssize_t n;
	int err = -ENOENT;

	if (lockfile) {
		n = cli_queue_rows(lock, now, &rows);
		if (n < 0)
			return (int)n;
		for (ssize_t i = 0; i < n; i++) {
			if (err && strcmp(rows[i].state, "held") == 0) {
				cli_describe(&rows[i], buf, size);
				err = 0;
			}
			cli_row_free(&rows[i]);
		}
		free(rows);
		return err;
	}
	n = cli_lockdir_xattr(-1, lock, XATTR_HOLDERS, &names);
	if (n < 0)
		return (int)n;
	nl = strchr(names, '\n');
	if (nl)
		*nl = '\0';
	if (*names) {
		err = cli_row_fill(lock, names, now, &row);
		if (!err) {
			cli_describe(&row, buf, size);
			cli_row_free(&row);
		}
	}
	free(names);
	return err;
}
