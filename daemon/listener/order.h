/*
 * Orders to the launcher: the listener's queue on the launcher's channel,
 * and the messages jobs send through it.
 *
 *   jobs/ (job.c, start.c, output.c), sessions/ (session.c, start.c),
 *   conn.c (a front end's audit record)
 *       ─ order_* ─►  order_link  ─ Spawn (+fds), Kill, Release, CheckInput, OpenSpill,
 *       Audit, OpenPty, CheckWaiting ─►  launcher
 *
 * The channel is non-blocking: orders wait in a queue (outq.h) until the
 * launcher takes them. The listener owns the link, reads the launcher's
 * replies on the same fd and routes them to the jobs (job.h).
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_ORDER_H
#define TOOLRUN_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "event.h"
#include "launcher.pb-c.h"
#include "link.h"
#include "outq.h"
#include "toolrun.pb-c.h"

struct order_link {
	struct launcher_link launcher; /* the channel's fd, the launcher's pid */
	struct event_loop *loop;
	struct event_source ev;        /* the channel, watched by the listener */
	struct outq out;               /* orders not yet written */
	bool broken;                   /* an order was lost: the loop is stopped */
};

/* Queue an order; fds pass to the queue. It is written at the end of the
 * listener's turn (order_flush_queued): the orders one turn makes (a job's
 * Release and its audit line, the Spawns of a burst of requests) reach
 * the launcher in one write and wake it once. Failing, it stops the loop
 * with broken set. */
void order_send(struct order_link *o, Toolrun__Launcher__ToLauncher *msg,
		const int *fds, unsigned nfds);
/* Write what is queued (the channel is writable again). */
void order_flush(struct order_link *o);
/* The same, if anything is queued and the channel was not full: the
 * listener's loop calls it before it sleeps. */
void order_flush_queued(struct order_link *o);
/* At the end: write what the launcher takes within a second, then close. */
void order_close(struct order_link *o);
/* Take in now what the launcher has already said (the channel's own
 * handler, as if it were readable). The launcher reports a job's end
 * before it tells anyone else (the client it answers), so whatever a
 * process did after that end (a session's status record, a client's
 * close) is handled after the listener has logged the job. Never call
 * it from the channel's handler itself. */
void order_take_in(struct order_link *o);

/* What a Spawn says: the program, whom it runs as, its fds. */
struct spawn_order {
	uint64_t job;
	const Toolrun__Request *req;     /* executable, argv, the caller's state */
	const ProtobufCBinaryData *env;  /* the program's environment */
	size_t nenv;
	const struct limits *limits;     /* ceilings on the state's rlimits; network */
	bool command;                    /* an agent command */
	const char *tool;                /* its name in the launcher's messages */
	uid_t uid;                       /* whom it runs as */
	gid_t gid;
	const gid_t *groups;
	unsigned ngroups;
	const int *fds;                  /* sent with the order */
	unsigned nfds;
	const uint32_t *targets;         /* where each fd but the first goes */
	unsigned ntargets;
	const struct tool_file *file;    /* the file the policy checked, or NULL */
	bool controlling_tty;            /* fd 0 is a session's terminal */
	pid_t caller_pid;                /* who asked (a tool: which command it is in) */
	/* The launcher answers the client (launcher.proto: Answer); its
	 * connection is the last of fds. NULL: the listener answers. */
	const Toolrun__Launcher__Answer *answer;
};

/* Build a Spawn and send it, if the launcher will take it (order_check):
 * then the queue owns the fds. Returns 0, or -errno with a line in failure
 * and the fds still the caller's. */
int order_spawn(struct order_link *o, const struct spawn_order *s, char *failure,
		size_t len);
/* What a Kill reaches. */
enum kill_reach {
	KILL_GROUP, /* the program's process group (a signal a client forwards) */
	KILL_TREE,  /* a command's: its group and every process below it */
	KILL_BELOW, /* a session's: every process below its bash, not the bash */
};
/* KILL_TREE and KILL_BELOW are answered with Killed (jobs_on_killed,
 * sessions_on_killed). */
void order_kill(struct order_link *o, uint64_t job, int signo, enum kill_reach reach);
/* A job the launcher answers reached its time limit: SIGKILL to its
 * group, and notice is what its client reads before the Exit of 124. */
void order_kill_timed_out(struct order_link *o, uint64_t job, const char *notice);
/* A job the launcher answers lost its client to a protocol error: SIGKILL
 * to its group, and the client reads this Error (Kill.refusal). */
void order_kill_refused(struct order_link *o, uint64_t job, Toolrun__ErrorCode code,
			const char *message);
void order_release(struct order_link *o, uint64_t job);
/* Does a process outside the job still hold its stdin open for writing? */
void order_check_input(struct order_link *o, uint64_t job);
void order_open_spill(struct order_link *o, uint64_t job, Toolrun__Stream stream,
		      uid_t uid);
/* A terminal for a TTY session, opened as uid/gid (PtyOpened). */
void order_open_pty(struct order_link *o, uint64_t job, uid_t uid, gid_t gid);
/* Is a process of a session blocked reading its input (dev, ino)? */
void order_check_waiting(struct order_link *o, uint64_t job, dev_t dev, ino_t ino);
/* One line for the audit log, which the launcher writes. */
void order_audit(struct order_link *o, const char *line);
/* Ask for the launcher's LauncherState (a client's Status). */
void order_query_state(struct order_link *o);

#endif
