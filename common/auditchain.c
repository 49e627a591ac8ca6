#include "auditchain.h"
#include "digest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

const char auditchain_zero[AUDITCHAIN_HEX_SIZE] =
	"0000000000000000000000000000000000000000000000000000000000000000";

int auditchain_hash(const void *line, size_t len, char hex[AUDITCHAIN_HEX_SIZE])
{
	digest_sha256_hex(line, len, hex);
	return 0;
}

int auditchain_hasher_init(struct auditchain_hasher *h)
{
	sha256_init(&h->ctx);
	return 0;
}

int auditchain_hasher_add(struct auditchain_hasher *h, const void *data, size_t len)
{
	sha256_update(&h->ctx, len, data);
	return 0;
}

int auditchain_hasher_end(struct auditchain_hasher *h, char hex[AUDITCHAIN_HEX_SIZE])
{
	digest_sha256_end_hex(&h->ctx, hex);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Verification                                                        */

enum line_kind {
	LINE_OK,
	LINE_NOT_JSON,
	LINE_NOT_OBJECT,
	LINE_NO_PREV,
};

/* What the verifier keeps of each line: enough to find where a line
 * that does not chain belongs. */
struct line_info {
	uint8_t hash[AUDITCHAIN_DIGEST];
	uint8_t prev[AUDITCHAIN_DIGEST];
	uint8_t kind;      /* enum line_kind */
	bool cut;          /* the last line of its file, without a '\n' */
	uint32_t file;     /* index into paths */
	uint64_t line;     /* from 1 */
};

struct verifier {
	const char *const *paths;
	struct line_info *v;
	size_t n, cap;
	struct auditchain_report *rep;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* upper case too: the writer never writes it */
}

/* The line's "prev", if it begins as the writer writes it:
 * {"prev":"<64 lowercase hex>" followed by ',' or '}'. */
static bool parse_prev(const char *s, size_t len, uint8_t out[AUDITCHAIN_DIGEST])
{
	size_t need = AUDITCHAIN_PREFIX_LEN + 2 * AUDITCHAIN_DIGEST + 2;

	if (len < need || memcmp(s, AUDITCHAIN_PREFIX, AUDITCHAIN_PREFIX_LEN) != 0)
		return false;
	s += AUDITCHAIN_PREFIX_LEN;
	for (size_t i = 0; i < AUDITCHAIN_DIGEST; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	s += 2 * AUDITCHAIN_DIGEST;
	return s[0] == '"' && (s[1] == ',' || s[1] == '}');
}

static enum line_kind classify(const char *s, size_t len, uint8_t prev[AUDITCHAIN_DIGEST])
{
	struct json_tokener *tok = json_tokener_new();
	enum line_kind kind = LINE_NOT_JSON;

	if (!tok)
		return LINE_NOT_JSON;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *o = len <= INT32_MAX ? json_tokener_parse_ex(tok, s, (int)len) : NULL;
	if (o && json_tokener_get_error(tok) == json_tokener_success &&
	    json_tokener_get_parse_end(tok) == len) {
		if (!json_object_is_type(o, json_type_object))
			kind = LINE_NOT_OBJECT;
		else if (!parse_prev(s, len, prev))
			kind = LINE_NO_PREV;
		else
			kind = LINE_OK;
	}
	json_object_put(o);
	json_tokener_free(tok);
	return kind;
}

static int add_line(struct verifier *V, uint32_t file, uint64_t lineno, const char *s,
		    size_t len, bool cut)
{
	if (V->n == V->cap) {
		size_t cap = V->cap ? 2 * V->cap : 1024;
		struct line_info *p = realloc(V->v, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		V->v = p;
		V->cap = cap;
	}
	struct line_info *li = &V->v[V->n];
	memset(li, 0, sizeof(*li));
	li->file = file;
	li->line = lineno;
	li->cut = cut;
	li->kind = (uint8_t)classify(s, len, li->prev);
	digest_sha256(s, len, li->hash);
	V->n++;
	return 0;
}

static int read_file(struct verifier *V, uint32_t file)
{
	const char *path = V->paths[file];
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0;
	uint64_t lineno = 0;
	int r = 0;

	if (!f) {
		r = -errno;
		snprintf(V->rep->error, sizeof(V->rep->error), "cannot open %s: %s", path,
			 strerror(-r));
		return r;
	}
	for (;;) {
		errno = 0;
		ssize_t n = getline(&buf, &cap, f);
		if (n < 0) {
			if (errno) {
				r = -errno;
				snprintf(V->rep->error, sizeof(V->rep->error), "cannot read %s: %s",
					 path, strerror(-r));
			}
			break;
		}
		bool cut = buf[n - 1] != '\n';
		r = add_line(V, file, ++lineno, buf, (size_t)n - !cut, cut);
		if (r < 0) {
			snprintf(V->rep->error, sizeof(V->rep->error), "%s:%llu: %s", path,
				 (unsigned long long)lineno, strerror(-r));
			break;
		}
	}
	free(buf);
	fclose(f);
	if (V->rep->file_lines)
		V->rep->file_lines[file] = lineno;
	V->rep->lines += lineno;
	return r;
}

/* "FILE:LINE" of line i, or "line N" when it is in the file of line
 * `in` (the one the message is about). */
static const char *where(const struct verifier *V, size_t i, size_t in, char *buf,
			 size_t len)
{
	const struct line_info *li = &V->v[i];

	if (li->file == V->v[in].file)
		snprintf(buf, len, "line %llu", (unsigned long long)li->line);
	else
		snprintf(buf, len, "%s:%llu", V->paths[li->file], (unsigned long long)li->line);
	return buf;
}

static int broken(struct verifier *V, size_t bad, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int broken(struct verifier *V, size_t bad, const char *fmt, ...)
{
	struct auditchain_report *rep = V->rep;
	const struct line_info *li = &V->v[bad];
	va_list ap;

	int n = snprintf(rep->error, sizeof(rep->error), "%s:%llu: ", V->paths[li->file],
			 (unsigned long long)li->line);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(rep->error))
		vsnprintf(rep->error + n, sizeof(rep->error) - (size_t)n, fmt, ap);
	va_end(ap);
	rep->bad_file = li->file;
	rep->bad_line = li->line;
	return AUDITCHAIN_BROKEN;
}

static bool same(const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, AUDITCHAIN_DIGEST) == 0;
}

/* The line whose hash is h, or n. */
static size_t find_hash(const struct verifier *V, const uint8_t *h)
{
	for (size_t j = 0; j < V->n; j++)
		if (same(V->v[j].hash, h))
			return j;
	return V->n;
}

/*
 * Line i (i > 0) does not chain to line i-1: say what most likely
 * happened, naming the line that was changed, inserted or moved.
 *   - its prev is the hash of an earlier line j: the lines between were
 *     inserted;
 *   - of a later line: lines were moved or swapped;
 *   - of no line, and the next line chains to line i-1: line i was
 *     inserted;
 *   - of no line, and the next line does not chain to line i either:
 *     line i itself was changed (its prev with it);
 *   - otherwise line i-1 was changed, or the lines after it removed
 *     (the two look the same: a removed line leaves nothing behind).
 */
static int diagnose(struct verifier *V, size_t i)
{
	const struct line_info *li = &V->v[i];
	uint8_t zero[AUDITCHAIN_DIGEST] = {0};
	char a[1100], b[1100], c[1100];

	if (same(li->prev, zero))
		return broken(V, i, "begins a new chain (prev is all zeros) where it should "
			      "chain to %s: the lines before it were replaced or truncated",
			      where(V, i - 1, i, a, sizeof(a)));
	size_t j = find_hash(V, li->prev);
	if (j < i - 1) {
		if (j + 1 == i - 1)
			return broken(V, j + 1, "inserted: %s chains to the line before it",
				      where(V, i, j + 1, a, sizeof(a)));
		return broken(V, j + 1, "inserted, with the lines after it up to %s: %s "
			      "chains to %s", where(V, i - 1, j + 1, a, sizeof(a)),
			      where(V, i, j + 1, b, sizeof(b)),
			      where(V, j, j + 1, c, sizeof(c)));
	}
	if (j < V->n && j > i)
		return broken(V, i, "out of order: it chains to %s, which comes after it "
			      "(lines moved or swapped)", where(V, j, i, a, sizeof(a)));
	if (i + 1 < V->n && V->v[i + 1].kind == LINE_OK) {
		const struct line_info *next = &V->v[i + 1];
		if (same(next->prev, V->v[i - 1].hash))
			return broken(V, i, "inserted: the line after it chains to the line "
				      "before it");
		if (!same(next->prev, li->hash))
			return broken(V, i, "changed: neither does it chain to the line before "
				      "it nor the line after it to it");
	}
	return broken(V, i - 1, "changed, or the lines after it removed: %s does not "
		      "chain to it", where(V, i, i - 1, a, sizeof(a)));
}

static int check(struct verifier *V)
{
	for (size_t i = 0; i < V->n; i++) {
		const struct line_info *li = &V->v[i];
		const char *cut = li->cut ? " (cut short: no newline at its end)" : "";
		switch ((enum line_kind)li->kind) {
		case LINE_NOT_JSON:
			return broken(V, i, "not JSON%s", cut);
		case LINE_NOT_OBJECT:
			return broken(V, i, "not a JSON object");
		case LINE_NO_PREV:
			return broken(V, i, "does not begin with the chain member "
				      "\"prev\" (64 lowercase hex digits)");
		case LINE_OK:
		default:
			break;
		}
		/* The first line given may follow a file rotated away. */
		if (i > 0 && !same(li->prev, V->v[i - 1].hash))
			return diagnose(V, i);
	}
	return AUDITCHAIN_INTACT;
}

int auditchain_verify(const char *const paths[], size_t n,
		      struct auditchain_report *report)
{
	struct verifier V = {.paths = paths, .rep = report};
	int r = 0;

	report->lines = 0;
	report->error[0] = '\0';
	report->bad_file = 0;
	report->bad_line = 0;
	for (size_t f = 0; f < n && r == 0; f++)
		r = read_file(&V, (uint32_t)f);
	if (r == 0)
		r = check(&V);
	free(V.v);
	return r;
}
