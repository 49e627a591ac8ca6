/*
 * libFuzzer harness for the scanner of `toolrun tags` (front/core/tagscan.c):
 * a model's text is bytes from outside. For any input:
 *   - the events (text, commands, errors) are the same whether the input
 *     comes whole or cut in pieces at places the input itself chooses:
 *     one code path, whatever the stream's rhythm;
 *   - commands and errors are numbered 1, 2, 3... in order, on lines
 *     that never go back;
 *   - an argument and a write's content are NUL-terminated and within
 *     their limits;
 *   - no byte of text is invented: the text passed on is never longer
 *     than the input.
 * AddressSanitizer and UndefinedBehaviorSanitizer watch every access.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tagscan.h"

/* The events of one scan, written one after another into a buffer. */
struct record {
	uint8_t *buf;
	size_t len, cap;
	size_t text_bytes;
	uint64_t next_index, last_line;
};

static void put(struct record *r, const void *p, size_t n)
{
	if (r->len + n > r->cap) {
		size_t cap = (r->len + n) * 2;
		uint8_t *b = realloc(r->buf, cap);
		CHECK(b != NULL);
		r->buf = b;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
}

static void on_text(void *arg, const char *p, size_t n)
{
	struct record *r = arg;
	/* Text pieces may be cut differently: record the bytes only. */
	put(r, p, n);
	r->text_bytes += n;
}

static void put_command(struct record *r, char type, const struct tag_command *c)
{
	CHECK(c->index == r->next_index + 1);
	CHECK(c->line >= r->last_line);
	r->next_index = c->index;
	r->last_line = c->line;
	CHECK(c->argument != NULL && c->argument[c->argument_len] == '\0');
	CHECK(c->argument_len <= TAG_MAX_ARGUMENT);
	CHECK(!c->content || c->content[c->content_len] == '\0');
	CHECK(c->content_len <= TAG_MAX_CONTENT);
	CHECK(tag_kind_name(c->kind) != NULL);
	put(r, "\x01", 1);
	put(r, &type, 1);
	put(r, &c->kind, sizeof(c->kind));
	put(r, &c->index, sizeof(c->index));
	put(r, &c->line, sizeof(c->line));
	put(r, &c->argument_len, sizeof(c->argument_len));
	put(r, c->argument, c->argument_len);
	put(r, &c->content_len, sizeof(c->content_len));
	if (c->content)
		put(r, c->content, c->content_len);
}

static void on_command(void *arg, const struct tag_command *c)
{
	put_command(arg, 'c', c);
}

static void on_error(void *arg, const struct tag_command *c, const struct front_error *e)
{
	struct record *r = arg;

	CHECK(e->category == FRONT_SYNTAX || e->category == FRONT_RESOURCE);
	CHECK(e->code[0] != '\0' && strlen(e->message) < sizeof(e->message));
	put_command(r, 'e', c);
	put(r, e->code, strlen(e->code));
}

static const struct tag_scanner_ops ops = {on_text, on_command, on_error};

/* Scan data, cut after each of the cut points (offsets, ascending). */
static void scan(const uint8_t *data, size_t size, const size_t *cuts, size_t ncuts,
		 struct record *r)
{
	struct tag_scanner *s = tag_scanner_new(&ops, r);
	size_t at = 0;

	CHECK(s != NULL);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : size;
		tag_scanner_feed(s, (const char *)data + at, end - at);
		at = end;
	}
	tag_scanner_end(s);
	tag_scanner_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct record whole = {0}, pieces = {0};
	size_t cuts[16], ncuts = 0;

	/* The cut points come from the input: one every (byte % 7) + 1
	 * bytes, from its first bytes, so that the fuzzer explores them. */
	for (size_t at = 0, i = 0; i < size && ncuts < 16; i++) {
		at += (size_t)(data[i] % 7) + 1;
		if (at >= size)
			break;
		cuts[ncuts++] = at;
	}
	scan(data, size, NULL, 0, &whole);
	scan(data, size, cuts, ncuts, &pieces);
	CHECK(whole.text_bytes <= size);
	CHECK(whole.len == pieces.len &&
	      (whole.len == 0 || memcmp(whole.buf, pieces.buf, whole.len) == 0));
	free(whole.buf);
	free(pieces.buf);
	return 0;
}
