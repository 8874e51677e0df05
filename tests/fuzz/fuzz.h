/*
 * tests/fuzz/fuzz.h - what the libFuzzer targets share: the entry point's
 * prototype, CHECK() (an invariant that must hold for every input: it says
 * which and aborts, and libFuzzer keeps the input as a crash), and a
 * NUL-terminated copy of the input in a buffer of exactly its size, so that
 * AddressSanitizer sees any read past the terminator.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where CHECK() reports (fuzz_opts points stderr elsewhere meanwhile). */
static FILE *fuzz_report;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(fuzz_report ? fuzz_report : stderr,	\
				"%s:%d: invariant failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/* fuzz_str() - @size bytes of @data and a NUL, malloc'ed to the byte. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
