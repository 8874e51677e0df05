/* zk/log.c - one-line log to stderr or syslog, escaped and rate-limited
 * (see zk/log.h for why here). */
#include "zk/log.h"
#include "zk/escape.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

static const char *log_ident = "zklockfs";
static bool log_syslog;
static bool log_debug;

void zkl_log_init(const char *ident, bool to_syslog, bool debug)
{
	log_ident = ident;
	log_syslog = to_syslog;
	log_debug = debug;
	if (to_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

/* The rate limit: one slot per cause (format string), open addressing. */
#define CAUSES 256
static struct cause {
	const char *fmt;
	uint64_t last_ms;		/* its last line written then */
	unsigned long suppressed;	/* dropped since */
} causes[CAUSES];
static pthread_mutex_t causes_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * May a line of cause @fmt be written now?  If so, *@suppressed is how many
 * were dropped since its last one.  A cause that finds the table full
 * (more call sites than CAUSES) is never limited.
 */
static bool cause_admit(const char *fmt, unsigned long *suppressed)
{
	size_t h = ((uintptr_t)fmt >> 3) % CAUSES;
	uint64_t now = now_ms();
	bool ok = true;

	*suppressed = 0;
	pthread_mutex_lock(&causes_mu);
	for (size_t k = 0; k < CAUSES; k++) {
		struct cause *c = &causes[(h + k) % CAUSES];

		if (c->fmt && c->fmt != fmt)
			continue;
		if (!c->fmt) {
			c->fmt = fmt;
		} else if (now - c->last_ms < ZKL_LOG_INTERVAL_MS) {
			c->suppressed++;
			ok = false;
			break;
		}
		c->last_ms = now;
		*suppressed = c->suppressed;
		c->suppressed = 0;
		break;
	}
	pthread_mutex_unlock(&causes_mu);
	return ok;
}

/* The line being built: @len bytes of @buf (@cap), cut short if full. */
struct line {
	char *buf;
	size_t cap, len;
};

/* Append @n bytes of @s as they are (already escaped, or ours). */
static void put(struct line *l, const char *s, size_t n)
{
	if (n > l->cap - 1 - l->len)
		n = l->cap - 1 - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	l->buf[l->len] = '\0';
}

/* The length of the escape or character at @s, in zkl_escape()'s output. */
static size_t token_len(const char *s)
{
	unsigned char c = (unsigned char)s[0];

	if (c == '\\')
		return s[1] == '\\' ? 2 : 4;
	return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

/*
 * Append @s (@n bytes, a user's perhaps) escaped; if that is longer than
 * ZKL_LOG_ARG_MAX, its start and its end with "..." between, cut between
 * escapes and characters: the rest of the line, the reason, survives.
 */
static void put_escaped(struct line *l, const char *s, size_t n)
{
	char small[ZKL_LOG_ARG_MAX + 1], *e = small;
	size_t len, head = 0, tail;

	if (n > ZKL_LOG_ARG_MAX / 4) {
		e = malloc(4 * n + 1);
		if (!e) {		/* the start alone, then */
			e = small;
			n = ZKL_LOG_ARG_MAX / 4;
		}
	}
	len = zkl_escape(e, e == small ? sizeof(small) : 4 * n + 1, s, n);
	if (len <= ZKL_LOG_ARG_MAX) {
		put(l, e, len);
	} else {
		while (head + token_len(e + head) <= ZKL_LOG_ARG_MAX / 3)
			head += token_len(e + head);
		for (tail = head; len - tail > ZKL_LOG_ARG_MAX - 3 - ZKL_LOG_ARG_MAX / 3;)
			tail += token_len(e + tail);
		put(l, e, head);
		put(l, "...", 3);
		put(l, e + tail, len - tail);
	}
	if (e != small)
		free(e);
}

/* Append one number or pointer formatted by @spec (one conversion). */
#define PUT_ARG(l, spec, type, ap) do {					\
		char num_[128];						\
		int n_ = snprintf(num_, sizeof(num_), spec, va_arg(ap, type)); \
		put_escaped(l, num_, n_ < 0 ? 0 : (size_t)n_ < sizeof(num_) ? \
			    (size_t)n_ : sizeof(num_) - 1);		\
	} while (0)

/*
 * vsnprintf() into @l, one conversion at a time, so that each string
 * argument is escaped and bounded on its own (put_escaped()).  The
 * conversions of C99 printf; '*' widths and precisions are read from @ap.
 */
static void format(struct line *l, const char *fmt, va_list ap)
{
	while (*fmt) {
		char spec[64], mod[3] = "";
		const char *p = fmt, *lit = strchr(fmt, '%');
		size_t sl = 0;
		int prec = -1;

		if (!lit) {
			put_escaped(l, fmt, strlen(fmt));
			return;
		}
		put_escaped(l, fmt, (size_t)(lit - fmt));
		p = lit + 1;
		if (*p == '%') {
			put(l, "%", 1);
			fmt = p + 1;
			continue;
		}
		spec[sl++] = '%';
		while (*p && strchr("-+ #0", *p) && sl < 8)
			spec[sl++] = *p++;
		if (*p == '*') {
			sl += (size_t)snprintf(spec + sl, 12, "%d", va_arg(ap, int));
			p++;
		}
		while (*p >= '0' && *p <= '9' && sl < 20)
			spec[sl++] = *p++;
		if (*p == '.') {
			p++;
			if (*p == '*') {
				prec = va_arg(ap, int);
				p++;
			} else {
				for (prec = 0; *p >= '0' && *p <= '9'; p++)
					prec = prec * 10 + (*p - '0');
			}
			if (prec >= 0)
				sl += (size_t)snprintf(spec + sl, 13, ".%d", prec);
		}
		for (size_t k = 0; k < 2 && *p && strchr("hlzjtL", *p); k++)
			mod[k] = *p++;
		memcpy(spec + sl, mod, strlen(mod));
		sl += strlen(mod);
		spec[sl++] = *p;
		spec[sl] = '\0';
		switch (*p) {
		case 's': {
			const char *str = va_arg(ap, const char *);

			if (!str)
				str = "(null)";
			put_escaped(l, str, prec >= 0 ? strnlen(str, (size_t)prec) : strlen(str));
			break;
		}
		case 'c': {
			char c = (char)va_arg(ap, int);

			put_escaped(l, &c, 1);
			break;
		}
		case 'd': case 'i':
			if (!strcmp(mod, "ll"))		PUT_ARG(l, spec, long long, ap);
			else if (!strcmp(mod, "l"))	PUT_ARG(l, spec, long, ap);
			else if (!strcmp(mod, "z"))	PUT_ARG(l, spec, ssize_t, ap);
			else if (!strcmp(mod, "j"))	PUT_ARG(l, spec, intmax_t, ap);
			else if (!strcmp(mod, "t"))	PUT_ARG(l, spec, ptrdiff_t, ap);
			else				PUT_ARG(l, spec, int, ap);
			break;
		case 'u': case 'x': case 'X': case 'o':
			if (!strcmp(mod, "ll"))		PUT_ARG(l, spec, unsigned long long, ap);
			else if (!strcmp(mod, "l"))	PUT_ARG(l, spec, unsigned long, ap);
			else if (!strcmp(mod, "z"))	PUT_ARG(l, spec, size_t, ap);
			else if (!strcmp(mod, "j"))	PUT_ARG(l, spec, uintmax_t, ap);
			else if (!strcmp(mod, "t"))	PUT_ARG(l, spec, ptrdiff_t, ap);
			else				PUT_ARG(l, spec, unsigned, ap);
			break;
		case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
			if (!strcmp(mod, "L"))		PUT_ARG(l, spec, long double, ap);
			else				PUT_ARG(l, spec, double, ap);
			break;
		case 'p':
			PUT_ARG(l, spec, void *, ap);
			break;
		default:		/* not C99 printf: the compiler said so */
			return;
		}
		fmt = p + 1;
	}
}

void zkl_log(int level, const char *fmt, ...)
{
	char buf[2048];
	struct line line = { buf, sizeof(buf) - 48, 0 };
	unsigned long suppressed = 0;
	va_list ap;

	if (level == LOG_DEBUG && !log_debug)
		return;
	if (level != LOG_DEBUG && !cause_admit(fmt, &suppressed))
		return;
	buf[0] = '\0';
	va_start(ap, fmt);
	format(&line, fmt, ap);
	va_end(ap);
	if (suppressed)
		snprintf(buf + line.len, sizeof(buf) - line.len,
			 " (%lu more like this suppressed)", suppressed);
	if (log_syslog)
		syslog(level, "%s", buf);
	else
		fprintf(stderr, "%s: %s\n", log_ident, buf);
}
