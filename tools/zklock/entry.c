// SPDX-License-Identifier: MIT
/*
 * tools/zklock/entry.c - our entry in the lock directory: name it, take the
 * lock by opening it, find its full name, pass it on to the command.
 */
#include "tools/zklock/entry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "tools/zklock/lockdir.h"
#include "tools/zklock/opts.h"
#include "tools/zklock/signals.h"

/* See entry.h. */
int zkl_entry_default_name(char **out)
{
	struct utsname u;
	bool ok;

	ok = uname(&u) == 0 && zkl_opts_name_ok(u.nodename);
	for (const unsigned char *c = (unsigned char *)u.nodename; ok && *c; c++)
		ok = *c > ' ' && *c < 0x7f;
	*out = strdup(ok ? u.nodename : "zklock");
	return *out ? 0 : -ENOMEM;
}

/* See entry.h. */
int zkl_entry_take(struct zkl_run *r, const char *path)
{
	const struct zkl_opts *o = r->o;
	int flags = O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY |
		    (o->shared ? O_RDONLY : O_WRONLY) |
		    (o->nonblock ? O_NONBLOCK : 0);
	bool timed = !o->nonblock && o->timeout > 0;
	int remakes = ZKL_ENTRY_REMAKES;
	int err = 0;

	if (timed) {
		err = zkl_sig_arm_timer(o->timeout);
		if (err)
			return err;
	}
	for (;;) {
		if (zkl_sig_caught()) {
			err = -EINTR;
			break;
		}
		if (zkl_sig_alarmed()) {
			err = -ETIMEDOUT;
			break;
		}
		r->lockfd = open(path, flags, 0644);
		if (r->lockfd >= 0)
			break;
		err = -errno;
		if (err == -ENOENT && remakes-- > 0) {
			/* the directory went since we made it: again */
			err = zkl_lockdir_remake(r->dir);
			if (err)
				break;
			continue;
		}
		if (err != -EINTR)
			break;
		/* a stop signal (^Z) also ends the wait: queue again */
		err = 0;
	}
	if (timed || zkl_sig_caught())
		zkl_sig_disarm_timer();
	return err;
}

/* See entry.h. */
int zkl_entry_find(struct zkl_run *r)
{
	static const char *const excl[] = { "-lock-", "__lock__" };
	static const char *const shrd[] = { "-read-lock-", "__rlock__" };
	const char *const *markers = r->o->shared ? shrd : excl;
	char *seqstr, *end, suffix[16];
	size_t nlen = strlen(r->name), slen;
	struct dirent *de;
	long seq;
	DIR *d;
	int err;

	err = (int)zkl_lockdir_xattr(r->lockfd, NULL, XATTR_SEQ, &seqstr);
	if (err < 0)
		return err;
	errno = 0;
	seq = strtol(seqstr, &end, 10);
	err = errno || end == seqstr || seq < INT32_MIN || seq > INT32_MAX ?
	      -EPROTO : 0;
	free(seqstr);
	if (err)
		return err;
	slen = (size_t)snprintf(suffix, sizeof(suffix), "%010d", (int)seq);

	d = opendir(r->dir);
	if (!d)
		return -errno;
	err = -ENOENT;
	while (err == -ENOENT && (errno = 0, de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);

		if (len <= nlen + slen || memcmp(n, r->name, nlen) ||
		    strcmp(n + len - slen, suffix))
			continue;
		for (int i = 0; i < 2; i++) {
			size_t mlen = strlen(markers[i]);

			if (len != nlen + mlen + slen ||
			    memcmp(n + nlen, markers[i], mlen))
				continue;
			err = asprintf(&r->entry, "%s/%s", r->dir, n) < 0 ?
			      -ENOMEM : 0;
			break;
		}
	}
	if (err == -ENOENT && errno)
		err = -errno;
	closedir(d);
	return err;
}

/* See entry.h. */
int zkl_entry_export_env(struct zkl_run *r)
{
	ssize_t len = zkl_lockdir_xattr(r->lockfd, NULL, XATTR_TOKEN, &r->token);

	if (len < 0)
		return (int)len;
	if (setenv("ZKLOCK_DIR", r->dir, 1) < 0 ||
	    setenv("ZKLOCK_ENTRY", r->entry, 1) < 0 ||
	    setenv("ZKLOCK_TOKEN", r->token, 1) < 0 ||
	    setenv("ZKLOCK_MODE", r->o->shared ? "shared" : "exclusive", 1) < 0)
		return -errno;
	return 0;
}
