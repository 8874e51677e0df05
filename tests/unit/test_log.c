/* Unit tests: the log's escaping and rate limit (zk/log.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zk/log.h"

static const char *esc(const char *s, size_t len, size_t size)
{
	static char buf[512];

	assert_true(size <= sizeof(buf));
	zkesc(buf, size, s, len);
	return buf;
}

#define ESC(lit) esc(lit, sizeof(lit) - 1, 512)

static void test_printable_is_copied(void **state)
{
	(void)state;
	assert_string_equal(ESC("mkdir 'a b': File exists"), "mkdir 'a b': File exists");
	assert_string_equal(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92"),
			    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92");
	assert_string_equal(ESC("\xc2\xa0"), "\xc2\xa0");	/* U+00A0 */
}

static void test_controls_are_escaped(void **state)
{
	(void)state;
	assert_string_equal(ESC("a\nzklockfs: forged"), "a\\x0azklockfs: forged");
	assert_string_equal(ESC("\r\t\x1b[31m\x7f"), "\\x0d\\x09\\x1b[31m\\x7f");
	assert_string_equal(ESC("a\0b"), "a\\x00b");
	/* C1 as a code point, and the 8-bit CSI alone (not UTF-8) */
	assert_string_equal(ESC("\xc2\x9b" "31m"), "\\xc2\\x9b31m");
	assert_string_equal(ESC("\x9b" "31m"), "\\x9b31m");
	assert_string_equal(ESC("back\\slash"), "back\\\\slash");
}

static void test_invisible_format_characters_are_escaped(void **state)
{
	(void)state;
	/* bidi controls: "evil\u202Etxt.sh" would show as "evilhs.txt" */
	assert_string_equal(ESC("evil\xe2\x80\xaetxt.sh"), "evil\\xe2\\x80\\xaetxt.sh");
	assert_string_equal(ESC("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad"),
			    "\\xe2\\x80\\xaa\\xe2\\x80\\xab\\xe2\\x80\\xac\\xe2\\x80\\xad");
	assert_string_equal(ESC("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9"),
			    "\\xe2\\x81\\xa6\\xe2\\x81\\xa7\\xe2\\x81\\xa8\\xe2\\x81\\xa9");
	assert_string_equal(ESC("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c"),
			    "\\xe2\\x80\\x8e\\xe2\\x80\\x8f\\xd8\\x9c");
	/* zero-width space and joiner, BOM, soft hyphen, a tag, U+2028 */
	assert_string_equal(ESC("a\xe2\x80\x8b\xe2\x80\x8d\xef\xbb\xbf\xc2\xad"),
			    "a\\xe2\\x80\\x8b\\xe2\\x80\\x8d\\xef\\xbb\\xbf\\xc2\\xad");
	assert_string_equal(ESC("\xf3\xa0\x80\x81\xe2\x80\xa8"),
			    "\\xf3\\xa0\\x80\\x81\\xe2\\x80\\xa8");
	/* their neighbours print: U+2010 hyphen, U+2030 per mille, U+2070 */
	assert_string_equal(ESC("\xe2\x80\x90\xe2\x80\xb0\xe2\x81\xb0"),
			    "\xe2\x80\x90\xe2\x80\xb0\xe2\x81\xb0");
}

static void test_invalid_utf8_is_escaped(void **state)
{
	(void)state;
	assert_string_equal(ESC("\xff\xfe"), "\\xff\\xfe");
	assert_string_equal(ESC("\xc0\xaf"), "\\xc0\\xaf");		/* overlong */
	assert_string_equal(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");	/* surrogate */
	assert_string_equal(ESC("\xe2\x82"), "\\xe2\\x82");		/* cut short */
	assert_string_equal(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");	/* > U+10FFFF */
}

static void test_cut_never_inside_an_escape(void **state)
{
	(void)state;
	/* room for "ab" and a NUL, not for "\x0a" */
	assert_string_equal(esc("ab\ncd", 5, 6), "ab");
	assert_string_equal(esc("ab\ncd", 5, 7), "ab\\x0a");
	/* nor inside a character */
	assert_string_equal(esc("a\xe2\x82\xac", 4, 4), "a");
	assert_string_equal(esc("x", 1, 1), "");
}

/* The lines zklog() writes to stderr while @fn runs. */
static int captured_lines(void (*fn)(void), char *out, size_t size)
{
	FILE *f = tmpfile();
	int saved = dup(2), lines = 0;
	size_t n;

	assert_non_null(f);
	fflush(stderr);
	dup2(fileno(f), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	fclose(f);
	for (size_t i = 0; i < n; i++)
		lines += out[i] == '\n';
	return lines;
}

static void refuse_1000(void)
{
	for (int i = 0; i < 1000; i++)
		zklog(LOG_NOTICE, "mkdir '%s': refused", "x\ny");
	zklog(LOG_NOTICE, "another cause %d", 1);	/* its own limit */
}

/* Another name refused at the same site: another message, written; names
 * varied past the site's budget are not. */
static void refuse_many_names(void)
{
	char name[16];

	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		zklog(LOG_NOTICE, "rmdir '%s': refused", name);
	}
}

static void refuse_once_more(void)
{
	zklog(LOG_NOTICE, "mkdir '%s': refused", "x\ny");
}

static void test_one_line_per_cause_per_second(void **state)
{
	char out[8192];

	(void)state;
	zklog_init("t", false, false);
	assert_int_equal(captured_lines(refuse_1000, out, sizeof(out)), 2);
	assert_string_equal(out, "t: mkdir 'x\\x0ay': refused\nt: another cause 1\n");
	usleep((ZKLOG_INTERVAL_MS + 50) * 1000);
	assert_int_equal(captured_lines(refuse_once_more, out, sizeof(out)), 1);
	assert_string_equal(out, "t: mkdir 'x\\x0ay': refused (999 more like this suppressed)\n");
	assert_int_equal(captured_lines(refuse_many_names, out, sizeof(out)), 8);
	assert_non_null(strstr(out, "t: rmdir 'n0': refused\nt: rmdir 'n1': refused\n"));
}

static char long_path[4097];

static void refuse_long_path(void)
{
	zklog(LOG_NOTICE, "mkdir '%s' refused: the quota of %d is reached", long_path, 7);
}

static void test_a_long_argument_is_shortened_and_the_reason_kept(void **state)
{
	char out[8192], *nl;

	(void)state;
	long_path[0] = '/';
	for (size_t i = 1; i < sizeof(long_path) - 1; i++)
		long_path[i] = i % 50 == 0 ? '/' : (i % 7 ? 'a' : '\n');
	memcpy(long_path + sizeof(long_path) - 5, "Eaaa", 4);
	zklog_init("t", false, false);
	assert_int_equal(captured_lines(refuse_long_path, out, sizeof(out)), 1);
	nl = strchr(out, '\n');
	assert_non_null(nl);
	assert_true(nl - out < 1024);
	/* the reason is whole, at the end; the path's start and end kept */
	assert_non_null(strstr(out, "' refused: the quota of 7 is reached\n"));
	assert_memory_equal(out, "t: mkdir '/aaaaaa\\x0a", 20);
	assert_non_null(strstr(out, "..."));
	assert_non_null(strstr(out, "Eaaa' refused"));
	/* and no escape was cut: every backslash starts \xNN */
	for (char *b = strchr(out, '\\'); b; b = strchr(b + 1, '\\'))
		assert_true(b[1] == 'x' && b[2] && b[3]);
}

static void every_conversion(void)
{
	zklog(LOG_NOTICE, "%d %u %zu %lld %llx %04o %.3s %.*s %c %% %s", -1, 2u,
	      (size_t)3, -4LL, 0xabcULL, 8, "abcdef", 2, "xyz", 'q', "e\x1b");
}

static void test_conversions_as_printf(void **state)
{
	char out[512];

	(void)state;
	zklog_init("t", false, false);
	assert_int_equal(captured_lines(every_conversion, out, sizeof(out)), 1);
	assert_string_equal(out, "t: -1 2 3 -4 abc 0010 abc xy q % e\\x1b\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_printable_is_copied),
		cmocka_unit_test(test_controls_are_escaped),
		cmocka_unit_test(test_invisible_format_characters_are_escaped),
		cmocka_unit_test(test_invalid_utf8_is_escaped),
		cmocka_unit_test(test_cut_never_inside_an_escape),
		cmocka_unit_test(test_one_line_per_cause_per_second),
		cmocka_unit_test(test_a_long_argument_is_shortened_and_the_reason_kept),
		cmocka_unit_test(test_conversions_as_printf),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
