/*
 * zk/digest.h - the id ZooKeeper's digest scheme gives credentials
 * "user:password": "user:" + base64(SHA-1("user:password")), as an ACL
 * entry names them.  With it the mount checks, before its first lock,
 * that its credentials may create in ROOT (fs/pool.c).  Pure code: no
 * ZooKeeper, no locks, no allocation; any thread.
 */
#ifndef ZK_DIGEST_H
#define ZK_DIGEST_H

#include <stddef.h>
#include <stdint.h>

/* zkd_sha1() - the SHA-1 of @len bytes at @data into @out. */
void zkd_sha1(const void *data, size_t len, uint8_t out[20]);

/*
 * zkd_digest_id() - the digest id of @creds ("user:password") into @out.
 * Return: its length, or -1 if @creds has no ':' or @size is too small.
 */
int zkd_digest_id(const char *creds, char *out, size_t size);

#endif
