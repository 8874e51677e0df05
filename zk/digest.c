/* zk/digest.c - ZooKeeper's digest ids (see digest.h); SHA-1 per FIPS 180-4. */
#include "zk/digest.h"

#include <string.h>

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

/* One 64-byte block @p into the state @h. */
static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f, k, t;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void zkd_sha1(const void *data, size_t len, uint8_t out[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	const uint8_t *p = data;
	uint8_t last[128] = { 0 };
	uint64_t bits = (uint64_t)len * 8;
	size_t full = len / 64 * 64, rest = len - full, n;

	for (size_t i = 0; i < full; i += 64)
		sha1_block(h, p + i);
	memcpy(last, p + full, rest);
	last[rest] = 0x80;
	n = rest < 56 ? 64 : 128;	/* room for the 8-byte length */
	for (int i = 0; i < 8; i++)
		last[n - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha1_block(h, last);
	if (n == 128)
		sha1_block(h, last + 64);
	for (int i = 0; i < 20; i++)
		out[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
}

int zkd_digest_id(const char *creds, char *out, size_t size)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *colon = strchr(creds, ':');
	size_t ulen, o;
	uint8_t d[21] = { 0 };

	if (!colon)
		return -1;
	ulen = (size_t)(colon - creds);
	if (size < ulen + 1 + 28 + 1)	/* user, ':', 28 base64 chars, NUL */
		return -1;
	zkd_sha1(creds, strlen(creds), d);
	memcpy(out, creds, ulen + 1);
	o = ulen + 1;
	for (int i = 0; i < 21; i += 3) {	/* 20 bytes: 6 groups, then 2 and '=' */
		uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];

		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < 20 ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < 20 ? b64[v & 63] : '=';
	}
	out[o] = '\0';
	return (int)o;
}
