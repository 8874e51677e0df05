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
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

static const char *log_ident = "zklockfs";
static bool log_syslog;
static bool log_debug;

bool zklog_init(const char *ident, bool to_syslog, bool debug)
{
	struct stat st;

	log_ident = ident;
	log_debug = debug;
	/* syslog() drops every line, silently, when nothing listens there */
	if (to_syslog && (stat("/dev/log", &st) != 0 || !S_ISSOCK(st.st_mode))) {
		log_syslog = false;
		return false;
	}
	log_syslog = to_syslog;
	if (to_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
	return to_syslog;
}

/*
 * The rate limit.  A message is a call site's line as formatted: the same
 * refusal of the same name is one message, another name's another.  Each
 * message is written at most once per interval; and each call site
 * (format string) writes at most ZKLOG_SITE_MAX lines per interval, so
 * that names varied on purpose cannot flood the log.  Slots: open
 * addressing; a key that finds its table full is not limited by it.
 */
#define CAUSES 256
#define ZKLOG_SITE_MAX 8
static struct cause {
	uint64_t key;			/* 0: free */
	uint64_t last_ms;		/* a message: its last line; a site: its
					   interval's start */
	unsigned long count;		/* a site: lines in its interval */
	unsigned long suppressed;	/* dropped since its last line */
} messages[CAUSES], sites[CAUSES];
static pthread_mutex_t causes_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The slot of @key in @t (taken if free), or NULL if the table is full. */
static struct cause *slot(struct cause *t, uint64_t key)
{
	for (size_t k = 0; k < CAUSES; k++) {
		struct cause *c = &t[(key + k) % CAUSES];

		if (c->key == key || !c->key) {
			c->key = key;
			return c;
		}
	}
	return NULL;
}

/* FNV-1a of @s, never 0. */
static uint64_t hash(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ? h : 1;
}

/*
 * May the line @text of call site @fmt be written now?  If so,
 * *@suppressed is how many lines of that message, and of that site past
 * its budget, were dropped since.
 */
static bool cause_admit(const char *fmt, const char *text, unsigned long *suppressed)
{
	uint64_t site_key = (uint64_t)(uintptr_t)fmt | 1, now = now_ms();
	struct cause *m, *site;
	bool ok = true;

	*suppressed = 0;
	pthread_mutex_lock(&causes_mu);
	m = slot(messages, hash(text, site_key * 0x9e3779b97f4a7c15ULL));
	site = slot(sites, site_key);
	if (site && now - site->last_ms >= ZKLOG_INTERVAL_MS) {
		site->last_ms = now;	/* a new interval */
		site->count = 0;
	}
	if (m && m->last_ms && now - m->last_ms < ZKLOG_INTERVAL_MS) {
		m->suppressed++;
		ok = false;
	} else if (site && site->count >= ZKLOG_SITE_MAX) {
		site->suppressed++;
		ok = false;
	}
	if (ok) {
		if (m) {
			m->last_ms = now;
			*suppressed += m->suppressed;
			m->suppressed = 0;
		}
		if (site) {
			site->count++;
			*suppressed += site->suppressed;
			site->suppressed = 0;
		}
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

/* The length of the escape or character at @s, in zkesc()'s output. */
static size_t token_len(const char *s)
{
	unsigned char c = (unsigned char)s[0];

	if (c == '\\')
		return s[1] == '\\' ? 2 : 4;
	return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

/*
 * Append @s (@n bytes, a user's perhaps) escaped; if that is longer than
 * ZKLOG_ARG_MAX, its start and its end with "..." between, cut between
 * escapes and characters: the rest of the line, the reason, survives.
 */
static void put_escaped(struct line *l, const char *s, size_t n)
{
	char small[ZKLOG_ARG_MAX + 1], *e = small;
	size_t len, head = 0, tail;

	if (n > ZKLOG_ARG_MAX / 4) {
		e = malloc(4 * n + 1);
		if (!e) {		/* the start alone, then */
			e = small;
			n = ZKLOG_ARG_MAX / 4;
		}
	}
	len = zkesc(e, e == small ? sizeof(small) : 4 * n + 1, s, n);
	if (len <= ZKLOG_ARG_MAX) {
		put(l, e, len);
	} else {
		while (head + token_len(e + head) <= ZKLOG_ARG_MAX / 3)
			head += token_len(e + head);
		for (tail = head; len - tail > ZKLOG_ARG_MAX - 3 - ZKLOG_ARG_MAX / 3;)
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

void zklog(int level, const char *fmt, ...)
{
	char buf[2048];
	struct line line = { buf, sizeof(buf) - 48, 0 };
	unsigned long suppressed = 0;
	va_list ap;

	if (level == LOG_DEBUG && !log_debug)
		return;
	buf[0] = '\0';
	va_start(ap, fmt);
	format(&line, fmt, ap);
	va_end(ap);
	if (level != LOG_DEBUG && !cause_admit(fmt, buf, &suppressed))
		return;
	if (suppressed)
		snprintf(buf + line.len, sizeof(buf) - line.len,
			 " (%lu more like this suppressed)", suppressed);
	if (log_syslog)
		syslog(level, "%s", buf);
	else
		fprintf(stderr, "%s: %s\n", log_ident, buf);
}
