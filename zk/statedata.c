/* zk/statedata.c - the state line of a lock znode's data (statedata.h). */
#include "zk/statedata.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk/settings.h"

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t zksd_encoded_len(size_t len)
{
	return strlen(ZKSD_KEY) + (len + 2) / 3 * 4 + 1;
}

/* @len bytes of @in as base64 at @out (zksd_encoded_len()'s count less the
 * key and the newline). */
static void encode(const unsigned char *in, size_t len, char *out)
{
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		*out++ = b64[v >> 18 & 63];
		*out++ = b64[v >> 12 & 63];
		*out++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
		*out++ = i + 2 < len ? b64[v & 63] : '=';
	}
}

static int sextet(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

/* The base64 @v (@vlen bytes) decoded into @out (@cap bytes).  Return: its
 * length, -EINVAL if not base64, -E2BIG if it does not fit. */
static ssize_t decode(const char *v, size_t vlen, char *out, size_t cap)
{
	size_t n = 0;

	if (vlen % 4)
		return -EINVAL;
	for (size_t i = 0; i < vlen; i += 4) {
		int s[4];
		size_t pad = 0;

		for (int k = 0; k < 4; k++) {
			s[k] = sextet(v[i + k]);
			if (v[i + k] == '=' && k >= 2 && i + 4 == vlen) {
				s[k] = 0;
				pad++;
			} else if (s[k] < 0 || pad) {
				return -EINVAL;	/* '=' only at the end */
			}
		}
		uint32_t w = (uint32_t)s[0] << 18 | (uint32_t)s[1] << 12 |
			     (uint32_t)s[2] << 6 | (uint32_t)s[3];
		if (n + 3 - pad > cap)
			return -E2BIG;
		out[n++] = (char)(w >> 16);
		if (pad < 2)
			out[n++] = (char)(w >> 8 & 0xff);
		if (pad < 1)
			out[n++] = (char)(w & 0xff);
	}
	return (ssize_t)n;
}

ssize_t zksd_read(const char *data, size_t len, char *out, size_t cap)
{
	size_t vlen;
	const char *v = zkset_data_value(data, len, ZKSD_KEY, &vlen);

	return v ? decode(v, vlen, out, cap) : 0;
}

/*
 * @data with its lines of @key replaced by @line (@llen bytes: the whole
 * line, key and newline included; 0: removed) where the first one was, or
 * appended; every other line kept.  Into @out (@cap bytes).
 */
static ssize_t edit_line(const char *data, size_t len, const char *key, const char *line,
			 size_t llen, char *out, size_t cap)
{
	size_t keylen = strlen(key), n = 0;
	const char *p = data, *end = data ? data + len : NULL;
	bool put = false;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		bool ours = l >= keylen && memcmp(p, key, keylen) == 0;

		if (!ours || (!put && llen)) {
			const char *src = ours ? line : p;
			size_t sl = ours ? llen : l;

			if (n + sl > cap)
				return -E2BIG;
			memcpy(out + n, src, sl);
			n += sl;
			put |= ours;
		}
		p += l;
	}
	if (!put && llen) {
		/* appended after a last line without its newline: give it one */
		bool open = n && out[n - 1] != '\n';

		if (n + open + llen > cap)
			return -E2BIG;
		if (open)
			out[n++] = '\n';
		memcpy(out + n, line, llen);
		n += llen;
	}
	return (ssize_t)n;
}

ssize_t zksd_edit(const char *data, size_t len, const void *state, size_t slen,
		  char *out, size_t cap)
{
	size_t llen = slen ? zksd_encoded_len(slen) : 0;
	char *line = llen ? malloc(llen) : NULL;
	ssize_t n;

	if (llen && !line)
		return -ENOMEM;
	if (line) {
		memcpy(line, ZKSD_KEY, strlen(ZKSD_KEY));
		encode(state, slen, line + strlen(ZKSD_KEY));
		line[llen - 1] = '\n';
	}
	n = edit_line(data, len, ZKSD_KEY, line, llen, out, cap);
	free(line);
	return n;
}

bool zksd_run_read(const char *data, size_t len, struct zksd_run *run)
{
	size_t vlen, i = 0;
	const char *v = zkset_data_value(data, len, ZKSD_RUN_KEY, &vlen);
	char buf[96], *end;
	long long start;
	ssize_t n;

	memset(run, 0, sizeof(*run));
	if (!v || vlen >= sizeof(buf) + 4 * ZKSD_LABEL_MAX / 3 + 8)
		return false;
	/* START EXIT B64 */
	for (int field = 0; field < 2; field++) {
		size_t j = i;

		while (j < vlen && v[j] != ' ')
			j++;
		if (j == i || j == vlen || j - i >= sizeof(buf))
			return false;
		memcpy(buf, v + i, j - i);
		buf[j - i] = '\0';
		errno = 0;
		if (field == 0) {
			start = strtoll(buf, &end, 10);
			if (errno || *end || start < 0)
				return false;
			run->start_ms = start;
		} else if (strcmp(buf, "-") != 0) {
			long x = strtol(buf, &end, 10);

			if (errno || *end || x < 0 || x > 255)
				return false;
			run->exited = true;
			run->exit_status = (int)x;
		}
		i = j + 1;
	}
	n = decode(v + i, vlen - i, run->label, sizeof(run->label) - 1);
	if (n < 0 || memchr(run->label, '\0', (size_t)n))
		return false;
	run->label[n] = '\0';
	return true;
}

ssize_t zksd_run_edit(const char *data, size_t len, const struct zksd_run *run,
		      char *out, size_t cap)
{
	char line[64 + 4 * ZKSD_LABEL_MAX / 3 + 8];
	size_t llen = 0, lab;
	int k;

	if (run) {
		lab = strnlen(run->label, sizeof(run->label) - 1);
		k = run->exited ? snprintf(line, sizeof(line), "%s%lld %d ", ZKSD_RUN_KEY,
					  (long long)run->start_ms, run->exit_status)
				: snprintf(line, sizeof(line), "%s%lld - ", ZKSD_RUN_KEY,
					   (long long)run->start_ms);
		encode((const unsigned char *)run->label, lab, line + k);
		llen = (size_t)k + (lab + 2) / 3 * 4;
		line[llen++] = '\n';
	}
	return edit_line(data, len, ZKSD_RUN_KEY, line, llen, out, cap);
}
