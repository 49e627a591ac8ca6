/*
 * Whether toolrund's socket can be trusted with a command.
 *
 * A command carries the caller's environment and its stdio; whoever
 * listens on the socket gets both. So before and after connecting the
 * client checks that the listener is the daemon the config names:
 *
 *   - before: the socket's directory is owned by an expected uid and
 *     writable by nobody else, and each directory above it is owned by
 *     an expected uid and, if others may write to it, sticky (so no one
 *     else can rename what is below);
 *   - after: the peer's credentials (SO_PEERCRED) are an expected uid.
 *
 * Expected uids: root, and the config's `user` (the account toolrund
 * runs as); only when the config sets no `user`, the caller's effective
 * uid (a daemon the caller started itself). Programs run as their
 * callers, so with a `user` anything a caller can serve is suspect.
 *
 * Async-signal-safe: raw syscalls only, /etc/passwd read by hand.
 */
#ifndef TOOLRUN_TRUST_H
#define TOOLRUN_TRUST_H

#include <stddef.h>

#include "config.h"

/* 0 if the directories of the socket at path pass; else -EPERM (or the
 * error of a failed lookup) with why set to one line naming the
 * directory. */
int trust_socket_path(const struct config *cfg, const char *path, char *why,
		      size_t whylen);

/* 0 if the peer on fd (connected to path) is an expected uid; else -EPERM
 * with why set. */
int trust_peer(const struct config *cfg, const char *path, int fd, char *why,
	       size_t whylen);

#endif
