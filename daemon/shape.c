#include "shape.h"

#include <string.h>

#include "sbuf.h"

/* A UTF-8 sequence is at most this long, so only this many bytes before
 * the byte limit can belong to a sequence that crosses it. */
#define UTF8_MAX 4

void shaper_init(struct shaper *s, uint64_t max_bytes, uint64_t max_lines)
{
	memset(s, 0, sizeof(*s));
	s->max_bytes = max_bytes;
	s->max_lines = max_lines;
}

uint64_t count_newlines(const uint8_t *p, size_t n)
{
	uint64_t count = 0;
	const uint8_t *end = p + n;

	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		count++;
		p = nl + 1;
	}
	return count;
}

/* Emit p[0..n) up to the line limit. */
static void emit_kept(struct shaper *s, const uint8_t *p, size_t n,
		      shape_emit_fn emit, void *ctx)
{
	if (s->cut || n == 0)
		return;
	if (s->max_lines) {
		uint64_t room = s->max_lines - s->kept_newlines;
		const uint8_t *q = p, *end = p + n;
		uint64_t found = 0;
		while (q < end) {
			const uint8_t *nl = memchr(q, '\n', (size_t)(end - q));
			if (!nl)
				break;
			found++;
			q = nl + 1;
			if (found == room) {
				/* The last line allowed ends here. */
				n = (size_t)(q - p);
				s->cut = true;
				break;
			}
		}
		s->kept_newlines += found;
	} else {
		s->kept_newlines += count_newlines(p, n);
	}
	s->kept_bytes += n;
	s->kept_ends_nl = p[n - 1] == '\n';
	emit(ctx, p, n);
}

/* How many of the held bytes may be kept when the stream continues past
 * the byte limit: drop a sequence whose lead byte says it would cross. */
static unsigned utf8_keep(const uint8_t *hold, unsigned len)
{
	for (unsigned i = len; i-- > 0;) {
		uint8_t c = hold[i];
		if ((c & 0xC0) == 0x80)
			continue; /* continuation byte: look further back */
		unsigned seq = c < 0x80		  ? 1
			       : (c & 0xE0) == 0xC0 ? 2
			       : (c & 0xF0) == 0xE0 ? 3
			       : (c & 0xF8) == 0xF0 ? 4
						    : 1; /* invalid: stands alone */
		return i + seq > len ? i : len;
	}
	return len;
}

void shaper_feed(struct shaper *s, const uint8_t *p, size_t n,
		 shape_emit_fn emit, void *ctx)
{
	if (n == 0)
		return;
	uint64_t start = s->seen_bytes;
	s->seen_bytes += n;
	s->seen_newlines += count_newlines(p, n);
	s->seen_ends_nl = p[n - 1] == '\n';
	if (s->cut)
		return;

	if (s->max_bytes == 0) {
		emit_kept(s, p, n, emit, ctx);
		return;
	}

	uint64_t limit = s->max_bytes;
	uint64_t safe_end = limit > UTF8_MAX - 1 ? limit - (UTF8_MAX - 1) : 0;
	size_t off = 0;

	/* Bytes well below the limit go out at once. */
	if (start < safe_end) {
		size_t direct = (size_t)(safe_end - start < n ? safe_end - start : n);
		emit_kept(s, p, direct, emit, ctx);
		off = direct;
		if (s->cut)
			return;
	}
	/* The last few bytes before the limit wait. */
	uint64_t at = start + off;
	if (off < n && at < limit) {
		size_t take = (size_t)(limit - at < n - off ? limit - at : n - off);
		memcpy(s->hold + s->hold_len, p + off, take);
		s->hold_len += (unsigned)take;
		off += take;
	}
	/* Past the limit: release what does not split a character, cut. */
	if (off < n) {
		emit_kept(s, s->hold, utf8_keep(s->hold, s->hold_len), emit, ctx);
		s->hold_len = 0;
		s->cut = true;
	}
}

static uint64_t lines_of(uint64_t bytes, uint64_t newlines, bool ends_nl)
{
	return newlines + (bytes > 0 && !ends_nl ? 1 : 0);
}

void shaper_stats(const struct shaper *s, struct shape_stats *out)
{
	uint64_t seen = lines_of(s->seen_bytes, s->seen_newlines, s->seen_ends_nl);
	uint64_t kept = lines_of(s->kept_bytes, s->kept_newlines, s->kept_ends_nl);

	out->bytes_seen = s->seen_bytes;
	out->lines_seen = seen;
	out->bytes_dropped = s->seen_bytes - s->kept_bytes - s->hold_len;
	out->lines_dropped = seen - kept;
}

static void add_count(struct sbuf *sb, uint64_t n, const char *unit)
{
	sbuf_add_u64(sb, n);
	sbuf_addc(sb, ' ');
	sbuf_add(sb, unit);
	if (n != 1)
		sbuf_addc(sb, 's');
}

void shaper_finish(struct shaper *s, shape_emit_fn emit, void *ctx)
{
	if (s->hold_len) {
		/* The stream ended at or below the limit: keep it all. */
		unsigned n = s->hold_len;
		s->hold_len = 0;
		emit_kept(s, s->hold, n, emit, ctx);
	}
	if (s->seen_bytes == s->kept_bytes)
		return;

	struct shape_stats st;
	shaper_stats(s, &st);

	char marker[128];
	struct sbuf sb = SBUF_INIT(marker);
	if (s->kept_bytes > 0 && !s->kept_ends_nl)
		sbuf_addc(&sb, '\n');
	sbuf_add(&sb, "...[truncated: ");
	add_count(&sb, st.bytes_dropped, "byte");
	sbuf_add(&sb, ", ");
	add_count(&sb, st.lines_dropped, "line");
	sbuf_add(&sb, " omitted]\n");
	emit(ctx, (const uint8_t *)marker, sb.len);
}
