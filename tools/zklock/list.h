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

/*
 * zkl_list() - print the queue of @dir on stdout in readdir (= queue)
 * order, under the header "POS STATE KIND ENTRY HOST PID AGE", columns
 * aligned; entries that are gone meanwhile, subdirectories and what has no
 * sequence number are left out. @dir must be an existing zklockfs
 * directory (it is never created).
 * Return: zklock's exit status: 0; ZKL_EXIT_NODIR (66) for an unusable
 * @dir; ZKL_EXIT_OSERR (71) if an entry or stdout failed (the rest of the
 * table is still printed when an entry does).
 */
int zkl_list(const char *dir);

#endif
