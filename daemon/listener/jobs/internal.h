/*
 * Inside the jobs module (job.h), in the listener: what job.c, start.c
 * and output.c share, and nothing outside listener/jobs/ includes. A job,
 * its streams and their spill files are open here and a handle anywhere
 * else.
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_JOBS_INTERNAL_H
#define TOOLRUN_JOBS_INTERNAL_H

#include "job.h"

/* Where the whole of a cut stream goes (spill_dir): a file the launcher
 * opens on the first cut, since the listener may open nothing. */
struct job_spill {
	int fd;                 /* -1 until the launcher has opened it */
	bool requested;         /* OpenSpill sent, not yet answered */
	bool partial;           /* some bytes did not go into the file */
	uint64_t written;
	char path[CONFIG_PATH_MAX];
	char error[256];        /* why nothing, or not all, was kept */
	uint8_t *pending;       /* bytes for the file before it was open */
	size_t pending_len, pending_cap;
};

struct job_stream {
	struct job *job;
	int fd;                 /* read end of the program's pipe, or -1 */
	struct event_source ev;
	Toolrun__Stream stream;
	bool shaped;
	bool paused;            /* client slow: not reading for now */
	bool waiting_spill;     /* not reading until the spill file is open */
	bool eof_waiting;       /* ended while the spill file was being opened */
	bool reader_gone;       /* the client's reader left: pipe closed */
	bool finished;          /* shaper finished, marker sent */
	bool borrowed;          /* fd is a session's: not closed here */
	struct shaper shaper;
	struct job_spill spill;
};

struct job {
	struct jobs *J;
	uint64_t id;
	struct job_client *client; /* NULL once the client has gone */
	char tool[64];          /* the tool as the config lists it; "-" for a command */
	char name[64];          /* the program's name, for messages */
	bool command;           /* an agent command (Request.command) */
	bool attached;          /* a session's command: no program of its own */
	uint64_t command_job;   /* a tool below a command or session: its job, as
				 * the launcher saw it (0 until Spawned) */
	unsigned killed_below;  /* a command killed whole: processes below it */
	bool below_harness;     /* Request.below_harness: a harness's tool */
	uid_t uid;
	pid_t caller_pid;
	int64_t start_ms;       /* wall clock, for the audit log */
	/* What the audit log says the job ran, copied from the request. */
	ProtobufCBinaryData *argv;
	size_t argc;
	ProtobufCBinaryData cwd;
	struct limits limits;
	bool joined;
	pid_t pid;
	bool spawned;
	bool answered;          /* the launcher answers its client (Spawn.answer) */
	bool exited;
	bool timed_out;
	bool checking_input;    /* CheckInput sent on timeout, not answered */
	bool waited_for_input;  /* the timeout found it waiting on a producer */
	bool client_gone;
	bool shell_reported;    /* a session's command: its status is the shell's report */
	int wait_status;
	uint64_t start_us;
	uint64_t end_us;
	uint64_t cpu_user_us, cpu_system_us; /* from the launcher; 0 in a session */
	struct job_stream out[2];
	struct timer timeout;
	int pending_signals[16];
	unsigned npending;
	LIST_ENTRY(job) link;     /* in jobs.list */
};

/* Between job.c, start.c and output.c. */

/* Finish the job once it has ended and its streams are done. */
void job_maybe_finish(struct job *j);
struct job *job_find(struct jobs *J, uint64_t id);
/* Nothing ran: report why, with the exit code a shell would give. */
void job_not_run(struct job *j, int code, int exec_errno, const char *reason);
/* (Re)arm the job's one timer: its timeout, or a look at its input. */
void job_arm_timeout(struct job *j, int64_t ms);
/* A tool's time limit when it runs below an agent command, a session or
 * a harness's program, whose own time bounds it then: its section's
 * timeout, or 0 (none). */
uint32_t job_timeout_below_command(const struct job *j);

/* output.c: a job's output streams, from the pipe to Output and spill */
int output_open(struct job *j, int i, Toolrun__Stream stream, int *write_end);
/* Read fd (a session's, not closed here) as stream i. 0, or -errno. */
int output_attach(struct job *j, int i, Toolrun__Stream stream, int fd);
void output_close(struct job_stream *s);
/* Read what is there, stop waiting for the rest, finish the stream. */
void output_drain_and_close(struct job *j);
void output_spill_opened(struct job_stream *s, int fd, const char *path,
			 const char *reason);
/* Release what the stream holds (at the job's end). */
void output_free(struct job_stream *s);

#endif
