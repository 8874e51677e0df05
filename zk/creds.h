/*
 * zk/creds.h - the mount's ZooKeeper credentials and the ACLs it creates
 * with (see zk/acl.h for the choices).  Main thread, at start-up.
 */
#ifndef ZK_CREDS_H
#define ZK_CREDS_H

#include <zookeeper/zookeeper.h>

#include "zk/acl.h"

/*
 * zkcred_read_auth() - read one line "user:password" from @file into a
 * malloc'ed *@out.  The file must be a regular file of the daemon's user
 * that group and others cannot open (checked on the descriptor read, as
 * ssh checks keys).  Return: 0; -EACCES or -EINVAL after one log line
 * naming the file; -ENOMEM.
 */
int zkcred_read_auth(const char *file, char **out);

/*
 * zkcred_may_create() - may the credentials @auth ("user:password"; NULL:
 * none, world:anyone alone) create children of @path, whose ACL is @acl?
 * An entry for world:anyone or for their digest id with the create
 * permission, or one of a scheme this cannot judge (ip, sasl, ...), says
 * yes.  Pure but for its log line: zk/session.c asks it at start-up.
 * Return: 0, or -EACCES after one log line (a wrong password gives a
 * digest id no entry names: found at mount, not at the first lock).
 * Without credentials a tree that grants world:anyone no create is 0,
 * with one warning: such a mount may watch it, but takes no lock.
 */
int zkcred_may_create(const struct ACL_vector *acl, const char *path, const char *auth);

/* zkcred_acl() - the ACL vector of @acl, static: never freed. */
struct ACL_vector *zkcred_acl(enum zkacl acl);

#endif
