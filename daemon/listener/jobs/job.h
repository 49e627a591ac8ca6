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
 * start.c validates the request (policy.c) and orders the launcher to
 * run it; output.c reads the program's shaped streams (shape.c) and
 * hands them to the client; job.c follows the program to its end. A job
 * knows its client only through job_client: a connection, or a session
 * whose command it is (job_attach). struct job is open only to these
 * three files (internal.h); to the rest of the listener it is a handle.
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_JOB_H
#define TOOLRUN_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
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
	/* For a tool whose streams are not shaped, the launcher may answer
	 * the client itself (launcher.proto: Answer): a copy of the client's
	 * connection, and whether its Hello is still owed (in what version);
	 * -1 when the connection cannot be handed over. Nothing changes
	 * until handed_over. NULL: never (a session's command). */
	int (*answer_fd)(struct job_client *c, bool *hello_owed, uint32_t *version);
	/* The Spawn with that copy is on its way: from now on the launcher
	 * writes to the client, and the other calls above write nothing. */
	void (*handed_over)(struct job_client *c);
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
	LIST_HEAD(, job) list;    /* newest first */
	unsigned running;
	uint64_t next_id;
	uint64_t served;

	uint8_t read_buf[READ_CHUNK];
	uint8_t *emit;            /* shaped bytes of one read, before framing */
	size_t emit_len;
	size_t emit_cap;
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
/* The client broke the protocol: the job ends as for a client gone, and
 * a client the launcher answers reads why (code, message) from it. */
void job_client_refused(struct job *j, Toolrun__ErrorCode code, const char *message);
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
/* user_us, system_us: the program's CPU time; timed_out: its client,
 * answered by the launcher, was told it timed out (launcher.proto:
 * Exited). */
void jobs_on_exited(struct jobs *J, uint64_t id, int wait_status, uint64_t user_us,
		    uint64_t system_us, bool timed_out);
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

#endif
