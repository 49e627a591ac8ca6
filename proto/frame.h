/*
 * Frames: how every toolrun message crosses a Unix stream socket.
 *
 *   offset  size  field
 *   0       4     payload length, little-endian, at most the receiver's max
 *   4       2     number of fds attached to this frame, little-endian
 *   6       1     frame version, 1
 *   7       1     flags, 0 (reserved)
 *   8       len   one protobuf message
 *
 * The fds travel as SCM_RIGHTS on the sendmsg() calls that carry the
 * frame's own bytes, never on another frame's. proto/README.md is the
 * normative text.
 *
 * Everything here is async-signal-safe; the frame reader allocates only
 * through the grow callback its owner supplies.
 */
#ifndef TOOLRUN_FRAME_H
#define TOOLRUN_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#define FRAME_HEADER_SIZE 8
#define FRAME_VERSION 1

/* The most of argv and envp that Linux's execve takes, as it counts them:
 * each string with its NUL, and an 8-byte pointer for each (3/4 of
 * _STK_LIM, whatever the stack limit; a quarter of it, below 24 MiB). A
 * Request, a session's environment or an order that holds more runs
 * nowhere: it is refused before it is decoded (arena.h). */
#define FRAME_MAX_EXEC_BYTES (6u << 20)
/* What execve counts for one string of len bytes. */
#define FRAME_EXEC_COST(len) ((len) + 1 + 8)
/* A Request must fit a full argv plus environment: FRAME_MAX_EXEC_BYTES,
 * and protobuf adds at most a few bytes per string, fewer than the
 * pointers the kernel counts. */
#define FRAME_MAX_CLIENT_PAYLOAD (8u << 20)
/* The daemon's messages are small: Output carries at most 64 KiB. */
#define FRAME_MAX_SERVER_PAYLOAD (128u << 10)
/* Descriptors a client's frame may carry: the working directory, then a
 * program's inherited fds. */
#define FRAME_MAX_FDS 1024
/* The listener's order to run that program carries them on to the
 * launcher, and adds its own: the write ends of the pipes of the two
 * shaped streams (a shaped stream's own fd, if the client sent one, is
 * not passed on). */
#define FRAME_SPAWN_ADDED_FDS 2
/* So the launcher's channel takes frames of up to this many. */
#define FRAME_MAX_ORDER_FDS (FRAME_MAX_FDS + FRAME_SPAWN_ADDED_FDS)
/* The kernel's limit per sendmsg() (SCM_MAX_FD). */
#define FRAME_FDS_PER_SENDMSG 253
/* The longest a session's CLOSE waits for its bash to end before it is
 * answered that it has not yet (toolrun.proto, SESSION_OP_CLOSE): far
 * beyond a reap, even on a machine at load 16. A client waits this long
 * and its own grace. */
#define SESSION_CLOSE_WAIT_MS (30 * 1000)

struct frame_header {
	uint32_t length;
	uint16_t nfds;
};

void frame_header_pack(uint8_t out[FRAME_HEADER_SIZE], uint32_t length,
		       uint16_t nfds);

/* Returns 0, -EPROTO (bad version or flags, more than FRAME_MAX_FDS
 * fds), or -EMSGSIZE. */
int frame_header_parse(const uint8_t in[FRAME_HEADER_SIZE],
		       uint32_t max_payload, struct frame_header *h);

/* Bytes needed to frame msg. */
size_t frame_size(const ProtobufCMessage *msg);

/* Write header and packed msg to out (frame_size(msg) bytes). */
size_t frame_pack(const ProtobufCMessage *msg, uint16_t nfds, uint8_t *out);

/*
 * Send buf[*off..len), attaching fds[*fds_sent..nfds) along the way.
 * Returns 0 once everything is sent, -EAGAIN if the socket is full (call
 * again when writable), or another -errno. Never raises SIGPIPE.
 */
int frame_send_partial(int sock, const uint8_t *buf, size_t len, size_t *off,
		       const int *fds, unsigned nfds, unsigned *fds_sent);

/* The same, blocking until done (polls a non-blocking socket). */
int frame_send(int sock, const uint8_t *buf, size_t len, const int *fds,
	       unsigned nfds);

/*
 * Incremental reader for one frame at a time. Reads never cross the end
 * of the current frame, so fds that arrive belong to it.
 */
struct frame_reader {
	uint32_t max_payload;
	/* The most fds a frame may carry: 0 for FRAME_MAX_FDS, or up to
	 * FRAME_MAX_ORDER_FDS. */
	unsigned max_fds;
	/* Make room for at least `need` payload bytes; returns false when it
	 * cannot (the read then fails with -ENOMEM). */
	bool (*grow)(struct frame_reader *r, size_t need);
	void *owner;

	uint8_t header[FRAME_HEADER_SIZE];
	size_t header_have;
	bool have_header;
	struct frame_header h;

	uint8_t *payload;
	size_t payload_cap;
	size_t payload_have;

	int *fds; /* room for max_fds */
	unsigned nfds;
	/* Why the last read failed with -EPROTO, if it was for this: the
	 * header announced more than max_fds, or more arrived. */
	bool too_many_fds;

	/*
	 * Read-ahead, for a connection on which no descriptor may arrive
	 * (fds NULL: toolrund's messages to a client). Set ra to a buffer of
	 * ra_cap >= FRAME_HEADER_SIZE + max_payload bytes, and payload, grow
	 * and fds to nothing: one recvmsg() then takes whatever is queued,
	 * often several frames, and each frame's payload is read in place
	 * (payload points into ra until frame_reader_next()). A connection
	 * that carries descriptors cannot read ahead: they are kept with
	 * their frame only by reads that stop at its end (proto/README.md).
	 */
	uint8_t *ra;
	size_t ra_cap;
	size_t ra_start, ra_end; /* the bytes not yet taken */
	/* The last recvmsg() left the socket empty: the next call that needs
	 * more bytes returns AGAIN without asking the socket again. */
	bool ra_drained;
};

enum frame_read_result {
	FRAME_READ_AGAIN = 0, /* need more bytes: wait for readable */
	FRAME_READ_READY = 1, /* a whole frame is in payload / fds */
	FRAME_READ_EOF = 2,   /* clean end of stream between frames */
};

/*
 * Read what is available. With read-ahead, AGAIN may come without a
 * read, after one that emptied the socket: wait for readable (a
 * level-triggered poll) before calling again. Returns an enum
 * frame_read_result, or
 * -EPROTO (bad header, more fds than max_fds, fds not matching the
 * count, truncated control data, EOF inside a frame), -EMSGSIZE (too
 * large), -ENOMEM, -errno.
 * After READY the caller takes payload and fds, then calls
 * frame_reader_next().
 */
int frame_reader_read(struct frame_reader *r, int sock);

/* Forget the current frame; close any fds the caller did not take. */
void frame_reader_next(struct frame_reader *r);

/* Close fds still held (on teardown). */
void frame_reader_drop_fds(struct frame_reader *r);

#endif
