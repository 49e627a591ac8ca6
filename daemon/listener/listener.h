/*
 * The listener: toolrund's process that faces clients.
 *
 * Peers:
 *   supervisor  ─ Config, Socket (+fd), ReloadRefused ─►  listener
 *   supervisor  ◄─ Reload ─  listener
 *   clients   ─ Hello, Request (+fds), Signal, ReaderGone, Ping, Reload,
 *               SessionCall (+fd) ─►  listener
 *   clients   ◄─ Hello, Started, Output, Exit, Error, Pong, Reloaded,
 *               SessionReply ─  listener
 *   launcher  ◄─ Spawn (+fds), Kill, Release, CheckInput, OpenSpill, Audit,
 *               OpenPty, CheckWaiting ─  listener
 *   launcher  ─ Spawned, Exited, InputState, SpillOpened (+fd), AuditLogAt,
 *               PtyOpened (+2 fds), WaitingState ─►  listener
 *
 * Inside it, dependencies go down:
 *
 *   listener.c  the process: set-up, sandbox, signals, the supervisor's
 *       │       channel, the launcher's replies routed to sessions and jobs
 *   conn.c      client connections; each is its job's client, or makes
 *       │       session calls
 *   session.c   sessions (sessionstart.c): a bash each, its commands as
 *       │       jobs attached to its pipes, the calls' answers
 *   job.c       jobs (jobstart.c, output.c): policy, streams, the end
 *       │
 *   order.c     orders to the launcher, on the listener's channel
 *
 * One event loop serves every connection. A request becomes a job: it is
 * validated (policy.c), the launcher is ordered to run it, the program's
 * shaped streams (shape.c) go back to the client (reply.c). Nothing a
 * client does can block the loop: sockets and pipes are non-blocking and
 * outgoing data waits in bounded queues.
 */
#ifndef TOOLRUN_LISTENER_H
#define TOOLRUN_LISTENER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "conn.h"
#include "event.h"
#include "frame.h"
#include "job.h"
#include "order.h"
#include "session.h"
#include "sock.h"

/* The listener process's one context. */
struct listener {
	struct config *cfg;
	struct event_loop loop;
	struct listen_socket *sock;
	int sigfd;
	struct event_source sig_ev;

	/* The supervisor's channel (control.h): new configs and sockets. */
	int control;
	struct event_source control_ev;
	struct frame_reader control_reader;
	int control_fds[FRAME_MAX_FDS];
	bool cfg_owned;         /* cfg came from a reload: ours to free */

	/* The launcher's channel: orders out, replies in. */
	struct order_link orders;
	struct frame_reader launcher_reader;
	int launcher_fds[FRAME_MAX_FDS]; /* SpillOpened brings one, PtyOpened two */
	char audit_log[CONFIG_PATH_MAX]; /* the launcher's (AuditLogAt); "": none */

	struct conns conns;
	struct jobs jobs;
	struct sessions sessions;
	int exit_code;
};

/*
 * The listener process: set up, lock down (seccomp, no_new_privs), serve
 * until SIGTERM or SIGINT or the launcher's end. death_note is where the
 * seccomp violation handler writes. Returns the process exit code.
 */
int listener_main(struct listener *L, int death_note);

#endif
