/*
 * The listening socket.
 *
 * A lock file beside the socket (PATH.lock) marks a running daemon. The
 * socket is bound under PATH.new and renamed over PATH once it listens,
 * so that its existence means the daemon is ready, and a stale socket
 * left by a dead daemon is replaced in one step.
 *
 * Processes: the supervisor binds it, the listener accepts on it.
 */
#ifndef TOOLRUN_SOCK_H
#define TOOLRUN_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

struct listen_socket {
	int fd;
	int lock_fd;
	char path[CONFIG_SOCKET_MAX];
	dev_t dev;
	ino_t ino;
};

/*
 * Returns 0, or -errno with a one-line reason in err. A directory that is
 * missing is made with dir_mode and owner:group; an existing one must not
 * be writable by others (nor by its group), so that nobody else can put
 * a socket of their own in its place.
 */
int sock_listen(struct listen_socket *ls, const char *path, mode_t dir_mode,
		uid_t owner, gid_t group, char *err, size_t errlen);

/*
 * The socket at ls->path was removed or replaced: make its directory if it
 * is gone, take a new lock file if that is gone too, and bind a new
 * socket there. On success ls->fd is the new socket (the old one is
 * closed). Returns 0, or -errno with a one-line reason in err.
 */
int sock_renew(struct listen_socket *ls, mode_t dir_mode, uid_t owner, gid_t group,
	       char *err, size_t errlen);

/* Stop listening and remove the socket and its lock file if the socket
 * is still ours. */
void sock_close(struct listen_socket *ls);

/* Is the file at ls->path still the socket we bound? If not (removed, or
 * replaced), false with why set to one line. */
bool sock_still_ours(const struct listen_socket *ls, char *why, size_t whylen);

#endif
