/*
 * Finding toolrund: which socket to connect to, whether to trust it, and
 * how long to wait for a daemon that is restarting. Shared by the library
 * (client.c) and the `toolrun` command.
 *
 * The daemon listens at the config's `socket` or, when it could not use
 * that directory (a read-only root, a directory of another user), at the
 * first `socket_fallback` it could (daemon/ipc/sock.h). A client tries them in
 * the same order and takes the first that answers and passes the trust
 * checks of trust.h; an untrusted one is never sent anything.
 *
 * A socket that is there but answers nobody, or a lock file without a
 * socket, is a daemon that died and is being restarted (toolrun-init does
 * it within a second), or that is starting: the client tries again, with
 * a growing pause, for up to `wait_s` seconds. When nothing at all is
 * there, no daemon is running and it gives up at once.
 *
 * Async-signal-safe: raw syscalls only.
 */
#ifndef TOOLRUN_CONNECT_H
#define TOOLRUN_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* A daemon that accepts nothing for this long (a full backlog) is down. */
#define CONNECT_TIMEOUT_S 10

/*
 * Returns a connected, trusted socket (close-on-exec, blocking), with
 * *path set to where it was found; or -errno with why set to one line
 * (no "toolrun:" prefix): -ECONNREFUSED when no daemon answered, -EPERM
 * when the only sockets found were not to be trusted, or the error that
 * stopped the attempt.
 */
int connect_daemon(const struct config *cfg, uint32_t wait_s, const char **path,
		   char *why, size_t whylen);

#endif
