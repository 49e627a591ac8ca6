/*
 * The listener: toolrund's process that faces clients.
 *
 * Peers:
 *   supervisor  ─ Config, Socket (+fd), ReloadRefused ─►  listener
 *   supervisor  ◄─ Reload ─  listener
 *   clients   ─ Hello, Request (+fds), Signal, ReaderGone, Ping, Reload ─►  listener
 *   clients   ◄─ Hello, Started, Output, Exit, Error, Pong, Reloaded ─  listener
 *   launcher  ◄─ Spawn (+fds), Kill, Release, Audit ─  listener
 *   launcher  ─ Spawned, Exited, AuditLogAt ─►  listener
 *
 * One event loop serves every connection. A request becomes a job: the
 * listener validates it (policy.c), orders the launcher to run it, reads
 * the program's shaped streams (shape.c) and sends them back (reply.c).
 * Nothing a client does can block the loop: sockets and pipes are
 * non-blocking and outgoing data waits in bounded queues.
 */
#ifndef TOOLRUN_LISTENER_H
#define TOOLRUN_LISTENER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "event.h"
#include "frame.h"
#include "launcher.h"
#include "launcher.pb-c.h"
#include "outq.h"
#include "shape.h"
#include "sock.h"
#include "toolrun.pb-c.h"

/* A client must deliver Hello and its Request within this time... */
#define REQUEST_DEADLINE_MS 10000
/* ...and, after it, finish any frame it begins within this time. */
#define FRAME_DEADLINE_MS 10000
/* A refused client has this long to read why before it is cut off. */
#define REFUSAL_LINGER_MS 5000
/* Connections open at once, in all and per uid (see on_accept). */
#define MAX_CONNECTIONS 4096
#define MAX_CONNECTIONS_PER_UID 1024
/* Peers a daemon may serve (allow_uids). */
#define MAX_ALLOWED_UIDS 64
/* The largest frame a client may send: its Request, and anything else. */
#define MAX_REQUEST_FRAME FRAME_MAX_CLIENT_PAYLOAD
#define MAX_SMALL_FRAME 4096
/* Memory for frames still arriving, across all connections. */
#define MAX_BUFFERED_BYTES (64u << 20)
/* Output waiting for slow clients, across all connections: past it, a
 * job whose client has more than OUTQ_LOW waiting is paused. */
#define MAX_QUEUED_BYTES (64u << 20)
/* Stop reading a job's output while this much waits for its client... */
#define OUTQ_HIGH (256 * 1024)
/* ...and read again below this. */
#define OUTQ_LOW (64 * 1024)
/* One read from a program's pipe. */
#define READ_CHUNK (64 * 1024)

struct job;

enum conn_state {
	CONN_HELLO,   /* waiting for Hello */
	CONN_REQUEST, /* waiting for Request or Ping */
	CONN_RUNNING, /* a job runs; Signal may arrive */
	CONN_RELOADING, /* Reload sent to the supervisor: waiting for its answer */
	CONN_CLOSING, /* flushing the last messages, then close */
};

struct conn {
	struct listener *L;
	int fd;
	struct event_source ev;
	/* The peer's identity when it connected (SO_PEERCRED,
	 * SO_PEERGROUPS): what its programs run as. */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	unsigned ngroups;
	pid_t pid;
	int slot;               /* the uid's index in L->allowed; -1 once closing */
	bool dead;              /* dropped; freed after this batch of events */
	enum conn_state state;
	struct frame_reader reader;
	int fds[FRAME_MAX_FDS];
	struct outq out;
	struct timer deadline;
	struct job *job;
	struct conn *prev, *next;
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
	struct shaper shaper;
	struct job_spill spill;
};

struct job {
	struct listener *L;
	uint64_t id;
	struct conn *conn;      /* NULL once the client has gone */
	char tool[64];          /* the tool as the config lists it; "-" for a command */
	char name[64];          /* the program's name, for messages */
	bool command;           /* an agent command (Request.command) */
	uint64_t command_job;   /* a tool inside a command: the command's job */
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
	int wait_status;
	uint64_t start_us;
	uint64_t end_us;
	struct job_stream out[2];
	struct timer timeout;
	int pending_signals[16];
	unsigned npending;
	struct job *prev, *next;
};

/* The listener process's one context. */
struct listener {
	struct config *cfg;
	struct event_loop loop;
	struct listen_socket *sock;
	struct event_source listen_ev;
	struct timer accept_pause;
	int sigfd;
	struct event_source sig_ev;

	/* The supervisor's channel (control.h): new configs and sockets. */
	int control;
	struct event_source control_ev;
	struct frame_reader control_reader;
	int control_fds[FRAME_MAX_FDS];
	bool cfg_owned;         /* cfg came from a reload: ours to free */
	time_t cfg_read_at;     /* when it was read, for messages */

	struct launcher_link launcher;
	struct event_source launcher_ev;
	struct frame_reader launcher_reader;
	int launcher_fds[FRAME_MAX_FDS]; /* SpillOpened brings one */
	struct outq launcher_out;
	char audit_log[CONFIG_PATH_MAX]; /* the launcher's (AuditLogAt); "": none */

	struct conn *conns;     /* newest first */
	unsigned nconns;
	unsigned uid_conns[MAX_ALLOWED_UIDS]; /* open connections per allowed uid */
	size_t buffered;        /* bytes of frames still arriving */
	size_t queued;          /* bytes waiting for clients */
	unsigned fds_held;      /* fds received with frames still arriving */
	unsigned fd_budget;     /* the most fds_held may reach */
	struct job *jobs;
	unsigned running;
	uint64_t next_job;
	uint64_t served;
	uint64_t started_us;
	uid_t allowed[MAX_ALLOWED_UIDS]; /* peers served (SO_PEERCRED uid) */
	unsigned nallowed;
	uid_t self_uid;         /* the uid toolrund runs as */
	bool can_switch;        /* the launcher runs programs as their callers */
	int exit_code;

	uint8_t read_buf[READ_CHUNK];
	uint8_t *emit;          /* shaped bytes of one read, before framing */
	size_t emit_len;
	size_t emit_cap;
};

/*
 * The listener process: set up, lock down (seccomp, no_new_privs), serve
 * until SIGTERM or SIGINT or the launcher's end. death_note is where the
 * seccomp violation handler writes. Returns the process exit code.
 */
int listener_main(struct listener *L, int death_note);

/* job.c */
void job_start(struct conn *c, const Toolrun__Request *req, int *fds,
	       unsigned nfds);
void job_signal(struct job *j, int signo);
void job_client_gone(struct job *j);
/* The client's reader of a shaped stream is gone (ReaderGone). */
void job_reader_gone(struct job *j, Toolrun__Stream stream);
void job_on_spawned(struct listener *L, uint64_t id, pid_t pid, int err,
		    unsigned step);
void job_on_exited(struct listener *L, uint64_t id, int wait_status);
void job_stop_all(struct listener *L);
void job_on_input_state(struct listener *L, uint64_t id, bool producer_running);
/* The launcher's answer to OpenSpill: fd >= 0, or the reason. */
void job_on_spill_opened(struct listener *L, uint64_t id, unsigned stream, int fd,
			 const char *path, const char *reason);
/* Finish the job once it has ended and its streams are done. */
void job_maybe_finish(struct job *j);
struct job *job_find(struct listener *L, uint64_t id);
/* Nothing ran: report why, with the exit code a shell would give. */
void job_not_run(struct job *j, int code, int exec_errno, const char *reason);
/* (Re)arm the job's one timer: its timeout, or a look at its input. */
void job_arm_timeout(struct job *j, int64_t ms);

/* output.c: a job's output streams, from the pipe to Output and spill */
int output_open(struct job *j, int i, Toolrun__Stream stream, int *write_end);
void output_close(struct job_stream *s);
/* Read what is there, stop waiting for the rest, finish the stream. */
void output_drain_and_close(struct job *j);
void output_resume(struct job *j);
void output_spill_opened(struct job_stream *s, int fd, const char *path,
			 const char *reason);
/* Release what the stream holds (at the job's end). */
void output_free(struct job_stream *s);

/* listener.c, for job.c */
/* Write what the client takes. Returns false if the connection is gone. */
bool conn_flush(struct conn *c);
/* Send an Error and close. */
void conn_refuse(struct conn *c, Toolrun__ErrorCode code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void conn_close_after_flush(struct conn *c);
void launcher_send(struct listener *L, Toolrun__Launcher__ToLauncher *msg,
		   const int *fds, unsigned nfds);

#endif
