/*
 * zk/escape.h - what users write (names, entry data), made safe for a log
 * line or a terminal.  Pure, libc only: the daemon's log (zk/log.c) and
 * zklock --list (tools/zklock/list.c) escape the same way with it.  Any
 * thread.
 */
#ifndef ZK_ESCAPE_H
#define ZK_ESCAPE_H

#include <stddef.h>

/*
 * zkesc() - @src (@len bytes, any bytes) as one line of printable
 * text into @dst (@size > 0 bytes, always NUL-terminated): a control
 * character (C0, DEL, or a C1 code point U+0080..U+009F), an invisible
 * one that changes what a terminal shows (the Unicode format characters,
 * bidirectional controls such as U+202E among them, and U+2028, U+2029),
 * a byte that is not part of valid UTF-8 (overlong forms and surrogates
 * included), and
 * the backslash itself are written \xNN (the backslash \\), each byte of
 * them; valid printable UTF-8 is copied.  Output that does not fit is cut
 * before an escape or character, never inside one.  Return: the length
 * written (without the NUL).
 */
size_t zkesc(char *dst, size_t size, const char *src, size_t len);

#endif
