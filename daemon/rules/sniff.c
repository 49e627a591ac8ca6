#include "sniff.h"

#include <string.h>

#include "utf8.h"

size_t sniff_text_end(const uint8_t *p, size_t from, size_t n, bool *not_text)
{
	size_t i = from;

	*not_text = false;
	while (i < n) {
		size_t len = utf8_sequence(p + i, n - i);
		if (len == UTF8_CUT)
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
		size_t len = utf8_sequence(p + i, n - i);
		if (len == UTF8_CUT)
			break;
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
