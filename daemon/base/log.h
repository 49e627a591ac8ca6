/*
 * toolrund's log: one line per event on stderr, which the container's
 * supervisor (or a service manager) collects.
 *
 * Processes: all three.
 */
#ifndef TOOLRUN_LOG_H
#define TOOLRUN_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level level);
/* Which of toolrund's processes this is, for every line ("listener"). */
void log_set_role(const char *role);
bool log_enabled(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
