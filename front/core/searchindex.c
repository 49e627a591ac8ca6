/*
 * The search index (searchint.h): an SQLite FTS5 file per root, where
 * it lives and how it is opened, its schema, and the update before each
 * query that walks the root and indexes again the files that changed.
 */
#include "searchint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "digest.h"
#include "sniff.h"
#include "util.h"

/* Lines per chunk: small enough that a hit names a line an agent can
 * open, large enough that a chunk holds a function's worth of context for
 * bm25 and for an embedding command. */
#define CHUNK_LINES 30
/* Chunk rowids are <file id> << CHUNK_BITS | <chunk number>, so that a
 * file's chunks are one rowid range: FTS5 deletes a range by rowid at
 * once, where a delete by the (unindexed) path column scans every row.
 * A 1 MiB file has at most 2^20 lines, hence fewer chunks than this. */
#define CHUNK_BITS 20
/* The bytes read first, alone: the one binary rule's window (sniff.h),
 * which read_file and the shaper use too. */
#define BINARY_PROBE SNIFF_WINDOW
/* Directories deeper than this are not walked: fds stay bounded. */
#define MAX_DEPTH 64
/* Another process updating the same index is waited for this long. */
#define BUSY_TIMEOUT_MS 10000
/* Bumped when the schema changes: an older index is dropped and rebuilt. */
#define SCHEMA_VERSION 1

/*
 * The tokenizer: plain unicode61, whose separators include '_'. An
 * identifier such as front_search is then the tokens "front" "search", and
 * the query word front_search, quoted, is the phrase of both, adjacent:
 * it still finds the identifier, while the word "search" alone finds it
 * too, which agents rely on when they know part of a name. tokenchars '_'
 * would lose that; trigram would find any substring but ranks poorly with
 * bm25 (every trigram is a term) and finds nothing for words under three
 * letters. No stemming: code is not prose, and the line of a hit is found
 * by the same word boundaries (searchquery.c's find_word).
 */
static const char SCHEMA[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, id INTEGER NOT NULL UNIQUE,"
	" mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL);"
	"CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(path UNINDEXED,"
	" first_line UNINDEXED, text, tokenize = 'unicode61');";

static const char DROP[] = "DROP TABLE IF EXISTS chunks; DROP TABLE IF EXISTS files;"
			   "DROP TABLE IF EXISTS meta;";

/* The index being brought up to date: its statements, its counts. */
struct indexer {
	sqlite3 *db;
	const char *index_path;
	const struct path_policy *p;
	sqlite3_stmt *get_file, *put_file, *new_id, *del_range, *put_chunk, *put_seen;
	uint64_t updated;
};

/* ───────────────────────── the index file ───────────────────────── */

/* mkdir -p of dir's components, 0700: a cache of the user's files is
 * the user's alone. */
static int make_dirs(char *dir, struct front_error *e)
{
	for (char *s = dir + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char was = *s;
		*s = '\0';
		int r = mkdir(dir, 0700);
		int err = errno;
		*s = was;
		if (r < 0 && err != EEXIST)
			return front_fail(e, FRONT_EXECUTION, "INDEX_ERROR", "%.*s: %s",
					  (int)(s - dir), dir, strerror(err));
		if (!was)
			return 0;
	}
}

/* A directory in a place every user may write to (/tmp) that is ours
 * alone: a directory, no link, owned by us, closed to everyone else
 * (another user could have made it first, to read or swap the index). */
static bool ours_alone(const char *dir)
{
	struct stat st;

	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
	       (st.st_mode & 077) == 0 && access(dir, W_OK | X_OK) == 0;
}

/* A directory for the index: made (0700) and writable, and for the one
 * under /tmp, ours alone. */
static bool usable_dir(char *dir, bool shared_parent)
{
	struct front_error ignored;

	if (make_dirs(dir, &ignored) < 0 || access(dir, W_OK | X_OK) < 0)
		return false;
	return !shared_parent || ours_alone(dir);
}

/* <tmp>/<name> is not ours alone: the first <tmp>/<name>-XXXXXX that is,
 * by name, so that every query finds the same index; or a new one
 * (mkdtemp: a name nobody can have taken first). */
static bool private_tmp_dir(char *dir, size_t len, const char *tmp, const char *name)
{
	char prefix[64], best[NAME_MAX + 1] = "";
	int n = snprintf(prefix, sizeof(prefix), "%s-", name);
	size_t plen = (size_t)n;
	DIR *d = opendir(tmp);

	for (struct dirent *e; d && (e = readdir(d));) {
		if (strncmp(e->d_name, prefix, plen) != 0 || strlen(e->d_name) != plen + 6 ||
		    (best[0] && strcmp(e->d_name, best) >= 0))
			continue;
		n = snprintf(dir, len, "%s/%s", tmp, e->d_name);
		if (n > 0 && (size_t)n < len && ours_alone(dir))
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	if (d)
		closedir(d);
	n = best[0] ? snprintf(dir, len, "%s/%s", tmp, best)
		    : snprintf(dir, len, "%s/%sXXXXXX", tmp, prefix);
	if (n < 0 || (size_t)n >= len)
		return false;
	return best[0] || (mkdtemp(dir) && ours_alone(dir));
}

/* The first directory of $XDG_CACHE_HOME/toolrun, ~/.cache/toolrun and
 * ${TMPDIR:-/tmp}/toolrun-cache-UID that can be used: a box's home may
 * be read-only, its /tmp is not. Where the last is not ours alone
 * (another user made it first), ${TMPDIR:-/tmp}/toolrun-cache-UID-XXXXXX
 * (private_tmp_dir). A relative XDG_CACHE_HOME is ignored, as the XDG
 * spec says. */
static int index_dir(char *dir, size_t len, struct front_error *e)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	const char *tmp = getenv("TMPDIR");
	char name[32], shared[PATH_MAX];
	int n;

	n = xdg && xdg[0] == '/' ? snprintf(dir, len, "%s/toolrun", xdg) : -1;
	if (n > 0 && (size_t)n < len && usable_dir(dir, false))
		return 0;
	n = home && home[0] == '/' ? snprintf(dir, len, "%s/.cache/toolrun", home) : -1;
	if (n > 0 && (size_t)n < len && usable_dir(dir, false))
		return 0;
	tmp = tmp && tmp[0] == '/' ? tmp : "/tmp";
	snprintf(name, sizeof(name), "toolrun-cache-%u", (unsigned)getuid());
	n = snprintf(dir, len, "%s/%s", tmp, name);
	if (n > 0 && (size_t)n < len && usable_dir(dir, true))
		return 0;
	snprintf(shared, sizeof(shared), "%s/%s", tmp, name);
	if (n > 0 && (size_t)n < len && private_tmp_dir(dir, len, tmp, name))
		return 0;
	return front_fail(e, FRONT_EXECUTION, "INDEX_ERROR",
			  "search: no place for the index: $XDG_CACHE_HOME/toolrun, "
			  "~/.cache/toolrun, %s and %s-XXXXXX cannot be used; give an index "
			  "path (--index)",
			  shared, shared);
}

int search_default_index_path(const char *root, char *out, size_t len, struct front_error *e)
{
	char dir[PATH_MAX];
	uint8_t md[DIGEST_SHA256_SIZE];

	digest_sha256(root, strlen(root), md);
	if (index_dir(dir, sizeof(dir), e) < 0)
		return -1;
	int n = snprintf(out, len, "%s/search-", dir);
	for (unsigned i = 0; i < 8 && n > 0 && (size_t)n + 2 < len; i++)
		n += snprintf(out + n, len - (size_t)n, "%02x", md[i]);
	if (n < 0 || (size_t)n + sizeof(".sqlite") > len)
		return front_fail(e, FRONT_EXECUTION, "INDEX_ERROR", "%s: path too long", dir);
	snprintf(out + n, len - (size_t)n, ".sqlite");
	return 0;
}

static int exec_sql(sqlite3 *db, const char *index_path, const char *sql, struct front_error *e)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0
								      : search_db_fail(e, db, index_path);
}

/* One integer from a query of one row (user_version, ...). */
static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	int r = sqlite3_step(st);
	*out = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -1;
}

/* Open the index: waits for another process rather than failing (two MCP
 * servers on one root), WAL so that readers never block the writer. */
int search_open_index(const char *index_path, sqlite3 **db, struct front_error *e)
{
	/* Debian builds FTS5 in; a build without it could not search at all. */
	if (!sqlite3_compileoption_used("ENABLE_FTS5"))
		return front_fail(e, FRONT_EXECUTION, "INDEX_ERROR",
				  "%s: this SQLite (%s) was built without FTS5, which search needs",
				  index_path, sqlite3_libversion());
	int r = sqlite3_open_v2(index_path, db,
				SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
				NULL);
	if (r != SQLITE_OK) {
		if (!*db)
			return search_no_memory(e);
		search_db_fail(e, *db, index_path);
		sqlite3_close(*db);
		*db = NULL;
		return -1;
	}
	sqlite3_busy_timeout(*db, BUSY_TIMEOUT_MS);
	/* WAL is a property of the file: once set, it stays. Setting it takes
	 * the file for a moment without waiting (no busy handler), so another
	 * process opening the index at once may make this fail with BUSY:
	 * it is then that process setting it, and every transaction below
	 * waits its turn whatever the mode. */
	r = sqlite3_exec(*db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
	if (r != SQLITE_OK && r != SQLITE_BUSY)
		return search_db_fail(e, *db, index_path);
	/* A cache: losing the last transaction on a power cut costs a re-index. */
	return exec_sql(*db, index_path, "PRAGMA synchronous=NORMAL", e);
}

/* Inside the write transaction: make the schema, or make it again (an
 * empty index) when it is of another version. */
static int ensure_version(struct indexer *ix, struct front_error *e)
{
	int64_t version;

	if (query_int(ix->db, "PRAGMA user_version", &version) < 0)
		return search_db_fail(e, ix->db, ix->index_path);
	if (version != SCHEMA_VERSION && exec_sql(ix->db, ix->index_path, DROP, e) < 0)
		return -1;
	if (exec_sql(ix->db, ix->index_path, SCHEMA, e) < 0)
		return -1;
	if (version != SCHEMA_VERSION) {
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", SCHEMA_VERSION);
		if (exec_sql(ix->db, ix->index_path, sql, e) < 0)
			return -1;
	}
	return 0;
}

/* Whether the index is the root's: *same. */
static int index_of_root(struct indexer *ix, bool *same, struct front_error *e)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(ix->db, "SELECT value FROM meta WHERE key='root'", -1, &st, NULL) !=
	    SQLITE_OK)
		return search_db_fail(e, ix->db, ix->index_path);
	int r = sqlite3_step(st);
	*same = r == SQLITE_ROW &&
		strcmp((const char *)sqlite3_column_text(st, 0), ix->p->root) == 0;
	sqlite3_finalize(st);
	return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : search_db_fail(e, ix->db, ix->index_path);
}

/* Empty the index and record it as the root's. */
static int claim_for_root(struct indexer *ix, struct front_error *e)
{
	sqlite3_stmt *st;

	if (exec_sql(ix->db, ix->index_path, "DELETE FROM files; DELETE FROM chunks;", e) < 0 ||
	    sqlite3_prepare_v2(ix->db, "INSERT OR REPLACE INTO meta VALUES('root', ?)", -1, &st,
			       NULL) != SQLITE_OK)
		return search_db_fail(e, ix->db, ix->index_path);
	sqlite3_bind_text(st, 1, ix->p->root, -1, SQLITE_STATIC);
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	return r == SQLITE_DONE ? 0 : search_db_fail(e, ix->db, ix->index_path);
}

/* The schema of this version, holding the root's files only: one index
 * file given for two roots would mix their files. */
static int ensure_schema(struct indexer *ix, struct front_error *e)
{
	bool same = false;

	if (ensure_version(ix, e) < 0 || index_of_root(ix, &same, e) < 0)
		return -1;
	return same ? 0 : claim_for_root(ix, e);
}

static int prepare_all(struct indexer *ix, struct front_error *e)
{
	static const struct {
		size_t off;
		const char *sql;
	} stmts[] = {
		{offsetof(struct indexer, get_file),
		 "SELECT id, mtime_ns, size FROM files WHERE path = ?"},
		{offsetof(struct indexer, put_file),
		 "INSERT OR REPLACE INTO files(path, id, mtime_ns, size) VALUES(?, ?, ?, ?)"},
		{offsetof(struct indexer, new_id), "SELECT coalesce(max(id), 0) + 1 FROM files"},
		{offsetof(struct indexer, del_range),
		 "DELETE FROM chunks WHERE rowid >= ? AND rowid < ?"},
		{offsetof(struct indexer, put_chunk),
		 "INSERT INTO chunks(rowid, path, first_line, text) VALUES(?, ?, ?, ?)"},
		{offsetof(struct indexer, put_seen), "INSERT OR IGNORE INTO temp.seen VALUES(?)"},
	};
	if (exec_sql(ix->db, ix->index_path,
		     "CREATE TEMP TABLE IF NOT EXISTS seen(path TEXT PRIMARY KEY);"
		     "DELETE FROM temp.seen;",
		     e) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(stmts); i++) {
		sqlite3_stmt **st = (sqlite3_stmt **)((char *)ix + stmts[i].off);
		if (sqlite3_prepare_v2(ix->db, stmts[i].sql, -1, st, NULL) != SQLITE_OK)
			return search_db_fail(e, ix->db, ix->index_path);
	}
	return 0;
}

static void finalize_all(struct indexer *ix)
{
	sqlite3_stmt *all[] = {ix->get_file, ix->put_file, ix->new_id,
			       ix->del_range, ix->put_chunk, ix->put_seen};
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		sqlite3_finalize(all[i]);
}

/* Run a prepared statement that returns no row, and reset it. */
static int step_done(struct indexer *ix, sqlite3_stmt *st, struct front_error *e)
{
	int r = sqlite3_step(st);
	sqlite3_reset(st);
	return r == SQLITE_DONE ? 0 : search_db_fail(e, ix->db, ix->index_path);
}

/* ───────────────────────── reading and chunking ───────────────────────── */

static bool extension_allowed(const struct path_policy *p, const char *name)
{
	if (p->nextensions == 0)
		return true;
	const char *dot = strrchr(name, '.');
	if (!dot || dot == name)
		return false;
	for (unsigned i = 0; i < p->nextensions && i < PATH_POLICY_MAX_EXTENSIONS; i++)
		if (strcasecmp(dot + 1, p->extensions[i]) == 0) /* as path.c */
			return true;
	return false;
}

/* Read into buf from offset n until `want` bytes or the end of the file
 * (or an error: what was read is what the file is taken to be). */
static size_t read_upto(int fd, char *buf, size_t n, size_t want)
{
	while (n < want) {
		ssize_t r = read(fd, buf + n, want - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	return n;
}

/* The whole file, if it is a regular text file within the size limit;
 * *text NULL when it is not (binary, grown, swapped for something else). */
static int read_text(int at, const char *name, char **text, size_t *len, struct stat *st)
{
	/* O_NONBLOCK: a FIFO put in the file's place since the stat must not
	 * hang the query; O_NOFOLLOW: nor a link be followed out of the root. */
	_cleanup_close_ int fd =
		openat(at, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	*text = NULL;
	if (fd < 0 || fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
	    st->st_size > SEARCH_MAX_FILE_BYTES)
		return 0;
	char *buf = malloc((size_t)st->st_size + 1);
	if (!buf)
		return -ENOMEM;
	/* The probe first, alone: a binary file, met again by every query
	 * since it is never indexed, costs one small read, not a whole one. */
	size_t want = MIN((size_t)st->st_size + 1, (size_t)BINARY_PROBE);
	size_t n = read_upto(fd, buf, 0, want);
	bool binary = sniff_binary((const uint8_t *)buf, MIN(n, (size_t)st->st_size));
	if (!binary && n == BINARY_PROBE)
		n = read_upto(fd, buf, n, (size_t)st->st_size + 1);
	if (binary || n > (size_t)st->st_size) {
		free(buf);
		return 0;
	}
	*text = buf;
	*len = n;
	return 0;
}

/* Insert the file's chunks of CHUNK_LINES lines under rowids base, base+1... */
static int put_chunks(struct indexer *ix, const char *rel, int64_t base, const char *text,
		      size_t len, struct front_error *e)
{
	size_t start = 0;
	uint64_t line = 1;

	for (int64_t k = 0; start < len; k++) {
		size_t end = start;
		for (int i = 0; i < CHUNK_LINES && end < len; i++) {
			const char *nl = memchr(text + end, '\n', len - end);
			end = nl ? (size_t)(nl - text) + 1 : len;
		}
		sqlite3_stmt *st = ix->put_chunk;
		sqlite3_bind_int64(st, 1, base + k);
		sqlite3_bind_text(st, 2, rel, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)line);
		sqlite3_bind_text(st, 4, text + start, (int)(end - start), SQLITE_STATIC);
		if (step_done(ix, st, e) < 0)
			return -1;
		line += CHUNK_LINES;
		start = end;
	}
	return 0;
}

/* The file's id in the index and whether it is unchanged; a new id for
 * a new file. */
static int lookup_file(struct indexer *ix, const char *rel, const struct stat *st, int64_t *id,
		       bool *unchanged, struct front_error *e)
{
	int64_t mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	sqlite3_stmt *q = ix->get_file;

	sqlite3_bind_text(q, 1, rel, -1, SQLITE_STATIC);
	int r = sqlite3_step(q);
	if (r == SQLITE_ROW) {
		*id = sqlite3_column_int64(q, 0);
		*unchanged = sqlite3_column_int64(q, 1) == mtime_ns &&
			     sqlite3_column_int64(q, 2) == (int64_t)st->st_size;
	}
	sqlite3_reset(q);
	if (r == SQLITE_ROW)
		return 0;
	if (r != SQLITE_DONE)
		return search_db_fail(e, ix->db, ix->index_path);
	*unchanged = false;
	r = sqlite3_step(ix->new_id);
	*id = sqlite3_column_int64(ix->new_id, 0);
	sqlite3_reset(ix->new_id);
	return r == SQLITE_ROW ? 0 : search_db_fail(e, ix->db, ix->index_path);
}

static int mark_seen(struct indexer *ix, const char *rel, struct front_error *e)
{
	sqlite3_bind_text(ix->put_seen, 1, rel, -1, SQLITE_STATIC);
	return step_done(ix, ix->put_seen, e);
}

/* Replace the file's chunks and record its mtime and size: st is the
 * file as read (text, len). */
static int reindex_file(struct indexer *ix, const char *rel, int64_t id, const struct stat *st,
			const char *text, size_t len, struct front_error *e)
{
	int64_t base = id << CHUNK_BITS;
	int64_t mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;

	sqlite3_bind_int64(ix->del_range, 1, base);
	sqlite3_bind_int64(ix->del_range, 2, base + ((int64_t)1 << CHUNK_BITS));
	sqlite3_bind_text(ix->put_file, 1, rel, -1, SQLITE_STATIC);
	sqlite3_bind_int64(ix->put_file, 2, id);
	sqlite3_bind_int64(ix->put_file, 3, mtime_ns);
	sqlite3_bind_int64(ix->put_file, 4, (int64_t)st->st_size);
	if (step_done(ix, ix->del_range, e) < 0 || put_chunks(ix, rel, base, text, len, e) < 0 ||
	    step_done(ix, ix->put_file, e) < 0 || mark_seen(ix, rel, e) < 0)
		return -1;
	ix->updated++;
	return 0;
}

/* One regular file met by the walk: skipped, kept, or indexed again. */
static int visit_file(struct indexer *ix, int at, const char *name, const char *rel,
		      const struct stat *seen, struct front_error *e)
{
	int64_t id = 0;
	bool unchanged = false;
	struct stat st;
	char *text;
	size_t len;

	if (seen->st_size > SEARCH_MAX_FILE_BYTES || !extension_allowed(ix->p, name))
		return 0;
	if (lookup_file(ix, rel, seen, &id, &unchanged, e) < 0)
		return -1;
	if (unchanged)
		return mark_seen(ix, rel, e);
	if (read_text(at, name, &text, &len, &st) < 0)
		return search_no_memory(e);
	if (!text)
		return 0; /* not in seen: dropped from the index if it was in */
	int r = reindex_file(ix, rel, id, &st, text, len, e);
	free(text);
	return r;
}

/* ───────────────────────── the walk ───────────────────────── */

static int walk_dir(struct indexer *ix, int at, char *rel, size_t rel_len, int depth,
		    struct front_error *e);

/* One directory entry: rel holds the directory's path from the root
 * (rel_len bytes, "" for the root). Links are never followed, so nothing
 * outside the root is read; only regular files and directories count. */
static int visit_entry(struct indexer *ix, int at, const char *name, char *rel,
		       size_t rel_len, int depth, struct front_error *e)
{
	struct stat st;

	/* Version control's store and installed packages: not the
	 * workspace's own text, and often most of its files. */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".git") == 0 ||
	    strcmp(name, "node_modules") == 0)
		return 0;
	size_t n = strlen(name);
	if (rel_len + n + 2 > PATH_MAX)
		return 0;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* gone since readdir */
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return 0;
	size_t len = rel_len;
	if (len)
		rel[len++] = '/';
	memcpy(rel + len, name, n + 1);
	int r = S_ISREG(st.st_mode) ? visit_file(ix, at, name, rel, &st, e)
				    : walk_dir(ix, at, rel, len + n, depth + 1, e);
	rel[rel_len] = '\0';
	return r;
}

/* Walk the directory at rel (opened from `at` by its last component, or
 * `at` itself for the root). Directories that cannot be opened are
 * skipped: a query must not fail for one unreadable corner of the tree. */
static int walk_dir(struct indexer *ix, int at, char *rel, size_t rel_len, int depth,
		    struct front_error *e)
{
	if (depth > MAX_DEPTH)
		return 0;
	const char *last = depth == 0 ? "." : strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	DIR *d = dir_open_at(at, last, O_RDONLY | O_NOFOLLOW);
	if (!d) {
		if (depth == 0)
			return front_fail(e, FRONT_EXECUTION, "INDEX_ERROR", "%s: %s",
					  ix->p->root, strerror(errno));
		return 0;
	}
	int r = 0;
	for (struct dirent *de; r == 0 && (de = readdir(d));)
		r = visit_entry(ix, dirfd(d), de->d_name, rel, rel_len, depth, e);
	closedir(d);
	return r;
}

/* Drop the files the walk did not see (vanished, now binary or too big);
 * returns how many, or -1. */
static int64_t drop_unseen(struct indexer *ix, struct front_error *e)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(ix->db,
			       "SELECT id FROM files WHERE path NOT IN (SELECT path FROM temp.seen)",
			       -1, &st, NULL) != SQLITE_OK)
		return search_db_fail(e, ix->db, ix->index_path);
	int r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t base = sqlite3_column_int64(st, 0) << CHUNK_BITS;
		sqlite3_bind_int64(ix->del_range, 1, base);
		sqlite3_bind_int64(ix->del_range, 2, base + ((int64_t)1 << CHUNK_BITS));
		if (step_done(ix, ix->del_range, e) < 0) {
			sqlite3_finalize(st);
			return -1;
		}
	}
	sqlite3_finalize(st);
	if (r != SQLITE_DONE ||
	    exec_sql(ix->db, ix->index_path,
		     "DELETE FROM files WHERE path NOT IN (SELECT path FROM temp.seen)", e) < 0)
		return search_db_fail(e, ix->db, ix->index_path);
	return sqlite3_changes64(ix->db);
}

/* The whole update, in one transaction taken for writing up front: two
 * processes updating at once take turns (the busy timeout) instead of
 * failing to upgrade a read lock. */
static int update_index(struct indexer *ix, int root_fd, struct search_result *out,
			struct front_error *e)
{
	char rel[PATH_MAX] = "";
	int64_t removed, count;

	if (exec_sql(ix->db, ix->index_path, "BEGIN IMMEDIATE", e) < 0)
		return -1;
	if (ensure_schema(ix, e) < 0 || prepare_all(ix, e) < 0 ||
	    walk_dir(ix, root_fd, rel, 0, 0, e) < 0 || (removed = drop_unseen(ix, e)) < 0 ||
	    query_int(ix->db, "SELECT count(*) FROM files", &count) < 0 ||
	    exec_sql(ix->db, ix->index_path, "COMMIT", e) < 0) {
		if (e->code[0] == '\0')
			search_db_fail(e, ix->db, ix->index_path);
		finalize_all(ix);
		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	finalize_all(ix);
	out->files_indexed = (uint64_t)count;
	out->files_updated = ix->updated;
	out->files_removed = (uint64_t)removed;
	return 0;
}

int search_update_index(sqlite3 *db, const char *index_path, const struct path_policy *p,
			struct search_result *out, struct front_error *e)
{
	struct indexer ix = {.db = db, .index_path = index_path, .p = p};
	_cleanup_close_ int own_fd = -1;

	/* The root as the policy holds it open, or opened here. */
	if (p->root_fd >= 0)
		return update_index(&ix, p->root_fd, out, e);
	own_fd = open(p->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (own_fd < 0)
		return front_fail(e, FRONT_EXECUTION, "INDEX_ERROR", "%s: %s", p->root,
				  strerror(errno));
	return update_index(&ix, own_fd, out, e);
}
