/*
 * Ranked full-text search over the files under a root (search.h): an
 * SQLite FTS5 index on disk, brought up to date on each query, ranked by
 * bm25, optionally re-ranked by a user's embedding command. This file
 * runs those steps (searchint.h names the file of each) and holds what
 * they share.
 */
#include "search.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "searchint.h"
#include "util.h"

int search_db_fail(struct front_error *e, sqlite3 *db, const char *index_path)
{
	return front_fail(e, FRONT_EXECUTION, "INDEX_ERROR", "%s: %s", index_path,
			  sqlite3_errmsg(db));
}

int search_no_memory(struct front_error *e)
{
	return front_fail(e, FRONT_INTERNAL, "NO_MEMORY", "search: out of memory");
}

/* Hand the best `limit` candidates over as hits. */
static void take_hits(struct candidates *cs, size_t limit, struct search_result *out)
{
	size_t n = MIN(cs->n, limit);
	struct search_hit *hits = calloc(n ? n : 1, sizeof(*hits));
	if (!hits)
		return;
	for (size_t i = 0; i < n; i++) {
		hits[i] = cs->c[i].hit;
		cs->c[i].hit.path = cs->c[i].hit.snippet = NULL;
	}
	out->hits = hits;
	out->nhits = n;
}

/* Bring the index up to date, query it, let the embedding command (if
 * any) re-rank, and hand the best hits over. */
static int search_index(sqlite3 *db, const struct path_policy *p, const struct search_options *o,
			const char *index_path, const struct words *w, const char *query,
			struct search_result *out, struct front_error *e)
{
	struct candidates cs = {0};
	size_t limit = o && o->limit ? MIN(o->limit, (size_t)SEARCH_MAX_LIMIT)
				     : SEARCH_DEFAULT_LIMIT;
	const char *embed = o && o->embed_command && o->embed_command[0] ? o->embed_command
									   : NULL;
	size_t want = embed ? MAX(limit, (size_t)EMBED_CANDIDATES) : limit;

	if (search_update_index(db, index_path, p, out, e) < 0 ||
	    search_run_query(db, index_path, w, want, &cs, e) < 0 ||
	    (embed && search_embed_rerank(embed, query, &cs, e) < 0)) {
		search_free_candidates(&cs);
		return -1;
	}
	take_hits(&cs, limit, out);
	bool lost = !out->hits;
	search_free_candidates(&cs);
	return lost ? search_no_memory(e) : 0;
}

int front_search(const struct path_policy *p, const struct search_options *o,
		 const char *query, struct search_result *out, struct front_error *e)
{
	char default_path[PATH_MAX];
	struct words w = {0};
	sqlite3 *db = NULL;

	memset(out, 0, sizeof(*out));
	memset(e, 0, sizeof(*e));
	if (!query || search_split_words(query, &w, e) < 0) {
		free(w.buf);
		return query ? -1
			     : front_fail(e, FRONT_SYNTAX, "EMPTY_QUERY", "search: no query");
	}
	const char *index_path = o && o->index_path ? o->index_path : default_path;
	int r = index_path == default_path
			? search_default_index_path(p->root, default_path, sizeof(default_path), e)
			: 0;
	if (r == 0)
		r = search_open_index(index_path, &db, e);
	if (r == 0)
		r = search_index(db, p, o, index_path, &w, query, out, e);
	sqlite3_close(db);
	free(w.buf);
	if (r < 0)
		search_result_free(out);
	return r;
}

void search_result_free(struct search_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nhits; i++) {
		free(r->hits[i].path);
		free(r->hits[i].snippet);
	}
	free(r->hits);
	memset(r, 0, sizeof(*r));
}
