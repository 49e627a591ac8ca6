/*
 * The client: the exec'ing process hands its program to toolrund and then
 * stands in for it until it ends.
 *
 * It sends Hello and Request (with the working directory and the
 * inherited fds), writes each Output it receives to its own stdout or
 * stderr, forwards the signals it receives, and finally exits as the
 * program did: the same code, or death by the same signal. It does not
 * wait for ever on a daemon that stopped answering: past the job's time
 * limit, or a signal that ends the program, it asks the daemon for a Ping
 * and, without an answer, ends by itself (see "A stuck toolrund" in
 * client.c); nothing it sends waits for room in the socket, so that it
 * sees those signals however little the daemon reads (the outbox).
 *
 * It is undumpable while it stands in, so that the programs it serves,
 * which run as its uid, cannot reach its fds (the caller's channel)
 * through /proc; a client_run that returns leaves it as it was.
 *
 * Async-signal-safe throughout: memory comes from one mmap, messages are
 * decoded into it, and only raw syscalls are used.
 */
#ifndef TOOLRUN_CLIENT_H
#define TOOLRUN_CLIENT_H

#include <stdbool.h>

#include "config.h"
#include "util.h"

struct client_call {
	const struct config *cfg;
	int tool;               /* index of the tool in cfg; -1 for a command */
	bool command;           /* an agent command (preload/command.h) */
	const char *path;       /* the executable, as resolved */
	char *const *argv;
	char *const *envp;
	const char *software;   /* for Hello, e.g. "libtoolrun 0.1.0" */
};

enum client_outcome {
	/* The daemon could not be reached or refused before running
	 * anything: the caller applies the fallback policy. */
	CLIENT_UNREACHABLE = 1,
	/* The daemon's execve failed; nothing ran. err holds its errno. */
	CLIENT_EXEC_FAILED,
};

struct client_result {
	enum client_outcome outcome;
	int err;          /* an errno */
	int code;         /* the exit code the daemon chose (126, 127, 1) */
	char reason[512]; /* one line, no "toolrun:" prefix */
};

/*
 * Run the call. Returns only when nothing ran; otherwise the process exits
 * (or dies) with the program's status.
 */
void client_run(const struct client_call *call, struct client_result *res);

/* Say "toolrun: NAME: REASON" on stderr and exit with res->code. */
NORETURN void client_exit_failure(const char *path,
				       const struct client_result *res);

#endif
