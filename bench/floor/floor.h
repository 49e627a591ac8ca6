/*
 * The floor's wire format (bench/README.md, "The floor"): what the
 * smallest "daemon that runs the program" needs to say, and nothing else.
 *
 * caller -> daemon, one SOCK_SEQPACKET message:
 *   struct floor_order, then argc + envc + 1 NUL-terminated strings (the
 *   path, argv, envp), exactly filling the message; attached: the
 *   caller's fds 0, 1, 2 and its working directory (O_PATH), in that
 *   order.
 * daemon -> caller: struct floor_status, once the program has ended (or
 *   could not be started: exec_errno, and the caller's execve fails).
 *
 * With a relay (two hops), relay -> runner carries a uint32_t id before
 * the order, and runner -> relay a struct floor_relayed_status.
 */
#ifndef FLOOR_H
#define FLOOR_H

#include <stdint.h>

#define FLOOR_FDS 4
#define FLOOR_ORDER_MAX (192 * 1024)

struct floor_order {
	uint32_t argc, envc;
};

struct floor_status {
	int32_t wait_status; /* as wait4 gives it */
	int32_t exec_errno;  /* nonzero: the program never ran */
};

struct floor_relayed_status {
	uint32_t id;
	struct floor_status status;
};

#endif
