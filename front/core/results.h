/*
 * The front ends' results as JSON, written once: `toolrun mcp` gives
 * them as structuredContent, `toolrun tags --json` as "result". Text from
 * files (lines, snippets) that is not valid UTF-8 becomes U+FFFD, so the
 * JSON is always valid.
 */
#ifndef TOOLRUN_FRONT_RESULTS_H
#define TOOLRUN_FRONT_RESULTS_H

#include <stdbool.h>

#include <json-c/json.h>

#include "files.h"
#include "search.h"

/* path, size, total_lines, first_line, last_line, truncated, binary, text */
struct json_object *read_result_json(const struct read_result *r);
/* path, bytes, and created (write) or replacements (edit) */
struct json_object *write_result_json(const struct write_result *w, bool edit);
/* query, hits [{path, line, snippet, score}], files_indexed, files_updated */
struct json_object *search_result_json(const char *query, const struct search_result *s);

/* Which lines a read shows, for the line after them: "lines 1-200 of
 * 5000", "lines 4991-5000 of 5000, the end", "an empty file", "no lines:
 * the offset is past the end of 3"; "" when
 * the whole file is shown. */
void read_result_span(const struct read_result *r, char *s, size_t len);

#endif
