/*
 * tests/fuzz/fuzz_settings.c - a lock znode's data, as any client may have
 * written it, and the limit read from it and written into it (zk/settings.c).
 *
 * Input: the data (at most 4096 bytes).  Invariants:
 * - zkset_parse() is 0 or in 1..ZKG_LIMIT_MAX, and never reads past
 *   @len (the copy is exactly @len bytes);
 * - after zkset_edit() with a limit L (0..ZKG_LIMIT_MAX), the data reads
 *   L, holds at most one "limit=" line, and keeps every other line in order;
 * - editing twice is editing once; an edit into a buffer too small fails
 *   with -E2BIG and never writes past it;
 * - zkset_value() accepts exactly what zkset_parse() reads after
 *   "limit=".
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#include "zk/grant.h"
#include "zk/settings.h"

#define MAX_DATA 4096

/* The lines of @s other than "limit=" ones, joined with '\n'. */
static size_t others(const char *s, size_t len, char *out)
{
	size_t at = 0, i = 0;

	while (i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - s) : len;

		if (!(end - i >= 6 && memcmp(s + i, "limit=", 6) == 0)) {
			memcpy(out + at, s + i, end - i);
			at += end - i;
			out[at++] = '\n';
		}
		i = nl ? end + 1 : len;
	}
	return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char a[MAX_DATA + 16], b[MAX_DATA + 16], oa[2 * MAX_DATA + 32],
		    ob[2 * MAX_DATA + 32];
	char *in;
	unsigned lim, v, want;
	int n, n2;
	size_t la, lb;

	if (size > MAX_DATA)
		return 0;
	in = malloc(size ? size : 1);
	if (!in)
		abort();
	memcpy(in, data, size);
	lim = zkset_parse(in, size);
	CHECK(lim <= ZKG_LIMIT_MAX);
	if (size > 6 && memcmp(in, "limit=", 6) == 0) {
		const char *nl = memchr(in, '\n', size);
		size_t l = (nl ? (size_t)(nl - in) : size) - 6;

		CHECK((zkset_value(in + 6, l, &v) == 0) == (lim != 0));
		CHECK(lim == 0 || v == lim);
	}
	want = size ? (unsigned)data[0] * 4 % (ZKG_LIMIT_MAX + 1) : 0;
	n = zkset_edit(in, size, want, a, sizeof(a));
	CHECK(n >= 0);
	CHECK(zkset_parse(a, (size_t)n) == want);
	n2 = zkset_edit(a, (size_t)n, want, b, sizeof(b));
	CHECK(n2 == n && memcmp(a, b, (size_t)n) == 0);
	la = others(in, size, oa);
	lb = others(a, (size_t)n, ob);
	CHECK(la == lb && memcmp(oa, ob, la) == 0);
	if (n > 0) {
		char *small = malloc((size_t)n - 1 ? (size_t)n - 1 : 1);

		if (!small)
			abort();
		CHECK(zkset_edit(in, size, want, small, (size_t)n - 1) == -E2BIG);
		free(small);
	}
	free(in);
	return 0;
}
