/*
 * Jobs: one request each, from the validated Request to its end, and
 * whoever waits for it.
 *
 *   client (conn.c)  ─ job_start, job_signal, job_reader_gone,
 *                      job_client_gone, job_resume_output ─►  job
 *   client           ◄─ started, output, flush, queued, finished ─  job
 *                      (struct job_client_ops)
 *   job  ─ Spawn, Kill, Release, CheckInput, OpenSpill, Audit ─►  launcher
 *                      (order.h)
 *   listener  ─ jobs_on_spawned, jobs_on_exited, jobs_on_input_state,
 *               jobs_on_spill_opened (the launcher's replies, by id) ─►  job
 *
 * jobstart.c validates the request (policy.c) and orders the launcher to
 * run it; output.c reads the program's shaped streams (shape.c) and
 * hands them to the client; job.c follows the program to its end. A job
 * knows its client only through job_client: a connection, or a session
 * whose command it is (job_attach).
 */
#ifndef TOOLRUN_JOB_H
#define TOOLRUN_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "event.h"
#include "order.h"
#include "reply.h"
#include "shape.h"
#include "toolrun.pb-c.h"

/* Output waiting for slow clients, across all of them: past it, a job
 * whose client has more than OUTQ_LOW waiting is paused. */
#define MAX_QUEUED_BYTES (64u << 20)
/* Stop reading a job's output while this much waits for its client... */
#define OUTQ_HIGH (256 * 1024)
/* ...and read again below this. */
#define OUTQ_LOW (64 * 1024)
/* One read from a program's pipe. */
#define READ_CHUNK (64 * 1024)

struct job;
struct job_client;

/* What a job tells whoever waits for it. */
struct job_client_ops {
	/* The program runs (a connection sends Started). */
	void (*started)(struct job_client *c, pid_t pid, uint32_t timeout_s);
	/* Shaped bytes of a stream, in order. */
	void (*output)(struct job_client *c, Toolrun__Stream stream, const uint8_t *p,
		       size_t n);
	/* Push what is queued. false: the client has gone. */
	bool (*flush)(struct job_client *c);
	/* Bytes waiting for it, for back-pressure. */
	size_t (*queued)(const struct job_client *c);
	/* The job's end; the job forgets the client after this. */
	void (*finished)(struct job_client *c, const struct exit_report *r);
};

struct job_client {
	const struct job_client_ops *ops;
	struct job *job; /* the job it waits for, kept by job.c; NULL: none */
};

/* Whom a job runs as: its caller, as it connected. */
struct job_caller {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	unsigned ngroups;
	pid_t pid;
};

/* The jobs of one listener process. */
struct jobs {
	struct event_loop *loop;
	struct config *cfg;       /* the config served now (a reload replaces it) */
	time_t cfg_read_at;       /* when it was read, for messages */
	struct order_link *orders;
	const size_t *queued_total; /* bytes waiting for all clients */
	struct job *list;
	unsigned running;
	uint64_t next_id;
	uint64_t served;

	uint8_t read_buf[READ_CHUNK];
	uint8_t *emit;            /* shaped bytes of one read, before framing */
	size_t emit_len;
	size_t emit_cap;
};

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
	struct job *prev, *next;
};

/* The context, before the loop runs. Returns 0, or -ENOMEM. */
int jobs_init(struct jobs *J, struct event_loop *loop, struct order_link *orders,
	      const size_t *queued_total);
/* End every job (Release), telling no client. */
void jobs_stop_all(struct jobs *J);
void jobs_free(struct jobs *J);

/*
 * Start a job for client, run as who. Returns 0 when a job exists: the
 * client gets finished, maybe within this call (a refusal by the policy,
 * exit 126). Returns -1 when the request is refused before any job
 * exists (malformed, out of memory): the fds are closed, and the client
 * should answer Error with *code and why.
 */
int job_start(struct jobs *J, const struct job_caller *who, struct job_client *client,
	      const Toolrun__Request *req, int *fds, unsigned nfds,
	      Toolrun__ErrorCode *code, char *why, size_t len);
void job_signal(struct job *j, int signo);
/* The client's reader of a shaped stream is gone (ReaderGone). */
void job_reader_gone(struct job *j, Toolrun__Stream stream);
/* The client has gone: end the program, drain its output. */
void job_client_gone(struct job *j);
/* The client's queue drained: read the paused streams again. */
void job_resume_output(struct job *j);

/* The launcher's replies, by job id. */
/* command_job: the agent command or session the tool runs below, as the
 * launcher found it (launcher.proto: Spawned), or 0. */
void jobs_on_spawned(struct jobs *J, uint64_t id, pid_t pid, int err, unsigned step,
		     uint64_t command_job);
/* A Kill that reached a command's whole tree: how many processes below
 * its first one it signalled (launcher.proto: Killed). */
void jobs_on_killed(struct jobs *J, uint64_t id, unsigned processes);
/* user_us, system_us: the program's CPU time (launcher.proto: Exited). */
void jobs_on_exited(struct jobs *J, uint64_t id, int wait_status, uint64_t user_us,
		    uint64_t system_us);
void jobs_on_input_state(struct jobs *J, uint64_t id, bool producer_running);
/* The answer to OpenSpill: fd >= 0, or the reason. */
void jobs_on_spill_opened(struct jobs *J, uint64_t id, unsigned stream, int fd,
			  const char *path, const char *reason);

/* A session's command (session.h): a job on the output fds its session
 * keeps, with no program of its own to spawn, kill or release. */
struct job_attach {
	const struct job_caller *who;
	struct job_client *client;
	int fds[2];               /* stdout and stderr to read, or -1: not owned */
	char name[64];            /* for messages */
	ProtobufCBinaryData command; /* what the audit log says it ran */
	ProtobufCBinaryData cwd;
	uint64_t command_job;     /* the session's own job (its bash) */
	pid_t pid;                /* the session's bash */
};

/* "KEY=dev:ino" of fd's file ("KEY=" without one): how the library
 * knows a stream that reaches the agent (TOOLRUN_AGENT_STDOUT, ...). */
void job_stream_var(int fd, const char *key, char *buf, size_t len);

/* Start reading the session's fds for a command, shaped as an agent
 * command's output. NULL, with a line in why, when it cannot. */
struct job *job_attach(struct jobs *J, const struct job_attach *a, char *why, size_t len);
/* The session says the command ended with wait_status: read what is
 * left in the fds, then finish (the client gets finished). by_shell: the
 * status is what the session's shell reported (the audit says so), not
 * what toolrund saw (its bash's own end, a close). */
void job_attached_ended(struct job *j, int wait_status, bool by_shell);
/* A reply is about to be made while the command runs: read what the
 * fds hold, and hand on what the shaper holds back for its binary check
 * (a prompt without '\n'; shaper_settle). */
void output_settle(struct job *j);

/* ------------------------------------------------------------------ */
/* Between job.c, jobstart.c and output.c                              */

/* Finish the job once it has ended and its streams are done. */
void job_maybe_finish(struct job *j);
struct job *job_find(struct jobs *J, uint64_t id);
/* Nothing ran: report why, with the exit code a shell would give. */
void job_not_run(struct job *j, int code, int exec_errno, const char *reason);
/* (Re)arm the job's one timer: its timeout, or a look at its input. */
void job_arm_timeout(struct job *j, int64_t ms);

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
