/* zk/settings.c - the settings in a lock znode's data (see settings.h). */
#include "zk/settings.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "zk/escape.h"
#include "zk/grant.h"

const struct zkset_setting zkset_setting_limit = { "limit=", 1, ZKG_LIMIT_MAX };
const struct zkset_setting zkset_setting_linger = { "linger=", 0, ZKSET_LINGER_MAX };

/* Decimal @s->min..@s->max, exactly @len digits, no leading zero: or -1. */
static long number(const struct zkset_setting *s, const char *d, size_t len)
{
	unsigned long v = 0;

	if (len == 0 || len > 10 || (d[0] == '0' && len > 1))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (d[i] < '0' || d[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(d[i] - '0');
	}
	return v >= s->min && v <= s->max ? (long)v : -1;
}

/* Is the line @line (@len bytes, no newline) one of @s's? */
static bool is_line(const struct zkset_setting *s, const char *line, size_t len)
{
	size_t klen = strlen(s->key);

	return len >= klen && memcmp(line, s->key, klen) == 0;
}

const char *zkset_data_value(const char *data, size_t len, const char *key, size_t *vlen)
{
	size_t i = 0, klen = strlen(key);

	while (data && i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;

		if (end - i >= klen && memcmp(data + i, key, klen) == 0) {
			*vlen = end - i - klen;
			return data + i + klen;
		}
		i = end + 1;
	}
	return NULL;
}

void zkset_data_field(const char *data, size_t len, const char *key, char *out,
		      size_t size)
{
	size_t vlen;
	const char *v = zkset_data_value(data, len, key, &vlen);

	if (v && vlen)
		zkesc(out, size, v, vlen);
	else
		snprintf(out, size, "-");
}

long zkset_setting_parse(const struct zkset_setting *s, const char *data, size_t len)
{
	size_t vlen;
	const char *v = zkset_data_value(data, len, s->key, &vlen);

	return v ? number(s, v, vlen) : -1;
}

int zkset_setting_value(const struct zkset_setting *s, const char *val, size_t len,
			unsigned *out)
{
	long v;

	if (len > 0 && val[len - 1] == '\n')
		len--;
	v = number(s, val, len);
	if (v < 0)
		return -EINVAL;
	*out = (unsigned)v;
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

int zkset_setting_edit(const struct zkset_setting *s, const char *data, size_t len,
		       long value, char *out, size_t cap)
{
	char line[32];
	size_t at = 0, i = 0;
	int n = value >= 0 ? snprintf(line, sizeof(line), "%s%ld\n", s->key, value) : 0;
	bool done = value < 0;

	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;
		size_t next = nl ? end + 1 : len;

		if (!is_line(s, data + i, end - i)) {
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

unsigned zkset_parse(const char *data, size_t len)
{
	long v = zkset_setting_parse(&zkset_setting_limit, data, len);

	return v > 0 ? (unsigned)v : 0;
}

int zkset_value(const char *val, size_t len, unsigned *out)
{
	return zkset_setting_value(&zkset_setting_limit, val, len, out);
}

int zkset_edit(const char *data, size_t len, unsigned limit, char *out,
	       size_t cap)
{
	return zkset_setting_edit(&zkset_setting_limit, data, len, limit ? (long)limit : -1,
				  out, cap);
}
