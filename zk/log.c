/* zk/log.c - one-line log to stderr or syslog. */
#include "zk/log.h"

#include <stdarg.h>
#include <stdio.h>

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

void zkl_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level == LOG_DEBUG && !log_debug)
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		char line[1024];

		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "%s: %s\n", log_ident, line);
	}
	va_end(ap);
}
