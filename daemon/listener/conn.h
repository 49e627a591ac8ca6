/*
 * Client connections of the listener process.
 *
 *   clients  ─ Hello, Request (+fds), Signal, ReaderGone, Ping, Reload,
 *              Status, SessionCall (+fd) ─►  conn
 *   clients  ◄─ Hello, Started, Output, Exit, Error, Pong, Reloaded,
 *              StatusReply, SessionReply ─  conn
 *   conn  ─ job_start, job_signal, job_reader_gone, job_client_gone ─►  job
 *   conn  ◄─ started, output, flush, queued, finished ─  job  (job_client)
 *   conn  ─ sessions_call, sessions_peer_gone ─►  session
 *   conn  ◄─ reply ─  session  (session_peer)
 *   conn  ─ ask_reload ─►  listener (which asks the supervisor)
 *   conn  ─ ask_status ─►  listener (which asks the launcher)
 *
 * Each connection is admitted (allowed uids, per-uid slots), says Hello,
 * then sends one Request (which becomes a job), a Ping, a Reload or a
 * Status; or,
 * with protocol version 2, any number of session calls, one at a time. Its
 * frames arrive within deadlines and within the budgets shared by all
 * connections (bytes of frames arriving, fds held); what it is sent waits
 * in its queue, counted in a total that holds back the jobs' output.
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_CONN_H
#define TOOLRUN_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "event.h"
#include "frame.h"
#include "jobs/job.h"
#include "link.h"
#include "sessions/session.h"
#include "outq.h"
#include "sock.h"
#include "toolrun.pb-c.h"

/* A client must deliver Hello and its Request within this time... */
#define REQUEST_DEADLINE_MS 10000
/* ...and, after it, finish any frame it begins within this time. */
#define FRAME_DEADLINE_MS 10000
/* A refused client has this long to read why before it is cut off. */
#define REFUSAL_LINGER_MS 5000
/* Connections open at once, in all and per uid (see conn_admit). */
#define MAX_CONNECTIONS 4096
#define MAX_CONNECTIONS_PER_UID 1024
/* The largest frame a client may send: its Request, and anything else. */
#define MAX_REQUEST_FRAME FRAME_MAX_CLIENT_PAYLOAD
#define MAX_SMALL_FRAME 4096
/* Memory for frames still arriving, across all connections. */
#define MAX_BUFFERED_BYTES (64u << 20)

enum conn_state {
	CONN_HELLO,   /* waiting for Hello */
	CONN_REQUEST, /* waiting for Request or Ping */
	CONN_RUNNING, /* a job runs; Signal may arrive */
	CONN_RELOADING, /* Reload sent to the supervisor: waiting for its answer */
	CONN_STATUS,  /* Status: waiting for the launcher's part of the answer */
	CONN_SESSION, /* session calls, one at a time, for as long as the client likes */
	CONN_CLOSING, /* flushing the last messages, then close */
};

struct conn {
	struct conns *C;
	int fd;
	struct event_source ev;
	/* The peer's identity when it connected (SO_PEERCRED,
	 * SO_PEERGROUPS): what its programs run as. */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	unsigned ngroups;
	pid_t pid;
	int slot;               /* the uid's index in C->allowed; -1 once closing */
	bool dead;              /* dropped; freed after this batch of events */
	bool reply_lost;        /* a reply could not be queued: drop at the
				 * next flush (conn_reply_lost) */
	enum conn_state state;
	struct frame_reader reader;
	int fds[FRAME_MAX_FDS];
	struct outq out;
	struct timer deadline;
	struct job_client client; /* its job, if any: client.job */
	struct session_peer peer; /* its session calls; peer.waiting_on: one waits */
	uint32_t version;       /* the protocol version of its Hello */
	/* Its Hello said request_follows: the Hello reply waits for the
	 * answer to the next message (conn_read_done). */
	bool hold_hello;
	/* The Hello reply is queued and nothing was written since: the
	 * launcher may send it in our place (answer_fd). */
	bool hello_unsent;
	/* The launcher answers this client (launcher.proto: Answer): the
	 * listener reads from it and writes nothing more. */
	bool handed_over;
	LIST_ENTRY(conn) link;  /* in conns.list */
};

/* The connections of one listener process. */
struct conns {
	struct event_loop *loop;
	struct jobs *jobs;
	struct sessions *sessions;
	struct listen_socket *sock;
	struct event_source listen_ev;
	struct timer accept_pause;

	LIST_HEAD(, conn) list; /* newest first */
	unsigned n;
	unsigned uid_conns[MAX_ALLOWED_UIDS]; /* open connections per allowed uid */
	size_t buffered;        /* bytes of frames still arriving */
	size_t queued;          /* bytes waiting for clients */
	unsigned fds_held;      /* fds received with frames still arriving */
	unsigned fd_budget;     /* the most fds_held may reach */

	uid_t allowed[MAX_ALLOWED_UIDS]; /* peers served (SO_PEERCRED uid) */
	unsigned nallowed;
	uid_t self_uid;         /* the uid toolrund runs as */
	bool can_switch;        /* the launcher runs programs as their callers */

	/* For Pong. */
	uint64_t started_us;
	const char *audit_log;  /* the launcher's; "": none */
	/* Ask the supervisor to read the config again (Reload): 0, or
	 * -errno. The answer comes through conns_answer_reloads. */
	int (*ask_reload)(void *owner);
	/* Ask the launcher for its part of a Status answer (QueryState); the
	 * answer comes through conns_answer_status. */
	void (*ask_status)(void *owner);
	/* Take in what the launcher has sent: a client it answered may go
	 * away once told, before its Exited is read (conn_client_left). */
	void (*read_launcher)(void *owner);
	void *owner;
};

/* The context, before the loop runs (the caller fills in the admission
 * fields, audit_log and ask_reload). conns_listen then accepts. */
void conns_init(struct conns *C, struct event_loop *loop, struct jobs *jobs,
		struct sessions *sessions, struct listen_socket *sock);
/* Stop watching the listening socket, and watch it again (its fd may
 * have changed). */
void conns_unlisten(struct conns *C);
int conns_listen(struct conns *C);
/* Answer every client waiting for a reload. */
void conns_answer_reloads(struct conns *C, bool ok, const char *message);
/* Answer every client waiting for its Status with r. */
void conns_answer_status(struct conns *C, const Toolrun__StatusReply *r);
/* Connections waiting for their Status. */
unsigned conns_waiting_status(const struct conns *C);
/* Drop every connection (at the end). */
void conns_drop_all(struct conns *C);

#endif
