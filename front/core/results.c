/*
 * The front ends' results as JSON (results.h).
 */
#include "results.h"

#include <stdio.h>
#include <string.h>

#include "jsontext.h"

static struct json_object *text(const char *s, size_t len)
{
	return json_text((const uint8_t *)s, s ? len : 0);
}

struct json_object *read_result_json(const struct read_result *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "path", text(r->rel, strlen(r->rel)));
	json_object_object_add(o, "size", json_object_new_uint64(r->size));
	json_object_object_add(o, "total_lines", json_object_new_uint64(r->total_lines));
	json_object_object_add(o, "first_line", json_object_new_uint64(r->first_line));
	json_object_object_add(o, "last_line", json_object_new_uint64(r->last_line));
	json_object_object_add(o, "truncated", json_object_new_boolean(r->truncated));
	json_object_object_add(o, "binary", json_object_new_boolean(r->binary));
	json_object_object_add(o, "text", text(r->text, r->text_len));
	return o;
}

struct json_object *write_result_json(const struct write_result *w, bool edit)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "path", text(w->rel, strlen(w->rel)));
	json_object_object_add(o, "bytes", json_object_new_uint64(w->bytes));
	if (edit)
		json_object_object_add(o, "replacements", json_object_new_uint64(w->replacements));
	else
		json_object_object_add(o, "created", json_object_new_boolean(w->created));
	return o;
}

struct json_object *search_result_json(const char *query, const struct search_result *s)
{
	struct json_object *o = json_object_new_object(), *hits = json_object_new_array();

	for (size_t i = 0; i < s->nhits; i++) {
		const struct search_hit *h = &s->hits[i];
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "path", text(h->path, strlen(h->path)));
		json_object_object_add(j, "line", json_object_new_uint64(h->line));
		json_object_object_add(j, "snippet", text(h->snippet, strlen(h->snippet)));
		json_object_object_add(j, "score", json_object_new_double(h->score));
		json_object_array_add(hits, j);
	}
	json_object_object_add(o, "query", text(query, strlen(query)));
	json_object_object_add(o, "hits", hits);
	json_object_object_add(o, "files_indexed", json_object_new_uint64(s->files_indexed));
	json_object_object_add(o, "files_updated", json_object_new_uint64(s->files_updated));
	return o;
}

void read_result_span(const struct read_result *r, char *s, size_t len)
{
	s[0] = '\0';
	if (r->binary)
		return;
	if (r->total_lines == 0)
		snprintf(s, len, "an empty file");
	else if (r->last_line == 0)
		snprintf(s, len, "no lines: the offset is past the end of %llu",
			 (unsigned long long)r->total_lines);
	else if (r->last_line < r->total_lines || r->first_line > 1)
		snprintf(s, len, "lines %llu-%llu of %llu%s", (unsigned long long)r->first_line,
			 (unsigned long long)r->last_line, (unsigned long long)r->total_lines,
			 r->last_line == r->total_lines ? ", the end" : "");
}
