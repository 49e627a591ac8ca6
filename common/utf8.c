/*
 * What valid UTF-8 is (utf8.h).
 */
#include "utf8.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The bytes allowed after a lead byte (Unicode, table 3-7): the second
 * byte's range, which rules out overlong forms, surrogates and code
 * points past U+10FFFF, and how many bytes the sequence has. */
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

size_t utf8_sequence(const uint8_t *p, size_t n)
{
	if (p[0] < 0x80)
		return 1;
	struct utf8_lead l = utf8_lead(p[0]);
	if (l.len == 0)
		return 0;
	for (size_t i = 1; i < l.len; i++) {
		if (i == n)
			return UTF8_CUT;
		uint8_t lo = i == 1 ? l.lo : 0x80, hi = i == 1 ? l.hi : 0xBF;
		if (p[i] < lo || p[i] > hi)
			return 0;
	}
	return l.len;
}

/* The length of the valid sequence at p, or 0 for a byte to replace. */
static size_t whole_sequence(const uint8_t *p, size_t n)
{
	size_t len = utf8_sequence(p, n);
	return len == UTF8_CUT ? 0 : len;
}

char *utf8_scrub(const uint8_t *p, size_t n, size_t *out_len)
{
	static const char replacement[] = "\xEF\xBF\xBD";
	size_t out = 0, i, len;
	bool clean = true;

	*out_len = 0;
	for (i = 0; i < n; i += len ? len : 1) {
		len = whole_sequence(p + i, n - i);
		out += len ? len : sizeof(replacement) - 1;
		clean = clean && len;
	}
	if (clean)
		return NULL;
	char *buf = malloc(out);
	if (!buf) {
		*out_len = SIZE_MAX;
		return NULL;
	}
	size_t o = 0;
	for (i = 0; i < n; i += len ? len : 1) {
		len = whole_sequence(p + i, n - i);
		if (len)
			memcpy(buf + o, p + i, len);
		else
			memcpy(buf + o, replacement, sizeof(replacement) - 1);
		o += len ? len : sizeof(replacement) - 1;
	}
	*out_len = o;
	return buf;
}
