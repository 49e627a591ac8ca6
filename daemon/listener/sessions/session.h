/*
 * Sessions: persistent shells that toolrund hosts for its callers.
 *
 *   clients (conn.c)  ─ sessions_call, sessions_peer_gone ─►  session
 *   clients           ◄─ reply (struct session_peer_ops) ─  session
 *   session  ─ job_attach, job_attached_ended ─►  job  (each command)
 *   session  ◄─ started, output, flush, queued, finished ─  job  (job_client)
 *   session  ─ Spawn, OpenPty, CheckWaiting, Kill, Release ─►  launcher
 *   listener ─ sessions_on_* (the launcher's replies, by id) ─►  session
 *
 * A session is a bash that the launcher starts as its caller, reading
 * commands from a pipe (fd 3) and writing each one's status and working
 * directory to another (fd 4) that the command's programs do not inherit:
 * toolrund knows a command has ended from that pipe, never from its
 * output. The command itself runs in the same bash and could write to
 * that pipe too (bash keeps copies of fd 4 while it runs), so each
 * command goes with a fresh random key that only toolrun's builtin in
 * that bash holds (preload/sessionbuiltin.c), and a status counts only
 * when it carries that key. Each command is a job attached to the session's output pipes
 * (or its terminal), shaped as an agent command's output is. A session
 * outlives the connection that made it; it ends with CLOSE, after
 * session_idle seconds without a call, when its bash exits, or when
 * toolrund stops. docs/sessions.md says what a client sees.
 */
#ifndef TOOLRUN_SESSION_H
#define TOOLRUN_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "job.h"
#include "policy.h"
#include "reply.h"
#include "toolrun.pb-c.h"

/* The shell a session runs. */
#define SESSION_SHELL "/bin/bash"
/* The bash builtin its loop loads, in the directory of toolrun's library
 * (preload/sessionbuiltin.c); its bash exits with SESSION_NO_BUILTIN when
 * it cannot. */
#define SESSION_BUILTIN "toolrun-session.so"
#define SESSION_NO_BUILTIN 97
/* Its bash exits with this when a command broke its loop (session.c). */
#define SESSION_LOOP_BROKEN 98
/* toolrund's key for each command: hex digits, sent before the command
 * and expected before its status (session.c). */
#define SESSION_KEY_LEN 32
/* Output one reply carries per stream; the rest waits for the next
 * (SessionReply.more). Two of them fit a server frame (128 KiB). */
#define SESSION_REPLY_CHUNK (48 * 1024)
/* A command at most (policy.h checks every call). */
#define SESSION_COMMAND_MAX POLICY_SESSION_COMMAND_MAX

struct session;
struct session_peer;

/* How a session answers whoever called it. */
struct session_peer_ops {
	void (*reply)(struct session_peer *p, const Toolrun__SessionReply *r);
};

/* A client making session calls: a connection. */
struct session_peer {
	const struct session_peer_ops *ops;
	struct job_caller who;
	struct session *waiting_on; /* the session whose answer it waits for */
};

enum session_phase {
	SESSION_OPENING_PTY,    /* OpenPty sent: waiting for the terminal */
	SESSION_STARTING,       /* Spawn sent: waiting for its bash to run */
	SESSION_LOADING,        /* its bash runs: waiting for its loop's "ready" */
	SESSION_READY,
	SESSION_CLOSING,        /* SIGHUP sent: SIGKILL follows in a second */
	SESSION_ENDED,          /* its bash is gone: kept until that is told */
};

/* Output of the current command, waiting for a reply to carry it. */
struct session_pending {
	uint8_t *p;
	size_t len, cap;
};

/* What a finished command's reply says, kept until it is read. */
struct session_exit {
	struct exit_report r;
	char spill[2][CONFIG_PATH_MAX];
};

struct session {
	struct sessions *S;
	char id[16];
	uint64_t job_id;        /* its bash, for the launcher */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	unsigned ngroups;
	pid_t caller_pid;
	bool tty;
	enum session_phase phase;
	bool orphan;            /* its creator left before hearing its id */
	pid_t pid;              /* its bash */
	int cwd_fd;             /* until the Spawn takes it */
	ProtobufCBinaryData *env; /* until the Spawn (TTY: after the terminal) */
	size_t nenv;
	int in_fd;              /* the command's stdin: a pipe's write end, or the terminal */
	bool in_closed;         /* WRITE --eof closed the stdin pipe */
	dev_t in_dev;           /* what a process waiting for input reads */
	ino_t in_ino;
	int out_fd[2];          /* stdout, stderr (TTY: the terminal, and -1) */
	int cmd_fd;             /* commands to its fd 3 */
	int status_fd;          /* statuses from its fd 4 */
	char builtin[CONFIG_PATH_MAX + 32]; /* the path its bash loads */
	char key[SESSION_KEY_LEN + 1]; /* the running command's; "" when none */
	struct event_source status_ev;
	char status_buf[CONFIG_PATH_MAX + 32];
	size_t status_len;

	/* The current command, if one runs. */
	struct job_client client;
	uint64_t commands;      /* commands started */
	bool waiting_input;     /* as the last look saw it */
	bool checking;          /* CheckWaiting sent, not answered */
	bool killing;           /* KILL's Kill sent, its Killed not come */
	int64_t input_at_ms;    /* the last input sent (monotonic) */
	struct session_pending pending[2];
	bool done_unread;       /* a command ended, and no reply said so yet */
	struct session_exit last;
	char *command;          /* the running or last command, for LIST */
	char *cwd;              /* after the last command */
	char end_reason[256];   /* why it ended, once it has */

	/* The one call waiting for an answer, if any. */
	struct session_peer *waiter;
	struct timer wait_timer;   /* the call's timeout */
	struct timer check_timer;  /* the next look for a command waiting for input */
	struct timer idle_timer;   /* session_idle; SIGKILL after SIGHUP when closing */
	int64_t created_ms, last_call_ms;
	struct session *prev, *next;
};

/* The sessions of one listener process. */
struct sessions {
	struct jobs *J;           /* the loop, the config, the launcher's link */
	struct session *list;     /* oldest first */
	unsigned count;           /* in the list, ended ones included */
	const uid_t *served;      /* the uids toolrund serves: each is sure of */
	unsigned nserved;         /* session_max / nserved sessions (at_limit) */
};

void sessions_init(struct sessions *S, struct jobs *J, const uid_t *served,
		   unsigned nserved);
/* One call from a peer, answered through its ops now or later. cwd_fd:
 * the fd a NEW call's frame carried (the session's), else -1; it passes
 * to the session. */
void sessions_call(struct sessions *S, struct session_peer *p, const Toolrun__SessionCall *c,
		   int cwd_fd);
/* The peer is going: it waits for nothing any more. */
void sessions_peer_gone(struct sessions *S, struct session_peer *p);
/* End every session (toolrund is stopping). */
void sessions_stop_all(struct sessions *S);

/* The launcher's replies about a session's bash, by job id; each returns
 * false when no session has that id (it is a job's). */
bool sessions_on_spawned(struct sessions *S, uint64_t id, pid_t pid, int err,
			 unsigned step);
bool sessions_on_exited(struct sessions *S, uint64_t id, int wait_status);
/* The launcher's PtyOpened: master and slave, or err. */
bool sessions_on_pty(struct sessions *S, uint64_t id, int err, int master, int slave);
bool sessions_on_waiting(struct sessions *S, uint64_t id, bool waiting, bool unknown);
/* The answer to a KILL's Kill: processes below the bash it signalled, and
 * whether the bash ignores SIGINT. */
bool sessions_on_killed(struct sessions *S, uint64_t id, unsigned processes,
			bool shell_ignores_sigint);

/* ------------------------------------------------------------------ */
/* Between session.c and sessionstart.c                                */

/* How a session hears from its current command's job. */
extern const struct job_client_ops session_client_ops;
/* The caller's session of that id (never another uid's), or NULL. */
struct session *session_by_id(struct sessions *S, const char *id, uid_t uid);
struct session *session_by_job(struct sessions *S, uint64_t job);
/* NEW: make the session and ask the launcher for its bash; p is answered
 * once it runs, or at once with the reason it cannot. */
void session_new(struct sessions *S, struct session_peer *p, const Toolrun__SessionCall *c,
		 int cwd_fd);
/* A job for the next command, on the session's pipes. Returns 0, or -1
 * with a line in why. */
int session_attach_command(struct session *s, const ProtobufCBinaryData *command, char *why,
			   size_t len);
int session_watch_status(struct session *s);
/* Its loop said "ready": answer the NEW call. */
void session_loop_ready(struct session *s);
/* Its bash ended while loading: tell the NEW call why, and forget it.
 * Returns false when it was past loading. */
bool session_loop_failed(struct session *s, int wait_status);
/* A call came: the idle clock starts again. */
void session_touch(struct session *s);
/* SIGHUP to its processes, SIGKILL a second later; its bash's end
 * finishes it (session_end). */
void session_close(struct session *s, const char *why);
/* Its bash is gone, or never ran. */
void session_end(struct session *s, const char *why);
void session_close_fds(struct session *s);
/* Unlink and free it (after this batch of events). */
void session_forget(struct session *s);

#endif
