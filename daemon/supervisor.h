/*
 * The supervisor: toolrund's first process.
 *
 * Peers:
 *   launcher, listener  (its children)  ─ exit status ─►  supervisor
 *   listener  ─ death note: the system call that got it killed ─►  supervisor
 *
 * It owns the listening socket and its lock, which the listener inherits.
 * It starts the launcher (forks and runs programs) and the listener
 * (serves clients), each of which locks itself down with seccomp. If
 * either ends, the supervisor ends the other and starts both again within
 * a second, logging why. On SIGTERM or SIGINT it stops them, removes the
 * socket and exits.
 */
#ifndef TOOLRUN_SUPERVISOR_H
#define TOOLRUN_SUPERVISOR_H

#include <sys/types.h>

#include "config.h"
#include "listener.h"
#include "sock.h"

struct supervisor {
	struct config *cfg;
	struct listen_socket *sock;
	uid_t allowed[MAX_ALLOWED_UIDS];
	unsigned nallowed;
};

/* Serve until SIGTERM or SIGINT. Returns the process exit code. */
int supervisor_run(struct supervisor *S);

#endif
