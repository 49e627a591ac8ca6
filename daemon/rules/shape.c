/*
 * Output shaping (shape.h).
 *
 * Process: the listener (pure functions: no loop, no fds).
 */
#include "shape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "sniff.h"

/* A UTF-8 sequence is at most this long, so only this many bytes before
 * a cut can belong to a sequence that crosses it. */
#define UTF8_MAX 4
#define NO_LIMIT UINT64_MAX

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ───────────────────────── the rest ring ───────────────────────── */

static void ring_push(struct shape_ring *r, const uint8_t *p, size_t n)
{
	if (r->cap == 0)
		return;
	if (n >= r->cap) {
		/* Only the last cap bytes stay. */
		memcpy(r->buf, p + n - r->cap, r->cap);
		r->first = 0;
		r->len = r->cap;
		return;
	}
	size_t end = (r->first + r->len) % r->cap;
	size_t first_part = n < r->cap - end ? n : r->cap - end;
	memcpy(r->buf + end, p, first_part);
	memcpy(r->buf, p + first_part, n - first_part);
	if (r->len + n > r->cap) {
		r->first = (r->first + r->len + n - r->cap) % r->cap;
		r->len = r->cap;
	} else {
		r->len += n;
	}
}

/* Pass the ring's bytes from the k-th oldest on, in order, to fn. */
static void ring_out(const struct shape_ring *r, size_t k, shape_emit_fn fn, void *ctx)
{
	if (k >= r->len)
		return;
	size_t at = (r->first + k) % r->cap, n = r->len - k;
	size_t first_part = n < r->cap - at ? n : r->cap - at;
	fn(ctx, r->buf + at, first_part);
	if (n > first_part)
		fn(ctx, r->buf, n - first_part);
}

/* The stream's byte at offset x: in the head copy, or in the ring, which
 * ends at the stream's end. The caller asks only for bytes still held. */
static uint8_t byte_at(const struct shaper *s, uint64_t x)
{
	if (x < s->head_len)
		return s->head[x];
	uint64_t oldest = s->seen_bytes - s->rest.len;
	return s->rest.buf[(s->rest.first + (size_t)(x - oldest)) % s->rest.cap];
}

/* ───────────────────────── set-up ───────────────────────── */

/* Split the budgets between the head and the tail part. */
static void set_budgets(struct shaper *s, const struct shape_opts *o)
{
	uint64_t b = o->max_bytes && o->max_bytes < SHAPE_HOLD_MAX ? o->max_bytes
								    : SHAPE_HOLD_MAX;
	uint64_t l = o->max_lines ? o->max_lines : NO_LIMIT;

	s->budget_bytes = b;
	s->budget_lines = l;
	switch (o->mode) {
	case SHAPE_HEAD:
		s->head_bytes = b, s->head_lines = l;
		s->tail_bytes = 0, s->tail_lines = 0;
		break;
	case SHAPE_TAIL:
		s->head_bytes = 0, s->head_lines = 0;
		s->tail_bytes = b, s->tail_lines = l;
		break;
	case SHAPE_HEAD_TAIL:
	default:
		s->head_bytes = b / 2;
		s->tail_bytes = b - b / 2;
		s->head_lines = l == NO_LIMIT ? NO_LIMIT : l / 2;
		s->tail_lines = l == NO_LIMIT ? NO_LIMIT : l - l / 2;
		break;
	}
}

int shaper_init(struct shaper *s, const struct shape_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->stream_name = o->stream_name ? o->stream_name : "output";
	s->program = o->program;
	s->binary_summary = o->binary_summary;
	s->sniffed = !o->binary_summary;
	set_budgets(s, o);
	/* Until the stream is known to be cut, all that follows the head is
	 * held (at most the budget); then the tail part and the bytes before
	 * it that say where its first character starts. The head's last
	 * line, when its budget cuts it, moves there too (at most the head's
	 * budget), so that the file still gets every byte. */
	s->rest.cap = (s->tail_bytes ? (size_t)s->budget_bytes : 0) + (size_t)s->head_bytes +
		      UTF8_MAX;
	s->rest.buf = malloc(s->rest.cap);
	s->head = malloc(s->head_bytes ? (size_t)s->head_bytes : 1);
	if (!s->rest.buf || !s->head) {
		shaper_free(s);
		return -ENOMEM;
	}
	return 0;
}

void shaper_free(struct shaper *s)
{
	free(s->head);
	free(s->rest.buf);
	s->head = s->rest.buf = NULL;
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

/* The length of p[0..n) up to and including its k-th '\n' (k >= 1), or
 * n when it has fewer. */
static size_t through_newline(const uint8_t *p, size_t n, uint64_t k)
{
	const uint8_t *q = p, *end = p + n;

	while (q < end) {
		const uint8_t *nl = memchr(q, '\n', (size_t)(end - q));
		if (!nl)
			break;
		q = nl + 1;
		if (--k == 0)
			return (size_t)(q - p);
	}
	return n;
}

static void account(struct shaper *s, const uint8_t *p, size_t n)
{
	s->seen_bytes += n;
	s->seen_newlines += count_newlines(p, n);
	s->seen_ends_nl = p[n - 1] == '\n';
}

/* ───────────────────────── the head part ───────────────────────── */

/* The sequence length a lead byte announces; 1 for ASCII and for bytes
 * that cannot start a sequence. */
static size_t lead_len(uint8_t c)
{
	return c < 0x80		  ? 1
	       : (c & 0xE0) == 0xC0 ? 2
	       : (c & 0xF0) == 0xE0 ? 3
	       : (c & 0xF8) == 0xF0 ? 4
				    : 1;
}

/* How many of the held bytes stay in the head when the stream goes on
 * past its budget: not a sequence whose lead byte says it would cross. */
static size_t utf8_keep(const uint8_t *hold, size_t len)
{
	for (size_t i = len; i-- > 0;) {
		uint8_t c = hold[i];
		if ((c & 0xC0) == 0x80)
			continue; /* continuation byte: look further back */
		return i + lead_len(c) > len ? i : len;
	}
	return len;
}

/* A byte arrived past the head's budget: release the held bytes that
 * stay in it; those of a crossing sequence go on to the rest. */
static void head_close(struct shaper *s, shape_emit_fn emit, void *ctx)
{
	size_t held = s->head_len - s->head_emitted;
	size_t keep = utf8_keep(s->head + s->head_emitted, held);

	/* Whole lines: a last line the budget cuts goes on to the rest,
	 * unless it is the only one (then it is cut inside). */
	const uint8_t *nl = s->head_len ? memrchr(s->head, '\n', s->head_len) : NULL;
	if (nl && s->head[s->head_len - 1] != '\n') {
		/* shaper_settle may have let part of that line out already. */
		size_t whole = (size_t)(nl - s->head) + 1;
		keep = whole > s->head_emitted ? whole - s->head_emitted : 0;
	}

	if (keep)
		emit(ctx, s->head + s->head_emitted, keep);
	s->head_emitted += keep;
	ring_push(&s->rest, s->head + s->head_emitted, held - keep);
	s->head_len = s->head_emitted;
	s->head_closed = true;
}

/* Take what of p[0..n) belongs to the head part; emit all of it but the
 * bytes just below the byte budget. */
static size_t head_take(struct shaper *s, const uint8_t *p, size_t n,
			shape_emit_fn emit, void *ctx)
{
	if (s->head_len == s->head_bytes || s->head_newlines == s->head_lines) {
		head_close(s, emit, ctx);
		return 0;
	}
	size_t take = (size_t)min_u64(n, s->head_bytes - s->head_len);
	if (s->head_lines != NO_LIMIT)
		take = through_newline(p, take, s->head_lines - s->head_newlines);
	account(s, p, take);
	s->head_newlines += count_newlines(p, take);
	memcpy(s->head + s->head_len, p, take);
	s->head_len += take;

	size_t safe = s->head_bytes > UTF8_MAX - 1 ? (size_t)s->head_bytes - (UTF8_MAX - 1) : 0;
	if (s->head_newlines == s->head_lines)
		safe = s->head_len; /* it ends in '\n': no sequence crosses */
	if (safe > s->head_len)
		safe = s->head_len;
	/* Past the first '\n', only whole lines go out before the head is
	 * closed: its last line may yet be cut (see head_close). */
	const uint8_t *nl = memrchr(s->head, '\n', s->head_len);
	if (nl && safe > (size_t)(nl - s->head) + 1)
		safe = (size_t)(nl - s->head) + 1;
	if (safe > s->head_emitted) {
		emit(ctx, s->head + s->head_emitted, safe - s->head_emitted);
		s->head_emitted = safe;
	}
	return take;
}

/* ───────────────────────── the rest ───────────────────────── */

/* The first dropped byte is coming: spill everything so far. */
static void start_cut(struct shaper *s, shape_emit_fn spill, void *ctx)
{
	s->cut = true;
	if (!spill)
		return;
	if (s->head_len)
		spill(ctx, s->head, s->head_len);
	ring_out(&s->rest, 0, spill, ctx);
}

/* How many bytes of p[0..n) keep the stream within both budgets. */
static size_t within_budget(const struct shaper *s, const uint8_t *p, size_t n)
{
	uint64_t room = s->seen_bytes < s->budget_bytes ? s->budget_bytes - s->seen_bytes : 0;
	size_t ok = (size_t)min_u64(n, room);

	if (s->budget_lines == NO_LIMIT)
		return ok;
	if (s->seen_newlines >= s->budget_lines)
		return 0; /* any byte starts one line too many */
	size_t through = through_newline(p, ok, s->budget_lines - s->seen_newlines);
	return through;
}

static size_t rest_take(struct shaper *s, const uint8_t *p, size_t n,
			shape_emit_fn spill, void *ctx)
{
	if (!s->cut) {
		size_t ok = within_budget(s, p, n);
		if (ok) {
			account(s, p, ok);
			ring_push(&s->rest, p, ok);
		}
		if (ok < n)
			start_cut(s, spill, ctx);
		return ok;
	}
	account(s, p, n);
	if (s->tail_bytes)
		ring_push(&s->rest, p, n);
	if (spill)
		spill(ctx, p, n);
	return n;
}

static void text_feed(struct shaper *s, const uint8_t *p, size_t n,
		      shape_emit_fn emit, shape_emit_fn spill, void *ctx)
{
	while (n > 0) {
		size_t used = s->head_closed ? rest_take(s, p, n, spill, ctx)
					     : head_take(s, p, n, emit, ctx);
		p += used;
		n -= used;
	}
}

/* ───────────────────────── binary ───────────────────────── */

static void binary_feed(struct shaper *s, const uint8_t *p, size_t n,
			shape_emit_fn spill, void *ctx)
{
	account(s, p, n);
	sha256_update(&s->md, n, p);
	if (spill)
		spill(ctx, p, n);
}

/* How far the sniffed bytes may pass on as text before the check has
 * decided: the whole lines before anything that is not text (a NUL,
 * invalid UTF-8), within the head part's bytes and short of its lines.
 * Each bound is a prefix of the stream, so the point is the same however
 * the bytes were fed. Whole lines only: a file's magic number is text
 * too ("\x7fELF"). */
static size_t sniff_text_lines(const struct shaper *s)
{
	size_t room = s->head_bytes > UTF8_MAX ? (size_t)(s->head_bytes - UTF8_MAX) : 0;
	bool not_text;
	size_t end = sniff_text_end(s->sniff, s->sniff_released, s->sniff_len, &not_text);

	end = end < room ? end : room;
	if (s->head_lines != NO_LIMIT) {
		uint64_t lines = s->head_lines - s->head_newlines;
		end = lines <= 1 ? s->sniff_released
				 : s->sniff_released + through_newline(s->sniff + s->sniff_released,
								       end - s->sniff_released,
								       lines - 1);
	}
	const uint8_t *nl = end > s->sniff_released
				    ? memrchr(s->sniff + s->sniff_released, '\n', end - s->sniff_released)
				    : NULL;
	return nl ? (size_t)(nl - s->sniff) + 1 : s->sniff_released;
}

/* Pass on the sniffed text lines not passed on yet. */
static void sniff_release(struct shaper *s, shape_emit_fn emit, shape_emit_fn spill,
			  void *ctx)
{
	size_t end = sniff_text_lines(s);

	if (end > s->sniff_released) {
		text_feed(s, s->sniff + s->sniff_released, end - s->sniff_released, emit,
			  spill, ctx);
		s->sniff_released = end;
	}
}

/* The sniffed bytes decide: binary (summarised at finish) or text. */
static void sniff_decide(struct shaper *s, shape_emit_fn emit, shape_emit_fn spill,
			 void *ctx)
{
	size_t r = s->sniff_released;

	s->sniffed = true;
	if (s->sniff_len == 0 || !sniff_binary(s->sniff, s->sniff_len)) {
		text_feed(s, s->sniff + r, s->sniff_len - r, emit, spill, ctx);
		return;
	}
	/* Its first lines of text pass on, however the bytes were fed. */
	sniff_release(s, emit, spill, ctx);
	r = s->sniff_released;
	s->binary = true;
	sha256_init(&s->md);
	sha256_update(&s->md, r, s->sniff);
	/* The text passed on already was counted as it went; the file gets
	 * the whole stream. */
	if (spill && r)
		spill(ctx, s->sniff, r);
	binary_feed(s, s->sniff + r, s->sniff_len - r, spill, ctx);
}

void shaper_feed(struct shaper *s, const uint8_t *p, size_t n,
		 shape_emit_fn emit, shape_emit_fn spill, void *ctx)
{
	if (n == 0 || s->ended)
		return;
	if (!s->sniffed) {
		size_t take = n < SHAPE_SNIFF - s->sniff_len ? n : SHAPE_SNIFF - s->sniff_len;
		memcpy(s->sniff + s->sniff_len, p, take);
		s->sniff_len += take;
		p += take;
		n -= take;
		if (s->sniff_len < SHAPE_SNIFF) {
			sniff_release(s, emit, spill, ctx);
			return;
		}
		sniff_decide(s, emit, spill, ctx);
	}
	if (n == 0)
		return;
	if (s->binary)
		binary_feed(s, p, n, spill, ctx);
	else
		text_feed(s, p, n, emit, spill, ctx);
}

void shaper_eof(struct shaper *s, shape_emit_fn emit, shape_emit_fn spill, void *ctx)
{
	if (s->ended)
		return;
	if (!s->sniffed)
		sniff_decide(s, emit, spill, ctx);
	s->ended = true;
}

void shaper_settle(struct shaper *s, shape_emit_fn emit, shape_emit_fn spill, void *ctx)
{
	if (!s->sniffed && !s->ended)
		sniff_decide(s, emit, spill, ctx);
	if (s->binary || s->head_closed)
		return;
	size_t held = s->head_len - s->head_emitted;
	size_t keep = utf8_keep(s->head + s->head_emitted, held);
	if (keep) {
		emit(ctx, s->head + s->head_emitted, keep);
		s->head_emitted += keep;
	}
}

bool shaper_draining(const struct shaper *s)
{
	return s->binary || s->head_closed;
}

bool shaper_spilling(const struct shaper *s)
{
	return s->binary || s->cut;
}

/* ───────────────────────── the tail part ───────────────────────── */

/* Move a tail's start ws past the continuation bytes of a sequence whose
 * lead byte is before it. */
static uint64_t utf8_tail_start(const struct shaper *s, uint64_t ws)
{
	if (ws == 0)
		return 0;
	uint64_t i = ws - 1;
	for (unsigned back = 0; (byte_at(s, i) & 0xC0) == 0x80; back++) {
		if (i == 0 || back == UTF8_MAX - 2)
			return ws; /* no lead byte near enough to cross ws */
		i--;
	}
	uint64_t end = i + lead_len(byte_at(s, i));
	while (ws < end && ws < s->seen_bytes && (byte_at(s, ws) & 0xC0) == 0x80)
		ws++;
	return ws;
}

/* Where the tail part starts: within the last tail_bytes, the start of
 * its last tail_lines lines. The stream's length when there is none. */
static uint64_t tail_start(const struct shaper *s)
{
	uint64_t n = s->seen_bytes;

	if (s->tail_bytes == 0 || s->tail_lines == 0)
		return n;
	uint64_t ws = utf8_tail_start(s, n > s->tail_bytes ? n - s->tail_bytes : 0);
	/* Whole lines: a line the window starts inside goes, unless it is the
	 * last one. */
	if (ws > 0 && ws < n && byte_at(s, ws - 1) != '\n') {
		for (uint64_t y = ws; y + 1 < n; y++) {
			if (byte_at(s, y) == '\n') {
				ws = y + 1;
				break;
			}
		}
	}
	if (s->tail_lines == NO_LIMIT || n == 0)
		return ws;
	/* A '\n' at n - 1 ends the last line; count those before it. */
	uint64_t k = 0;
	for (uint64_t y = n - 1; y-- > ws;)
		if (byte_at(s, y) == '\n' && ++k == s->tail_lines)
			return y + 1;
	return ws;
}

/* ───────────────────────── the marker ───────────────────────── */

/* The omitted range [a, b) of a cut stream, in lines. */
struct cut_range {
	uint64_t a, b, n;             /* bytes: first, end, the stream's length */
	uint64_t line_a, line_b;      /* lines of its first and last byte */
	uint64_t lines;               /* the stream's */
	bool starts_whole, ends_whole;
	uint64_t whole_first, whole_count; /* lines wholly inside it */
};

static uint64_t newlines_from(const struct shaper *s, uint64_t x)
{
	uint64_t count = 0;

	for (uint64_t y = x; y < s->seen_bytes; y++)
		count += byte_at(s, y) == '\n';
	return count;
}

static struct cut_range cut_range(const struct shaper *s, uint64_t b)
{
	struct cut_range r = {.a = s->head_len, .b = b, .n = s->seen_bytes};
	uint64_t before_b = s->seen_newlines - newlines_from(s, b);
	bool last_nl = b == r.n ? s->seen_ends_nl : byte_at(s, b - 1) == '\n';

	r.lines = s->seen_newlines + (s->seen_ends_nl ? 0 : 1);
	r.line_a = s->head_newlines + 1;
	r.line_b = before_b - (last_nl ? 1 : 0) + 1;
	r.starts_whole = r.a == 0 || s->head[r.a - 1] == '\n';
	r.ends_whole = b == r.n || last_nl;
	r.whole_first = r.starts_whole ? r.line_a : r.line_a + 1;
	uint64_t whole_last = r.ends_whole ? r.line_b : r.line_b - 1;
	r.whole_count = whole_last + 1 > r.whole_first ? whole_last + 1 - r.whole_first : 0;
	return r;
}

static void add_count(struct sbuf *sb, uint64_t n, const char *unit)
{
	sbuf_add_u64(sb, n);
	sbuf_addc(sb, ' ');
	sbuf_add(sb, unit);
	if (n != 1)
		sbuf_addc(sb, 's');
}

/* "line 5" or "lines 5-9"; "byte 7" or "bytes 7-9". */
static void add_range(struct sbuf *sb, const char *unit, uint64_t first, uint64_t last)
{
	sbuf_add(sb, unit);
	if (first != last)
		sbuf_addc(sb, 's');
	sbuf_addc(sb, ' ');
	sbuf_add_u64(sb, first);
	if (first != last) {
		sbuf_addc(sb, '-');
		sbuf_add_u64(sb, last);
	}
}

static void add_whose(struct sbuf *sb, const struct shaper *s)
{
	if (s->program) {
		sbuf_add(sb, s->program);
		sbuf_add(sb, "'s ");
	}
	sbuf_add(sb, s->stream_name);
}

static void add_where(struct sbuf *sb, const struct shaper *s, const struct shape_end *end)
{
	sbuf_add(sb, "the whole ");
	sbuf_add(sb, s->stream_name);
	if (end && end->spill_path) {
		sbuf_add(sb, " is in ");
		sbuf_add(sb, end->spill_path);
		if (end->spill_partial) {
			sbuf_add(sb, " (partial: its first ");
			add_count(sb, end->spill_bytes, "byte");
			sbuf_addc(sb, ')');
		}
		return;
	}
	sbuf_add(sb, " is not kept");
	if (end && end->spill_error) {
		sbuf_add(sb, ": ");
		sbuf_add(sb, end->spill_error);
	}
}

/* Which lines a range that is not whole lines is made of. */
static void add_parts(struct sbuf *sb, const struct cut_range *r)
{
	const char *sep[3] = {"", "", ""};
	unsigned nparts = !r->starts_whole + (r->whole_count > 0) + !r->ends_whole, i = 0;

	if (r->line_a == r->line_b) {
		sbuf_add(sb, r->starts_whole ? "the start of line "
			     : r->ends_whole ? "the rest of line " : "inside line ");
		sbuf_add_u64(sb, r->line_a);
		return;
	}
	/* "A", "A and B", "A, B and C" */
	if (nparts == 2)
		sep[1] = " and ";
	if (nparts == 3)
		sep[1] = ", ", sep[2] = " and ";
	if (!r->starts_whole) {
		sbuf_add(sb, sep[i++]);
		sbuf_add(sb, "the rest of line ");
		sbuf_add_u64(sb, r->line_a);
	}
	if (r->whole_count) {
		sbuf_add(sb, sep[i++]);
		add_range(sb, "line", r->whole_first, r->whole_first + r->whole_count - 1);
	}
	if (!r->ends_whole) {
		sbuf_add(sb, sep[i++]);
		sbuf_add(sb, "the start of line ");
		sbuf_add_u64(sb, r->line_b);
	}
}

static void emit_marker(const struct shaper *s, const struct cut_range *r,
			const struct shape_end *end, shape_emit_fn emit, void *ctx)
{
	char buf[2 * CONFIG_PATH_MAX + 512];
	struct sbuf sb = SBUF_INIT(buf);

	if (s->head_len > 0 && s->head[s->head_len - 1] != '\n')
		sbuf_addc(&sb, '\n');
	sbuf_add(&sb, "...[toolrun cut ");
	if (r->starts_whole && r->ends_whole) {
		add_count(&sb, r->whole_count, "line");
		sbuf_add(&sb, " (");
		add_count(&sb, r->b - r->a, "byte");
		sbuf_add(&sb, ") of ");
		add_whose(&sb, s);
		sbuf_add(&sb, " here: ");
		add_range(&sb, "line", r->line_a, r->line_b);
		sbuf_add(&sb, " of ");
		sbuf_add_u64(&sb, r->lines);
	} else {
		add_count(&sb, r->b - r->a, "byte");
		sbuf_add(&sb, " of ");
		add_whose(&sb, s);
		sbuf_add(&sb, " here: ");
		add_range(&sb, "byte", r->a + 1, r->b);
		sbuf_add(&sb, " of ");
		sbuf_add_u64(&sb, r->n);
		sbuf_add(&sb, ", ");
		add_parts(&sb, r);
	}
	sbuf_add(&sb, "; ");
	add_where(&sb, s, end);
	sbuf_add(&sb, "]\n");
	emit(ctx, (const uint8_t *)buf, sb.len);
}

/* ───────────────────────── binary summary ───────────────────────── */

static void add_sha256(struct sbuf *sb, struct sha256_ctx *md)
{
	char hex[DIGEST_HEX_SIZE];

	digest_sha256_end_hex(md, hex);
	sbuf_add(sb, "sha256 ");
	sbuf_add(sb, hex);
}

static void emit_summary(struct shaper *s, const struct shape_end *end,
			 shape_emit_fn emit, void *ctx)
{
	char buf[2 * CONFIG_PATH_MAX + 512];
	struct sbuf sb = SBUF_INIT(buf);

	sbuf_add(&sb, "[toolrun: binary ");
	sbuf_add(&sb, s->stream_name);
	if (s->program) {
		sbuf_add(&sb, " of ");
		sbuf_add(&sb, s->program);
	}
	sbuf_add(&sb, ", ");
	add_count(&sb, s->seen_bytes, "byte");
	sbuf_add(&sb, ", ");
	sbuf_add(&sb, sniff_type(s->sniff, s->sniff_len));
	sbuf_add(&sb, ", ");
	add_sha256(&sb, &s->md);
	sbuf_add(&sb, "; ");
	add_where(&sb, s, end);
	sbuf_add(&sb, "]\n");
	emit(ctx, (const uint8_t *)buf, sb.len);
}

/* ───────────────────────── the end ───────────────────────── */

static uint64_t lines_seen(const struct shaper *s)
{
	return s->seen_newlines + (s->seen_bytes > 0 && !s->seen_ends_nl ? 1 : 0);
}

void shaper_finish(struct shaper *s, const struct shape_end *end,
		   shape_emit_fn emit, void *ctx)
{
	if (s->finished)
		return;
	shaper_eof(s, emit, NULL, ctx);
	s->finished = true;
	if (s->binary) {
		/* Its first lines passed on as text (whole lines). */
		size_t shown = s->sniff_released;
		emit_summary(s, end, emit, ctx);
		s->dropped_bytes = s->seen_bytes - shown;
		s->dropped_lines = lines_seen(s) - count_newlines(s->sniff, shown);
		return;
	}
	if (!s->head_closed) {
		/* All of it fits in the head part. */
		if (s->head_len > s->head_emitted)
			emit(ctx, s->head + s->head_emitted, s->head_len - s->head_emitted);
		s->head_emitted = s->head_len;
		return;
	}
	if (!s->cut) {
		ring_out(&s->rest, 0, emit, ctx);
		return;
	}
	uint64_t ts = tail_start(s);
	struct cut_range r = cut_range(s, ts);
	emit_marker(s, &r, end, emit, ctx);
	ring_out(&s->rest, (size_t)(ts - (s->seen_bytes - s->rest.len)), emit, ctx);
	s->dropped_bytes = r.b - r.a;
	s->dropped_lines = r.whole_count;
}

void shaper_stats(const struct shaper *s, struct shape_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->binary = s->binary;
	if (!s->sniffed) {
		/* Still deciding: only the sniffed bytes were seen. */
		out->bytes_seen = s->sniff_len;
		out->lines_seen = count_newlines(s->sniff, s->sniff_len) +
				  (s->sniff_len && s->sniff[s->sniff_len - 1] != '\n' ? 1 : 0);
		return;
	}
	out->bytes_seen = s->seen_bytes;
	out->lines_seen = lines_seen(s);
	if (s->finished) {
		out->bytes_dropped = s->dropped_bytes;
		out->lines_dropped = s->dropped_lines;
	} else if (s->binary) {
		out->bytes_dropped = s->seen_bytes;
		out->lines_dropped = out->lines_seen;
	} else if (s->cut) {
		uint64_t may_show = s->tail_bytes ? min_u64(s->rest.len, s->tail_bytes) : 0;
		out->bytes_dropped = s->seen_bytes - s->head_len - may_show;
	}
}
