#include "sniff.h"

#include <string.h>

/* The bytes allowed after a lead byte (Unicode, table 3-7): the second
 * byte's range, which rules out overlong forms, surrogates and code
 * points past U+10FFFF, and how many continuation bytes follow. */
struct utf8_lead {
	uint8_t len;    /* 0: not a lead byte */
	uint8_t lo, hi; /* the second byte's range */
};

static struct utf8_lead utf8_lead(uint8_t c)
{
	if (c >= 0xC2 && c <= 0xDF)
		return (struct utf8_lead){2, 0x80, 0xBF};
	if (c == 0xE0)
		return (struct utf8_lead){3, 0xA0, 0xBF};
	if (c == 0xED)
		return (struct utf8_lead){3, 0x80, 0x9F};
	if (c >= 0xE1 && c <= 0xEF)
		return (struct utf8_lead){3, 0x80, 0xBF};
	if (c == 0xF0)
		return (struct utf8_lead){4, 0x90, 0xBF};
	if (c >= 0xF1 && c <= 0xF3)
		return (struct utf8_lead){4, 0x80, 0xBF};
	if (c == 0xF4)
		return (struct utf8_lead){4, 0x80, 0x8F};
	return (struct utf8_lead){0, 0, 0};
}

/* The length of the valid sequence at p[0..n); 0 if it is invalid (its
 * first byte then counts as invalid); n when it is valid so far but cut
 * by the end. */
static size_t utf8_valid(const uint8_t *p, size_t n)
{
	if (p[0] < 0x80)
		return 1;
	struct utf8_lead l = utf8_lead(p[0]);
	if (l.len == 0)
		return 0;
	for (size_t i = 1; i < l.len; i++) {
		if (i == n)
			return n;
		uint8_t lo = i == 1 ? l.lo : 0x80, hi = i == 1 ? l.hi : 0xBF;
		if (p[i] < lo || p[i] > hi)
			return 0;
	}
	return l.len;
}

size_t sniff_text_end(const uint8_t *p, size_t from, size_t n, bool *not_text)
{
	size_t i = from;

	*not_text = false;
	while (i < n) {
		size_t len = utf8_valid(p + i, n - i);
		if (len == n - i && i + utf8_lead(p[i]).len > n)
			return i; /* a sequence the next bytes may complete */
		if (len == 0 || p[i] == '\0') {
			*not_text = true;
			return i;
		}
		i += len;
	}
	return i;
}

bool sniff_binary(const uint8_t *p, size_t n)
{
	size_t invalid = 0;

	if (memchr(p, '\0', n))
		return true;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_valid(p + i, n - i);
		if (len == 0) {
			invalid++;
			len = 1;
		}
		i += len;
	}
	return invalid * 10 > n;
}

struct magic {
	size_t offset;
	const char *bytes;
	size_t len;
	const char *name;
};

#define MAGIC(off, s, name) {(off), (s), sizeof(s) - 1, (name)}

/* Formats an agent is likely to meet, by their fixed first bytes. */
static const struct magic magics[] = {
	MAGIC(0, "\x7f" "ELF", "ELF"),
	MAGIC(0, "\x1f\x8b", "gzip"),
	MAGIC(0, "BZh", "bzip2"),
	MAGIC(0, "\xfd" "7zXZ\0", "xz"),
	MAGIC(0, "\x28\xb5\x2f\xfd", "zstd"),
	MAGIC(0, "PK\x03\x04", "zip"),
	MAGIC(0, "PK\x05\x06", "zip"),
	MAGIC(0, "\x89PNG\r\n\x1a\n", "PNG image"),
	MAGIC(0, "\xff\xd8\xff", "JPEG image"),
	MAGIC(0, "GIF87a", "GIF image"),
	MAGIC(0, "GIF89a", "GIF image"),
	MAGIC(0, "%PDF-", "PDF document"),
	MAGIC(0, "SQLite format 3\0", "SQLite database"),
	MAGIC(257, "ustar", "tar archive"),
	MAGIC(0, "\0asm", "WebAssembly module"),
	MAGIC(0, "\xca\xfe\xba\xbe", "Java class"),
	MAGIC(0, "MZ", "PE/MZ executable"),
};

const char *sniff_type(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
		const struct magic *m = &magics[i];
		if (n >= m->offset + m->len && memcmp(p + m->offset, m->bytes, m->len) == 0)
			return m->name;
	}
	return "data";
}
