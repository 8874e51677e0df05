/*
 * zk/acl.h - which ZooKeeper ACL the mount's znodes get (-o acl=).
 *
 * Without credentials (no auth_file) every znode gets ZooKeeper's open ACL,
 * as Curator and kazoo do by default: anyone who reaches the ensemble may
 * change it, and only the mount's own permission rules stand between users.
 * With credentials the mount chooses; the default lets every other client
 * watch the queues (read) and none break them.  The "auth" scheme in an ACL
 * means "every identity the creating session authenticated as", so no
 * password hash is ever computed or stored here.  Pure; any thread.
 */
#ifndef ZK_ACL_H
#define ZK_ACL_H

#include <string.h>

enum zkacl {
	ZKACL_OPEN,		/* world:anyone:cdrwa */
	ZKACL_CREATOR_READ,	/* auth::cdrwa, world:anyone:r (the default) */
	ZKACL_CREATOR,	/* auth::cdrwa: nobody else may even read */
};

/* zkacl_parse() - "open", "creator-read" or "creator". Return: 0 or -1. */
static inline int zkacl_parse(const char *s, enum zkacl *out)
{
	if (strcmp(s, "open") == 0)
		*out = ZKACL_OPEN;
	else if (strcmp(s, "creator-read") == 0)
		*out = ZKACL_CREATOR_READ;
	else if (strcmp(s, "creator") == 0)
		*out = ZKACL_CREATOR;
	else
		return -1;
	return 0;
}

#endif
