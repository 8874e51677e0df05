/* zk/escape.c - user bytes made one line of printable text (see zk/escape.h). */
#include "zk/escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The length of the valid UTF-8 character at @s (@n bytes left), or 0. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp, min;

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
	return len;
}

size_t zkl_escape(char *dst, size_t size, const char *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, i = 0;

	while (i < len) {
		size_t n = utf8_char(s + i, len - i);
		bool esc = n == 0 || s[i] < 0x20 || s[i] == 0x7f ||
			   (n == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0);	/* C1 */

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
