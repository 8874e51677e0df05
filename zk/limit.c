/* zk/limit.c - a semaphore's limit in the lock znode's data (see limit.h). */
#include "zk/limit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "zk/grant.h"

#define KEY "limit="
#define KEYLEN (sizeof(KEY) - 1)

/* Decimal 1..ZKL_LIMIT_MAX, exactly @len digits, no leading zero: or 0. */
static unsigned number(const char *s, size_t len)
{
	unsigned v = 0;

	if (len == 0 || len > 4 || s[0] == '0')
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v <= ZKL_LIMIT_MAX ? v : 0;
}

/* Is the line @line (@len bytes, no newline) a "limit=" line? */
static bool is_limit_line(const char *line, size_t len)
{
	return len >= KEYLEN && memcmp(line, KEY, KEYLEN) == 0;
}

unsigned zkl_limit_parse(const char *data, size_t len)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;

		if (is_limit_line(data + i, end - i))
			return number(data + i + KEYLEN, end - i - KEYLEN);
		i = end + 1;
	}
	return 0;
}

int zkl_limit_value(const char *val, size_t len, unsigned *out)
{
	unsigned v;

	if (len > 0 && val[len - 1] == '\n')
		len--;
	v = number(val, len);
	if (!v)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Append @n bytes of @s to @out at *@at; false if @cap is passed. */
static bool put(char *out, size_t cap, size_t *at, const char *s, size_t n)
{
	if (n > cap - *at)
		return false;
	memcpy(out + *at, s, n);
	*at += n;
	return true;
}

int zkl_limit_edit(const char *data, size_t len, unsigned limit, char *out,
		   size_t cap)
{
	char line[KEYLEN + 8];
	size_t at = 0, i = 0;
	int n = limit ? snprintf(line, sizeof(line), KEY "%u\n", limit) : 0;
	bool done = limit == 0;

	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;
		size_t next = nl ? end + 1 : len;

		if (!is_limit_line(data + i, end - i)) {
			if (!put(out, cap, &at, data + i, next - i))
				return -E2BIG;
		} else if (!done) {
			if (!put(out, cap, &at, line, (size_t)n))
				return -E2BIG;
			done = true;
		}
		i = next;
	}
	if (!done) {
		/* a last line without its newline gets one before ours */
		if (at > 0 && out[at - 1] != '\n' && !put(out, cap, &at, "\n", 1))
			return -E2BIG;
		if (!put(out, cap, &at, line, (size_t)n))
			return -E2BIG;
	}
	return (int)at;
}
