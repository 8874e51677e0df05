// SPDX-License-Identifier: MIT
/*
 * tools/zklock/text.h - the text zklock reads from the mount and prints:
 * a file read whole, a JSON string.  Used by list.c and watch.c (--list,
 * --watch, their --json); calls nothing of zklock's.
 */
#ifndef ZKLOCK_TEXT_H
#define ZKLOCK_TEXT_H

#include <stdio.h>
#include <sys/types.h>

/* cli_read_all() - read @fd to its end into *@out (to free, NUL-terminated).
 * Return: the length, or a negative errno. */
ssize_t cli_read_all(int fd, char **out);

/* cli_json_str() - @s as a JSON string, quotes included, on @f. */
void cli_json_str(FILE *f, const char *s);

#endif
