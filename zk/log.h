/*
 * zk/log.h - the daemon's log: one line per event, to stderr in the
 * foreground and to syslog (the journal) once daemonised.  Any thread.
 */
#ifndef ZK_LOG_H
#define ZK_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* zkl_log_init() - name the program; @to_syslog once daemonised. */
void zkl_log_init(const char *ident, bool to_syslog, bool debug);

/* zkl_log() - write one line at syslog @level (LOG_ERR ... LOG_DEBUG). */
void zkl_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
