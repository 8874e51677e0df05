/* zk/creds.c - the mount's ZooKeeper credentials and the ACLs it creates with. */
#include "zk/creds.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zk/digest.h"
#include "zk/log.h"

/*
 * Read "user:password" from @file, which must be as private as an ssh key:
 * a regular file of the daemon's user that nobody else may open.  Checked
 * on the descriptor read from, so a swap after the check changes nothing.
 */
int zkcred_read_auth(const char *file, char **out)
{
	char buf[512];
	struct stat st;
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0 || fstat(fd, &st) != 0) {
		zklog(LOG_ERR, "auth_file %s: %s", file, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		zklog(LOG_ERR, "auth_file %s: not a regular file", file);
		goto out_close;
	}
	if (st.st_uid != geteuid()) {
		zklog(LOG_ERR, "auth_file %s is owned by uid %u, not by uid %u "
		      "that runs the daemon: chown it", file, (unsigned)st.st_uid,
		      (unsigned)geteuid());
		goto out_close;
	}
	if (st.st_mode & 077) {
		zklog(LOG_ERR, "permissions %04o for auth_file %s are too open: "
		      "others may read it (chmod 600 %s)",
		      (unsigned)(st.st_mode & 07777), file, file);
		goto out_close;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!strchr(buf, ':')) {
		zklog(LOG_ERR, "auth_file %s: want one line user:password", file);
		return -EINVAL;
	}
	*out = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *out ? 0 : -ENOMEM;
out_close:
	if (fd >= 0)
		close(fd);
	return -EACCES;
}

/*
 * The ACLs of zk/acl.h; "auth" stands for the creating session's ids.  The
 * client's ZOO_PERM_* are variables, not constants: their wire values.
 */
#define PERM_READ 1
#define PERM_ALL 31
static struct ACL acl_creator_read[] = {
	{ PERM_ALL, { "auth", "" } },
	{ PERM_READ, { "world", "anyone" } },
};
static struct ACL acl_creator[] = {
	{ PERM_ALL, { "auth", "" } },
};
static struct ACL acl_open[] = {
	{ PERM_ALL, { "world", "anyone" } },
};
static struct ACL_vector acl_vectors[] = {
	[ZKACL_OPEN] = { 1, acl_open },
	[ZKACL_CREATOR_READ] = { 2, acl_creator_read },
	[ZKACL_CREATOR] = { 1, acl_creator },
};

struct ACL_vector *zkcred_acl(enum zkacl acl)
{
	return &acl_vectors[acl];
}

int zkcred_may_create(const struct ACL_vector *acl, const char *path, const char *auth)
{
	char id[320];
	bool may = false, unknown = false;

	if (!auth || zkd_digest_id(auth, id, sizeof(id)) < 0)
		id[0] = '\0';		/* no credentials: world:anyone alone */
	for (int i = 0; i < acl->count; i++) {
		const struct ACL *a = &acl->data[i];

		if (!(a->perms & ZOO_PERM_CREATE))
			continue;
		if (strcmp(a->id.scheme, "world") == 0 && strcmp(a->id.id, "anyone") == 0)
			may = true;
		else if (strcmp(a->id.scheme, "digest") == 0)
			may |= id[0] && strcmp(a->id.id, id) == 0;
		else	/* ip, sasl, x509, ...: what the server says is not known here */
			unknown = true;
	}
	if (may || unknown)
		return 0;
	if (!auth) {		/* it may watch the tree: said, not refused */
		zklog(LOG_WARNING, "ROOT %s grants no create to a mount without credentials "
		      "(world:anyone): it can watch the locks but every lock it takes will "
		      "fail with Permission denied; give the tree's credentials with "
		      "auth_file=PATH", path);
		return 0;
	}
	zklog(LOG_ERR, "the credentials of auth_file (user %.*s) may not create in "
	      "ROOT %s: its ACL grants them no create (a wrong password, or another "
	      "user's tree)", (int)strcspn(auth, ":"), auth, path);
	return -EACCES;
}
