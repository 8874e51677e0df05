/*
 * tests/fuzz/source_check.h - what a CONNECT[/ROOT] that zklfs_parse_source()
 * accepted must have given, shared by fuzz_source.c and fuzz_opts.c.
 */
#ifndef TESTS_FUZZ_SOURCE_CHECK_H
#define TESTS_FUZZ_SOURCE_CHECK_H

#include "tests/fuzz/fuzz.h"

/*
 * CONNECT is SRC up to its first '/', not empty, without a leading or
 * trailing ','; ROOT starts with '/', is the rest of SRC with its trailing
 * slashes dropped ("/" if nothing is left), and every component is a real
 * name (not empty, ".", "..").
 */
static void check_source(const char *src, const char *connect, const char *root)
{
	size_t clen = strlen(connect), rlen = strlen(root), want;
	const char *rest = src + clen;

	CHECK(clen > 0);
	CHECK(strncmp(src, connect, clen) == 0);
	CHECK(!strchr(connect, '/'));
	CHECK(*rest == '\0' || *rest == '/');
	CHECK(connect[0] != ',' && connect[clen - 1] != ',');

	CHECK(root[0] == '/');
	CHECK(rlen == 1 || root[rlen - 1] != '/');
	want = strlen(rest);
	while (want > 1 && rest[want - 1] == '/')
		want--;
	if (want == 0)
		CHECK(strcmp(root, "/") == 0);
	else
		CHECK(rlen == want && memcmp(root, rest, want) == 0);
	for (const char *p = root + 1; rlen > 1 && p <= root + rlen; ) {
		size_t n = strcspn(p, "/");

		CHECK(n > 0);
		CHECK(!(n == 1 && p[0] == '.'));
		CHECK(!(n == 2 && p[0] == '.' && p[1] == '.'));
		p += n + 1;
	}
}

#endif
