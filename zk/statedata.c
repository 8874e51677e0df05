/* zk/statedata.c - the state line of a lock znode's data (statedata.h). */
#include "zk/statedata.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "zk/limit.h"

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

ssize_t zksd_read(const char *data, size_t len, char *out, size_t cap)
{
	size_t vlen, n = 0;
	const char *v = zklim_data_value(data, len, ZKSD_KEY, &vlen);

	if (!v)
		return 0;
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

ssize_t zksd_edit(const char *data, size_t len, const void *state, size_t slen,
		  char *out, size_t cap)
{
	size_t keylen = strlen(ZKSD_KEY), n = 0, line = slen ? zksd_encoded_len(slen) : 0;
	const char *p = data, *end = data ? data + len : NULL;
	bool put = false;

	if (!data)
		len = 0;
	/* each line of @data, the state's (the first) replaced, others dropped */
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		bool ours = l >= keylen && memcmp(p, ZKSD_KEY, keylen) == 0;

		if (!ours) {
			if (n + l > cap)
				return -E2BIG;
			memcpy(out + n, p, l);
			n += l;
		} else if (!put && line) {
			if (n + line > cap)
				return -E2BIG;
			memcpy(out + n, ZKSD_KEY, keylen);
			encode(state, slen, out + n + keylen);
			out[n + line - 1] = '\n';
			n += line;
			put = true;
		}
		p += l;
	}
	if (!put && line) {
		/* appended after a last line without its newline: give it one */
		bool open = n && out[n - 1] != '\n';

		if (n + open + line > cap)
			return -E2BIG;
		if (open)
			out[n++] = '\n';
		memcpy(out + n, ZKSD_KEY, keylen);
		encode(state, slen, out + n + keylen);
		out[n + line - 1] = '\n';
		n += line;
	}
	return (ssize_t)n;
}
