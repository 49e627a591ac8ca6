/*
 * The listener: toolrund's process that faces clients.
 *
 * Peers:
 *   supervisor  ─ Config, Socket (+fd), ReloadRefused ─►  listener
 *   supervisor  ◄─ Reload ─  listener
 *   clients   ─ Hello, Request (+fds), Signal, ReaderGone, Ping, Reload,
 *               Status, SessionCall (+fd), FrontRecord ─►  listener
 *   clients   ◄─ Hello, Started, Output, Exit, Error, Pong, Reloaded,
 *               StatusReply, SessionReply ─  listener
 *   launcher  ◄─ Spawn (+fds), Kill, Release, CheckInput, OpenSpill, Audit,
 *               OpenPty, CheckWaiting, QueryState ─  listener
 *   launcher  ─ Spawned, Exited, InputState, SpillOpened (+fd), AuditLogAt,
 *               PtyOpened (+2 fds), Killed, WaitingState, LauncherState ─►
 *               listener
 *
 * Inside it, dependencies go down:
 *
 *   listener.c  the process: set-up, sandbox, signals, the supervisor's
 *       │       channel, the launcher's replies routed to sessions and jobs
 *   conn.c      client connections; each is its job's client, or makes
 *       │       session calls
 *   sessions/   sessions: a bash each, its commands as jobs attached to
 *       │       its pipes, the calls' answers (session.h)
 *   jobs/       jobs: policy, streams, the end (job.h)
 *       │
 *   order.c     orders to the launcher, on the listener's channel
 *   status.c    a client's Status answered (with conn.c and the launcher)
 *
 * One event loop serves every connection. A request becomes a job: it is
 * validated (policy.c), the launcher is ordered to run it, the program's
 * shaped streams (shape.c) go back to the client (reply.c). Nothing a
 * client does can block the loop: sockets and pipes are non-blocking and
 * outgoing data waits in bounded queues.
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_LISTENER_H
#define TOOLRUN_LISTENER_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "link.h"
#include "sock.h"

/* What the supervisor starts the listener with. */
struct listener_args {
	struct config *cfg;           /* the config served first */
	struct listen_socket *sock;   /* the listening socket and its lock */
	struct launcher_link link;    /* the launcher's channel */
	int control;                  /* its end of the supervisor's channel (control.h) */
	int death_note;               /* where its seccomp violation handler writes */
	const uid_t *allowed;         /* the uids it serves (allow_uids) */
	unsigned nallowed;
	uid_t self_uid;               /* the uid and gid toolrund runs as */
	gid_t self_gid;
	bool can_switch;              /* the launcher runs programs as their callers */
	/* For a client's Status (status.h): why programs do not run as their
	 * callers, why toolrund is not its `user` though they do ("": not
	 * so), and whether the socket is a socket_fallback. */
	const char *identity_reason;
	const char *user_note;
	bool socket_fallback;
};

/*
 * Fork the listener: it sets itself up, locks itself down (seccomp,
 * no_new_privs) and serves until SIGTERM or SIGINT or the launcher's end,
 * then exits with its code. close_in_child lists fds (ending with -1)
 * that it must not keep. Returns its pid, or -errno.
 */
pid_t listener_start(const struct listener_args *a, const int *close_in_child);

#endif
