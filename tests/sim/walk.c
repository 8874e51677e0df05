/*
 * tests/sim/walk.c - the walk's recorder: build/walk/sim compiles the
 * engine's files with -finstrument-functions, and each function they
 * enter or leave calls the two hooks below.  While a scenario has the walk
 * on (sim_walk()), each is written to the file ZKL_WALK names, one line
 * "> FN CALLSITE" or "< FN", after a first "@ ADDR" of sim_walk itself (the
 binary is position independent); tools/walk names the functions and files and
 * counts.  Only in that build; the simulator's own has a sim_walk() that
 * does nothing (scenarios.c).  One thread.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOTRACE __attribute__((no_instrument_function))

void sim_walk(bool on);
void __cyg_profile_func_enter(void *fn, void *site) NOTRACE;
void __cyg_profile_func_exit(void *fn, void *site) NOTRACE;

static FILE *out;
static bool walking;

void sim_walk(bool on)
{
	const char *path = getenv("ZKL_WALK");

	if (on && !out && path && (out = fopen(path, "w")))
		fprintf(out, "@ %#" PRIxPTR "\n", (uintptr_t)sim_walk);	/* where the binary was loaded */
	walking = on && out;
	if (!on && out)
		fflush(out);
}

void __cyg_profile_func_enter(void *fn, void *site)
{
	if (walking)
		fprintf(out, "> %p %p\n", fn, site);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (walking)
		fprintf(out, "< %p\n", fn);
}
