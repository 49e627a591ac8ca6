/*
 * Unit tests for daemon/shape.c: the deterministic truncation of one
 * output stream. daemon/shape.h states the rule checked here; the
 * property tests at the end compare the streaming shaper with a direct,
 * non-streaming implementation of that rule (ref_shape) and with itself
 * fed in every possible split.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shape.h"

/* ───────────────────────── helpers ───────────────────────── */

struct sink {
	uint8_t *data;
	size_t len, cap;
	unsigned calls;
};

static void sink_emit(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *s = ctx;

	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 64;
		while (cap < s->len + n)
			cap *= 2;
		uint8_t *grown = realloc(s->data, cap);
		assert_non_null(grown);
		s->data = grown;
		s->cap = cap;
	}
	if (n)
		memcpy(s->data + s->len, p, n);
	s->len += n;
	s->calls++;
}

static void sink_free(struct sink *s)
{
	free(s->data);
	memset(s, 0, sizeof(*s));
}

struct result {
	struct sink out;
	struct shape_stats st;
};

static void result_free(struct result *r)
{
	sink_free(&r->out);
}

/* Shape in[0..len) fed in chunks that end at cuts[0..ncuts) (ascending,
 * each in [0, len]; equal cuts give empty feeds), then the rest. */
static void shape_chunks(const uint8_t *in, size_t len, uint64_t max_bytes,
			 uint64_t max_lines, const size_t *cuts, size_t ncuts,
			 struct result *r)
{
	struct shaper s;
	size_t at = 0;

	memset(r, 0, sizeof(*r));
	shaper_init(&s, max_bytes, max_lines);
	for (size_t i = 0; i < ncuts; i++) {
		assert_true(cuts[i] >= at && cuts[i] <= len);
		shaper_feed(&s, in + at, cuts[i] - at, sink_emit, &r->out);
		at = cuts[i];
	}
	shaper_feed(&s, in + at, len - at, sink_emit, &r->out);
	shaper_finish(&s, sink_emit, &r->out);
	shaper_stats(&s, &r->st);
}

static void shape_whole(const uint8_t *in, size_t len, uint64_t max_bytes,
			uint64_t max_lines, struct result *r)
{
	shape_chunks(in, len, max_bytes, max_lines, NULL, 0, r);
}

/* Printable form of bytes for failure messages. */
static const char *escape(const uint8_t *p, size_t n, char *buf, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		uint8_t c = p[i];
		if (c == '\n')
			o += (size_t)snprintf(buf + o, cap - o, "\\n");
		else if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

static void assert_bytes(const uint8_t *got, size_t got_len, const void *want,
			 size_t want_len, const char *what)
{
	if (got_len == want_len && (want_len == 0 || memcmp(got, want, want_len) == 0))
		return;
	char a[1024], b[1024];
	print_error("%s:\n  got  \"%s\" (%zu bytes)\n  want \"%s\" (%zu bytes)\n",
		    what, escape(got, got_len, a, sizeof(a)), got_len,
		    escape(want, want_len, b, sizeof(b)), want_len);
	fail();
}

static void assert_stats(const struct shape_stats *got, uint64_t bytes_seen,
			 uint64_t lines_seen, uint64_t bytes_dropped,
			 uint64_t lines_dropped)
{
	assert_int_equal(got->bytes_seen, bytes_seen);
	assert_int_equal(got->lines_seen, lines_seen);
	assert_int_equal(got->bytes_dropped, bytes_dropped);
	assert_int_equal(got->lines_dropped, lines_dropped);
}

/* Shape a string literal whole and compare with an expected literal
 * (both may hold any byte, NUL included). */
#define EXPECT_SHAPE(in, max_bytes, max_lines, want)                           \
	expect_shape((const uint8_t *)(in), sizeof(in) - 1, (max_bytes),       \
		     (max_lines), (want), sizeof(want) - 1)

static void expect_shape(const uint8_t *in, size_t len, uint64_t max_bytes,
			 uint64_t max_lines, const char *want, size_t want_len)
{
	struct result r;

	shape_whole(in, len, max_bytes, max_lines, &r);
	assert_bytes(r.out.data, r.out.len, want, want_len, "shaped output");
	result_free(&r);
}

/* ───────────────── reference model of daemon/shape.h ───────────────── */

static int utf8_seq_len(uint8_t c)
{
	if (c < 0x80)
		return 1;
	if ((c & 0xE0) == 0xC0)
		return 2;
	if ((c & 0xF0) == 0xE0)
		return 3;
	if ((c & 0xF8) == 0xF0)
		return 4;
	return 1; /* 0xF8..0xFF: invalid, a byte of its own */
}

static int is_continuation(uint8_t c)
{
	return (c & 0xC0) == 0x80;
}

static uint64_t ref_lines(const uint8_t *p, size_t n)
{
	uint64_t nl = 0;
	for (size_t i = 0; i < n; i++)
		nl += p[i] == '\n';
	return nl + (n > 0 && p[n - 1] != '\n');
}

/* The rule of daemon/shape.h applied to the whole stream at once.
 * "A UTF-8 sequence that would continue past byte B" is read as shape.c
 * reads it: from the lead byte alone (C0..DF: 2 bytes, E0..EF: 3,
 * F0..F7: 4; 80..BF and F8..FF stand alone), whatever follows byte B. */
static void ref_shape(const uint8_t *in, size_t len, uint64_t max_bytes,
		      uint64_t max_lines, struct result *r)
{
	size_t s1 = len;

	memset(r, 0, sizeof(*r));
	if (max_bytes && len > max_bytes) {
		size_t b = (size_t)max_bytes;
		s1 = b;
		/* The character that byte b-1 belongs to starts at most 3
		 * bytes earlier; drop it if its lead byte says it goes on
		 * past byte b. */
		for (size_t i = b; i-- > 0 && b - i <= 4;) {
			if (is_continuation(in[i]))
				continue;
			if (i + (size_t)utf8_seq_len(in[i]) > b)
				s1 = i;
			break;
		}
	}
	size_t s2 = s1;
	if (max_lines) {
		uint64_t nl = 0;
		for (size_t i = 0; i < s1; i++) {
			if (in[i] == '\n' && ++nl == max_lines) {
				s2 = i + 1;
				break;
			}
		}
	}
	if (s2)
		sink_emit(&r->out, in, s2);
	uint64_t lines_s = ref_lines(in, len), lines_s2 = ref_lines(in, s2);
	if (s2 < len) {
		char m[160];
		unsigned long long nb = (unsigned long long)(len - s2);
		unsigned long long nlines = (unsigned long long)(lines_s - lines_s2);
		int n = snprintf(m, sizeof(m), "%s...[truncated: %llu byte%s, %llu line%s omitted]\n",
				 s2 > 0 && in[s2 - 1] != '\n' ? "\n" : "",
				 nb, nb == 1 ? "" : "s", nlines, nlines == 1 ? "" : "s");
		sink_emit(&r->out, (const uint8_t *)m, (size_t)n);
	}
	r->st.bytes_seen = len;
	r->st.lines_seen = lines_s;
	r->st.bytes_dropped = len - s2;
	r->st.lines_dropped = lines_s - lines_s2;
}

static void assert_same_result(const struct result *got,
			       const struct result *want, const char *what)
{
	assert_bytes(got->out.data, got->out.len, want->out.data, want->out.len,
		     what);
	assert_int_equal(got->st.bytes_seen, want->st.bytes_seen);
	assert_int_equal(got->st.lines_seen, want->st.lines_seen);
	assert_int_equal(got->st.bytes_dropped, want->st.bytes_dropped);
	assert_int_equal(got->st.lines_dropped, want->st.lines_dropped);
}

/* Deterministic pseudo-random numbers (xorshift64*). */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Du;
}

static size_t rng_below(size_t n)
{
	return n ? (size_t)(rng() % n) : 0;
}

/* A random stream of up to max_len bytes built from pieces that matter to
 * the shaper: text, newlines, 2/3/4-byte UTF-8, stray continuation bytes,
 * invalid bytes and truncated sequences. */
static size_t gen_input(uint8_t *buf, size_t max_len)
{
	static const char *const pieces[] = {
		"a", "b", "xyz", "\n", "\n", "\n\n", "\xc3\xa9", "\xe2\x82\xac",
		"\xf0\x9f\x98\x80", "\x80", "\xbf", "\xff", "\xf8", "\xe2\x82",
		"\xf0\x9f", "\xc3", "\x00", "\t",
	};
	size_t target = rng_below(max_len + 1), len = 0;

	while (len < target) {
		const char *p = pieces[rng_below(sizeof(pieces) / sizeof(pieces[0]))];
		size_t n = p[0] == '\0' ? 1 : strlen(p);
		if (len + n > max_len)
			break;
		memcpy(buf + len, p, n);
		len += n;
	}
	return len;
}

/* Inputs used by the split tests: chosen so that limits fall inside
 * multibyte sequences, on newlines and on invalid bytes. */
static const struct {
	const char *s;
	size_t len;
} split_inputs[] = {
#define IN(x) {x, sizeof(x) - 1}
	IN("ab\xc3\xa9" "cd\xe2\x82\xac\n\xf0\x9f\x98\x80x\ny"),
	IN("line one\nline two\n\nlast"),
	IN("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\n\xc3\xa9\xc3\xa9\n"),
	IN("\x80\xff\xc3\n\xf0\x9f\x98\xe2\x82\n\xf8z"),
	IN("\n\n\n\n\n\n\n\n"),
	IN("no newline at all, just text"),
#undef IN
};

/* ───────────────────────── basic rule ───────────────────────── */

static void test_no_limits_passes_everything(void **state)
{
	(void)state;
	static const char in[] = "first\n\xff\x80 binary \x00 bytes\xe2\x82\nlast";
	struct result r;

	shape_whole((const uint8_t *)in, sizeof(in) - 1, 0, 0, &r);
	assert_bytes(r.out.data, r.out.len, in, sizeof(in) - 1, "output");
	assert_stats(&r.st, sizeof(in) - 1, 3, 0, 0);
	result_free(&r);
}

static void test_empty_stream_emits_nothing(void **state)
{
	(void)state;
	static const uint64_t limits[][2] = {{0, 0}, {1, 0}, {0, 1}, {5, 5}};

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct result r;
		shape_whole((const uint8_t *)"", 0, limits[i][0], limits[i][1], &r);
		assert_int_equal(r.out.len, 0);
		assert_int_equal(r.out.calls, 0);
		assert_stats(&r.st, 0, 0, 0, 0);
		result_free(&r);
	}
}

static void test_byte_limit_cuts_and_appends_marker(void **state)
{
	(void)state;
	EXPECT_SHAPE("hello world\n", 5, 0,
		     "hello\n...[truncated: 7 bytes, 0 lines omitted]\n");
}

static void test_byte_limit_on_line_end_adds_no_extra_newline(void **state)
{
	(void)state;
	EXPECT_SHAPE("ab\ncd\n", 3, 0,
		     "ab\n...[truncated: 3 bytes, 1 line omitted]\n");
}

static void test_line_limit_keeps_first_lines(void **state)
{
	(void)state;
	EXPECT_SHAPE("1\n2\n3\n4\n", 0, 2,
		     "1\n2\n...[truncated: 4 bytes, 2 lines omitted]\n");
}

static void test_line_limit_drops_unterminated_last_line(void **state)
{
	(void)state;
	EXPECT_SHAPE("one\ntwo", 0, 1,
		     "one\n...[truncated: 3 bytes, 1 line omitted]\n");
}

static void test_line_limit_keeps_unterminated_last_kept_line(void **state)
{
	(void)state;
	/* The second line is cut by the byte limit and has no newline: it
	 * still counts as one of the two lines allowed. */
	EXPECT_SHAPE("one\ntwo\nthree\n", 6, 2,
		     "one\ntw\n...[truncated: 8 bytes, 1 line omitted]\n");
	/* A final partial line within the line limit is kept whole. */
	EXPECT_SHAPE("one\ntwo", 0, 2, "one\ntwo");
}

static void test_byte_limit_binds_when_both_limits_are_set(void **state)
{
	(void)state;
	/* S1 = "aaaa\nbb" (7 bytes); its first 3 lines are all of it. */
	EXPECT_SHAPE("aaaa\nbbbb\ncccc\n", 7, 3,
		     "aaaa\nbb\n...[truncated: 8 bytes, 1 line omitted]\n");
}

static void test_line_limit_binds_within_byte_limited_prefix(void **state)
{
	(void)state;
	/* S1 = "aaaa\nbbbb\ncc"; its first line is "aaaa\n". */
	EXPECT_SHAPE("aaaa\nbbbb\ncccc\n", 12, 1,
		     "aaaa\n...[truncated: 10 bytes, 2 lines omitted]\n");
}

static void test_marker_uses_singular_for_one_byte_and_one_line(void **state)
{
	(void)state;
	EXPECT_SHAPE("a\nb", 0, 1, "a\n...[truncated: 1 byte, 1 line omitted]\n");
}

static void test_marker_uses_singular_for_one_byte_only(void **state)
{
	(void)state;
	EXPECT_SHAPE("abcde", 4, 0, "abcd\n...[truncated: 1 byte, 0 lines omitted]\n");
}

static void test_marker_uses_plural_for_other_counts(void **state)
{
	(void)state;
	EXPECT_SHAPE("a\nb\nc\n", 0, 1, "a\n...[truncated: 4 bytes, 2 lines omitted]\n");
	EXPECT_SHAPE("abcdefgh\nij\n", 4, 0,
		     "abcd\n...[truncated: 8 bytes, 1 line omitted]\n");
}

static void test_marker_counts_large_numbers(void **state)
{
	(void)state;
	size_t len = 1000000;
	uint8_t *in = malloc(len);
	assert_non_null(in);
	for (size_t i = 0; i < len; i++)
		in[i] = i % 10 == 9 ? '\n' : 'x';
	struct result r;
	shape_whole(in, len, 0, 2, &r);
	static const char want[] = "xxxxxxxxx\nxxxxxxxxx\n"
				   "...[truncated: 999980 bytes, 99998 lines omitted]\n";
	assert_bytes(r.out.data, r.out.len, want, sizeof(want) - 1, "output");
	assert_stats(&r.st, 1000000, 100000, 999980, 99998);
	result_free(&r);
	free(in);
}

static void test_newline_precedes_marker_when_kept_output_lacks_one(void **state)
{
	(void)state;
	EXPECT_SHAPE("abcdef", 3, 0, "abc\n...[truncated: 3 bytes, 0 lines omitted]\n");
}

static void test_marker_alone_when_nothing_is_kept(void **state)
{
	(void)state;
	/* One byte allowed, but it would split "é": nothing is kept, and
	 * the marker is the whole output, with no empty line before it. */
	EXPECT_SHAPE("\xc3\xa9x", 1, 0, "...[truncated: 3 bytes, 1 line omitted]\n");
}

static void test_stream_exactly_at_byte_limit_gets_no_marker(void **state)
{
	(void)state;
	static const char text[] = "abc\ndef\xc3\xa9gh\n\xe2\x82\xac";

	for (size_t b = 1; b <= sizeof(text) - 1; b++) {
		struct result r;
		shape_whole((const uint8_t *)text, b, b, 0, &r);
		assert_bytes(r.out.data, r.out.len, text, b, "stream of exactly max_bytes");
		assert_int_equal(r.st.bytes_dropped, 0);
		assert_int_equal(r.st.lines_dropped, 0);
		result_free(&r);
	}
}

static void test_stream_one_byte_past_limit_gets_marker(void **state)
{
	(void)state;
	for (size_t b = 1; b <= 8; b++) {
		char in[16], want[96];
		memset(in, 'x', b + 1);
		int n = snprintf(want, sizeof(want),
				 "%.*s\n...[truncated: 1 byte, 0 lines omitted]\n",
				 (int)b, "xxxxxxxxxx");
		struct result r;
		shape_whole((const uint8_t *)in, b + 1, b, 0, &r);
		assert_bytes(r.out.data, r.out.len, want, (size_t)n, "one byte over");
		result_free(&r);
	}
}

static void test_line_limit_reached_exactly_at_end_gives_no_marker(void **state)
{
	(void)state;
	struct result r;

	EXPECT_SHAPE("a\nb\n", 0, 2, "a\nb\n");
	EXPECT_SHAPE("a\nb", 0, 2, "a\nb");
	/* Also when the stream arrives line by line. */
	static const size_t cuts[] = {2};
	shape_chunks((const uint8_t *)"a\nb\n", 4, 0, 2, cuts, 1, &r);
	assert_bytes(r.out.data, r.out.len, "a\nb\n", 4, "two feeds");
	assert_stats(&r.st, 4, 2, 0, 0);
	result_free(&r);
}

static void test_huge_limits_behave_as_no_limit(void **state)
{
	(void)state;
	EXPECT_SHAPE("a\nb\nc", UINT64_MAX, UINT64_MAX, "a\nb\nc");
	EXPECT_SHAPE("a\nb\nc", UINT64_MAX - 1, 0, "a\nb\nc");
}

/* ───────────────────────── UTF-8 ───────────────────────── */

/* For a sequence seq of k bytes preceded by p ASCII bytes: a byte limit
 * that falls after j (1 <= j < k) of its bytes cuts before its lead byte. */
static void check_straddle(const char *seq, size_t k)
{
	for (size_t p = 0; p <= 7; p++) {
		for (size_t j = 1; j < k; j++) {
			uint8_t in[32];
			memset(in, 'x', p);
			memcpy(in + p, seq, k);
			memcpy(in + p + k, "tail\n", 5);
			size_t len = p + k + 5;

			char want[128];
			int n = snprintf(want, sizeof(want),
					 "%.*s%s...[truncated: %zu bytes, %s omitted]\n",
					 (int)p, "xxxxxxxxxx", p ? "\n" : "", len - p,
					 p ? "0 lines" : "1 line");
			struct result r;
			shape_whole(in, len, p + j, 0, &r);
			char what[64];
			snprintf(what, sizeof(what), "%zu-byte sequence, %zu prefix bytes, limit %zu",
				 k, p, p + j);
			assert_bytes(r.out.data, r.out.len, want, (size_t)n, what);
			assert_stats(&r.st, len, 1, len - p, p ? 0 : 1);
			result_free(&r);
		}
	}
}

static void test_bytes_limit_cuts_before_2_byte_utf8_lead_byte(void **state)
{
	(void)state;
	check_straddle("\xc3\xa9", 2); /* é */
}

static void test_bytes_limit_cuts_before_3_byte_utf8_lead_byte(void **state)
{
	(void)state;
	check_straddle("\xe2\x82\xac", 3); /* € */
}

static void test_bytes_limit_cuts_before_4_byte_utf8_lead_byte(void **state)
{
	(void)state;
	check_straddle("\xf0\x9f\x98\x80", 4); /* 😀 */
}

static void test_utf8_sequence_ending_at_limit_is_kept(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t k;
	} seqs[] = {{"\xc3\xa9", 2}, {"\xe2\x82\xac", 3}, {"\xf0\x9f\x98\x80", 4}};

	for (size_t i = 0; i < 3; i++) {
		for (size_t p = 0; p <= 7; p++) {
			uint8_t in[32];
			size_t k = seqs[i].k;
			memset(in, 'x', p);
			memcpy(in + p, seqs[i].s, k);
			memcpy(in + p + k, "tail", 4);
			struct result r;
			shape_whole(in, p + k + 4, p + k, 0, &r);
			assert_true(r.out.len >= p + k + 1);
			assert_bytes(r.out.data, p + k, in, p + k, "kept part");
			assert_int_equal(r.out.data[p + k], '\n');
			result_free(&r);
		}
	}
}

/* Bytes v that do not start a sequence crossing the limit: p ASCII bytes,
 * v, q ASCII bytes, the limit, then more. v stands alone, so exactly the
 * bytes up to the limit are kept. */
static void check_single_byte_kept(const uint8_t *v, size_t vlen)
{
	for (size_t p = 0; p <= 4; p++) {
		for (size_t q = 0; q <= 2; q++) {
			uint8_t in[32];
			size_t len = p;
			memset(in, 'x', p);
			memcpy(in + len, v, vlen);
			len += vlen;
			memset(in + len, 'y', q);
			len += q;
			size_t limit = len;
			memcpy(in + len, "zzz", 3);
			len += 3;

			struct result r;
			shape_whole(in, len, limit, 0, &r);
			char what[64];
			snprintf(what, sizeof(what), "invalid 0x%02x, %zu before, %zu after",
				 v[0], p, q);
			assert_true(r.out.len > limit);
			assert_bytes(r.out.data, limit, in, limit, what);
			assert_int_equal(r.out.data[limit], '\n');
			assert_int_equal(r.st.bytes_dropped, 3);
			result_free(&r);
		}
	}
}

static void test_invalid_bytes_before_limit_count_as_single_bytes(void **state)
{
	(void)state;
	static const uint8_t invalid[] = {0x80, 0xbf, 0xf8, 0xfe, 0xff};

	for (size_t i = 0; i < sizeof(invalid); i++)
		check_single_byte_kept(&invalid[i], 1);
}

static void test_stray_continuation_bytes_before_limit_are_kept(void **state)
{
	(void)state;
	check_single_byte_kept((const uint8_t *)"\x80\x80\x80", 3);
	/* A complete sequence followed by one continuation byte too many. */
	check_single_byte_kept((const uint8_t *)"\xc3\xa9\xa9", 3);
}

static void test_truncated_sequence_followed_by_ascii_is_kept(void **state)
{
	(void)state;
	/* "\xe2\x82" lacks its third byte: 'a' ends it, so nothing of it
	 * continues past the limit. */
	check_single_byte_kept((const uint8_t *)"\xe2\x82" "a", 3);
	check_single_byte_kept((const uint8_t *)"\xf0" "a", 2);
}

/* ───────────────────────── stats ───────────────────────── */

static void test_stats_count_final_partial_line(void **state)
{
	(void)state;
	struct result r;

	shape_whole((const uint8_t *)"a\nb", 3, 0, 0, &r);
	assert_stats(&r.st, 3, 2, 0, 0);
	result_free(&r);
	shape_whole((const uint8_t *)"a\nb\n", 4, 0, 0, &r);
	assert_stats(&r.st, 4, 2, 0, 0);
	result_free(&r);
	shape_whole((const uint8_t *)"x", 1, 0, 0, &r);
	assert_stats(&r.st, 1, 1, 0, 0);
	result_free(&r);
}

static void test_stats_count_dropped_bytes_and_lines(void **state)
{
	(void)state;
	struct result r;

	shape_whole((const uint8_t *)"a\nbb\nccc\n", 9, 0, 1, &r);
	assert_stats(&r.st, 9, 3, 7, 2);
	result_free(&r);
	shape_whole((const uint8_t *)"a\nbb\nccc", 8, 4, 0, &r);
	assert_stats(&r.st, 8, 3, 4, 1);
	result_free(&r);
}

static void test_stats_partially_kept_line_is_not_dropped(void **state)
{
	(void)state;
	struct result r;

	shape_whole((const uint8_t *)"abcdef\n", 7, 3, 0, &r);
	assert_stats(&r.st, 7, 1, 4, 0);
	result_free(&r);
}

static void test_stats_count_bytes_fed_after_cut(void **state)
{
	(void)state;
	struct shaper s;
	struct sink out = {0};
	struct shape_stats st;

	shaper_init(&s, 0, 1);
	shaper_feed(&s, (const uint8_t *)"a\nb", 3, sink_emit, &out);
	size_t before = out.len;
	shaper_feed(&s, (const uint8_t *)"cc\ndd\n", 6, sink_emit, &out);
	shaper_feed(&s, (const uint8_t *)"e", 1, sink_emit, &out);
	assert_int_equal(out.len, before); /* nothing more released */
	shaper_finish(&s, sink_emit, &out);
	shaper_stats(&s, &st);
	assert_stats(&st, 10, 4, 8, 3);
	static const char want[] = "a\n...[truncated: 8 bytes, 3 lines omitted]\n";
	assert_bytes(out.data, out.len, want, sizeof(want) - 1, "output");
	sink_free(&out);
}

static void test_stats_before_finish_do_not_count_held_bytes_as_dropped(void **state)
{
	(void)state;
	struct shaper s;
	struct sink out = {0};
	struct shape_stats st;

	shaper_init(&s, 10, 0);
	shaper_feed(&s, (const uint8_t *)"abcdefghi", 9, sink_emit, &out);
	shaper_stats(&s, &st);
	/* Bytes 7..9 are held, not yet emitted, but not dropped either. */
	assert_stats(&st, 9, 1, 0, 0);
	shaper_finish(&s, sink_emit, &out);
	shaper_stats(&s, &st);
	assert_stats(&st, 9, 1, 0, 0);
	sink_free(&out);
}

static void test_count_newlines(void **state)
{
	(void)state;
	assert_int_equal(count_newlines((const uint8_t *)"", 0), 0);
	assert_int_equal(count_newlines((const uint8_t *)"abc", 3), 0);
	assert_int_equal(count_newlines((const uint8_t *)"\n", 1), 1);
	assert_int_equal(count_newlines((const uint8_t *)"a\n\nb\n", 5), 3);
	/* Only the first n bytes count. */
	assert_int_equal(count_newlines((const uint8_t *)"a\n\n\n", 2), 1);
}

/* ───────────────────────── streaming ───────────────────────── */

static void test_output_is_released_as_it_arrives_without_limits(void **state)
{
	(void)state;
	struct shaper s;
	struct sink out = {0};

	shaper_init(&s, 0, 0);
	shaper_feed(&s, (const uint8_t *)"abc", 3, sink_emit, &out);
	assert_bytes(out.data, out.len, "abc", 3, "after first feed");
	shaper_feed(&s, (const uint8_t *)"\nd", 2, sink_emit, &out);
	assert_bytes(out.data, out.len, "abc\nd", 5, "after second feed");
	shaper_finish(&s, sink_emit, &out);
	assert_bytes(out.data, out.len, "abc\nd", 5, "after finish");
	sink_free(&out);
}

static void test_only_last_three_bytes_below_limit_are_held(void **state)
{
	(void)state;
	struct shaper s;
	struct sink out = {0};

	shaper_init(&s, 10, 0);
	shaper_feed(&s, (const uint8_t *)"abcdefghi", 9, sink_emit, &out);
	/* Bytes 7..9 might start a sequence that crosses byte 10. */
	assert_bytes(out.data, out.len, "abcdefg", 7, "before finish");
	shaper_finish(&s, sink_emit, &out);
	assert_bytes(out.data, out.len, "abcdefghi", 9, "after finish");
	sink_free(&out);
}

static void test_line_limit_output_is_released_before_finish(void **state)
{
	(void)state;
	struct shaper s;
	struct sink out = {0};

	shaper_init(&s, 0, 2);
	shaper_feed(&s, (const uint8_t *)"a\nb\nc\n", 6, sink_emit, &out);
	assert_bytes(out.data, out.len, "a\nb\n", 4, "before finish");
	shaper_finish(&s, sink_emit, &out);
	sink_free(&out);
}

/* ─────────────── properties: reference model and splits ─────────────── */

static void test_matches_reference_model_on_generated_inputs(void **state)
{
	(void)state;
	uint8_t in[48];

	rng_state = 0x1234567887654321u;
	for (int iter = 0; iter < 400; iter++) {
		size_t len = gen_input(in, sizeof(in));
		for (uint64_t b = 0; b <= len + 2; b++) {
			for (uint64_t l = 0; l <= 5; l++) {
				struct result got, want;
				shape_whole(in, len, b, l, &got);
				ref_shape(in, len, b, l, &want);
				char what[64];
				snprintf(what, sizeof(what), "iteration %d, max_bytes %llu, max_lines %llu",
					 iter, (unsigned long long)b, (unsigned long long)l);
				assert_same_result(&got, &want, what);
				result_free(&got);
				result_free(&want);
			}
		}
	}
}

static void test_one_byte_chunks_give_same_output_and_stats(void **state)
{
	(void)state;
	size_t cuts[64];

	for (size_t i = 0; i < sizeof(split_inputs) / sizeof(split_inputs[0]); i++) {
		const uint8_t *in = (const uint8_t *)split_inputs[i].s;
		size_t len = split_inputs[i].len;
		for (size_t k = 1; k < len; k++)
			cuts[k - 1] = k;
		for (uint64_t b = 0; b <= len + 1; b++) {
			for (uint64_t l = 0; l <= 4; l++) {
				struct result whole, bytewise;
				shape_whole(in, len, b, l, &whole);
				shape_chunks(in, len, b, l, cuts, len ? len - 1 : 0, &bytewise);
				assert_same_result(&bytewise, &whole, "1-byte chunks");
				result_free(&whole);
				result_free(&bytewise);
			}
		}
	}
}

static void test_every_split_point_gives_same_output_and_stats(void **state)
{
	(void)state;

	/* Every way of cutting the stream into up to three feeds (the empty
	 * feeds included), for every byte and line limit around its size. */
	for (size_t i = 0; i < sizeof(split_inputs) / sizeof(split_inputs[0]); i++) {
		const uint8_t *in = (const uint8_t *)split_inputs[i].s;
		size_t len = split_inputs[i].len;
		for (uint64_t b = 0; b <= len + 1; b++) {
			for (uint64_t l = 0; l <= 3; l++) {
				struct result whole;
				shape_whole(in, len, b, l, &whole);
				for (size_t x = 0; x <= len; x++) {
					for (size_t y = x; y <= len; y++) {
						size_t cuts[2] = {x, y};
						struct result split;
						shape_chunks(in, len, b, l, cuts, 2, &split);
						char what[96];
						snprintf(what, sizeof(what),
							 "input %zu split at %zu,%zu, max_bytes %llu, max_lines %llu",
							 i, x, y, (unsigned long long)b,
							 (unsigned long long)l);
						assert_same_result(&split, &whole, what);
						result_free(&split);
					}
				}
				result_free(&whole);
			}
		}
	}
}

static void test_random_splits_give_same_output_and_stats(void **state)
{
	(void)state;
	uint8_t in[200];
	size_t cuts[200];

	rng_state = 0xC0FFEE1234ABCDEFu;
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = gen_input(in, sizeof(in));
		uint64_t b = rng_below(3) ? rng_below(len + 3) : 0;
		uint64_t l = rng_below(3) ? rng_below(12) : 0;
		size_t ncuts = 0, at = 0;
		while (ncuts < sizeof(cuts) / sizeof(cuts[0])) {
			/* Chunks of 0..7 bytes, empty ones included. */
			at += rng_below(8);
			if (at > len)
				break;
			cuts[ncuts++] = at;
		}
		struct result whole, split, ref;
		shape_whole(in, len, b, l, &whole);
		shape_chunks(in, len, b, l, cuts, ncuts, &split);
		ref_shape(in, len, b, l, &ref);
		char what[64];
		snprintf(what, sizeof(what), "random split, iteration %d", iter);
		assert_same_result(&split, &whole, what);
		assert_same_result(&whole, &ref, "whole against reference");
		result_free(&whole);
		result_free(&split);
		result_free(&ref);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_limits_passes_everything),
		cmocka_unit_test(test_empty_stream_emits_nothing),
		cmocka_unit_test(test_byte_limit_cuts_and_appends_marker),
		cmocka_unit_test(test_byte_limit_on_line_end_adds_no_extra_newline),
		cmocka_unit_test(test_line_limit_keeps_first_lines),
		cmocka_unit_test(test_line_limit_drops_unterminated_last_line),
		cmocka_unit_test(test_line_limit_keeps_unterminated_last_kept_line),
		cmocka_unit_test(test_byte_limit_binds_when_both_limits_are_set),
		cmocka_unit_test(test_line_limit_binds_within_byte_limited_prefix),
		cmocka_unit_test(test_marker_uses_singular_for_one_byte_and_one_line),
		cmocka_unit_test(test_marker_uses_singular_for_one_byte_only),
		cmocka_unit_test(test_marker_uses_plural_for_other_counts),
		cmocka_unit_test(test_marker_counts_large_numbers),
		cmocka_unit_test(test_newline_precedes_marker_when_kept_output_lacks_one),
		cmocka_unit_test(test_marker_alone_when_nothing_is_kept),
		cmocka_unit_test(test_stream_exactly_at_byte_limit_gets_no_marker),
		cmocka_unit_test(test_stream_one_byte_past_limit_gets_marker),
		cmocka_unit_test(test_line_limit_reached_exactly_at_end_gives_no_marker),
		cmocka_unit_test(test_huge_limits_behave_as_no_limit),
		cmocka_unit_test(test_bytes_limit_cuts_before_2_byte_utf8_lead_byte),
		cmocka_unit_test(test_bytes_limit_cuts_before_3_byte_utf8_lead_byte),
		cmocka_unit_test(test_bytes_limit_cuts_before_4_byte_utf8_lead_byte),
		cmocka_unit_test(test_utf8_sequence_ending_at_limit_is_kept),
		cmocka_unit_test(test_invalid_bytes_before_limit_count_as_single_bytes),
		cmocka_unit_test(test_stray_continuation_bytes_before_limit_are_kept),
		cmocka_unit_test(test_truncated_sequence_followed_by_ascii_is_kept),
		cmocka_unit_test(test_stats_count_final_partial_line),
		cmocka_unit_test(test_stats_count_dropped_bytes_and_lines),
		cmocka_unit_test(test_stats_partially_kept_line_is_not_dropped),
		cmocka_unit_test(test_stats_count_bytes_fed_after_cut),
		cmocka_unit_test(test_stats_before_finish_do_not_count_held_bytes_as_dropped),
		cmocka_unit_test(test_count_newlines),
		cmocka_unit_test(test_output_is_released_as_it_arrives_without_limits),
		cmocka_unit_test(test_only_last_three_bytes_below_limit_are_held),
		cmocka_unit_test(test_line_limit_output_is_released_before_finish),
		cmocka_unit_test(test_matches_reference_model_on_generated_inputs),
		cmocka_unit_test(test_one_byte_chunks_give_same_output_and_stats),
		cmocka_unit_test(test_every_split_point_gives_same_output_and_stats),
		cmocka_unit_test(test_random_splits_give_same_output_and_stats),
	};
	return cmocka_run_group_tests_name("shape", tests, NULL, NULL);
}
