// SPDX-License-Identifier: MIT
/* tools/zklock/text.c - reading and printing text (see text.h). */
#include "tools/zklock/text.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* See text.h. */
ssize_t cli_read_all(int fd, char **out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;

	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 4096;
			nbuf = realloc(buf, cap + 1);
			if (!nbuf) {
				free(buf);
				return -ENOMEM;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

/* See text.h. */
void cli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}
