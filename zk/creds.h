/*
 * zk/creds.h - the mount's ZooKeeper credentials and the ACLs it creates
 * with (see zk/acl.h for the choices).  Main thread, at start-up.
 */
#ifndef ZK_CREDS_H
#define ZK_CREDS_H

#include <zookeeper/zookeeper.h>

#include "zk/acl.h"

/*
 * zks_read_auth() - read one line "user:password" from @file into a
 * malloc'ed *@out.  The file must be a regular file of the daemon's user
 * that group and others cannot open (checked on the descriptor read, as
 * ssh checks keys).  Return: 0; -EACCES or -EINVAL after one log line
 * naming the file; -ENOMEM.
 */
int zks_read_auth(const char *file, char **out);

/* zks_acl() - the ACL vector of @acl, static: never freed. */
struct ACL_vector *zks_acl(enum zkl_acl acl);

#endif
