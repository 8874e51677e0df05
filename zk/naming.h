/*
 * zk/naming.h - entry names of lock recipes, and the names we accept.
 *
 * A queue entry is NAME + kind marker + sequence number, the number being
 * ZooKeeper's "%010d" of a signed 32-bit counter.  We read the entries of
 * Apache Curator, kazoo and go-zookeeper as well as our own.  Pure code: no
 * ZooKeeper, no FUSE, no locks; safe from any thread.
 */
#ifndef ZK_NAMING_H
#define ZK_NAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum zkn_kind { ZKN_EXCLUSIVE, ZKN_SHARED };

/* The format of the entries we create (mount option naming=). */
enum zkn_naming { ZKN_CURATOR, ZKN_KAZOO };

/* One child of a lock znode, as the grant decision sees it. */
struct zkg_child {
	const char *name;	/* borrowed from the caller's children list */
	int32_t seq;
	enum zkn_kind kind;
};

/* Longest name of a znode's path component we show (NAME_MAX). */
#define ZKN_NAME_MAX 255

/*
 * zkn_parse() - read the sequence number and kind of a child's name: the
 * one definition of a queue entry, for the grant, the listing and the
 * names refused (zkn_check_name()).
 * Return: true and *out filled if @name ends in one of the markers of the
 * recipes we read ("-lock-", "-read-lock-", "__lock__", "__rlock__",
 * "__READ__", "__WRIT__") right before exactly what ZooKeeper appends,
 * "%010d" of its signed 32-bit counter ("0000000042", "-000000005",
 * "-1500000000"), or, with no marker, if that number follows a '-' or '_'
 * (ZooKeeper's own recipe, "x-SESSION-0000000042": an exclusive entry);
 * false for a child that takes no part in the queue, as "tmp.1234567890"
 * or "go-build1234567890" (a name that merely ends in digits).
 */
bool zkn_parse(const char *name, struct zkg_child *out);

/*
 * zkn_seq_cmp() - compare two sequence numbers with serial-number arithmetic
 * (RFC 1982), so that order survives the counter's wrap to INT32_MIN.
 * Return: <0 if @a comes before @b, 0 if equal, >0 if after.
 */
static inline int zkn_seq_cmp(int32_t a, int32_t b)
{
	int32_t d = (int32_t)((uint32_t)a - (uint32_t)b);

	return d < 0 ? -1 : d > 0;
}

/* zkn_marker() - the marker our entries carry between NAME and the number. */
const char *zkn_marker(enum zkn_naming scheme, enum zkn_kind kind);

/*
 * zkn_check_name() - may @name become a znode we create (mkdir, a lock
 * file, or the NAME of a lock request)?
 * Return: 0; -EINVAL for "", ".", "..", a queue entry's name (zkn_parse():
 * a directory "job-lock-0000000007" would join its parent's queue, and
 * every client would wait behind it, for good), invalid UTF-8 or a
 * character ZooKeeper refuses; -ENAMETOOLONG past 255 bytes.
 */
int zkn_check_name(const char *name);

/*
 * zkn_check_entry_name() - zkn_check_name(), and the entry NAME+marker+number
 * must itself fit in 255 bytes (-ENAMETOOLONG) and read back, for either
 * kind, as that kind and number (-EINVAL): with the curator markers an
 * exclusive "db-read" would make "db-read-lock-0000000042", which every
 * client reads as shared.  What NAME ends in otherwise does not matter
 * (digits included): the number is read after the marker.
 */
int zkn_check_entry_name(const char *name, enum zkn_naming scheme,
			 enum zkn_kind kind);

/* zkn_join() - "@dir/@name", malloc'ed, minding the root "/". NULL: ENOMEM. */
char *zkn_join(const char *dir, const char *name);

/* zkn_base() - the last component of the znode path @path. */
const char *zkn_base(const char *path);

/* zkn_parent_len() - how long the parent's path is at the start of the
 * absolute znode path @path: 1 for "/a" (the root "/"), 2 for "/a/b". */
size_t zkn_parent_len(const char *path);

/* zkn_hash() - a hash of @path (FNV-1a, 64 bits) for tables keyed by path. */
uint64_t zkn_hash(const char *path);

/* zkn_parse_scheme() - "curator" or "kazoo". Return: 0 or -EINVAL. */
int zkn_parse_scheme(const char *s, enum zkn_naming *out);

#endif
