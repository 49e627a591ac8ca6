/*
 * Unit tests for front/core/search*.c in a real temporary root: ranking, the
 * line and snippet of a hit, the update by mtime and size, what is not
 * indexed (.git, binary files, links, other extensions), queries full of
 * FTS5 syntax, the default index path (and the one under /tmp when
 * another user made it first), two processes on one index, and the
 * embedding command (re-ranking, failures).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "search.h"
#include "sniff.h"

/* ───────────────────────── helpers ───────────────────────── */

/* Room for the root (PATH_MAX) and a name under it. */
#define PATH_BUF (PATH_MAX + 64)

struct env {
	char base[64];   /* the temporary directory */
	char index[128]; /* <base>/index.sqlite */
	struct path_policy p;
	struct search_options o;
	struct search_result r;
	struct front_error e;
};

static const char CONFIG_C[] =
	"/* A file about nothing yet. */\n"
	"#include <stdio.h>\n"
	"\n"
	"/* Parse the configuration: every key of the configuration file. */\n"
	"int parse_configuration(const char *file)\n"
	"{\n"
	"\treturn configuration_read(file); /* configuration, parsed */\n"
	"}\n";

static const char NET_C[] =
	"/* Open a socket. */\n"
	"int open_socket(void)\n"
	"{\n"
	"\treturn socket(AF_INET, SOCK_STREAM, 0); /* no configuration here */\n"
	"}\n";

static const char README_MD[] = "# Notes\n\nThe socket library is documented elsewhere.\n";

static void write_file(const struct env *e, const char *rel, const char *text, size_t len)
{
	char path[PATH_BUF];
	snprintf(path, sizeof(path), "%s/%s", e->p.root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void put(const struct env *e, const char *rel, const char *text)
{
	write_file(e, rel, text, strlen(text));
}

static void make_dir(const struct env *e, const char *rel)
{
	char path[PATH_BUF];
	snprintf(path, sizeof(path), "%s/%s", e->p.root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	char root[128];
	if (!e)
		return -1;
	snprintf(e->base, sizeof(e->base), "/tmp/test-front-search-XXXXXX");
	if (!mkdtemp(e->base))
		return -1;
	snprintf(root, sizeof(root), "%s/root", e->base);
	snprintf(e->index, sizeof(e->index), "%s/index.sqlite", e->base);
	if (mkdir(root, 0755) < 0 || !realpath(root, e->p.root))
		return -1;
	e->p.root_fd = open(e->p.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (e->p.root_fd < 0)
		return -1;
	e->o.index_path = e->index;
	make_dir(e, "src");
	put(e, "src/config.c", CONFIG_C);
	put(e, "src/net.c", NET_C);
	put(e, "README.md", README_MD);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[160];
	search_result_free(&e->r);
	close(e->p.root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->base);
	int r = system(cmd);
	free(e);
	return r == 0 ? 0 : -1;
}

/* Search, expecting success; the result is in e->r. */
static void search_ok(struct env *e, const char *query)
{
	search_result_free(&e->r);
	int r = front_search(&e->p, &e->o, query, &e->r, &e->e);
	if (r != 0)
		fail_msg("search \"%s\": %s %s: %s", query, front_category_name(e->e.category),
			 e->e.code, e->e.message);
}

static void search_fails(struct env *e, const char *query, enum front_category c,
			 const char *code)
{
	search_result_free(&e->r);
	assert_int_equal(front_search(&e->p, &e->o, query, &e->r, &e->e), -1);
	assert_int_equal(e->e.category, c);
	assert_string_equal(e->e.code, code);
	assert_int_equal(e->r.nhits, 0);
	assert_null(e->r.hits);
}

static bool found(const struct env *e, const char *path)
{
	for (size_t i = 0; i < e->r.nhits; i++)
		if (strcmp(e->r.hits[i].path, path) == 0)
			return true;
	return false;
}

/* Change a file's text and give it an mtime of its own. */
static void rewrite(const struct env *e, const char *rel, const char *text, time_t mtime)
{
	char path[PATH_BUF];
	put(e, rel, text);
	snprintf(path, sizeof(path), "%s/%s", e->p.root, rel);
	struct timespec t[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* ───────────────────────── ranking and hits ───────────────────────── */

static void test_the_file_about_the_words_ranks_first(void **state)
{
	struct env *e = *state;
	search_ok(e, "parse configuration");
	assert_true(e->r.nhits >= 2);
	assert_string_equal(e->r.hits[0].path, "src/config.c");
	assert_true(found(e, "src/net.c"));
	for (size_t i = 1; i < e->r.nhits; i++)
		assert_true(e->r.hits[i - 1].score >= e->r.hits[i].score);
	assert_int_equal(e->r.files_indexed, 3);
	assert_int_equal(e->r.files_updated, 3);
	assert_int_equal(e->r.files_removed, 0);
}

static void test_hit_gives_path_line_and_snippet(void **state)
{
	struct env *e = *state;
	search_ok(e, "configuration");
	assert_string_equal(e->r.hits[0].path, "src/config.c");
	assert_int_equal(e->r.hits[0].line, 4);
	assert_string_equal(e->r.hits[0].snippet,
			    "/* Parse the configuration: every key of the configuration file. */");
	assert_true(e->r.hits[0].score > 0);
	search_ok(e, "SOCK_STREAM");
	assert_int_equal(e->r.nhits, 1);
	assert_string_equal(e->r.hits[0].path, "src/net.c");
	assert_int_equal(e->r.hits[0].line, 4);
	assert_string_equal(e->r.hits[0].snippet,
			    "return socket(AF_INET, SOCK_STREAM, 0); /* no configuration here */");
}

static void test_part_of_an_identifier_is_found(void **state)
{
	struct env *e = *state;
	search_ok(e, "socket");
	assert_true(found(e, "src/net.c"));
	search_ok(e, "open_socket");
	assert_string_equal(e->r.hits[0].path, "src/net.c");
	assert_int_equal(e->r.hits[0].line, 2);
}

static void test_line_in_a_later_chunk(void **state)
{
	struct env *e = *state;
	char text[4096] = "";
	for (int i = 1; i <= 80; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s line %d\n",
			 i == 67 ? "zebra crossing" : "plain", i);
	put(e, "long.txt", text);
	search_ok(e, "crossing");
	assert_int_equal(e->r.nhits, 1);
	assert_string_equal(e->r.hits[0].path, "long.txt");
	assert_int_equal(e->r.hits[0].line, 67);
	assert_string_equal(e->r.hits[0].snippet, "zebra crossing line 67");
}

static void test_long_line_snippet_is_cut_around_the_match(void **state)
{
	struct env *e = *state;
	char text[2100];
	memset(text, 'x', sizeof(text));
	for (size_t i = 0; i + 1 < sizeof(text); i += 10)
		text[i] = ' ';
	memcpy(text + 1500, " needle ", 8);
	text[sizeof(text) - 1] = '\n';
	write_file(e, "wide.txt", text, sizeof(text));
	search_ok(e, "needle");
	assert_int_equal(e->r.nhits, 1);
	assert_true(strlen(e->r.hits[0].snippet) <= 200);
	assert_non_null(strstr(e->r.hits[0].snippet, "needle"));
}

static void test_limit(void **state)
{
	struct env *e = *state;
	char name[32];
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "f%02d.txt", i);
		put(e, name, "common words\n");
	}
	search_ok(e, "common");
	assert_int_equal(e->r.nhits, SEARCH_DEFAULT_LIMIT);
	e->o.limit = 3;
	search_ok(e, "common");
	assert_int_equal(e->r.nhits, 3);
	e->o.limit = 100000;
	search_ok(e, "common");
	assert_int_equal(e->r.nhits, 30);
}

/* ───────────────────────── the update ───────────────────────── */

static void test_modified_file_is_indexed_again(void **state)
{
	struct env *e = *state;
	search_ok(e, "socket");
	assert_true(found(e, "src/net.c"));
	search_ok(e, "socket");
	assert_int_equal(e->r.files_updated, 0);
	rewrite(e, "src/net.c", "int open_pigeon(void);\n", time(NULL) + 10);
	search_ok(e, "pigeon");
	assert_int_equal(e->r.files_updated, 1);
	assert_int_equal(e->r.files_indexed, 3);
	assert_int_equal(e->r.nhits, 1);
	assert_string_equal(e->r.hits[0].path, "src/net.c");
	search_ok(e, "SOCK_STREAM");
	assert_int_equal(e->r.nhits, 0);
}

static void test_same_size_new_mtime_is_indexed_again(void **state)
{
	struct env *e = *state;
	rewrite(e, "a.txt", "alpha\n", 1000000);
	search_ok(e, "alpha");
	assert_int_equal(e->r.nhits, 1);
	rewrite(e, "a.txt", "gamma\n", 2000000);
	search_ok(e, "gamma");
	assert_int_equal(e->r.files_updated, 1);
	assert_int_equal(e->r.nhits, 1);
	search_ok(e, "alpha");
	assert_int_equal(e->r.nhits, 0);
}

static void test_deleted_file_is_removed(void **state)
{
	struct env *e = *state;
	char path[PATH_BUF];
	search_ok(e, "socket");
	assert_true(found(e, "src/net.c"));
	snprintf(path, sizeof(path), "%s/src/net.c", e->p.root);
	assert_int_equal(unlink(path), 0);
	search_ok(e, "socket");
	assert_int_equal(e->r.files_removed, 1);
	assert_int_equal(e->r.files_indexed, 2);
	assert_false(found(e, "src/net.c"));
	assert_true(found(e, "README.md"));
}

static void test_index_of_another_root_or_format_starts_again(void **state)
{
	struct env *e = *state;
	struct path_policy other = e->p;
	sqlite3 *db;

	search_ok(e, "socket");
	assert_int_equal(e->r.files_updated, 3);
	/* The same index file given for another root (src/ alone). */
	assert_true(strlen(e->p.root) + 4 < sizeof(other.root));
	strcat(other.root, "/src");
	other.root_fd = -1;
	search_result_free(&e->r);
	assert_int_equal(front_search(&other, &e->o, "socket", &e->r, &e->e), 0);
	assert_int_equal(e->r.files_indexed, 2);
	assert_int_equal(e->r.files_updated, 2);
	assert_string_equal(e->r.hits[0].path, "net.c");
	/* An index of another format. */
	search_ok(e, "socket");
	assert_int_equal(e->r.files_updated, 3);
	assert_int_equal(sqlite3_open(e->index, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	search_ok(e, "socket");
	assert_int_equal(e->r.files_updated, 3);
	assert_true(found(e, "src/net.c"));
}

/* ───────────────────────── what is not indexed ───────────────────────── */

static void test_git_binary_and_links_are_skipped(void **state)
{
	struct env *e = *state;
	char outside[PATH_BUF], link[PATH_BUF], big[PATH_BUF];
	static const char binary[] = "quokka\0\1\2 quokka";

	make_dir(e, ".git");
	put(e, ".git/config", "quokka in git\n");
	write_file(e, "blob.bin", binary, sizeof(binary));
	snprintf(outside, sizeof(outside), "%s/outside.txt", e->base);
	FILE *f = fopen(outside, "w");
	assert_non_null(f);
	fputs("quokka outside\n", f);
	fclose(f);
	snprintf(link, sizeof(link), "%s/link.txt", e->p.root);
	assert_int_equal(symlink(outside, link), 0);
	snprintf(link, sizeof(link), "%s/linkdir", e->p.root);
	assert_int_equal(symlink(e->base, link), 0);
	assert_int_equal(mkfifo(strcat(strcpy(big, e->p.root), "/fifo"), 0644), 0);
	snprintf(big, sizeof(big), "%s/big.txt", e->p.root);
	f = fopen(big, "w");
	assert_non_null(f);
	fputs("quokka big\n", f);
	assert_int_equal(ftruncate(fileno(f), SEARCH_MAX_FILE_BYTES + 1), 0);
	fclose(f);

	search_ok(e, "quokka");
	assert_int_equal(e->r.nhits, 0);
	assert_int_equal(e->r.files_indexed, 3);
}

/* Binary is the one rule of sniff.h, the shaper's and read_file's: a NUL
 * or more than 10% invalid UTF-8 in the first SNIFF_WINDOW bytes; a NUL
 * further on leaves a file text. */
static void test_binary_is_decided_by_the_one_rule(void **state)
{
	struct env *e = *state;
	static char text[20000];
	memset(text, ' ', sizeof(text));
	memcpy(text, "walrus\n", 7);
	text[SNIFF_WINDOW + 500] = '\0';
	write_file(e, "late-nul.txt", text, sizeof(text));
	text[SNIFF_WINDOW + 500] = ' ';
	text[100] = '\0';
	write_file(e, "early-nul.txt", text, sizeof(text));
	text[100] = ' ';
	memset(text + 10, '\xe9', SNIFF_WINDOW / 10 + 1); /* ISO 8859-1, not UTF-8 */
	write_file(e, "latin1.txt", text, sizeof(text));
	search_ok(e, "walrus");
	assert_int_equal(e->r.nhits, 1);
	assert_string_equal(e->r.hits[0].path, "late-nul.txt");
}

static void test_extension_list_is_respected(void **state)
{
	struct env *e = *state;
	snprintf(e->p.extensions[0], sizeof(e->p.extensions[0]), "c");
	e->p.nextensions = 1;
	search_ok(e, "socket");
	assert_int_equal(e->r.files_indexed, 2);
	assert_true(found(e, "src/net.c"));
	assert_false(found(e, "README.md"));
	/* Widened again: the file comes back. */
	e->p.nextensions = 0;
	search_ok(e, "socket");
	assert_int_equal(e->r.files_indexed, 3);
	assert_true(found(e, "README.md"));
}

/* ───────────────────────── queries ───────────────────────── */

static void test_fts5_syntax_in_the_query_is_text(void **state)
{
	struct env *e = *state;
	static const char *const queries[] = {
		"\"socket", "socket*", "NEAR(socket configuration", "-socket", "text:socket",
		"socket AND OR NOT", "^socket {text} (", "\"\"\" socket \"", "so\"ck\"et socket",
		"x:y:z socket", "NEAR(\"a\" \"b\", 3) socket", "_ socket",
	};
	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		search_ok(e, queries[i]);
		assert_true(found(e, "src/net.c"));
	}
}

static void test_empty_query_is_a_syntax_error(void **state)
{
	struct env *e = *state;
	search_fails(e, "", FRONT_SYNTAX, "EMPTY_QUERY");
	search_fails(e, " \t\n ", FRONT_SYNTAX, "EMPTY_QUERY");
	search_fails(e, "\"*-:( ___", FRONT_SYNTAX, "EMPTY_QUERY");
}

static void test_default_index_path_is_under_the_cache(void **state)
{
	struct env *e = *state;
	char cache[128], dir[160];
	struct stat st;
	snprintf(cache, sizeof(cache), "%s/cache", e->base);
	setenv("XDG_CACHE_HOME", cache, 1);
	e->o.index_path = NULL;
	search_ok(e, "socket");
	unsetenv("XDG_CACHE_HOME");
	assert_true(found(e, "src/net.c"));
	snprintf(dir, sizeof(dir), "%s/toolrun", cache);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int indexes = 0;
	for (struct dirent *de; (de = readdir(d));) {
		size_t n = strlen(de->d_name);
		if (strncmp(de->d_name, "search-", 7) == 0 && n == 7 + 16 + 7 &&
		    strcmp(de->d_name + 23, ".sqlite") == 0 &&
		    strspn(de->d_name + 7, "0123456789abcdef") == 16)
			indexes++;
	}
	closedir(d);
	assert_int_equal(indexes, 1);
}

/* With no cache under $XDG_CACHE_HOME or $HOME, the index goes under
 * $TMPDIR: taken is what stands at $TMPDIR/toolrun-cache-UID (made by
 * the test). It is not used, nor written into: the index is in the one
 * $TMPDIR/toolrun-cache-UID-XXXXXX of ours, 0700, found again by the
 * next search. */
static void search_beside_a_taken_tmp_cache(struct env *e, const char *tmp,
					    const char *taken)
{
	char prefix[64];
	int ours = 0;

	setenv("TMPDIR", tmp, 1);
	setenv("HOME", "/dev/null", 1); /* no ~/.cache here */
	unsetenv("XDG_CACHE_HOME");
	e->o.index_path = NULL;
	search_ok(e, "socket");
	assert_true(found(e, "src/net.c"));
	search_ok(e, "socket");
	unsetenv("TMPDIR");
	snprintf(prefix, sizeof(prefix), "toolrun-cache-%u-", (unsigned)getuid());
	DIR *d = opendir(tmp);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		char dir[PATH_BUF];
		struct stat st;
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		ours++;
		snprintf(dir, sizeof(dir), "%s/%s", tmp, de->d_name);
		assert_int_equal(lstat(dir, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
		assert_int_equal(st.st_uid, getuid());
	}
	closedir(d);
	assert_int_equal(ours, 1);
	d = opendir(taken);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));)
		assert_true(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0);
	closedir(d);
}

static void test_tmp_cache_open_to_others_is_not_used(void **state)
{
	struct env *e = *state;
	char tmp[128], taken[192];
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

	snprintf(tmp, sizeof(tmp), "%s/tmp", e->base);
	assert_int_equal(mkdir(tmp, 0755), 0);
	assert_int_equal(chmod(tmp, 01777), 0);
	snprintf(taken, sizeof(taken), "%s/toolrun-cache-%u", tmp, (unsigned)getuid());
	assert_int_equal(mkdir(taken, 0755), 0);
	assert_int_equal(chmod(taken, 0755), 0);
	search_beside_a_taken_tmp_cache(e, tmp, taken);
	if (home)
		setenv("HOME", home, 1);
	free(home);
}

static void test_tmp_cache_of_another_user_is_not_used(void **state)
{
	struct env *e = *state;
	char tmp[128], taken[192];
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

	if (geteuid() != 0)
		skip();
	snprintf(tmp, sizeof(tmp), "%s/tmp", e->base);
	assert_int_equal(mkdir(tmp, 0755), 0);
	assert_int_equal(chmod(tmp, 01777), 0);
	snprintf(taken, sizeof(taken), "%s/toolrun-cache-%u", tmp, (unsigned)getuid());
	assert_int_equal(mkdir(taken, 0700), 0);
	assert_int_equal(chown(taken, 4343, 4343), 0);
	search_beside_a_taken_tmp_cache(e, tmp, taken);
	if (home)
		setenv("HOME", home, 1);
	free(home);
}

/* Write and search ten times; no cmocka assertion, which must not run in
 * the child. Returns 0 or -1, with e->e saying why. */
static int write_and_search(struct env *e, const char *prefix)
{
	for (int i = 0; i < 10; i++) {
		char path[PATH_BUF];
		snprintf(path, sizeof(path), "%s/%s%d.txt", e->p.root, prefix, i);
		FILE *f = fopen(path, "w");
		if (!f || fputs("shared words\n", f) < 0 || fclose(f) != 0)
			return -1;
		search_result_free(&e->r);
		if (front_search(&e->p, &e->o, "shared", &e->r, &e->e) != 0)
			return -1;
	}
	return 0;
}

static void test_two_processes_on_one_index(void **state)
{
	struct env *e = *state;
	int status;

	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(write_and_search(e, "c") == 0 ? 0 : 1);
	int r = write_and_search(e, "p");
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (r != 0)
		fail_msg("%s: %s", e->e.code, e->e.message);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	search_ok(e, "shared");
	assert_int_equal(e->r.nhits, SEARCH_DEFAULT_LIMIT);
	assert_int_equal(e->r.files_indexed, 23);
}

/* ───────────────────────── the embedding command ───────────────────────── */

static void test_embed_command_reorders(void **state)
{
	struct env *e = *state;
	search_ok(e, "configuration");
	assert_string_equal(e->r.hits[0].path, "src/config.c");
	/* A scorer that likes net.c: bm25 put it second. */
	e->o.embed_command = "awk '{ print (index($0, \"\\\"path\\\":\\\"src/net.c\\\"\") ? 10 : 1) }'";
	search_ok(e, "configuration");
	assert_int_equal(e->r.nhits, 2);
	assert_string_equal(e->r.hits[0].path, "src/net.c");
	assert_true(e->r.hits[0].score == 10);
	assert_int_equal(e->r.hits[0].line, 4);
	assert_string_equal(e->r.hits[1].path, "src/config.c");
	assert_true(e->r.hits[1].score == 1);
}

static void test_embed_ties_keep_the_bm25_order(void **state)
{
	struct env *e = *state;
	e->o.embed_command = "while read -r line; do echo 0.5; done";
	search_ok(e, "configuration");
	assert_int_equal(e->r.nhits, 2);
	assert_string_equal(e->r.hits[0].path, "src/config.c");
}

static void test_embed_command_sees_query_path_line_text(void **state)
{
	struct env *e = *state;
	char out[PATH_BUF], cmd[PATH_BUF + 64], buf[4096] = "";
	snprintf(out, sizeof(out), "%s/seen.json", e->base);
	snprintf(cmd, sizeof(cmd), "tee '%s' | sed 's/.*/1/'", out);
	e->o.embed_command = cmd;
	search_ok(e, "SOCK_STREAM");
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "{\"query\":\"SOCK_STREAM\",\"path\":\"src/net.c\",\"line\":4,"
				 "\"text\":\"/* Open a socket. */\\nint open_socket(void)\\n{\\n\\treturn "
				 "socket(AF_INET, SOCK_STREAM, 0); /* no configuration here */\\n}\\n\"}\n");
}

static void test_failing_embed_command(void **state)
{
	struct env *e = *state;
	e->o.embed_command = "cat >/dev/null; exit 3";
	search_fails(e, "configuration", FRONT_EXECUTION, "EMBED_FAILED");
	assert_non_null(strstr(e->e.message, "cat >/dev/null; exit 3"));
	assert_non_null(strstr(e->e.message, "status 3"));
	/* Wrong number of lines, then not numbers; one that reads nothing. */
	e->o.embed_command = "echo 1";
	search_fails(e, "configuration", FRONT_EXECUTION, "EMBED_FAILED");
	assert_non_null(strstr(e->e.message, "status 0"));
	e->o.embed_command = "cat";
	search_fails(e, "configuration", FRONT_EXECUTION, "EMBED_FAILED");
	e->o.embed_command = "printf '1\\n2\\n'";
	search_ok(e, "configuration");
	assert_string_equal(e->r.hits[0].path, "src/net.c");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_the_file_about_the_words_ranks_first),
		T(test_hit_gives_path_line_and_snippet),
		T(test_part_of_an_identifier_is_found),
		T(test_line_in_a_later_chunk),
		T(test_long_line_snippet_is_cut_around_the_match),
		T(test_limit),
		T(test_modified_file_is_indexed_again),
		T(test_same_size_new_mtime_is_indexed_again),
		T(test_deleted_file_is_removed),
		T(test_index_of_another_root_or_format_starts_again),
		T(test_git_binary_and_links_are_skipped),
		T(test_binary_is_decided_by_the_one_rule),
		T(test_extension_list_is_respected),
		T(test_fts5_syntax_in_the_query_is_text),
		T(test_empty_query_is_a_syntax_error),
		T(test_default_index_path_is_under_the_cache),
		T(test_tmp_cache_open_to_others_is_not_used),
		T(test_tmp_cache_of_another_user_is_not_used),
		T(test_two_processes_on_one_index),
		T(test_embed_command_reorders),
		T(test_embed_ties_keep_the_bm25_order),
		T(test_embed_command_sees_query_path_line_text),
		T(test_failing_embed_command),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
