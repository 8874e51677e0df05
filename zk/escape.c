/* zk/escape.c - user bytes made one line of printable text (see zk/escape.h). */
#include "zk/escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The length of the valid UTF-8 character at @s (@n bytes left), or 0;
 * its code point in *@out. */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *out)
{
	size_t len;
	uint32_t cp, min;

	*out = s[0];
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*out = cp;
	return len;
}

/*
 * Characters that print nothing yet change what a terminal shows: the
 * Unicode format characters (general category Cf: the bidirectional
 * controls U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C, which
 * make a line read in another order than it was written; zero-width
 * characters; tags) and the line and paragraph separators.  Unicode 15.
 */
static const struct { uint32_t lo, hi; } invisible[] = {
	{ 0x00ad, 0x00ad }, { 0x0600, 0x0605 }, { 0x061c, 0x061c },
	{ 0x06dd, 0x06dd }, { 0x070f, 0x070f }, { 0x0890, 0x0891 },
	{ 0x08e2, 0x08e2 }, { 0x180e, 0x180e }, { 0x200b, 0x200f },
	{ 0x2028, 0x202e }, { 0x2060, 0x2064 }, { 0x2066, 0x206f },
	{ 0xfeff, 0xfeff }, { 0xfff9, 0xfffb }, { 0x110bd, 0x110bd },
	{ 0x110cd, 0x110cd }, { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 },
	{ 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
};

/* Is code point @cp a control (C0, DEL, C1) or invisible (above)? */
static bool control(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return true;
	for (size_t i = 0; i < sizeof(invisible) / sizeof(*invisible); i++)
		if (cp >= invisible[i].lo && cp <= invisible[i].hi)
			return true;
	return false;
}

size_t zkesc(char *dst, size_t size, const char *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = utf8_char(s + i, len - i, &cp);
		bool esc = n == 0 || control(cp);

		if (s[i] == '\\') {
			if (size - o < 3)
				break;
			dst[o++] = '\\';
			dst[o++] = '\\';
			i++;
		} else if (esc) {
			n = n ? n : 1;
			if (size - o < 4 * n + 1)
				break;
			for (size_t k = 0; k < n; k++, i++) {
				dst[o++] = '\\';
				dst[o++] = 'x';
				dst[o++] = hex[s[i] >> 4];
				dst[o++] = hex[s[i] & 15];
			}
		} else {
			if (size - o < n + 1)
				break;
			memcpy(dst + o, s + i, n);
			o += n;
			i += n;
		}
	}
	dst[o] = '\0';
	return o;
}
