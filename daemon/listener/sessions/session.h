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
 * toolrund stops. docs/sessions.md says what a client sees. struct session
 * is open only to session.c and start.c (internal.h).
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_SESSION_H
#define TOOLRUN_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "event.h"
#include "jobs/job.h"
#include "reply.h"
#include "toolrun.pb-c.h"

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

/* The sessions of one listener process. */
struct sessions {
	struct jobs *J;           /* the loop, the config, the launcher's link */
	TAILQ_HEAD(, session) list; /* oldest first */
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
/* Sessions whose bash has not ended (for a client's Status). */
unsigned sessions_open(const struct sessions *S);
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

#endif
