/*
 * direct: the launcher's own answers to a client whose tool's streams
 * toolrund does not shape (launcher.proto: Spawn.answer). The client
 * hears Started as soon as the program runs and Exit as soon as it is
 * reaped, one hop from the process that saw it happen; the listener
 * hears of both as for any job.
 *
 * Writing to the client is all the launcher does with its connection: it
 * never reads from it (only the listener parses what clients send).
 *
 * Process: the launcher.
 */
#ifndef TOOLRUN_DIRECT_H
#define TOOLRUN_DIRECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "launcher.pb-c.h"
#include "launchstep.h"

struct direct_client {
	int fd;              /* the client's connection, or -1: not answered here */
	bool hello;          /* its Hello is still to be answered */
	uint32_t version;
	uint32_t timeout_s, timeout_below_command_s;
	uint64_t start_us;   /* when the program started (monotonic) */
	char *timeout_notice; /* a Kill at the time limit ended it: this line first */
};

/* Take the Spawn's answer and the connection (fd), or none (a NULL
 * answer: fd -1). */
void direct_init(struct direct_client *d, const Toolrun__Launcher__Answer *a, int fd);
/* The program runs: Started (after Hello, if still owed). below_command:
 * it runs below an agent command or a session (its time limit follows). */
void direct_started(struct direct_client *d, pid_t pid, bool below_command);
/* It never ran: Exit with why; the connection is let go. */
void direct_not_run(struct direct_client *d, enum launch_step step, int err);
/* The Kill that ends it at its time limit came: say so at its end.
 * Returns -ENOMEM when the line cannot be kept (the end then reads as a
 * kill by SIGKILL). */
int direct_timed_out(struct direct_client *d, const char *notice);
/* Its client broke the protocol (launcher.proto: Kill.refusal): this
 * Error instead of an Exit, and the connection is let go. */
void direct_refuse(struct direct_client *d, const Toolrun__Error *refusal);
/* Its client is to read that it timed out (direct_timed_out), at its
 * end: what Exited tells the listener. */
bool direct_tells_timeout(const struct direct_client *d);
/* It ended (wait4's status, its CPU time): the notice, if any, then
 * Exit; the connection is let go. */
void direct_exited(struct direct_client *d, int wait_status, uint64_t user_us,
		   uint64_t system_us);
/* Let go without a word (the launcher shuts down). */
void direct_close(struct direct_client *d);

#endif
