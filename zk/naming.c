/* zk/naming.c - entry names: parsing, markers, validation. */
#include "zk/naming.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The markers of every recipe whose entries we read, each right before the
 * number: ours (zkn_marker()), go-zookeeper's ("-lock-", as Curator's
 * mutex), Curator's read/write lock ("__READ__", "__WRIT__"), kazoo's.
 * "-read-lock-" ends in "-lock-": the longer comes first.
 */
static const struct {
	const char *marker;
	enum zkn_kind kind;
} markers[] = {
	{ "-read-lock-", ZKN_SHARED },
	{ "-lock-", ZKN_EXCLUSIVE },
	{ "__rlock__", ZKN_SHARED },
	{ "__lock__", ZKN_EXCLUSIVE },
	{ "__READ__", ZKN_SHARED },
	{ "__WRIT__", ZKN_EXCLUSIVE },
};

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/*
 * Is @s exactly what ZooKeeper appends to a sequential node, "%010d" of a
 * signed 32-bit counter ("0000000042", "-000000005", "-1500000000")?
 * Then *seq is its value.
 */
static bool seq_suffix(const char *s, int32_t *seq)
{
	char canon[16];
	char *end;
	long long v;

	if (!(*s == '-' || (*s >= '0' && *s <= '9')))
		return false;		/* strtoll would skip spaces, a '+' */
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < INT32_MIN || v > INT32_MAX)
		return false;
	snprintf(canon, sizeof(canon), "%010d", (int)v);
	if (strcmp(canon, s) != 0)
		return false;
	*seq = (int32_t)v;
	return true;
}

bool zkn_parse(const char *name, struct zkg_child *out)
{
	size_t len = strlen(name);
	int32_t seq;

	/*
	 * The number takes 10 bytes, or 11 ("-2147483648").  A name has one
	 * reading at most: when both tails are numbers, the 10-byte one
	 * follows the 11-byte one's '-', and no marker ends in "--" or "_-"
	 * ("a-lock--1500000000" is -1500000000 after "-lock-", not
	 * 1500000000 after "a-lock--").
	 */
	for (size_t sfx = 10; sfx <= 11 && sfx <= len; sfx++) {
		if (!seq_suffix(name + len - sfx, &seq))
			continue;
		for (size_t i = 0; i < sizeof(markers) / sizeof(*markers); i++) {
			if (!ends_with(name, len - sfx, markers[i].marker))
				continue;
			out->name = name;
			out->seq = seq;
			out->kind = markers[i].kind;
			return true;
		}
	}
	/*
	 * No marker: another recipe's contender all the same when the number
	 * follows a '-' or '_' (ZooKeeper's own lock recipe names its entries
	 * "x-SESSION-NNNNNNNNNN"), exclusive, as every client reads one.  A
	 * number glued to a name ("tmp.1234567890", "go-build1234567890") is
	 * part of an ordinary name.  The 11-byte reading first, as above.
	 */
	for (size_t sfx = 11; sfx >= 10; sfx--) {
		if (sfx >= len || !seq_suffix(name + len - sfx, &seq) ||
		    (name[len - sfx - 1] != '-' && name[len - sfx - 1] != '_'))
			continue;
		out->name = name;
		out->seq = seq;
		out->kind = ZKN_EXCLUSIVE;
		return true;
	}
	return false;
}

const char *zkn_marker(enum zkn_naming scheme, enum zkn_kind kind)
{
	if (scheme == ZKN_KAZOO)
		return kind == ZKN_SHARED ? "__rlock__" : "__lock__";
	return kind == ZKN_SHARED ? "-read-lock-" : "-lock-";
}

/*
 * Decode one UTF-8 sequence at @s (at most @n bytes).
 * Return: its length, with the code point in *cp; 0 if malformed.
 */
static size_t utf8_next(const unsigned char *s, size_t n, unsigned *cp)
{
	size_t len;
	unsigned c = s[0], min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff)
		return 0;
	*cp = c;
	return len;
}

/* The characters ZooKeeper's PathUtils.validatePath() refuses. */
static bool zk_forbidden(unsigned c)
{
	return c == 0 || (c >= 0x01 && c <= 0x1f) || (c >= 0x7f && c <= 0x9f) ||
	       (c >= 0xd800 && c <= 0xf8ff) || (c >= 0xfff0 && c <= 0xffff);
}

int zkn_check_name(const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t len = strlen(name);
	struct zkg_child c;

	if (len == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	if (len > ZKN_NAME_MAX)
		return -ENAMETOOLONG;
	/* a child every client reads as a queue entry would join the queue,
	 * and the mount would show it as an entry: the one parser decides */
	if (zkn_parse(name, &c))
		return -EINVAL;
	for (size_t i = 0; i < len;) {
		unsigned cp;
		size_t n = utf8_next(s + i, len - i, &cp);

		if (n == 0 || zk_forbidden(cp) || cp == '/')
			return -EINVAL;
		i += n;
	}
	return 0;
}

/* Does the entry @name@marker@seq parse back as @kind and @seq? */
static bool reads_back(const char *name, const char *marker, int32_t seq,
		       enum zkn_kind kind)
{
	char entry[ZKN_NAME_MAX + 32];
	struct zkg_child c;

	snprintf(entry, sizeof(entry), "%s%s%010d", name, marker, (int)seq);
	return zkn_parse(entry, &c) && c.kind == kind && c.seq == seq;
}

int zkn_check_entry_name(const char *name, enum zkn_naming scheme,
			 enum zkn_kind kind)
{
	static const int32_t seqs[] = { 0, -5, INT32_MIN };	/* each number form */
	int err = zkn_check_name(name);

	if (err)
		return err;
	/* the number takes at most 11 bytes ("-2147483648") */
	if (strlen(name) + strlen(zkn_marker(scheme, kind)) + 11 > ZKN_NAME_MAX)
		return -ENAMETOOLONG;
	/*
	 * Every client must read our entry back as what it is, of either
	 * kind, whatever its number: NAME+marker must end in that kind's
	 * marker and no other.  A NAME that ends so that it does not ("db-read"
	 * + "-lock-" ends in "-read-lock-") is refused; digits at its end do
	 * no harm, as the number is read after the marker.
	 */
	for (int k = ZKN_EXCLUSIVE; k <= ZKN_SHARED; k++)
		for (size_t i = 0; i < sizeof(seqs) / sizeof(*seqs); i++)
			if (!reads_back(name, zkn_marker(scheme, (enum zkn_kind)k),
					seqs[i], (enum zkn_kind)k))
				return -EINVAL;
	return 0;
}

int zkn_parse_scheme(const char *s, enum zkn_naming *out)
{
	if (strcmp(s, "curator") == 0)
		*out = ZKN_CURATOR;
	else if (strcmp(s, "kazoo") == 0)
		*out = ZKN_KAZOO;
	else
		return -EINVAL;
	return 0;
}

char *zkn_join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name) < 0)
		return NULL;
	return p;
}

const char *zkn_base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

size_t zkn_parent_len(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s != path ? (size_t)(s - path) : 1;
}

uint64_t zkn_hash(const char *path)
{
	uint64_t h = 14695981039346656037ULL;

	while (*path)
		h = (h ^ (unsigned char)*path++) * 1099511628211ULL;
	return h;
}
