/*
 * <grep> and <tree> (tagswalk.h). The walk starts from a directory
 * path_open() checked and goes down with openat(O_NOFOLLOW), so it never
 * leaves the root; grep opens each file through path_open() again, so the
 * extension list and the size limits apply as they do to <open>.
 */
#include "tagswalk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsontext.h"
#include "search.h"
#include "util.h"

struct walk;
/* One entry; depth 1 for the directory's own entries. */
typedef void (*visit_fn)(struct walk *w, const char *rel, bool is_dir, bool is_file);

struct walk {
	const struct path_policy *policy;
	int max_depth;
	bool stop;      /* a cap was reached */
	visit_fn visit;
	/* grep */
	regex_t re;
	struct json_object *matches;
	size_t nmatches;
	uint64_t files;
	/* tree */
	struct json_object *entries;
	size_t nentries;
	size_t base_len; /* of the tree's own path, cut from entries */
};

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dirfd but ".", ".." and ".git", sorted; NULL on error. */
static char **list_dir(int dirfd, size_t *n)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char **names = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".git"))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			char **grown = realloc(names, cap * sizeof(*names));
			if (!grown)
				break;
			names = grown;
		}
		names[*n] = strdup(de->d_name);
		if (names[*n])
			(*n)++;
	}
	closedir(d);
	if (names)
		qsort(names, *n, sizeof(*names), by_name);
	return names;
}

static void join(char *out, size_t len, const char *rel, const char *name)
{
	if (strcmp(rel, ".") == 0)
		snprintf(out, len, "%s", name);
	else
		snprintf(out, len, "%s/%s", rel, name);
}

static void walk_dir(struct walk *w, int dirfd, const char *rel, int depth)
{
	size_t n;
	char **names = list_dir(dirfd, &n);
	char child[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (w->stop || fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		join(child, sizeof(child), rel, names[i]);
		bool is_dir = S_ISDIR(st.st_mode);
		w->visit(w, child, is_dir, S_ISREG(st.st_mode));
		if (!is_dir || depth >= w->max_depth || w->stop)
			continue;
		int fd = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			walk_dir(w, fd, child, depth + 1);
			close(fd);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ───────────────────────── grep ───────────────────────── */

/* PATTERN [PATH]: a quoted pattern loses its quotes. */
static int split_grep(const char *arg, char **pattern, const char **path,
		      struct front_error *e)
{
	const char *p = arg, *end;
	char q = (*p == '\'' || *p == '"') ? *p : 0;

	if (q) {
		end = strchr(p + 1, q);
		if (!end)
			return front_fail(e, FRONT_SYNTAX, "BAD_PATTERN", "grep %s: unclosed quote",
					  arg);
		p++;
	} else {
		end = p + strcspn(p, " \t\n\r");
	}
	*pattern = strndup(p, (size_t)(end - p));
	if (!*pattern)
		return front_fail(e, FRONT_INTERNAL, "NO_MEMORY", "out of memory");
	end += q ? 1 : 0;
	end += strspn(end, " \t\n\r");
	*path = *end ? end : ".";
	return 0;
}

static void grep_match(struct walk *w, const char *rel, uint64_t line, const char *text,
		       size_t len)
{
	if (w->nmatches == GREP_MAX_MATCHES) {
		w->stop = true;
		return;
	}
	struct json_object *m = json_object_new_object();
	json_object_object_add(m, "path", json_object_new_string(rel));
	json_object_object_add(m, "line", json_object_new_uint64(line));
	json_object_object_add(m, "text",
			       json_text((const uint8_t *)text, MIN(len, GREP_MAX_LINE)));
	json_object_array_add(w->matches, m);
	w->nmatches++;
}

/* The lines of buf that match, buf NUL-terminated at len. */
static void grep_buffer(struct walk *w, const char *rel, char *buf, size_t len)
{
	uint64_t line = 1;

	for (char *p = buf; p < buf + len && !w->stop; line++) {
		char *nl = memchr(p, '\n', (size_t)(buf + len - p));
		char *end = nl ? nl : buf + len;
		char saved = *end;
		*end = '\0';
		if (regexec(&w->re, p, 0, NULL, 0) == 0)
			grep_match(w, rel, line, p, (size_t)(end - p));
		*end = saved;
		p = end + 1;
	}
}

static void grep_file(struct walk *w, const char *rel)
{
	struct path_ref ref;
	struct front_error ignored;
	struct stat st;

	/* Refused by the policy (extension, link out of the root): skipped. */
	if (path_open(w->policy, rel, PATH_READ, &ref, &ignored) < 0)
		return;
	if (fstat(ref.fd, &st) == 0 && st.st_size <= SEARCH_MAX_FILE_BYTES) {
		char *buf = malloc((size_t)st.st_size + 1);
		ssize_t n = buf ? read(ref.fd, buf, (size_t)st.st_size) : -1;
		/* Not text: a NUL byte in it. */
		if (n >= 0 && !memchr(buf, '\0', (size_t)n)) {
			buf[n] = '\0';
			w->files++;
			grep_buffer(w, rel, buf, (size_t)n);
		}
		free(buf);
	}
	close(ref.fd);
}

static void grep_visit(struct walk *w, const char *rel, bool is_dir, bool is_file)
{
	(void)is_dir;
	if (is_file)
		grep_file(w, rel);
}

int tags_grep(const struct path_policy *p, const char *argument, struct json_object **result,
	      struct front_error *e)
{
	struct walk w = {.policy = p, .max_depth = GREP_MAX_DEPTH, .visit = grep_visit};
	struct path_ref ref;
	char *pattern;
	const char *path = ".";

	if (split_grep(argument, &pattern, &path, e) < 0)
		return -1;
	int rc = regcomp(&w.re, pattern, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		char why[128];
		regerror(rc, &w.re, why, sizeof(why));
		front_fail(e, FRONT_SYNTAX, "BAD_PATTERN", "grep %s: %s", pattern, why);
		free(pattern);
		return -1;
	}
	free(pattern);
	w.matches = json_object_new_array();
	/* A directory, or else one file. */
	if (path_open(p, path, PATH_DIR, &ref, e) == 0) {
		walk_dir(&w, ref.fd, ref.rel, 1);
		close(ref.fd);
	} else if (path_open(p, path, PATH_READ, &ref, e) == 0) {
		close(ref.fd);
		grep_file(&w, ref.rel);
	} else {
		regfree(&w.re);
		json_object_put(w.matches);
		return -1;
	}
	regfree(&w.re);
	*result = json_object_new_object();
	json_object_object_add(*result, "path", json_object_new_string(ref.rel));
	json_object_object_add(*result, "matches", w.matches);
	json_object_object_add(*result, "files_searched", json_object_new_uint64(w.files));
	json_object_object_add(*result, "truncated", json_object_new_boolean(w.stop));
	return 0;
}

/* ───────────────────────── tree ───────────────────────── */

static void tree_visit(struct walk *w, const char *rel, bool is_dir, bool is_file)
{
	char entry[PATH_MAX + 1];

	(void)is_file;
	if (w->nentries == TREE_MAX_ENTRIES) {
		w->stop = true;
		return;
	}
	snprintf(entry, sizeof(entry), "%s%s", rel + w->base_len, is_dir ? "/" : "");
	json_object_array_add(w->entries, json_object_new_string(entry));
	w->nentries++;
}

int tags_tree(const struct path_policy *p, const char *argument, struct json_object **result,
	      struct front_error *e)
{
	struct walk w = {.policy = p, .max_depth = TREE_MAX_DEPTH, .visit = tree_visit};
	struct path_ref ref;

	if (path_open(p, argument[0] ? argument : ".", PATH_DIR, &ref, e) < 0)
		return -1;
	/* Entries are shown from the tree's own directory. */
	w.base_len = strcmp(ref.rel, ".") == 0 ? 0 : strlen(ref.rel) + 1;
	w.entries = json_object_new_array();
	walk_dir(&w, ref.fd, ref.rel, 1);
	close(ref.fd);
	*result = json_object_new_object();
	json_object_object_add(*result, "path", json_object_new_string(ref.rel));
	json_object_object_add(*result, "entries", w.entries);
	/* Said, so that nothing printed is not taken for a failure. */
	json_object_object_add(*result, "empty", json_object_new_boolean(w.nentries == 0));
	json_object_object_add(*result, "truncated", json_object_new_boolean(w.stop));
	return 0;
}
