/*
 * rawclient: what the test programs that talk to toolrund by hand share
 * (rawframe, and the security suite's flood, rawexec, heavy-request).
 */
#ifndef TOOLRUN_TEST_RAWCLIENT_H
#define TOOLRUN_TEST_RAWCLIENT_H

#include <stdint.h>

#include "toolrun.pb-c.h"

/* Frame m, claiming nfds_claimed fds in its header, and send it with fds
 * attached. Returns 0, or -1 (out of memory, or the send failed). */
int rawclient_send(int sock, Toolrun__ClientMessage *m, const int *fds, unsigned nfds,
		   uint16_t nfds_claimed);

/* Send Hello with this protocol version, naming the program. */
int rawclient_hello(int sock, uint32_t version, const char *software);

/*
 * Read the daemon's messages, handing each to print, until it closes the
 * connection ("closed"), sends what is not a frame ("bad reply: ...",
 * "undecodable reply"), or says nothing for 60 s ("open": a bound for a
 * daemon that hangs, not a deadline). stdout is flushed after each.
 */
void rawclient_print_replies(int sock, void (*print)(const Toolrun__ServerMessage *m));

#endif
