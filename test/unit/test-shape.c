/*
 * Unit tests for daemon/rules/shape.c and common/sniff.c: what of an output
 * stream reaches the agent. daemon/rules/shape.h states the rule checked here;
 * test/differential/shape-ref.py is a second implementation of it. The
 * property tests at the end check that the way a stream is split into
 * reads changes nothing, and that spill gets exactly the whole stream.
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
#include "sniff.h"

/* ───────────────────────── helpers ───────────────────────── */

struct sink {
	uint8_t *data;
	size_t len, cap;
	unsigned calls;
};

static void sink_add(struct sink *s, const uint8_t *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 64;
		while (cap < s->len + n + 1)
			cap *= 2;
		uint8_t *grown = realloc(s->data, cap);
		assert_non_null(grown);
		s->data = grown;
		s->cap = cap;
	}
	if (n)
		memcpy(s->data + s->len, p, n);
	s->len += n;
	s->data[s->len] = '\0';
	s->calls++;
}

struct result {
	struct sink out, spill;
	struct shape_stats st;
	bool draining, spilling;
};

static void on_emit(void *ctx, const uint8_t *p, size_t n)
{
	sink_add(&((struct result *)ctx)->out, p, n);
}

static void on_spill(void *ctx, const uint8_t *p, size_t n)
{
	sink_add(&((struct result *)ctx)->spill, p, n);
}

static void result_free(struct result *r)
{
	free(r->out.data);
	free(r->spill.data);
	memset(r, 0, sizeof(*r));
}

static const struct shape_end not_kept = {.spill_error = "spill_dir is empty"};

/* Shape in[0..len) fed `step` bytes at a time (0: all at once). */
static void shape_step(const uint8_t *in, size_t len, const struct shape_opts *o,
		       size_t step, const struct shape_end *end, struct result *r)
{
	struct shaper s;

	memset(r, 0, sizeof(*r));
	assert_int_equal(shaper_init(&s, o), 0);
	for (size_t at = 0; at < len;) {
		size_t n = step && step < len - at ? step : len - at;
		shaper_feed(&s, in + at, n, on_emit, on_spill, r);
		at += n;
	}
	shaper_eof(&s, on_emit, on_spill, r);
	r->draining = shaper_draining(&s);
	r->spilling = shaper_spilling(&s);
	shaper_finish(&s, end, on_emit, r);
	shaper_stats(&s, &r->st);
	shaper_free(&s);
}

static struct shape_opts opts(uint64_t b, uint64_t l, enum shape_mode mode)
{
	return (struct shape_opts){.max_bytes = b, .max_lines = l, .mode = mode,
				   .binary_summary = true, .stream_name = "stdout"};
}

/* Shape a string and compare with the expected text, whole and fed one
 * byte at a time. */
static void check(const char *in, uint64_t b, uint64_t l, enum shape_mode mode,
		  const char *want)
{
	struct shape_opts o = opts(b, l, mode);
	struct result r;

	for (size_t step = 0; step < 2; step++) {
		shape_step((const uint8_t *)in, strlen(in), &o, step, &not_kept, &r);
		assert_string_equal((const char *)(r.out.data ? r.out.data : (uint8_t *)""), want);
		result_free(&r);
	}
}

#define NK "; the whole stdout is not kept: spill_dir is empty]\n"

/* ───────────────────────── budgets ───────────────────────── */

static void test_within_budget(void **state)
{
	(void)state;
	static const enum shape_mode modes[] = {SHAPE_HEAD, SHAPE_TAIL, SHAPE_HEAD_TAIL};
	for (int m = 0; m < 3; m++) {
		check("0123456789", 10, 0, modes[m], "0123456789");
		check("a\nb\nc\n", 0, 3, modes[m], "a\nb\nc\n");
		check("a\nb\nc", 6, 3, modes[m], "a\nb\nc");
		check("", 1, 1, modes[m], "");
	}
}

static void test_one_byte_over(void **state)
{
	(void)state;
	check("0123456789A", 10, 0, SHAPE_HEAD,
	      "0123456789\n...[toolrun cut 1 byte of stdout here: byte 11 of 11, the rest of line 1" NK);
	check("0123456789A", 10, 0, SHAPE_TAIL,
	      "...[toolrun cut 1 byte of stdout here: byte 1 of 11, the start of line 1" NK
	      "123456789A");
	check("0123456789A", 10, 0, SHAPE_HEAD_TAIL,
	      "01234\n...[toolrun cut 1 byte of stdout here: byte 6 of 11, inside line 1" NK
	      "6789A");
}

static void test_one_line_over(void **state)
{
	(void)state;
	check("a\nb\nc\n", 0, 2, SHAPE_HEAD,
	      "a\nb\n...[toolrun cut 1 line (2 bytes) of stdout here: line 3 of 3" NK);
	check("a\nb\nc", 0, 2, SHAPE_HEAD,
	      "a\nb\n...[toolrun cut 1 line (1 byte) of stdout here: line 3 of 3" NK);
	check("a\nb\nc\n", 0, 2, SHAPE_TAIL,
	      "...[toolrun cut 1 line (2 bytes) of stdout here: line 1 of 3" NK "b\nc\n");
	check("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", 0, 4, SHAPE_HEAD_TAIL,
	      "1\n2\n...[toolrun cut 6 lines (12 bytes) of stdout here: lines 3-8 of 10" NK
	      "9\n10\n");
	/* One line: no head part, the last line. */
	check("a\nb\nc\n", 0, 1, SHAPE_HEAD_TAIL,
	      "...[toolrun cut 2 lines (4 bytes) of stdout here: lines 1-2 of 3" NK "c\n");
}

/* ───────────────────────── the marker ───────────────────────── */

static void test_marker_inside_lines(void **state)
{
	(void)state;
	/* A line longer than the budget. */
	check("xxxxxxxxxxyyyyyyyyyyzzzzzzzzzz", 10, 0, SHAPE_HEAD_TAIL,
	      "xxxxx\n...[toolrun cut 20 bytes of stdout here: bytes 6-25 of 30, inside line 1" NK
	      "zzzzz");
	/* From inside one line to inside another. */
	check("aaaa\nbbbb\ncccc\ndddd\n", 4, 0, SHAPE_HEAD_TAIL,
	      "aa\n...[toolrun cut 16 bytes of stdout here: bytes 3-18 of 20, the rest of "
	      "line 1, lines 2-3 and the start of line 4" NK "d\n");
	check("aaaa\nbbbb\ncccc\n", 6, 0, SHAPE_HEAD_TAIL,
	      "aaa\n...[toolrun cut 9 bytes of stdout here: bytes 4-12 of 15, the rest of "
	      "line 1, line 2 and the start of line 3" NK "cc\n");
	check("aaaa\nbbbb\n", 4, 0, SHAPE_HEAD_TAIL,
	      "aa\n...[toolrun cut 6 bytes of stdout here: bytes 3-8 of 10, the rest of "
	      "line 1 and the start of line 2" NK "b\n");
	/* A whole line, then the start of the next (the last). */
	check("aaaa\nbbbb\ncccc\n", 0, 0, SHAPE_TAIL, "aaaa\nbbbb\ncccc\n");
	check("aaaa\nbbbb", 3, 0, SHAPE_TAIL,
	      "...[toolrun cut 6 bytes of stdout here: bytes 1-6 of 9, line 1 and the "
	      "start of line 2" NK "bbb");
	/* The budget cuts a line while whole ones are there: the cut moves
	 * to a line's end (the head) or start (the tail). */
	check("aaaa\nbbbb\ncccc\n", 7, 0, SHAPE_TAIL,
	      "...[toolrun cut 2 lines (10 bytes) of stdout here: lines 1-2 of 3" NK "cccc\n");
	check("line one\nline two\nline three\nline four\nline five\n", 24, 0, SHAPE_HEAD_TAIL,
	      "line one\n...[toolrun cut 3 lines (30 bytes) of stdout here: lines 2-4 of 5" NK
	      "line five\n");
	/* The rest of a line and the lines after it. */
	check("aaaa\nbbbb\ncccc\n", 3, 0, SHAPE_HEAD,
	      "aaa\n...[toolrun cut 12 bytes of stdout here: bytes 4-15 of 15, the rest of "
	      "line 1 and lines 2-3" NK);
}

static void test_marker_where(void **state)
{
	(void)state;
	struct shape_opts o = opts(0, 1, SHAPE_HEAD);
	struct shape_end kept = {.spill_path = "/tmp/toolrun-output/1000/x.log"};
	struct shape_end partial = {.spill_path = "/s/y.log", .spill_partial = true,
				    .spill_bytes = 4};
	const uint8_t in[] = "a\nb\n";
	struct result r;

	o.program = "cat";
	shape_step(in, 4, &o, 0, &kept, &r);
	assert_string_equal((char *)r.out.data,
			    "a\n...[toolrun cut 1 line (2 bytes) of cat's stdout here: line 2 of 2; "
			    "the whole stdout is in /tmp/toolrun-output/1000/x.log]\n");
	result_free(&r);
	o.program = NULL;
	o.stream_name = "stderr";
	shape_step(in, 4, &o, 0, &partial, &r);
	assert_string_equal((char *)r.out.data,
			    "a\n...[toolrun cut 1 line (2 bytes) of stderr here: line 2 of 2; "
			    "the whole stderr is in /s/y.log (partial: its first 4 bytes)]\n");
	result_free(&r);
	shape_step(in, 4, &o, 0, NULL, &r);
	assert_string_equal((char *)r.out.data,
			    "a\n...[toolrun cut 1 line (2 bytes) of stderr here: line 2 of 2; "
			    "the whole stderr is not kept]\n");
	result_free(&r);
}

/* ───────────────────────── UTF-8 at the edges ───────────────────────── */

static void test_utf8_head_edge(void **state)
{
	(void)state;
	/* 2-, 3- and 4-byte sequences that fit, then that cross. */
	check("a\xc3\xa9z", 3, 0, SHAPE_HEAD,
	      "a\xc3\xa9\n...[toolrun cut 1 byte of stdout here: byte 4 of 4, the rest of line 1" NK);
	check("a\xc3\xa9z", 2, 0, SHAPE_HEAD,
	      "a\n...[toolrun cut 3 bytes of stdout here: bytes 2-4 of 4, the rest of line 1" NK);
	check("ab\xe6\x97\xa5z", 4, 0, SHAPE_HEAD,
	      "ab\n...[toolrun cut 4 bytes of stdout here: bytes 3-6 of 6, the rest of line 1" NK);
	check("a\xf0\x9f\x98\x80z", 4, 0, SHAPE_HEAD,
	      "a\n...[toolrun cut 5 bytes of stdout here: bytes 2-6 of 6, the rest of line 1" NK);
	check("a\xf0\x9f\x98\x80z", 5, 0, SHAPE_HEAD,
	      "a\xf0\x9f\x98\x80\n...[toolrun cut 1 byte of stdout here: byte 6 of 6, the rest of line 1" NK);
}

static void test_utf8_tail_edge(void **state)
{
	(void)state;
	check("a\xc3\xa9z", 2, 0, SHAPE_TAIL,
	      "...[toolrun cut 3 bytes of stdout here: bytes 1-3 of 4, the start of line 1" NK "z");
	check("a\xe6\x97\xa5z", 3, 0, SHAPE_TAIL,
	      "...[toolrun cut 4 bytes of stdout here: bytes 1-4 of 5, the start of line 1" NK "z");
	check("a\xf0\x9f\x98\x80z", 4, 0, SHAPE_TAIL,
	      "...[toolrun cut 5 bytes of stdout here: bytes 1-5 of 6, the start of line 1" NK "z");
	check("a\xf0\x9f\x98\x80z", 5, 0, SHAPE_TAIL,
	      "...[toolrun cut 1 byte of stdout here: byte 1 of 6, the start of line 1" NK
	      "\xf0\x9f\x98\x80z");
	/* Nothing of the window is a whole character. */
	check("\xf0\x9f\x98\x80xyz\n", 2, 0, SHAPE_TAIL,
	      "...[toolrun cut 6 bytes of stdout here: bytes 1-6 of 8, the start of line 1" NK "z\n");
}

/* ───────────────────────── binary ───────────────────────── */

static void test_binary_detection(void **state)
{
	(void)state;
	uint8_t w[SHAPE_SNIFF];

	assert_true(sniff_binary((const uint8_t *)"a\0b", 3));
	assert_false(sniff_binary((const uint8_t *)"plain \xc3\xa9 text\n", 14));
	/* 10 invalid bytes in 100 is not more than 10%; 11 is. */
	memset(w, 'a', 100);
	memset(w, 0x80, 10);
	assert_false(sniff_binary(w, 100));
	w[10] = 0xff;
	assert_true(sniff_binary(w, 100));
	/* Overlong forms and surrogates are invalid. */
	memset(w, 'a', 10);
	memcpy(w, "\xc0\xaf\xed\xa0\x80", 5);
	assert_true(sniff_binary(w, 10));
	/* 102 invalid bytes in 1024 is text; a sequence cut by the end of
	 * the window would be the 103rd, but does not count. */
	memset(w, 'a', sizeof(w));
	memset(w, 0x80, 102);
	w[SHAPE_SNIFF - 1] = 0xe6;
	assert_false(sniff_binary(w, sizeof(w)));
	w[SHAPE_SNIFF - 2] = 0xe6; /* followed by a lead byte: invalid */
	assert_true(sniff_binary(w, sizeof(w)));
}

/* A slow program's first lines reach the agent before the binary check
 * has its 1024 bytes; output that then proves binary ends in the summary,
 * on a line of its own, and the file still gets every byte. */
static void test_text_lines_pass_while_sniffing(void **state)
{
	(void)state;
	struct shape_opts o = opts(4000, 200, SHAPE_HEAD_TAIL);
	struct shaper sh;
	struct result r = {0};

	assert_int_equal(shaper_init(&sh, &o), 0);
	shaper_feed(&sh, (const uint8_t *)"starting\nhalf", 13, on_emit, on_spill, &r);
	assert_int_equal(r.out.len, 9);
	assert_memory_equal(r.out.data, "starting\n", 9);
	shaper_feed(&sh, (const uint8_t *)" a line\n", 8, on_emit, on_spill, &r);
	assert_string_equal((char *)r.out.data, "starting\nhalf a line\n");
	/* Not text: nothing more passes until the check decides. */
	shaper_feed(&sh, (const uint8_t *)"\x7f" "ELF\0\n", 6, on_emit, on_spill, &r);
	assert_string_equal((char *)r.out.data, "starting\nhalf a line\n");
	shaper_eof(&sh, on_emit, on_spill, &r);
	assert_int_equal(r.spill.len, 27);
	assert_memory_equal(r.spill.data, "starting\nhalf a line\n\x7f" "ELF\0\n", 27);
	shaper_finish(&sh, &not_kept, on_emit, &r);
	assert_true(strncmp((char *)r.out.data,
			    "starting\nhalf a line\n[toolrun: binary stdout, 27 bytes, data, sha256 ",
			    68) == 0);
	shaper_stats(&sh, &r.st);
	assert_true(r.st.binary);
	assert_int_equal(r.st.bytes_seen, 27);
	assert_int_equal(r.st.bytes_dropped, 6);
	shaper_free(&sh);
	result_free(&r);

	/* Text that stays text: the same bytes as fed at once. */
	assert_int_equal(shaper_init(&sh, &o), 0);
	shaper_feed(&sh, (const uint8_t *)"one\n", 4, on_emit, on_spill, &r);
	assert_string_equal((char *)r.out.data, "one\n");
	shaper_feed(&sh, (const uint8_t *)"two\nthree", 9, on_emit, on_spill, &r);
	shaper_finish(&sh, &not_kept, on_emit, &r);
	assert_string_equal((char *)r.out.data, "one\ntwo\nthree");
	assert_int_equal(r.spill.len, 0);
	shaper_free(&sh);
	result_free(&r);
}

static void test_binary_summary(void **state)
{
	(void)state;
	struct shape_opts o = opts(100, 10, SHAPE_HEAD_TAIL);
	struct shape_end kept = {.spill_path = "/s/b.bin"};
	struct result r;

	shape_step((const uint8_t *)"", 1, &o, 0, &kept, &r);
	assert_string_equal((char *)r.out.data,
			    "[toolrun: binary stdout, 1 byte, data, sha256 "
			    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d; "
			    "the whole stdout is in /s/b.bin]\n");
	assert_int_equal(r.spill.len, 1);
	assert_true(r.st.binary);
	assert_int_equal(r.st.bytes_dropped, 1);
	result_free(&r);

	/* Longer than the sniffed bytes, fed in pieces. */
	uint8_t elf[4 + 256 * 8];
	memcpy(elf, "\x7f" "ELF", 4);
	for (size_t i = 0; i < 256 * 8; i++)
		elf[4 + i] = (uint8_t)i;
	o.program = "cat";
	for (size_t step = 0; step < 1000; step += 333) {
		shape_step(elf, sizeof(elf), &o, step, &not_kept, &r);
		assert_string_equal((char *)r.out.data,
				    "[toolrun: binary stdout of cat, 2052 bytes, ELF, sha256 "
				    "f7dba026b1407c6edf8640e978a7d015501d1de418b55dedd88f2e35c487d765"
				    NK);
		assert_int_equal(r.spill.len, sizeof(elf));
		assert_memory_equal(r.spill.data, elf, sizeof(elf));
		assert_true(r.draining);
		assert_true(r.spilling);
		result_free(&r);
	}
	/* binary = pass: shaped as text. */
	o.binary_summary = false;
	shape_step((const uint8_t *)"a\0b", 3, &o, 0, &not_kept, &r);
	assert_memory_equal(r.out.data, "a\0b", 3);
	assert_int_equal(r.out.len, 3);
	result_free(&r);
}

static void test_type_guess(void **state)
{
	(void)state;
	uint8_t tar[512] = {0};

	memcpy(tar + 257, "ustar", 5);
	assert_string_equal(sniff_type(tar, sizeof(tar)), "tar archive");
	assert_string_equal(sniff_type(tar, 260), "data");
	assert_string_equal(sniff_type((const uint8_t *)"\x1f\x8b\x08", 3), "gzip");
	assert_string_equal(sniff_type((const uint8_t *)"\x89PNG\r\n\x1a\n..", 10), "PNG image");
	assert_string_equal(sniff_type((const uint8_t *)"\xff\xd8\xff\xe0", 4), "JPEG image");
	assert_string_equal(sniff_type((const uint8_t *)"PK\x03\x04", 4), "zip");
	assert_string_equal(sniff_type((const uint8_t *)"\xfd" "7zXZ\0", 6), "xz");
	assert_string_equal(sniff_type((const uint8_t *)"\x28\xb5\x2f\xfd", 4), "zstd");
	assert_string_equal(sniff_type((const uint8_t *)"SQLite format 3\0", 16), "SQLite database");
	assert_string_equal(sniff_type((const uint8_t *)"\0asm\1\0\0\0", 8), "WebAssembly module");
	assert_string_equal(sniff_type((const uint8_t *)"\xca\xfe\xba\xbe", 4), "Java class");
	assert_string_equal(sniff_type((const uint8_t *)"MZ\x90\0", 4), "PE/MZ executable");
	assert_string_equal(sniff_type((const uint8_t *)"\0\1\2", 3), "data");
}

/* ───────────────────────── stats and state ───────────────────────── */

static void test_stats(void **state)
{
	(void)state;
	struct shape_opts o = opts(0, 4, SHAPE_HEAD_TAIL);
	const char *in = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10";
	struct result r;

	shape_step((const uint8_t *)in, strlen(in), &o, 0, &not_kept, &r);
	assert_int_equal(r.st.bytes_seen, strlen(in));
	assert_int_equal(r.st.lines_seen, 10);
	assert_int_equal(r.st.bytes_dropped, 12);
	assert_int_equal(r.st.lines_dropped, 6);
	assert_true(r.draining);
	assert_true(r.spilling);
	result_free(&r);

	/* A long line cut inside: bytes dropped, no whole line. */
	o = opts(10, 0, SHAPE_HEAD);
	shape_step((const uint8_t *)"0123456789ABCDEF\n", 17, &o, 0, &not_kept, &r);
	assert_int_equal(r.st.bytes_dropped, 7);
	assert_int_equal(r.st.lines_dropped, 0);
	result_free(&r);
}

static void test_draining(void **state)
{
	(void)state;
	struct shape_opts o = opts(10, 0, SHAPE_HEAD);
	struct shaper s;
	struct result r = {0};

	o.binary_summary = false; /* else the first bytes wait for the check */
	assert_int_equal(shaper_init(&s, &o), 0);
	shaper_feed(&s, (const uint8_t *)"0123456789", 10, on_emit, on_spill, &r);
	assert_false(shaper_draining(&s)); /* exactly at the budget: not cut */
	assert_false(shaper_spilling(&s));
	shaper_feed(&s, (const uint8_t *)"A", 1, on_emit, on_spill, &r);
	assert_true(shaper_draining(&s));
	assert_true(shaper_spilling(&s));
	shaper_finish(&s, &not_kept, on_emit, &r);
	shaper_free(&s);
	result_free(&r);
}

/* ───────────────────────── properties ───────────────────────── */

static size_t random_input(uint8_t *buf, size_t cap, unsigned *seed)
{
	static const char *pieces[] = {"a", "b", "\n", "xyz\n", "\xc3\xa9", "\xe6\x97\xa5",
				       "\xf0\x9f\x98\x80", "\x80", "\n\n"};
	size_t len = 0, want = (size_t)rand_r(seed) % cap;

	while (len + 4 < want) {
		const char *p = pieces[(size_t)rand_r(seed) % 9];
		/* Mostly valid text, so that most inputs are not binary. */
		if (p[0] == '\x80' && rand_r(seed) % 8)
			continue;
		memcpy(buf + len, p, strlen(p));
		len += strlen(p);
	}
	return len;
}

/* Fed whole, byte by byte or in random pieces: the same output; spill
 * gets the whole stream exactly when it is cut. */
static void test_chunking_and_spill(void **state)
{
	(void)state;
	static const enum shape_mode modes[] = {SHAPE_HEAD, SHAPE_TAIL, SHAPE_HEAD_TAIL};
	unsigned seed = 1;
	uint8_t in[600];

	for (int it = 0; it < 3000; it++) {
		size_t len = random_input(in, sizeof(in), &seed);
		struct shape_opts o = opts((uint64_t)rand_r(&seed) % 80,
					   (uint64_t)rand_r(&seed) % 12, modes[it % 3]);
		struct result whole, piece;

		o.binary_summary = it % 2;
		shape_step(in, len, &o, 0, &not_kept, &whole);
		for (size_t step = 1; step < 8; step += 3) {
			shape_step(in, len, &o, step, &not_kept, &piece);
			assert_int_equal(piece.out.len, whole.out.len);
			if (whole.out.len)
				assert_memory_equal(piece.out.data, whole.out.data, whole.out.len);
			assert_int_equal(piece.spill.len, whole.spill.len);
			result_free(&piece);
		}
		bool cut = whole.out.len != len ||
			   (len && memcmp(whole.out.data, in, len) != 0);
		assert_int_equal(whole.spilling, cut);
		if (cut) {
			assert_int_equal(whole.spill.len, len);
			assert_memory_equal(whole.spill.data, in, len);
		} else {
			assert_int_equal(whole.spill.calls, 0);
		}
		result_free(&whole);
	}
}

/* No byte budget: SHAPE_HOLD_MAX is the budget. */
static void test_hold_max(void **state)
{
	(void)state;
	size_t len = SHAPE_HOLD_MAX + 100;
	uint8_t *in = malloc(len);
	struct shape_opts o = opts(0, 0, SHAPE_HEAD_TAIL);
	struct result r;

	assert_non_null(in);
	memset(in, 'x', len);
	shape_step(in, len, &o, 4096, &not_kept, &r);
	assert_int_equal(r.st.bytes_dropped, 100);
	assert_int_equal(r.spill.len, len);
	result_free(&r);
	shape_step(in, SHAPE_HOLD_MAX, &o, 4096, &not_kept, &r);
	assert_int_equal(r.out.len, SHAPE_HOLD_MAX);
	assert_int_equal(r.spill.calls, 0);
	result_free(&r);
	free(in);
}


/* A prompt without '\n' held back (the sniff, the head's last line) goes
 * out on shaper_settle; a cut later still ends the head there, with the
 * marker on a line of its own. */
static void test_settle_lets_a_prompt_out(void **state)
{
	struct shape_opts o = opts(40, 0, SHAPE_HEAD_TAIL);
	struct shaper sh;
	struct result r = {0};
	(void)state;

	o.binary_summary = true;
	assert_int_equal(shaper_init(&sh, &o), 0);
	shaper_feed(&sh, (const uint8_t *)"ok\nname? ", 9, on_emit, on_spill, &r);
	assert_string_equal((const char *)r.out.data, "ok\n");
	shaper_settle(&sh, on_emit, on_spill, &r);
	assert_string_equal((const char *)r.out.data, "ok\nname? ");
	shaper_settle(&sh, on_emit, on_spill, &r); /* nothing more to let out */
	assert_int_equal(r.out.len, 9);

	/* Far past the budget: the head is what went out, then the marker. */
	for (int i = 0; i < 20; i++)
		shaper_feed(&sh, (const uint8_t *)"0123456789\n", 11, on_emit, on_spill, &r);
	shaper_finish(&sh, &not_kept, on_emit, &r);
	const char *out = (const char *)r.out.data;
	assert_memory_equal(out, "ok\nname? ", 9);
	const char *marker = strstr(out, "...[toolrun cut ");
	assert_non_null(marker);
	assert_true(marker > out && marker[-1] == '\n');
	assert_true(sh.dropped_bytes > 0);
	shaper_free(&sh);
	result_free(&r);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_within_budget),
		cmocka_unit_test(test_one_byte_over),
		cmocka_unit_test(test_one_line_over),
		cmocka_unit_test(test_marker_inside_lines),
		cmocka_unit_test(test_marker_where),
		cmocka_unit_test(test_utf8_head_edge),
		cmocka_unit_test(test_utf8_tail_edge),
		cmocka_unit_test(test_binary_detection),
		cmocka_unit_test(test_binary_summary),
		cmocka_unit_test(test_text_lines_pass_while_sniffing),
		cmocka_unit_test(test_type_guess),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_draining),
		cmocka_unit_test(test_chunking_and_spill),
		cmocka_unit_test(test_hold_max),
		cmocka_unit_test(test_settle_lets_a_prompt_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
