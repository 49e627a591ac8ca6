/*
 * Ranked full-text search over the files under a root, with SQLite's
 * FTS5 and bm25. The index lives on disk and is brought up to date on
 * each query: files whose mtime or size changed are indexed again, new
 * ones added, vanished ones dropped. Files that are not text, larger
 * than SEARCH_MAX_FILE_BYTES, under a directory named .git or node_modules, or not in
 * the path policy's extension list are not indexed.
 *
 * Files are indexed in chunks of a few dozen lines; a hit is a chunk,
 * so one file may give several hits, each naming its own line.
 *
 * Embeddings: toolrun ships no model. An embedding command may be
 * plugged in (embed_command): it then re-ranks the best bm25 candidates
 * (docs/search.md says how it is called).
 */
#ifndef TOOLRUN_FRONT_SEARCH_H
#define TOOLRUN_FRONT_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "front.h"
#include "path.h"

#define SEARCH_MAX_FILE_BYTES (1024 * 1024)
#define SEARCH_DEFAULT_LIMIT 10
#define SEARCH_MAX_LIMIT 100

struct search_options {
	/* The index file; NULL: $XDG_CACHE_HOME/toolrun/search-<first 16 hex
	 * of sha256(root)>.sqlite, or ~/.cache/... */
	const char *index_path;
	/* NULL (or "") or a shell command, run with /bin/sh -c
	 * (docs/search.md). */
	const char *embed_command;
	size_t limit; /* 0: SEARCH_DEFAULT_LIMIT; more than SEARCH_MAX_LIMIT
		       * is taken as SEARCH_MAX_LIMIT */
};

struct search_hit {
	char *path;    /* from the root */
	uint64_t line; /* from 1: the first line that matches */
	char *snippet; /* that line, trimmed to about 200 bytes, matches kept */
	double score;  /* higher is better: -bm25, or the embedding
			* command's score when one re-ranked the hits */
};

struct search_result {
	struct search_hit *hits;
	size_t nhits;
	uint64_t files_indexed; /* files in the index after the update */
	uint64_t files_updated; /* (re)indexed by this query */
	uint64_t files_removed;
};

/* query: words as an agent writes them (not FTS5 syntax: quotes and
 * operators in it are taken as text); a chunk with any of the words
 * matches, and bm25 ranks those with more and rarer words first. A query
 * without a word (empty, blank, punctuation only) is a SYNTAX error
 * "EMPTY_QUERY"; a failing embedding command an EXECUTION error
 * "EMBED_FAILED"; a failure of the index an EXECUTION error
 * "INDEX_ERROR". On failure *out is empty. */
int front_search(const struct path_policy *p, const struct search_options *o,
		 const char *query, struct search_result *out, struct front_error *e);
void search_result_free(struct search_result *r);

#endif
