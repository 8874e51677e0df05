/* zk/log.c - one-line log to stderr or syslog, escaped and rate-limited
 * (see zk/log.h for why here). */
#include "zk/log.h"
#include "zk/escape.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
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

void zkl_log(int level, const char *fmt, ...)
{
	char raw[1024], line[2048];
	unsigned long suppressed = 0;
	size_t len;
	va_list ap;
	int n;

	if (level == LOG_DEBUG && !log_debug)
		return;
	if (level != LOG_DEBUG && !cause_admit(fmt, &suppressed))
		return;
	va_start(ap, fmt);
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* the bytes written, NULs included: %s of a user's string stops at
	 * one, but %.*s need not */
	len = (size_t)n < sizeof(raw) ? (size_t)n : sizeof(raw) - 1;
	len = zkl_escape(line, sizeof(line) - 48, raw, len);
	if (suppressed)
		snprintf(line + len, sizeof(line) - len,
			 " (%lu more like this suppressed)", suppressed);
	if (log_syslog)
		syslog(level, "%s", line);
	else
		fprintf(stderr, "%s: %s\n", log_ident, line);
}
