/*
 * One binary rule (common/sniff.h): the daemon's shaper and read_file
 * call the same files text or binary, and name the same type. Each file
 * of one corpus (text, UTF-8, invalid UTF-8 on either side of the 10%
 * line, NUL bytes, a binary part after the window, the formats of the
 * type table, empty) goes through both paths as they run for real: fed
 * to a shaper that summarises binary output, and written to a temporary
 * root that front_read_file reads. Both answers must match each other
 * and the file's expectation; text must come out byte for byte.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "files.h"
#include "shape.h"
#include "sniff.h"

/* ───────────────────────── the corpus ───────────────────────── */

struct sample {
	const char *name;
	const char *type; /* the expected type of a binary file; NULL: text */
	uint8_t *bytes;
	size_t len;
};

#define MAX_SAMPLES 48

struct corpus {
	struct sample s[MAX_SAMPLES];
	size_t n;
};

static struct sample *add(struct corpus *c, const char *name, const char *type, size_t len)
{
	assert_true(c->n < MAX_SAMPLES);
	struct sample *s = &c->s[c->n++];
	*s = (struct sample){name, type, calloc(1, len + 1), len};
	assert_non_null(s->bytes);
	return s;
}

static void add_bytes(struct corpus *c, const char *name, const char *type, const void *p,
		      size_t len)
{
	memcpy(add(c, name, type, len)->bytes, p, len);
}

#define ADD_LITERAL(c, name, type, lit) add_bytes((c), (name), (type), (lit), sizeof(lit) - 1)

/* magic, then NUL bytes and a few others to 200 bytes: binary by the
 * NUL rule, typed by its first bytes. */
static void add_magic(struct corpus *c, const char *name, const char *type, const void *magic,
		      size_t len)
{
	struct sample *s = add(c, name, type, 200);
	memcpy(s->bytes, magic, len);
	for (size_t i = len; i < s->len; i++)
		s->bytes[i] = i % 3 ? 0 : (uint8_t)i;
}

#define ADD_MAGIC(c, name, type, lit) add_magic((c), (name), (type), (lit), sizeof(lit) - 1)

/* len bytes of 'a' lines, with `invalid` bytes 0xFF spread over them. */
static void add_invalid(struct corpus *c, const char *name, const char *type, size_t len,
			size_t invalid)
{
	struct sample *s = add(c, name, type, len);
	memset(s->bytes, 'a', len);
	for (size_t i = 39; i < len; i += 40)
		s->bytes[i] = '\n';
	for (size_t k = 0; k < invalid; k++)
		s->bytes[k * (len / invalid)] = 0xff;
}

static void build(struct corpus *c)
{
	ADD_LITERAL(c, "empty", NULL, "");
	ADD_LITERAL(c, "ascii.txt", NULL, "hello\nworld\n");
	ADD_LITERAL(c, "no-final-newline.txt", NULL, "a\nb");
	ADD_LITERAL(c, "utf8.txt", NULL, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n");
	ADD_LITERAL(c, "latin1.txt", "data", "caf\xe9\n");
	ADD_LITERAL(c, "utf16.txt", "data", "\xff\xfeh\0i\0\n\0");
	ADD_LITERAL(c, "nul.bin", "data", "abc\0def\n");
	/* A sequence cut by the end of the file does not count. */
	ADD_LITERAL(c, "cut-at-end.txt", NULL, "abcdefghijklmnopqrstuvwxyz\n\xe2\x82");
	ADD_LITERAL(c, "overlong.txt", "data", "\xc0\xaf\n");
	ADD_LITERAL(c, "surrogate.txt", "data", "x\xed\xa0\x80\n");
	/* 10% invalid is text; one byte more is binary. */
	add_invalid(c, "ten-percent.txt", NULL, SNIFF_WINDOW, SNIFF_WINDOW / 10);
	add_invalid(c, "over-ten-percent.txt", "data", SNIFF_WINDOW, SNIFF_WINDOW / 10 + 1);
	/* What comes after the window does not count: a text start makes text. */
	add_invalid(c, "invalid-after-window.txt", NULL, 4 * SNIFF_WINDOW, 0);
	memset(c->s[c->n - 1].bytes + SNIFF_WINDOW, 0xff, 3 * SNIFF_WINDOW);
	add_invalid(c, "nul-after-window.txt", NULL, 3 * SNIFF_WINDOW, 0);
	memset(c->s[c->n - 1].bytes + SNIFF_WINDOW + 100, 0, 50);
	add_invalid(c, "nul-at-window-end.bin", "data", 3 * SNIFF_WINDOW, 0);
	c->s[c->n - 1].bytes[SNIFF_WINDOW - 1] = 0;
	/* A character across the window's end is text. */
	add_invalid(c, "straddle.txt", NULL, SNIFF_WINDOW + 8, 0);
	memcpy(c->s[c->n - 1].bytes + SNIFF_WINDOW - 1, "\xe2\x82\xac", 3);
	/* Magic numbers of text are no type: it is text. */
	ADD_LITERAL(c, "mz-text.txt", NULL, "MZ is where this line starts\n");
	ADD_LITERAL(c, "pdf-text.pdf", NULL, "%PDF-1.4\n1 0 obj\n<< >>\nendobj\n");

	ADD_MAGIC(c, "elf", "ELF", "\x7f" "ELF\2\1\1");
	ADD_MAGIC(c, "gz", "gzip", "\x1f\x8b\x08");
	ADD_MAGIC(c, "bz2", "bzip2", "BZh91AY&SY");
	ADD_MAGIC(c, "xz", "xz", "\xfd" "7zXZ\0");
	ADD_MAGIC(c, "zst", "zstd", "\x28\xb5\x2f\xfd");
	ADD_MAGIC(c, "7z", "7-Zip archive", "7z\xbc\xaf\x27\x1c");
	ADD_MAGIC(c, "zip", "zip", "PK\x03\x04\x14");
	ADD_MAGIC(c, "empty.zip", "zip", "PK\x05\x06");
	ADD_MAGIC(c, "png", "PNG image", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
	ADD_MAGIC(c, "jpg", "JPEG image", "\xff\xd8\xff\xe0");
	ADD_MAGIC(c, "gif", "GIF image", "GIF89a");
	ADD_MAGIC(c, "pdf", "PDF document", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\nstream\n");
	ADD_MAGIC(c, "sqlite", "SQLite database", "SQLite format 3\0");
	ADD_MAGIC(c, "wasm", "WebAssembly module", "\0asm\1");
	ADD_MAGIC(c, "class", "Java class", "\xca\xfe\xba\xbe");
	ADD_MAGIC(c, "macho", "Mach-O executable", "\xcf\xfa\xed\xfe");
	ADD_MAGIC(c, "exe", "PE/MZ executable", "MZ\x90");
	ADD_MAGIC(c, "wav", "RIFF media (WAV, AVI, WebP)", "RIFF");
	ADD_MAGIC(c, "ogg", "Ogg media", "OggS");
	ADD_MAGIC(c, "unknown.bin", "data", "\x01\x02\x03");

	/* tar: a 512-byte header naming its file, "ustar" at 257. */
	struct sample *t = add(c, "tar", "tar archive", 1024);
	memcpy(t->bytes, "hello.txt", 9);
	memcpy(t->bytes + 100, "0000644", 8);
	memcpy(t->bytes + 257, "ustar\0" "00", 8);
	memcpy(t->bytes + 512, "hello\n", 6);

	/* Text longer than any budget the shaper holds in one piece. */
	struct sample *big = add(c, "big.txt", NULL, 200000);
	for (size_t i = 0; i < big->len; i++)
		big->bytes[i] = i % 50 == 49 ? '\n' : (uint8_t)('a' + i % 26);

	/* Noise: NUL bytes and invalid UTF-8 throughout. */
	struct sample *r = add(c, "random.bin", "data", 4096);
	uint32_t x = 12345;
	for (size_t i = 0; i < r->len; i++) {
		x = x * 1103515245 + 12345;
		r->bytes[i] = (uint8_t)(x >> 16);
	}
}

/* ───────────────────────── the two paths ───────────────────────── */

/* What one path said of a file. */
struct verdict {
	bool binary;
	char type[64];   /* binary: the type named in the summary */
	char sha256[65]; /* binary: the hash named in the summary */
	uint8_t *text;   /* text: what came out */
	size_t text_len;
};

/* The type and hash of the summary in out, "<prefix>N byte(s), TYPE,
 * sha256 HEX...", which starts at out[0] or, for the shaper, after the
 * whole lines of text that came before the first NUL or invalid byte. */
static void parse_summary(const char *out, const char *prefix, struct verdict *v)
{
	const char *line = strstr(out, prefix);
	assert_non_null(line);
	assert_true(line == out || line[-1] == '\n');
	const char *type = strstr(line, " byte");
	assert_non_null(type);
	type += strlen(" byte");
	type += *type == 's';
	assert_memory_equal(type, ", ", 2);
	type += 2;
	const char *end = strstr(type, ", sha256 ");
	assert_non_null(end);
	assert_true((size_t)(end - type) < sizeof(v->type));
	snprintf(v->type, sizeof(v->type), "%.*s", (int)(end - type), type);
	snprintf(v->sha256, sizeof(v->sha256), "%.64s", end + strlen(", sha256 "));
}

static void gather(void *ctx, const uint8_t *p, size_t n)
{
	struct verdict *v = ctx;
	uint8_t *grown = realloc(v->text, v->text_len + n + 1);
	assert_non_null(grown);
	memcpy(grown + v->text_len, p, n);
	v->text = grown;
	v->text_len += n;
	v->text[v->text_len] = '\0';
}

static void ignore(void *ctx, const uint8_t *p, size_t n)
{
	(void)ctx, (void)p, (void)n;
}

/* The shaper's path: the file as a command's stdout, in reads of 100
 * bytes, with binary = summary and no budget but the held maximum. */
static void by_shaper(const struct sample *s, struct verdict *v)
{
	const struct shape_opts o = {
		.mode = SHAPE_HEAD_TAIL, .binary_summary = true, .stream_name = "stdout",
	};
	struct shaper sh;
	struct shape_stats st;

	memset(v, 0, sizeof(*v));
	assert_int_equal(shaper_init(&sh, &o), 0);
	for (size_t at = 0; at < s->len; at += 100)
		shaper_feed(&sh, s->bytes + at, s->len - at < 100 ? s->len - at : 100, gather,
			    ignore, v);
	shaper_eof(&sh, gather, ignore, v);
	shaper_finish(&sh, NULL, gather, v);
	shaper_stats(&sh, &st);
	shaper_free(&sh);
	v->binary = st.binary;
	if (v->binary) {
		parse_summary((const char *)v->text, "[toolrun: binary stdout, ", v);
		assert_non_null(strstr((const char *)v->text, "; the whole stdout is not kept"));
	}
}

/* read_file's path: the file in a real root, read whole. */
static void by_read_file(const char *root, const struct sample *s, struct verdict *v)
{
	struct path_policy policy;
	struct front_error err;
	struct read_result res;
	char path[256];

	memset(v, 0, sizeof(*v));
	snprintf(path, sizeof(path), "%s/%s", root, s->name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, s->bytes, s->len), (ssize_t)s->len);
	close(fd);

	assert_int_equal(path_policy_init(&policy, root, NULL, &err), 0);
	struct read_request rq = {.path = s->name};
	if (front_read_file(&policy, NULL, &rq, &res, &err) < 0)
		fail_msg("%s: %s %s", s->name, err.code, err.message);
	path_policy_free(&policy);
	v->binary = res.binary;
	if (v->binary) {
		assert_memory_equal(res.text, "binary file, ", strlen("binary file, "));
		parse_summary(res.text, "binary file, ", v);
	}
	else
		gather(v, (const uint8_t *)res.text, res.text_len);
	read_result_free(&res);
}

/* ───────────────────────── the test ───────────────────────── */

static const char *kind(const struct verdict *v)
{
	return v->binary ? "binary" : "text";
}

/* Whether both paths agree with each other and with the expectation;
 * what does not is said on stderr, so that one run lists every file. */
static bool agree(const struct sample *s, const struct verdict *shaped,
		  const struct verdict *read)
{
	if (shaped->binary != read->binary || strcmp(shaped->type, read->type) != 0) {
		print_error("%s: the shaper says %s %s, read_file %s %s\n", s->name,
			    kind(shaped), shaped->type, kind(read), read->type);
		return false;
	}
	if (shaped->binary != (s->type != NULL)) {
		print_error("%s: both say %s, expected %s\n", s->name, kind(shaped),
			    s->type ? "binary" : "text");
		return false;
	}
	if (s->type && strcmp(shaped->type, s->type) != 0) {
		print_error("%s: both say %s, expected %s\n", s->name, shaped->type, s->type);
		return false;
	}
	if (s->type && strcmp(shaped->sha256, read->sha256) != 0) {
		print_error("%s: the SHA-256 differ\n", s->name);
		return false;
	}
	/* Text passes whole, byte for byte, both ways. */
	if (!s->type && (shaped->text_len != s->len || read->text_len != s->len ||
			 (s->len && (memcmp(shaped->text, s->bytes, s->len) != 0 ||
				     memcmp(read->text, s->bytes, s->len) != 0)))) {
		print_error("%s: the text did not come out whole\n", s->name);
		return false;
	}
	return true;
}

static void test_shaper_and_read_file_agree(void **state)
{
	(void)state;
	char root[] = "/tmp/test-sniff-XXXXXX";
	struct corpus c = {0};
	unsigned failures = 0;

	assert_non_null(mkdtemp(root));
	build(&c);
	for (size_t i = 0; i < c.n; i++) {
		const struct sample *s = &c.s[i];
		struct verdict shaped, read;
		by_shaper(s, &shaped);
		by_read_file(root, s, &read);
		print_message("# %-26s shaper: %-6s %-28s read_file: %-6s %s\n", s->name,
			      kind(&shaped), shaped.type, kind(&read), read.type);
		failures += !agree(s, &shaped, &read);
		free(shaped.text);
		free(read.text);
		free(s->bytes);
	}
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shaper_and_read_file_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
