/*
 * tests/fuzz/fuzz_names.c - entry names (zk/naming.c).
 *
 * Input: NAME, and optionally a NUL and a parent znode path DIR ("/" if
 * absent).  Invariants:
 * - zkn_parse(), zkn_check_name() and zkn_check_entry_name() read nothing
 *   past the name (ASan) and answer only what naming.h says;
 * - a name zkn_check_name() accepts fits NAME_MAX, has no '/', no control
 *   character, is not "." or "..", and is no queue entry itself;
 * - a NAME zkn_check_entry_name() accepts, for either scheme and kind, makes
 *   entries NAME+marker+number (any number: 0, the extremes, one from the
 *   input) that fit NAME_MAX and that zkn_parse() reads back with that kind,
 *   that number, and NAME as their start;
 * - zkn_join(DIR, NAME): zkn_base() gives NAME back and zkn_parent_len()
 *   DIR ("/" for the root).
 */
#include <errno.h>
#include <limits.h>

#include "tests/fuzz/fuzz.h"
#include "zk/naming.h"

static int is_error(int err)
{
	return err == 0 || err == -EINVAL || err == -ENAMETOOLONG;
}

static void entry_reads_back(const char *name, enum zkn_naming scheme,
			     enum zkn_kind kind, int32_t seq)
{
	char entry[ZKN_NAME_MAX + 64];
	const char *marker = zkn_marker(scheme, kind);
	size_t nlen = strlen(name);
	struct zkg_child c;

	snprintf(entry, sizeof(entry), "%s%s%010d", name, marker, (int)seq);
	CHECK(strlen(entry) <= ZKN_NAME_MAX);
	CHECK(zkn_parse(entry, &c));
	CHECK(c.name == entry);
	CHECK(c.kind == kind);
	CHECK(c.seq == seq);
	CHECK(strncmp(entry, name, nlen) == 0);
	CHECK(strncmp(entry + nlen, marker, strlen(marker)) == 0);
	CHECK(zkn_base(entry) == entry);
}

static void join(const char *dir, const char *name)
{
	char *p;
	size_t pl;

	if (!*dir || strchr(name, '/'))
		return;
	p = zkn_join(dir, name);
	CHECK(p);
	CHECK(strcmp(zkn_base(p), name) == 0);
	pl = zkn_parent_len(p);
	if (strcmp(dir, "/") == 0) {
		CHECK(pl == 1 && p[0] == '/');
	} else {
		CHECK(pl == strlen(dir));
		CHECK(memcmp(p, dir, pl) == 0);
	}
	free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = fuzz_str(data, size);
	size_t nlen = strlen(name);
	const char *dir = nlen < size ? name + nlen + 1 : "/";
	int32_t own = 0;
	struct zkg_child c;
	int err;

	memcpy(&own, data + size - (size < 4 ? size : 4), size < 4 ? size : 4);

	if (zkn_parse(name, &c)) {
		CHECK(c.name == name);
		CHECK(c.kind == ZKN_EXCLUSIVE || c.kind == ZKN_SHARED);
		CHECK(nlen >= 10 && name[nlen - 1] >= '0' && name[nlen - 1] <= '9');
	}

	err = zkn_check_name(name);
	CHECK(is_error(err));
	if (nlen > ZKN_NAME_MAX)
		CHECK(err != 0);
	if (err == 0) {
		CHECK(nlen >= 1 && nlen <= ZKN_NAME_MAX);
		CHECK(strcmp(name, ".") != 0 && strcmp(name, "..") != 0);
		CHECK(!strchr(name, '/'));
		CHECK(!zkn_parse(name, &c));
		for (size_t i = 0; i < nlen; i++)
			CHECK((unsigned char)name[i] >= 0x20 && name[i] != 0x7f);
	}

	for (int s = ZKN_CURATOR; s <= ZKN_KAZOO; s++) {
		for (int k = ZKN_EXCLUSIVE; k <= ZKN_SHARED; k++) {
			static const int32_t seqs[] = { 0, 1, 42, 999999999, 1000000000,
							INT32_MAX, -1, -5, -999999999,
							-1000000000, INT32_MIN };
			int e = zkn_check_entry_name(name, (enum zkn_naming)s,
						     (enum zkn_kind)k);

			CHECK(is_error(e));
			if (err)
				CHECK(e == err);
			if (e)
				continue;
			for (size_t i = 0; i < sizeof(seqs) / sizeof(*seqs); i++)
				entry_reads_back(name, (enum zkn_naming)s,
						 (enum zkn_kind)k, seqs[i]);
			entry_reads_back(name, (enum zkn_naming)s, (enum zkn_kind)k, own);
		}
	}

	join(dir, name);
	free(name);
	return 0;
}
