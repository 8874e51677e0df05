// SPDX-License-Identifier: MIT
/*
 * tools/zklock/list.h - zklock --list LOCKDIR: the lock's queue, as a table.
 *
 * Reads the mount only (xattrs and the entries' holder data, opened without
 * O_CREAT, so it takes no lock). Called from main() instead of running a
 * command.
 */
#ifndef TOOLS_ZKLOCK_LIST_H
#define TOOLS_ZKLOCK_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * cli_list() - print the queue of @dir on stdout in readdir (= queue)
 * order, under the header "POS STATE KIND ENTRY HOST PID AGE SINCE LIMIT
 * CMD", columns aligned (or, with @json, one JSON object an entry, keyed
 * by those names in lower case); entries that are gone meanwhile, subdirectories and what has no
 * sequence number are left out. @dir must be an existing zklockfs
 * directory (it is never created).
 * Return: zklock's exit status: 0; CLI_EXIT_NODIR (66) for an unusable
 * @dir; CLI_EXIT_OSERR (71) if an entry or stdout failed (the rest of the
 * table is still printed when an entry does).
 */
int cli_list(const char *dir, bool json);

/*
 * cli_list_holder() - who holds @lock (a lock directory, or with @lockfile
 * a lock file) now: its first holder as "NAME (host H, pid P, for AGE)",
 * printable, into @buf.  Return: 0; -ENOENT if nobody holds it; another
 * negative errno (-EINTR: a signal, zklock's timer, ended the reads).
 */
int cli_list_holder(const char *lock, bool lockfile, char *buf, size_t size);


#endif
