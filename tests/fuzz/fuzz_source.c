/*
 * tests/fuzz/fuzz_source.c - CONNECT[/ROOT] (zklfs_parse_source, fs/opts.c).
 *
 * Input: the string.  Invariants: it reads nothing past the string (ASan);
 * it fails only with -EINVAL, leaving both results NULL; what it accepts
 * obeys check_source() (ROOT starts with '/', ...), and CONNECT+ROOT parses
 * again to the same CONNECT and ROOT.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>

#include "fs/opts.h"
#include "tests/fuzz/source_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *src = fuzz_str(data, size), *c = (char *)1, *r = (char *)1;
	char *again, *c2, *r2;
	int err = zklfs_parse_source(src, &c, &r);

	if (err) {
		CHECK(err == -EINVAL);
		CHECK(!c && !r);
		free(src);
		return 0;
	}
	CHECK(c && r);
	check_source(src, c, r);

	again = malloc(strlen(c) + strlen(r) + 1);
	CHECK(again);
	strcpy(again, c);
	strcat(again, r);
	CHECK(zklfs_parse_source(again, &c2, &r2) == 0);
	CHECK(strcmp(c2, c) == 0 && strcmp(r2, r) == 0);

	free(again);
	free(c2);
	free(r2);
	free(c);
	free(r);
	free(src);
	return 0;
}
