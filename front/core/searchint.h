/*
 * What the files of the search module share (search.h is its public
 * API; only search*.c include this): a query's words, the bm25
 * candidates, the index's errors, and each file's entry points.
 *
 *   search.c       front_search: index, query, re-rank, hand over hits
 *   searchindex.c  the index file: where it lives, its schema, the update
 *   searchquery.c  the query: its words, the bm25 candidates, their lines
 *   searchembed.c  the embedding command that re-ranks the candidates
 *
 * Errors as front.h's: -1 with *e filled.
 */
#ifndef TOOLRUN_FRONT_SEARCHINT_H
#define TOOLRUN_FRONT_SEARCHINT_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "search.h"

/* Words of a query kept; the rest are dropped. */
#define MAX_WORDS 32
/* bm25 candidates an embedding command re-ranks. */
#define EMBED_CANDIDATES 50

/* A query's words (runs of word bytes), as offsets into a copy. */
struct words {
	char *buf;
	const char *word[MAX_WORDS];
	size_t n;
};

/* One bm25 candidate. */
struct candidate {
	struct search_hit hit;
	char *text; /* the chunk, for an embedding command */
	double bm25_score;
	double embed_score;
	size_t rank; /* bm25 order: the tie-break */
};

struct candidates {
	struct candidate *c;
	size_t n;
};

/* search.c: the errors every step may give. */
int search_db_fail(struct front_error *e, sqlite3 *db, const char *index_path);
int search_no_memory(struct front_error *e);

/* searchindex.c */
/* <cache dir>/search-<16 hex of sha256(root)>.sqlite (docs/search.md). */
int search_default_index_path(const char *root, char *out, size_t len, struct front_error *e);
int search_open_index(const char *index_path, sqlite3 **db, struct front_error *e);
/* Bring the index at db up to date with the files under p's root; the
 * counts go to out. */
int search_update_index(sqlite3 *db, const char *index_path, const struct path_policy *p,
			struct search_result *out, struct front_error *e);

/* searchquery.c */
/* Split the query into words: EMPTY_QUERY when it has none. */
int search_split_words(const char *query, struct words *w, struct front_error *e);
/* The best `want` chunks by bm25, into cs (search_free_candidates). */
int search_run_query(sqlite3 *db, const char *index_path, const struct words *w, size_t want,
		     struct candidates *cs, struct front_error *e);
void search_free_candidates(struct candidates *cs);

/* searchembed.c */
/* Run the command on the candidates and order them by its scores. */
int search_embed_rerank(const char *command, const char *query, struct candidates *cs,
			struct front_error *e);

#endif
