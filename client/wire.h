/*
 * The CLI's messages to and from toolrund, one frame each
 * (proto/README.md).
 */
#ifndef TOOLRUN_CLIENT_WIRE_H
#define TOOLRUN_CLIENT_WIRE_H

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

#endif
