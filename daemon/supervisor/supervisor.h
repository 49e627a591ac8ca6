/*
 * The supervisor: toolrund's first process.
 *
 * Peers:
 *   launcher, listener  (its children)  ─ exit status ─►  supervisor
 *   listener  ─ death note: the system call that got it killed ─►  supervisor
 *   listener  ◄─ Config, Socket (+fd), ReloadRefused ─  supervisor
 *   listener  ─ Reload ─►  supervisor                 (control.h)
 *
 * It owns the listening socket and its lock, which the listener inherits.
 * It starts the launcher (forks and runs programs) and the listener
 * (serves clients), each of which locks itself down with seccomp. If
 * either ends, the supervisor ends the other and starts both again within
 * a second, logging why. On SIGHUP (or a client's Reload) it reads the
 * config again and hands it to the listener. Every second it checks that
 * the socket file is still its own, and makes it again if not. On SIGTERM
 * or SIGINT it stops them, removes the socket and exits.
 *
 * Process: the supervisor.
 */
#ifndef TOOLRUN_SUPERVISOR_H
#define TOOLRUN_SUPERVISOR_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "link.h"
#include "sock.h"

struct supervisor {
	struct config *cfg;
	bool cfg_owned;      /* cfg came from a reload: ours to free */
	struct listen_socket *sock;
	/* How the socket's directory is made, should it be made again. */
	mode_t dir_mode;
	uid_t uid;
	gid_t gid;
	uid_t allowed[MAX_ALLOWED_UIDS];
	unsigned nallowed;
	/* Programs run as their callers (caps.h); otherwise as uid. */
	bool can_switch;
	/* Why they do not (""), and why toolrund is not its configured user
	 * although they do (""), for a client's Status (main.c). */
	char identity_reason[512];
	char user_note[512];
	/* The socket is a socket_fallback, not the config's `socket`. */
	bool socket_fallback;
};

/* Serve until SIGTERM or SIGINT. Returns the process exit code. */
int supervisor_run(struct supervisor *S);

#endif
