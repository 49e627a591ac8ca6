/*
 * A client's Status (toolrun.proto): the answer, from the listener's live
 * state and the launcher's (LauncherState, the answer to QueryState).
 *
 *   conn  ─ Status ─►  listener  ─ QueryState ─►  launcher
 *   conn  ◄─ StatusReply ─  listener  ◄─ LauncherState ─  launcher
 *
 * The listener asks the launcher once for every client waiting, and
 * answers each of them with the one reply built here. Nothing a client
 * sends reaches the launcher: QueryState carries nothing.
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_STATUS_H
#define TOOLRUN_STATUS_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "launcher.pb-c.h"
#include "link.h"
#include "toolrun.pb-c.h"

/* What the listener knows of toolrund from its start (listener_args). */
struct daemon_facts {
	pid_t supervisor;
	pid_t listener;
	pid_t launcher;
	uid_t uid;
	gid_t gid;
	bool full_identity;          /* programs run as their callers */
	const char *identity_reason; /* "" with full_identity */
	const char *user_note;
	bool socket_fallback;
};

/* The listener's state a reply reports, at this moment. */
struct status_sources {
	const struct daemon_facts *facts;
	const struct config *cfg;   /* the config served now */
	const char *socket;         /* the socket accepted on */
	const uid_t *served;
	unsigned nserved;
	unsigned running_jobs;
	unsigned open_sessions;
	unsigned connections;
	uint64_t served_requests;
	uint64_t uptime_s;
};

/* A StatusReply and the storage its fields point to. */
struct status_reply {
	Toolrun__StatusReply r;
	Toolrun__DaemonProcess procs[3];
	Toolrun__DaemonProcess *proc_ptrs[3];
	Toolrun__ProgramConfinement programs;
	Toolrun__NamedLimit limits[POLICY_RLIMIT_COUNT];
	Toolrun__NamedLimit *limit_ptrs[POLICY_RLIMIT_COUNT];
	uint32_t served[MAX_ALLOWED_UIDS];
	Toolrun__SpillStatus spill;
	Toolrun__AuditStatus audit;
};

/* Fill out from src and the launcher's answer st; out points into src,
 * st and itself, so all three must outlive its use. */
void status_build(struct status_reply *out, const struct status_sources *src,
		  const Toolrun__Launcher__LauncherState *st);

#endif
