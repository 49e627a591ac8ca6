/*
 * Output shaping: the deterministic truncation of one output stream.
 *
 * For a stream S with limits B bytes and L lines (0 = no limit):
 *   1. S1 = the first B bytes of S, shortened so that it does not end
 *      inside a UTF-8 sequence that would continue past byte B;
 *   2. S2 = the first L lines of S1 (a line ends after '\n'; a final
 *      partial line counts);
 *   3. if S2 is shorter than S, a marker line follows:
 *        ...[truncated: N bytes, M lines omitted]
 *      with N = |S| - |S2| and M = lines(S) - lines(S2) ("1 byte" and
 *      "1 line" in the singular). When S2 does not
 *      end in '\n', a '\n' precedes the marker so that it is a line.
 *
 * The shaper streams: bytes are released as they arrive, except the last
 * three bytes before the byte limit, held until it is known whether the
 * stream goes past it. Dropped bytes are counted, never stored.
 */
#ifndef TOOLRUN_SHAPE_H
#define TOOLRUN_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*shape_emit_fn)(void *ctx, const uint8_t *p, size_t n);

struct shaper {
	uint64_t max_bytes; /* 0: no limit */
	uint64_t max_lines; /* 0: no limit */

	uint64_t seen_bytes;
	uint64_t seen_newlines;
	bool seen_ends_nl;

	uint64_t kept_bytes;
	uint64_t kept_newlines;
	bool kept_ends_nl;

	bool cut;          /* a limit was reached: later bytes are dropped */
	uint8_t hold[4];   /* bytes just below max_bytes, not yet released */
	unsigned hold_len;
};

struct shape_stats {
	uint64_t bytes_seen, lines_seen;
	uint64_t bytes_dropped, lines_dropped;
};

void shaper_init(struct shaper *s, uint64_t max_bytes, uint64_t max_lines);

/* Account for p[0..n) and emit what is kept. */
void shaper_feed(struct shaper *s, const uint8_t *p, size_t n,
		 shape_emit_fn emit, void *ctx);

/* End of stream: release held bytes and emit the marker if needed. */
void shaper_finish(struct shaper *s, shape_emit_fn emit, void *ctx);

void shaper_stats(const struct shaper *s, struct shape_stats *out);

/* Count '\n' in p[0..n). */
uint64_t count_newlines(const uint8_t *p, size_t n);

#endif
