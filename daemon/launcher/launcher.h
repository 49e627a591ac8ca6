/*
 * The launcher: toolrund's process that forks and executes programs.
 *
 * Peers:
 *   listener  ─ Spawn, Kill, Release, CheckInput, OpenSpill, Audit,
 *               OpenPty, CheckWaiting, QueryState ─►  launcher
 *   listener  ◄─ Spawned, Exited, InputState, SpillOpened(+fd), AuditLogAt,
 *               PtyOpened(+2 fds), Killed, WaitingState, LauncherState ─  launcher
 *
 * It is forked before the listener starts serving and does nothing on
 * its own initiative: it executes validated orders, reports how each
 * program ended, and kills what is left of a job's process group (of an
 * agent command's whole session). It is the subreaper of everything it
 * starts. It answers what the listener may not look up itself: whether a
 * job's stdin still has a writer (/proc), whether a session's command is
 * blocked reading its input, a new spill file (spill.h) and a session's
 * terminal, whose fds it hands over. When the listener goes away it kills every
 * process group it started and exits.
 *
 * Process: the launcher.
 */
#ifndef TOOLRUN_LAUNCHER_H
#define TOOLRUN_LAUNCHER_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "link.h"

/* Whom the launcher runs programs as. */
struct launcher_callers {
	/* Each program as its caller (Spawn.uid, gid, groups); otherwise
	 * every one as the launcher's own uid. */
	bool can_switch;
	/* The uids served (allow_uids): the only ones a program may get, so
	 * that not even a subverted listener can ask for another. */
	const uid_t *allowed;
	unsigned nallowed;
};

/*
 * Fork the launcher. It keeps its copy of cfg as it is at the fork (the
 * audit log's and the spill keys). close_in_child lists fds (ending with
 * -1) that the launcher must not keep, such as the listening socket.
 * Returns 0 or -errno.
 */
int launcher_start(struct launcher_link *link, const struct config *cfg,
		   const struct launcher_callers *callers, const int *close_in_child);

#endif
