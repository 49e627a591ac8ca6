/*
 * Audit records: one JSON object per agent command and per tool job,
 * composed in the listener (pure formatting: no I/O) and sent to the
 * launcher as an Audit message, which chains and appends it to the log
 * (auditlog.h). docs/audit.md describes every member.
 *
 * Text that is not valid UTF-8 (argv, cwd, a spill path) still gives
 * valid JSON: each byte that is not part of a valid UTF-8 sequence
 * becomes U+FFFD. Overlong forms, surrogates and code points past
 * U+10FFFF count as invalid, one U+FFFD per byte.
 *
 * Process: the listener (pure functions; the launcher writes the records).
 */
#ifndef TOOLRUN_AUDIT_H
#define TOOLRUN_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "toolrun.pb-c.h"

struct audit_stream {
	bool shaped;
	uint64_t bytes, lines, bytes_dropped, lines_dropped;
	const char *spill;      /* NULL or the spill file */
	bool spill_partial;
};

struct audit_record {
	const char *kind;        /* "command" or "tool" */
	/* A session's command: its exit status and working directory are
	 * what the session's shell reported (docs/audit.md), not what
	 * toolrund saw of a process. */
	bool shell_reported;
	uint64_t job;            /* the daemon's job id */
	uint64_t command_job;    /* a tool run below an agent command or session, as the launcher saw it: that job's id; 0 none */
	int64_t start_ms;        /* wall clock, ms since the epoch */
	uint64_t duration_us;
	uint64_t user_us, system_us; /* CPU time (toolrun.proto: Exit) */
	uint32_t uid;
	int32_t caller_pid, pid; /* the client's pid, the program's pid (0: never ran) */
	const char *tool;        /* the tool's name as listed; NULL for a command */
	const uint8_t *cwd; size_t cwd_len;
	const ProtobufCBinaryData *argv; size_t argc;   /* from toolrun.pb-c.h */
	bool not_run; const char *reason;               /* never ran, and why */
	bool signaled; int exit_code; int signal; bool core_dumped;
	bool timed_out;
	struct audit_stream out[2];                     /* stdout, stderr */
};

/* The record as one JSON object without a newline (malloc'd), or NULL. */
char *audit_format(const struct audit_record *r);

/* A front end's call that ran no program (toolrun.proto: FrontRecord),
 * with who made it as toolrund saw the connection. */
struct audit_front {
	int64_t start_ms;        /* wall clock when it arrived, ms since the epoch */
	uint32_t uid;
	int32_t caller_pid;
	const char *front, *tool;
	const uint8_t *target; size_t target_len;
	bool ok;
	const char *error_code;  /* when not ok */
	uint64_t bytes, duration_us;
};

/* The record as one JSON object of kind "front" (malloc'd), or NULL. */
char *audit_format_front(const struct audit_front *f);

/* For tests and messages: "SIGKILL", "SIGRTMIN+3", or "SIG99" for a
 * number without a name. buf holds at least 16 bytes. */
const char *audit_signal_name(int signo, char *buf, size_t len);

#endif
