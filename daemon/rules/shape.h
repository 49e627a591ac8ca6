/*
 * Output shaping: what of one output stream reaches the agent.
 *
 * Terms. S is the stream, N its length in bytes. A line ends after '\n';
 * a final line without '\n' counts as a line. B is the byte budget
 * (max_bytes, or SHAPE_HOLD_MAX when max_bytes is 0), L the line budget
 * (max_lines; 0: none).
 *
 * Within budget. When N <= B and lines(S) <= L, the agent gets S byte
 * for byte, with no marker.
 *
 * Over budget, the stream is cut:
 *   head(S, b, l)  the first b bytes of S, less a UTF-8 sequence that
 *                  starts in them and would continue past byte b (its
 *                  lead byte and what follows it go); then the first l
 *                  lines of those; then, when that ends inside a line
 *                  and holds a '\n' before it, up to its last '\n' (a
 *                  line is cut inside only when it is the only one).
 *   tail(S, b, l)  the last b bytes of S, less the continuation bytes at
 *                  their start of a sequence whose lead byte is before
 *                  them; then, when that starts inside a line and holds
 *                  a '\n' before its last byte, from after that '\n';
 *                  then the last l lines of those.
 *   mode head       head(S, B, L), marker
 *   mode tail       marker, tail(S, B, L)
 *   mode head+tail  head(S, B/2, L/2), marker, tail(S, B - B/2, L - L/2)
 *                   (integer division; L/2 = 0 keeps no line)
 * Whenever S is cut, the head and the tail part do not overlap and at
 * least one byte lies between them: the omitted range [a, b).
 *
 * The marker is one line. A '\n' precedes it when the kept text before
 * it does not end in '\n'; it ends in '\n'. Numbers are plain decimal,
 * ranges 1-based and inclusive ("A-B", or one number when A = B), "1
 * line", "1 byte" in the singular. WHOSE is the stream name ("stdout")
 * or, with a program, "cat's stdout".
 *   whole lines (a at a line start, b at a line end or N):
 *     ...[toolrun cut K lines (M bytes) of WHOSE here: lines X-Y of T; WHERE]
 *   otherwise:
 *     ...[toolrun cut M bytes of WHOSE here: bytes X-Y of N, PARTS; WHERE]
 *   PARTS says which lines the bytes are of:
 *     inside line K                  a part of one line, neither end
 *     the rest of line K             a line's end, its start was kept
 *     the start of line K            a line's start, its end is kept
 *     the rest of line J, lines K-M and the start of line P
 *                                    (the pieces that apply, in order,
 *                                    joined by ", " and a last " and ")
 *   WHERE:
 *     the whole STREAM is in PATH
 *     the whole STREAM is in PATH (partial: its first N bytes)
 *     the whole STREAM is not kept: REASON
 *
 * Binary. With binary_summary, the first min(SHAPE_SNIFF, N) bytes decide,
 * by the rule read_file follows too (common/sniff.h): the stream is
 * binary when they hold a NUL byte or when more than 10% of them belong
 * to invalid UTF-8 (a sequence cut by the end of those bytes does not
 * count). Their leading whole lines of text (before any NUL or
 * invalid UTF-8, within the head part's bytes and short of its lines)
 * pass on as text at once, so that a slow program's first lines are not
 * held back, and stay when the stream proves binary; the rest waits for
 * the decision. A binary stream then emits one line at finish, and
 * nothing else:
 *   [toolrun: binary WHOSE', N bytes, TYPE, sha256 HEX; WHERE]
 * where WHOSE' is "stdout" or "stdout of cat", TYPE a guess from the
 * first bytes (sniff_type: "ELF", "gzip", ... or "data") and HEX the SHA-256 of the
 * whole stream. Only binary streams are hashed.
 *
 * Streaming. The head part is emitted as bytes arrive, except the last
 * three bytes before the head's byte limit, which wait until it is known
 * whether a UTF-8 sequence crosses that limit. The rest is held in a
 * buffer bounded by B and emitted at finish: the tail part, or all of it
 * when the stream turns out within budget. The dropped middle is never
 * stored.
 *
 * Spill. The first time a byte is known to be dropped (the stream is
 * cut) or the stream is known to be binary, spill() gets every byte of
 * the stream so far, in order; from then on every byte fed. spill() is
 * never called for a stream that is not cut. spill may be NULL.
 *
 * Process: the listener (pure functions: no loop, no fds).
 */
#ifndef TOOLRUN_SHAPE_H
#define TOOLRUN_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"

#include "config.h"
#include "sniff.h"
#include "util.h"

/* The most of a stream held in memory, and so the largest byte budget:
 * the head is kept for the spill file until the stream is known to be
 * cut, and the tail until the stream ends. The budget when max_bytes is 0;
 * the config refuses a larger max_bytes. */
#define SHAPE_HOLD_MAX CONFIG_MAX_BYTES_HELD
/* How much of a stream the binary check looks at: the one rule's window
 * (common/sniff.h), which read_file's check uses too. */
#define SHAPE_SNIFF SNIFF_WINDOW

struct shape_opts {
	uint64_t max_bytes;      /* 0: no limit; SHAPE_HOLD_MAX is the budget */
	uint64_t max_lines;      /* 0: no limit */
	enum shape_mode mode;
	bool binary_summary;     /* summarise binary streams (BINARY_SUMMARY) */
	const char *stream_name; /* "stdout", "stderr", "output" (2>&1) */
	const char *program;     /* NULL, or whose output this is, for the marker */
};

typedef void (*shape_emit_fn)(void *ctx, const uint8_t *p, size_t n);

/* The part of the stream after the head, held until finish: a ring that
 * keeps the last `cap` bytes pushed. */
struct shape_ring {
	uint8_t *buf;
	size_t cap;
	size_t first; /* index of the oldest byte */
	size_t len;
};

struct shaper {
	const char *stream_name, *program;
	bool binary_summary;
	uint64_t budget_bytes, budget_lines;   /* UINT64_MAX: no line limit */
	uint64_t head_bytes, head_lines;
	uint64_t tail_bytes, tail_lines;

	uint64_t seen_bytes, seen_newlines;    /* of the stream so far */
	bool seen_ends_nl;

	uint8_t *head;          /* the head part: a copy of what was emitted */
	size_t head_len;        /* bytes in it, the held ones included */
	size_t head_emitted;
	uint64_t head_newlines;
	bool head_closed;       /* a byte arrived past the head's budget */

	struct shape_ring rest; /* what came after the head */

	bool cut;               /* a byte will be dropped */
	bool sniffed;           /* the binary check is done (or not wanted) */
	bool binary;
	bool ended;             /* shaper_eof was called */
	bool finished;
	uint8_t sniff[SHAPE_SNIFF];
	size_t sniff_len;
	size_t sniff_released;  /* of those, passed on as text already */
	struct sha256_ctx md;   /* SHA-256 of a binary stream */

	uint64_t dropped_bytes, dropped_lines; /* set at finish */
};

struct shape_stats {
	uint64_t bytes_seen, lines_seen;
	/* What did not reach the agent: exact after finish; before, the
	 * bytes that can no longer reach it and no lines. */
	uint64_t bytes_dropped, lines_dropped;
	bool binary;
};

struct shape_end {
	const char *spill_path;  /* where the whole stream is kept, or NULL */
	bool spill_partial;      /* the file holds only its first spill_bytes */
	uint64_t spill_bytes;
	const char *spill_error; /* no spill_path: why ("spill_dir is empty") */
};

/* 0, or -ENOMEM: the head and rest buffers are allocated here. */
MUST_CHECK int shaper_init(struct shaper *s, const struct shape_opts *o);
void shaper_free(struct shaper *s);

/* Account for p[0..n): emit what is kept, spill as above. */
void shaper_feed(struct shaper *s, const uint8_t *p, size_t n,
		 shape_emit_fn emit, shape_emit_fn spill, void *ctx);

/* The stream has ended. A stream shorter than SHAPE_SNIFF is checked for
 * binary only now, so spill may be called. Optional: shaper_finish calls
 * it, without spill, when the caller did not. */
void shaper_eof(struct shaper *s, shape_emit_fn emit, shape_emit_fn spill, void *ctx);

/* A program waits for input: let out what the head holds back, so that
 * its prompt (a line without '\n') shows. Decide now whether the stream
 * is binary, on the bytes seen so far, as shaper_eof does for a short
 * stream (later bytes are shaped by that decision), and emit the head's
 * last line so far, whole or not, but for a UTF-8 sequence it may cut:
 * if the stream is cut later, its head ends inside that line. */
void shaper_settle(struct shaper *s, shape_emit_fn emit, shape_emit_fn spill, void *ctx);
/* Nothing more will be emitted before finish: read as fast as possible,
 * never pause the program for a slow client. */
bool shaper_draining(const struct shaper *s);

/* The stream is cut or binary: spill has had (or, when NULL, would have
 * had) every byte so far. */
bool shaper_spilling(const struct shaper *s);

/* Emit what was held, the marker or the binary summary. end says where
 * the whole stream is; NULL: not kept. */
void shaper_finish(struct shaper *s, const struct shape_end *end,
		   shape_emit_fn emit, void *ctx);

void shaper_stats(const struct shaper *s, struct shape_stats *out);

/* Count '\n' in p[0..n). */
uint64_t count_newlines(const uint8_t *p, size_t n);

#endif
