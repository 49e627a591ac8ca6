/*
 * JSON strings of bytes that may not be UTF-8, for the audit log and the
 * CLI's --json answers.
 */
#include "jsontext.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 when the
 * byte at s does not begin one: a stray continuation byte, a sequence cut
 * short, an overlong form, a surrogate, or a code point past U+10FFFF. */
static size_t utf8_sequence(const uint8_t *s, size_t len)
{
	uint8_t c = s[0];
	size_t n;
	uint32_t cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, cp = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, cp = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* A JSON string of bytes that may not be UTF-8: each invalid byte
 * becomes U+FFFD (EF BF BD). */
struct json_object *json_text(const uint8_t *s, size_t len)
{
	static const char replacement[] = "\xEF\xBF\xBD";
	size_t i = 0, out = 0;
	bool clean = true;

	for (i = 0; i < len;) {
		size_t n = utf8_sequence(s + i, len - i);
		if (n == 0) {
			clean = false;
			out += 3;
			i++;
		} else {
			out += n;
			i += n;
		}
	}
	if (clean)
		return json_object_new_string_len(len ? (const char *)s : "", (int)len);

	char *buf = malloc(out ? out : 1);
	if (!buf)
		return NULL;
	size_t o = 0;
	for (i = 0; i < len;) {
		size_t n = utf8_sequence(s + i, len - i);
		if (n == 0) {
			memcpy(buf + o, replacement, 3);
			o += 3;
			i++;
		} else {
			memcpy(buf + o, s + i, n);
			o += n;
			i += n;
		}
	}
	struct json_object *j = json_object_new_string_len(buf, (int)o);
	free(buf);
	return j;
}

