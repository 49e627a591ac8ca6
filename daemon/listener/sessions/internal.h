/*
 * Inside the sessions module (session.h), in the listener: what session.c
 * and start.c share, and nothing outside listener/sessions/ includes.
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_SESSIONS_INTERNAL_H
#define TOOLRUN_SESSIONS_INTERNAL_H

#include "policy.h"
#include "session.h"

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
	TAILQ_ENTRY(session) link; /* in sessions.list */
};

/* Between session.c and start.c. */

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
