/*
 * zk/connect.h - a connect string checked before the ZooKeeper client
 * gets it: each part a host:port, each host resolvable, and some server
 * there not refusing outright.
 *
 * The C client takes "host:port[,host:port...]" and, given a mistyped
 * host, a missing port or a list of which every server refuses, says
 * nothing useful: it retries for the whole session timeout, or fails with
 * the errno of a lookup ("No such file or directory").  A mount must fail
 * at once with one line that names the part that is wrong.
 *
 * Main thread, at start-up only: it resolves names and connects (with a
 * bound), so it blocks.  No locks, no ZooKeeper handle.
 */
#ifndef ZK_CONNECT_H
#define ZK_CONNECT_H

#include <stddef.h>

/*
 * zkc_check() - check @connect; try a TCP connection to every address of
 * every host for at most @probe_ms in all, until one is accepted.
 * Return: 0 (some server accepted, or none answered either way within the
 * bound: the client will go on trying); -EINVAL (a part is not
 * host:port with a port 1..65535); -ENOENT (a host does not resolve: the
 * name service says it has no such name; one that cannot answer yet, as at
 * boot, is left to the client);
 * -ECONNREFUSED (every address of every host refused).  @why (@size
 * bytes) then says which part, and why, in a few words.
 */
int zkc_check(const char *connect, int probe_ms, char *why, size_t size);

/*
 * zkc_part() - the @i-th part of @connect ("host:port"), split into @host
 * (@hsize bytes; an IPv6 address in brackets loses them) and @port.
 * Return: 1, 0 past the last part, -EINVAL if malformed.  Pure.
 */
int zkc_part(const char *connect, int i, char *host, size_t hsize, char *port,
	     size_t psize);

#endif
