/*
 * What the supervisor hands to both of its children (supervisor.h): the
 * launcher's channel, as the listener holds it, and how many callers the
 * daemon may serve. Here, below both processes, so that neither includes
 * the other's header to learn them.
 *
 * Processes: the supervisor, the launcher and the listener.
 */
#ifndef TOOLRUN_LINK_H
#define TOOLRUN_LINK_H

#include <sys/types.h>

/* Peers a daemon may serve (allow_uids). */
#define MAX_ALLOWED_UIDS 64

/* The channel between the listener and the launcher (launcher.proto). */
struct launcher_link {
	int fd;    /* the listener's end of the channel */
	pid_t pid; /* the launcher process */
};

#endif
