/*
 * The daemon's side of framing: a queue of frames waiting to be written
 * to a non-blocking socket, and heap growth for incoming ones.
 * A queued frame owns the fds attached to it: they are closed once sent,
 * or when the queue is dropped.
 *
 * Processes: the listener and the launcher.
 */
#ifndef TOOLRUN_OUTQ_H
#define TOOLRUN_OUTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "frame.h"
#include "util.h"

struct outq_item;

struct outq {
	struct outq_item *head, *tail;
	size_t bytes; /* queued and not yet written */
	size_t *total; /* optional: a count shared by several queues */
};

/* Frame msg and queue it; fds pass to the queue, even on failure. */
MUST_CHECK int outq_push(struct outq *q, const ProtobufCMessage *msg, const int *fds,
	      unsigned nfds);

/* Write what the socket takes. Returns 0 when the queue is empty, -EAGAIN
 * when the socket is full, or another -errno (the peer is gone). */
MUST_CHECK int outq_flush(struct outq *q, int sock);

void outq_clear(struct outq *q);

/* The daemon's frame_reader grow callback: realloc, doubling from 4 KiB. */
bool frame_grow_heap(struct frame_reader *r, size_t need);

#endif
