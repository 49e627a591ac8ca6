/*
 * The log (log.h).
 *
 * Processes: all three.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* The log level and role are the process's only settings outside its
 * context: each is written once, at startup. */
static enum log_level log_threshold = LOG_INFO;
/* Set once per process, right after it is forked. */
static const char *log_role = "";

void log_set_level(enum log_level level)
{
	log_threshold = level;
}

void log_set_role(const char *role)
{
	log_role = role;
}

bool log_enabled(enum log_level level)
{
	return level <= log_threshold;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char line[2048];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (!log_enabled(level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line),
			 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ toolrund[%d]%s%s %s: ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, (int)getpid(),
			 log_role[0] ? " " : "", log_role, names[level]);
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (size_t)(m < 0 ? 0 : MIN((size_t)m, sizeof(line) - (size_t)n - 2));
	line[len++] = '\n';
	(void)write_all(STDERR_FILENO, line, len);
}
