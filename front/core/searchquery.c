/*
 * A search's query (searchint.h): its words, the FTS5 expression made of
 * them, the best chunks by bm25, and for each the line and snippet that
 * show where the words are.
 */
#include "searchint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "util.h"

/* Snippets are cut to about this many bytes around the match. */
#define SNIPPET_BYTES 200

/* Bytes of a word: what unicode61 keeps in a token, near enough (any
 * byte of a multi-byte character counts; '_' joins the parts of an
 * identifier, which the tokenizer splits again). */
static bool word_byte(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_' || c >= 0x80;
}

static bool token_byte(unsigned char c)
{
	return c != '_' && word_byte(c);
}

/* Split the query into words; a word of '_' alone is no word. */
int search_split_words(const char *query, struct words *w, struct front_error *e)
{
	w->n = 0;
	w->buf = strdup(query);
	if (!w->buf)
		return search_no_memory(e);
	for (char *s = w->buf; *s && w->n < MAX_WORDS;) {
		while (*s && !word_byte((unsigned char)*s))
			s++;
		char *start = s;
		bool real = false;
		for (; word_byte((unsigned char)*s); s++)
			real |= token_byte((unsigned char)*s);
		bool more = *s != '\0';
		*s = '\0';
		if (real)
			w->word[w->n++] = start;
		if (more)
			s++;
	}
	if (w->n == 0)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_QUERY",
				  "search: the query has no words to search for");
	return 0;
}

/*
 * "w1" OR "w2" ...: each word a quoted phrase, so that nothing in it is
 * FTS5 syntax (quotes doubled, though words hold none). OR, not AND: bm25
 * sums the words' scores, so chunks with all the words still rank first,
 * but a word the agent guessed wrong (a name not in the code) does not
 * empty the result, and a chunk with the rare words outranks one with
 * only the common ones.
 */
static char *match_expr(const struct words *w)
{
	size_t cap = 1;
	for (size_t i = 0; i < w->n; i++)
		cap += 2 * strlen(w->word[i]) + 6;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	char *o = out;
	for (size_t i = 0; i < w->n; i++) {
		if (i)
			o = stpcpy(o, " OR ");
		*o++ = '"';
		for (const char *s = w->word[i]; *s; s++) {
			if (*s == '"')
				*o++ = '"';
			*o++ = *s;
		}
		*o++ = '"';
	}
	*o = '\0';
	return out;
}

/* needle (n bytes) in line[0, len), case-insensitive, on token
 * boundaries as the tokenizer sees them; its offset or -1. */
static ssize_t find_word(const char *line, size_t len, const char *needle, size_t n)
{
	if (n == 0)
		return -1;
	for (size_t i = 0; i + n <= len; i++) {
		if (i > 0 && token_byte((unsigned char)line[i - 1]))
			continue;
		if (i + n < len && token_byte((unsigned char)line[i + n]))
			continue;
		if (strncasecmp(line + i, needle, n) == 0)
			return (ssize_t)i;
	}
	return -1;
}

/* The first line of the chunk holding one of the words (whole, or with
 * parts=true, a part between '_'): its offset in the chunk, its number
 * in the chunk, and where in it the word is. */
static bool find_line(const char *text, const struct words *w, bool parts, size_t *line_off,
		      size_t *line_len, uint64_t *line_no, size_t *at)
{
	size_t tlen = strlen(text);
	uint64_t no = 0;

	for (size_t off = 0; off < tlen; no++) {
		const char *nl = memchr(text + off, '\n', tlen - off);
		size_t len = nl ? (size_t)(nl - text) - off : tlen - off;
		for (size_t i = 0; i < w->n; i++) {
			for (const char *s = w->word[i]; *s;) {
				size_t n = parts ? strcspn(s, "_") : strlen(s);
				ssize_t pos = find_word(text + off, len, s, n);
				if (pos >= 0) {
					*line_off = off, *line_len = len, *line_no = no;
					*at = (size_t)pos;
					return true;
				}
				s += n;
				s += *s == '_';
			}
		}
		off += len + 1;
	}
	return false;
}

/* The line, without its surrounding blanks, cut to about SNIPPET_BYTES
 * around the match, on UTF-8 character boundaries. */
static char *make_snippet(const char *line, size_t len, size_t at)
{
	size_t start = 0, end = len;
	while (start < end && (line[start] == ' ' || line[start] == '\t'))
		start++;
	while (end > start && strchr(" \t\r", line[end - 1]))
		end--;
	if (end - start > SNIPPET_BYTES) {
		size_t from = at > start + SNIPPET_BYTES / 3 ? at - SNIPPET_BYTES / 3 : start;
		if (from + SNIPPET_BYTES > end)
			from = end - SNIPPET_BYTES;
		start = from;
		end = from + SNIPPET_BYTES;
		while (start < end && ((unsigned char)line[start] & 0xC0) == 0x80)
			start++;
		while (end > start && end < len && ((unsigned char)line[end] & 0xC0) == 0x80)
			end--;
	}
	return strndup(line + start, end - start);
}

/* Fill a candidate from a result row: path, line, snippet, scores. */
static int fill_candidate(struct candidate *c, sqlite3_stmt *st, const struct words *w,
			  size_t rank)
{
	const char *text = (const char *)sqlite3_column_text(st, 2);
	size_t off = 0, len = 0, at = 0;
	uint64_t no = 0;

	if (!text)
		text = "";
	if (!find_line(text, w, false, &off, &len, &no, &at) &&
	    !find_line(text, w, true, &off, &len, &no, &at)) {
		/* Matched through folding (diacritics): the chunk's first line. */
		const char *nl = strchr(text, '\n');
		len = nl ? (size_t)(nl - text) : strlen(text);
	}
	c->rank = rank;
	c->bm25_score = -sqlite3_column_double(st, 3);
	c->hit.score = c->bm25_score;
	c->hit.line = (uint64_t)sqlite3_column_int64(st, 1) + no;
	c->hit.path = strdup((const char *)sqlite3_column_text(st, 0));
	c->hit.snippet = make_snippet(text + off, len, at);
	c->text = strdup(text);
	return c->hit.path && c->hit.snippet && c->text ? 0 : -ENOMEM;
}

void search_free_candidates(struct candidates *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		free(cs->c[i].hit.path);
		free(cs->c[i].hit.snippet);
		free(cs->c[i].text);
	}
	free(cs->c);
	cs->c = NULL;
	cs->n = 0;
}

/* The rows of st, a candidate each, up to `want`: the last
 * sqlite3_step's result, or -ENOMEM. */
static int collect_candidates(sqlite3_stmt *st, const struct words *w, size_t want,
			      struct candidates *cs)
{
	int r;

	while ((r = sqlite3_step(st)) == SQLITE_ROW && cs->n < want) {
		/* Counted even when it fails: what it holds is freed with it. */
		if (fill_candidate(&cs->c[cs->n], st, w, cs->n) < 0) {
			cs->n++;
			return -ENOMEM;
		}
		cs->n++;
	}
	return r;
}

/* The best `want` chunks by bm25 (FTS5's rank is bm25; lower is better). */
int search_run_query(sqlite3 *db, const char *index_path, const struct words *w, size_t want,
		     struct candidates *cs, struct front_error *e)
{
	sqlite3_stmt *st;
	char *expr = match_expr(w);
	if (!expr)
		return search_no_memory(e);
	cs->c = calloc(want, sizeof(*cs->c));
	if (!cs->c || sqlite3_prepare_v2(db,
					 "SELECT path, first_line, text, bm25(chunks) FROM chunks"
					 " WHERE chunks MATCH ? ORDER BY rank LIMIT ?",
					 -1, &st, NULL) != SQLITE_OK) {
		free(expr);
		return cs->c ? search_db_fail(e, db, index_path) : search_no_memory(e);
	}
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)want);
	int r = collect_candidates(st, w, want, cs);
	if (r != SQLITE_DONE && r != SQLITE_ROW && r != -ENOMEM)
		search_db_fail(e, db, index_path);
	sqlite3_finalize(st);
	free(expr);
	if (r == -ENOMEM)
		return search_no_memory(e);
	return r == SQLITE_DONE || r == SQLITE_ROW ? 0 : -1;
}
