/* fs/revoke.c - user.zklockfs.revoke of an entry, and revoke and break
 * through a lock file (see revoke.h). */
#include "fs/revoke.h"

#include "fs/attr.h"
#include "fs/pool.h"
#include "fs/xcache.h"
#include "fs/zop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zk/lock.h"
#include "zk/log.h"

static void revoke_done(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	(void)zs;
	zklfs_xc_changed(op->fs);	/* the entry's data, or the entry */
	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	zop_reply_err(op, 0);
	zop_free(op);
}

static void break_done(int rc, const void *data)
{
	revoke_done(rc, NULL, data);
}

/* Who owns the entry is known now: ask its holder, if allowed. */
static void revoke_got(int rc, const struct Stat *zs, const void *data)
{
	struct zop *op = (struct zop *)data;

	if (rc != ZOK) {
		zop_fail(op, rc);
		return;
	}
	if (zs->ephemeralOwner == 0) {
		zop_fail(op, ZNOCHILDRENFOREPHEMERALS);	/* not an entry */
		return;
	}
	if (!zklfs_may_own(op->fs, op->uid, op->path, NODE_FILE, zs)) {
		zklog(LOG_NOTICE, "%s refused: uid %u owns neither the "
		      "entry nor the mount", op->attr ? "break" : "revocation",
		      (unsigned)op->uid);
		zop_reply_err(op, EPERM);
		zop_free(op);
		return;
	}
	if (op->attr) {			/* break it: as unlink of the entry */
		rc = zklfs_zdelete(op->fs, zklfs_session_of(op->fs, op->path, false),
				   op->path, break_done, op);
		zop_started(op, rc);
		return;
	}
	rc = zklfs_zset(op->fs, zklfs_session_of(op->fs, op->path, false), op->path,
			ZKL_REVOKE_DATA, (int)strlen(ZKL_REVOKE_DATA), -1, revoke_done, op);
	zop_started(op, rc);
}

void zklfs_revoke(fuse_req_t req, struct node *n, const char *value, size_t len)
{
	struct zklfs *fs = fs_of(req);
	struct zop *op;

	if (!((len == 1 || (len == 2 && value[1] == '\n')) && value[0] == '1')) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	op = zop_new(req, n, zklfs_node_path(fs, n));
	if (!op) {
		fuse_reply_err(req, n->path ? ENOMEM : ENOENT);
		return;
	}
	zop_started(op, zklfs_zexists(fs, zklfs_session_of(fs, op->path, false), op->path,
				      revoke_got, op));
}

void zklfs_revoke_in(fuse_req_t req, struct node *n, const char *value, size_t len,
		     bool brk)
{
	struct zklfs *fs = fs_of(req);
	struct zkg_child c;
	char name[ZKN_NAME_MAX + 1];
	struct zop *op;
	char *dir;

	if (len > 0 && value[len - 1] == '\n')
		len--;
	if (len == 0 || len > ZKN_NAME_MAX || memchr(value, '/', len) ||
	    memchr(value, '\0', len)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(name, value, len);
	name[len] = '\0';
	if (!zkn_parse(name, &c)) {	/* only a queue entry is named */
		zklog(LOG_NOTICE, "%s refused: not the name of a queue entry",
		      brk ? "break" : "revocation");
		fuse_reply_err(req, EINVAL);
		return;
	}
	dir = zklfs_node_path(fs, n);
	op = zop_new(req, n, dir ? zkn_join(dir, name) : NULL);
	free(dir);
	if (!op) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	op->attr = brk;
	zop_started(op, zklfs_zexists(fs, zklfs_session_of(fs, op->path, false), op->path,
				      revoke_got, op));
}
