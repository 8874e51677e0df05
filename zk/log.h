/*
 * zk/log.h - the daemon's log: one line per event, to stderr in the
 * foreground and to syslog (the journal) once daemonised.  Any thread.
 *
 * What users write reaches the log: the names they give (a refused name is
 * logged to say why), the paths they make.  So zklog() itself escapes
 * every part of the line (zkesc()), bounds each string argument
 * (ZKLOG_ARG_MAX) and rate-limits it, rather than
 * leaving that to the call sites: a helper that each site must remember to
 * apply to each user string is one forgotten %s away from a forged log
 * line, whereas here no message can reach stderr or syslog unescaped, and
 * no new call site can opt out.  The daemon's own messages are printable
 * ASCII, which the escaping leaves as it is, so nothing is lost.
 *
 * Rate limit: at most one line per message per second, a message being a
 * call site's line as formatted (the same refusal of the same name), and
 * at most ZKLOG_SITE_MAX (8) lines per call site per second, so that a
 * second, different refusal in the same second is written, while names
 * varied on purpose cannot flood the log.  The lines dropped are counted,
 * and the next line of that message or site says so: "... (12 more like
 * this suppressed)".  LOG_DEBUG lines (--debug only) are escaped but never
 * dropped.
 */
#ifndef ZK_LOG_H
#define ZK_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

#include "zk/escape.h"

/*
 * zklog_init() - name the program; @to_syslog once daemonised.  Where
 * nothing listens on /dev/log (a container, a minimal system), the log
 * stays on standard error.  Return: whether it goes to syslog (else the
 * caller must keep standard error open, or say the log is lost).
 */
bool zklog_init(const char *ident, bool to_syslog, bool debug);

/* zklog() - write one line at syslog @level (LOG_ERR ... LOG_DEBUG),
 * escaped and rate-limited as above. */
void zklog(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The most bytes (escaped) a string argument takes in a line: a longer one
 * (a user's path, say) is shown as its start and its end with "..."
 * between, so that the line's fixed text, the reason, is never cut off.
 */
#define ZKLOG_ARG_MAX 320

/* How long the lines of one cause are dropped after one is written. */
#define ZKLOG_INTERVAL_MS 1000

#endif
