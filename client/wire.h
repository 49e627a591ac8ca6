/*
 * The CLI's messages to and from toolrund, one frame each
 * (proto/README.md).
 */
#ifndef TOOLRUN_CLIENT_WIRE_H
#define TOOLRUN_CLIENT_WIRE_H

#include <stdint.h>

#include "config.h"
#include "frame.h"
#include "toolrun.pb-c.h"

/* Send m, with attach (an fd) passed along, or none when it is -1.
 * Returns 0 or -errno. */
int wire_send(int fd, Toolrun__ClientMessage *m, int attach);

/* Hello with the protocol version the caller speaks. 0 or -errno. */
int wire_hello(int fd, uint32_t version);

/* The next message from toolrund other than Hello, of the kind expected,
 * waiting at most wait_s seconds for it. NULL with one line in why
 * saying what happened: no answer, a closed connection, an undecodable
 * frame, toolrund's Error, or another kind of answer. */
Toolrun__ServerMessage *wire_receive(int fd, struct frame_reader *rd, int wait_s,
				     Toolrun__ServerMessage__MsgCase expect, char *why,
				     size_t len);

/*
 * One exchange on a connection of its own: Hello (version 1) and msg,
 * then the answer of the kind expected, which the caller frees
 * (toolrun__server_message__free_unpacked). wait_s bounds both the wait
 * for a restarting daemon and for the answer (5 s when 0). *where is set
 * to the socket tried. NULL with one line in why and an errno in *err:
 * connect_daemon's when no daemon could be reached (*unreached true),
 * else what went wrong on the connection.
 */
Toolrun__ServerMessage *wire_ask(const struct config *cfg, Toolrun__ClientMessage *msg,
				 Toolrun__ServerMessage__MsgCase expect, uint32_t wait_s,
				 const char **where, bool *unreached, int *err, char *why,
				 size_t len);

#endif
