/*
 * answer: the messages that tell a client how its job goes (Hello,
 * Started, Exit), filled the same way by whichever process writes them.
 * The listener writes them for every job whose output it shapes; the
 * launcher writes them itself for a job whose streams it does not
 * (launcher.proto: Spawn.answer), so that the client's wake-ups do not
 * wait on the listener's turn.
 *
 * Processes: the listener and the launcher.
 */
#ifndef TOOLRUN_ANSWER_H
#define TOOLRUN_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "launchstep.h"
#include "toolrun.pb-c.h"

/* What a shaped stream's Exit counts (toolrun.proto: StreamStats). */
struct exit_stream {
	uint64_t bytes_seen, lines_seen;
	uint64_t bytes_dropped, lines_dropped;
};

/* How a job ended, as its Exit says it. */
struct exit_report {
	bool signaled;
	int code;            /* exit code, when !signaled */
	int signal;          /* when signaled */
	bool core_dumped;
	bool timed_out;
	int exec_errno;
	const char *reason;  /* NULL unless the program never ran */
	bool shaped[2];      /* stdout, stderr */
	struct exit_stream stats[2];
	const char *spill_path[2];  /* where the whole stream is kept, or NULL */
	bool spill_partial[2];
	uint64_t duration_us;
	uint64_t user_us, system_us; /* the program's CPU time (Exit) */
};

/* One message to a client and the parts it points to: answer_*() fill
 * msg (and the part it needs), which then goes out framed. */
struct answer {
	Toolrun__ServerMessage msg;
	Toolrun__Hello hello;
	Toolrun__Started started;
	Toolrun__Exit exit;
	Toolrun__StreamStats out, err; /* exit's counters */
	Toolrun__Output output;
	Toolrun__Error error;
};

/* version: the protocol version the client spoke in its Hello. */
void answer_hello(struct answer *a, uint32_t version);
/* timeout_s: the job's time limit (0: none), for the client's own deadline. */
void answer_started(struct answer *a, pid_t pid, uint32_t timeout_s);
/* An Output of n bytes at p (pointed to, not copied) on stream. */
void answer_output(struct answer *a, Toolrun__Stream stream, const uint8_t *p, size_t n);
/* An Error: why the request was refused (message pointed to). */
void answer_error(struct answer *a, Toolrun__ErrorCode code, const char *message);
/* An Exit for r (a->exit, which a session's reply also carries); r's
 * strings are pointed to, not copied. */
void answer_exit(struct answer *a, const struct exit_report *r);
/* The program ended with wait_status (wait4), or was killed at its time
 * limit (timed_out: 124, as timeout(1) reports it). */
void answer_wait_status(struct exit_report *r, int wait_status, bool timed_out);
/* The program never ran: the launch failed at step with errno err. The
 * code a shell gives (127 not found, 126 not runnable, 1 toolrund's own
 * failure) and the reason, written in reason[len]. */
void answer_not_run(struct exit_report *r, enum launch_step step, int err, char *reason,
		    size_t len);

#endif
