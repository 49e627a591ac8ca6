/*
 * JSON text that is always UTF-8 (jsontext.h), for the audit log and the
 * CLI's answers. What valid UTF-8 is, is utf8.h's rule.
 */
#include "jsontext.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

struct json_object *json_text(const uint8_t *s, size_t len)
{
	size_t n;
	char *clean = utf8_scrub(s, len, &n);

	if (!clean && n)
		return NULL;
	if (!clean)
		return json_object_new_string_len(len ? (const char *)s : "", (int)len);
	struct json_object *j = json_object_new_string_len(clean, (int)n);
	free(clean);
	return j;
}

/* JSON's own characters are ASCII, and json-c escapes control bytes
 * only: a byte that is not UTF-8 can only be inside a string, where
 * U+FFFD in its place is what json_text would have put there. */
char *json_line(struct json_object *o, size_t *len)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *clean = utf8_scrub((const uint8_t *)s, n, len);

	if (clean || *len)
		return clean;
	*len = n;
	return strdup(s);
}

bool json_print_line(struct json_object *o, FILE *f)
{
	size_t n;
	char *line = json_line(o, &n);

	if (!line)
		return false;
	fwrite(line, 1, n, f);
	fputc('\n', f);
	free(line);
	return true;
}
