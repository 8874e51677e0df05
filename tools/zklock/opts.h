// SPDX-License-Identifier: MIT
/*
 * tools/zklock/opts.h - zklock's command line: flock(1)'s options, --list,
 * --help and --version, and which entry NAMEs are usable.
 *
 * Pure parsing: no file system, no signals. Called from main() only.
 */
#ifndef TOOLS_ZKLOCK_OPTS_H
#define TOOLS_ZKLOCK_OPTS_H

#include <stdbool.h>

#include "tools/zklock/zklock.h"

/*
 * cli_opts_parse() - fill @o from the command line. Options end at LOCKDIR
 * ('+'), so the command's own options are left alone; "-c CMD" may also
 * follow LOCKDIR, as in flock(1). --help prints the usage on stdout and
 * exits 0; --version prints the version and sets o->done.
 * Return: 0 (then check o->done); -EINVAL after a message on stderr.
 */
int cli_opts_parse(int argc, char **argv, struct cli_opts *o);

/*
 * cli_opts_name_ok() - whether @name can be the NAME of an entry with every
 * naming scheme and kind: zkn_check_entry_name() (empty, ".", "..", a
 * '/', a queue entry's own name, invalid UTF-8 or a character ZooKeeper
 * refuses, too long, or a NAME whose entry would read as the other kind:
 * "-read"). Used for -N and by cli_entry_default_name().
 */
bool cli_opts_name_ok(const char *name);

#endif
