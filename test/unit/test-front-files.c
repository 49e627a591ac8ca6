/*
 * Unit tests for front/core/files.c in a real temporary root: line ranges,
 * from the start and from the end, numbering, the budget, line counts,
 * binary files, atomic writes that keep the mode and leave nothing
 * behind when they fail, and edits.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "files.h"
#include "sniff.h"

/* ───────────────────────── helpers ───────────────────────── */

#define FIVE "one\ntwo\nthree\nfour\nfive\n"

struct env {
	char root[64];
	struct path_policy policy;
	struct read_budget budget;
	struct read_request rq;
	struct read_result res;
	struct write_result wr;
	struct front_error err;
};

static void put_bytes(struct env *e, const char *name, const void *data, size_t len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", e->root, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void put(struct env *e, const char *name, const char *text)
{
	put_bytes(e, name, text, strlen(text));
}

/* The content of root/name, NUL-terminated, in buf. */
static void content(struct env *e, const char *name, char *buf, size_t size)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", e->root, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, size - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static struct stat stat_of(struct env *e, const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", e->root, name);
	assert_int_equal(lstat(path, &st), 0);
	return st;
}

static unsigned entries(struct env *e)
{
	unsigned n = 0;
	DIR *d = opendir(e->root);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	snprintf(e->root, sizeof(e->root), "/tmp/test-front-files-XXXXXX");
	if (!mkdtemp(e->root) || path_policy_init(&e->policy, e->root, NULL, &e->err) < 0)
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[160];

	read_result_free(&e->res);
	path_policy_free(&e->policy);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->root);
	int r = system(cmd);
	free(e);
	return r == 0 ? 0 : -1;
}

/* Read rq (path set by the caller) and check the shown range. */
static void read_ok(struct env *e, const char *text, uint64_t first, uint64_t last,
		    bool truncated)
{
	read_result_free(&e->res);
	if (front_read_file(&e->policy, &e->budget, &e->rq, &e->res, &e->err) < 0)
		fail_msg("%s: %s %s", e->rq.path, e->err.code, e->err.message);
	assert_string_equal(e->res.text, text);
	assert_int_equal(e->res.text_len, strlen(text));
	assert_int_equal(e->res.first_line, first);
	assert_int_equal(e->res.last_line, last);
	assert_int_equal(e->res.truncated, truncated);
	assert_false(e->res.binary);
}

static void read_fails(struct env *e, const char *code)
{
	read_result_free(&e->res);
	assert_int_equal(front_read_file(&e->policy, &e->budget, &e->rq, &e->res, &e->err), -1);
	assert_string_equal(e->err.code, code);
	assert_null(e->res.text);
}

/* ───────────────────────── reading ───────────────────────── */

static void test_whole_file_and_ranges(void **state)
{
	struct env *e = *state;

	put(e, "five.txt", FIVE);
	e->rq.path = "five.txt";
	read_ok(e, FIVE, 1, 5, false);
	assert_int_equal(e->res.total_lines, 5);
	assert_int_equal(e->res.size, strlen(FIVE));
	assert_string_equal(e->res.rel, "five.txt");
	e->rq.offset = 2;
	e->rq.limit = 2;
	read_ok(e, "two\nthree\n", 2, 3, false);
	e->rq.offset = 4;
	e->rq.limit = 10; /* more than there are: not a truncation */
	read_ok(e, "four\nfive\n", 4, 5, false);
	e->rq.offset = 6;
	e->rq.limit = 0;
	read_ok(e, "", 0, 0, false);
	assert_int_equal(e->res.total_lines, 5);
}

static void test_numbered_like_cat_n(void **state)
{
	struct env *e = *state;

	put(e, "five.txt", FIVE);
	e->rq.path = "five.txt";
	e->rq.numbered = true;
	e->rq.offset = 4;
	read_ok(e, "     4\tfour\n     5\tfive\n", 4, 5, false);
}

static void test_from_end(void **state)
{
	struct env *e = *state;

	put(e, "five.txt", FIVE);
	e->rq.path = "five.txt";
	e->rq.from_end = true;
	e->rq.offset = 2;
	read_ok(e, "four\nfive\n", 4, 5, false);
	e->rq.offset = 3;
	e->rq.limit = 1;
	read_ok(e, "three\n", 3, 3, false);
	e->rq.offset = 0;
	e->rq.limit = 3;
	read_ok(e, "three\nfour\nfive\n", 3, 5, false);
	e->rq.offset = 99;
	e->rq.limit = 0;
	read_ok(e, FIVE, 1, 5, false);
	/* No range: the tail that fits the budget. */
	e->rq.offset = 0;
	e->budget.max_lines = 2;
	read_ok(e, "four\nfive\n", 4, 5, true);
	e->budget.max_lines = 0;
	e->budget.max_bytes = 12;
	read_ok(e, "four\nfive\n", 4, 5, true);
	e->rq.limit = 2; /* the last two fit: nothing left out */
	read_ok(e, "four\nfive\n", 4, 5, false);
}

static void test_budget_lines_and_bytes(void **state)
{
	struct env *e = *state;

	put(e, "five.txt", FIVE);
	e->rq.path = "five.txt";
	e->budget.max_lines = 2;
	read_ok(e, "one\ntwo\n", 1, 2, true);
	assert_int_equal(e->res.total_lines, 5);
	e->rq.limit = 2; /* the budget allows what was asked */
	read_ok(e, "one\ntwo\n", 1, 2, false);
	e->rq.limit = 0;
	e->budget.max_lines = 0;
	e->budget.max_bytes = 9; /* "three\n" would pass it */
	read_ok(e, "one\ntwo\n", 1, 2, true);
	e->budget.max_bytes = 8;
	read_ok(e, "one\ntwo\n", 1, 2, true);
	e->rq.numbered = true;
	e->budget.max_bytes = 20;
	read_ok(e, "     1\tone\n", 1, 1, true);
}

static void test_long_line_is_cut(void **state)
{
	struct env *e = *state;

	put(e, "long.txt", "abcdefghij\nk\n");
	e->rq.path = "long.txt";
	e->budget.max_bytes = 4;
	read_ok(e, "abcd", 1, 1, true);
	/* At a character boundary: "é" is two bytes. */
	put(e, "utf8.txt", "\xc3\xa9\xc3\xa9\xc3\xa9\n");
	e->rq.path = "utf8.txt";
	e->budget.max_bytes = 3;
	read_ok(e, "\xc3\xa9", 1, 1, true);
}

static void test_total_lines_and_final_newline(void **state)
{
	struct env *e = *state;

	put(e, "nonl.txt", "a\nb");
	e->rq.path = "nonl.txt";
	read_ok(e, "a\nb", 1, 2, false);
	assert_int_equal(e->res.total_lines, 2);
	e->rq.from_end = true;
	e->rq.offset = 1;
	read_ok(e, "b", 2, 2, false);
	e->rq.from_end = false;
	e->rq.offset = 0;
	put(e, "nl.txt", "a\nb\n");
	e->rq.path = "nl.txt";
	read_ok(e, "a\nb\n", 1, 2, false);
	assert_int_equal(e->res.total_lines, 2);
	put(e, "blank.txt", "\n\n\n");
	e->rq.path = "blank.txt";
	read_ok(e, "\n\n\n", 1, 3, false);
	assert_int_equal(e->res.total_lines, 3);
}

static void test_empty_file(void **state)
{
	struct env *e = *state;

	put(e, "empty.txt", "");
	e->rq.path = "empty.txt";
	read_ok(e, "", 0, 0, false);
	assert_int_equal(e->res.total_lines, 0);
	assert_int_equal(e->res.size, 0);
	e->rq.from_end = true;
	read_ok(e, "", 0, 0, false);
}

static void test_binary_summary(void **state)
{
	struct env *e = *state;

	put_bytes(e, "nul.bin", "", 1);
	e->rq.path = "nul.bin";
	assert_int_equal(front_read_file(&e->policy, &e->budget, &e->rq, &e->res, &e->err), 0);
	assert_true(e->res.binary);
	assert_string_equal(e->res.text, "binary file, 1 bytes, data, sha256 "
		"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
	read_result_free(&e->res);

	static const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0";
	put_bytes(e, "prog", elf, sizeof(elf) - 1);
	e->rq.path = "prog";
	assert_int_equal(front_read_file(&e->policy, &e->budget, &e->rq, &e->res, &e->err), 0);
	assert_true(e->res.binary);
	assert_non_null(strstr(e->res.text, "binary file, 16 bytes, ELF, sha256 "));
	assert_null(strchr(e->res.text, '\n'));
	read_result_free(&e->res);

	put(e, "latin1.txt", "caf\xe9\n"); /* ISO 8859-1, not UTF-8 */
	e->rq.path = "latin1.txt";
	assert_int_equal(front_read_file(&e->policy, &e->budget, &e->rq, &e->res, &e->err), 0);
	assert_true(e->res.binary);
	read_result_free(&e->res);

	put(e, "utf8.txt", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n");
	e->rq.path = "utf8.txt";
	read_ok(e, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n", 1, 1, false);
}

static void test_large_file_and_the_sniff_boundary(void **state)
{
	struct env *e = *state;
	enum { LINES = 20000 };
	char *big = malloc(LINES * 8 + 1), *p = big;

	assert_non_null(big);
	for (int i = 1; i <= LINES; i++)
		p += sprintf(p, "%07d\n", i);
	put_bytes(e, "big.txt", big, (size_t)(p - big));
	free(big);
	e->rq.path = "big.txt";
	e->rq.from_end = true;
	e->rq.offset = 2;
	read_ok(e, "0019999\n0020000\n", LINES - 1, LINES, false);
	assert_int_equal(e->res.total_lines, LINES);
	assert_int_equal(e->res.size, LINES * 8);

	/* A character that straddles the end of the binary rule's window
	 * (sniff.h) is still text. */
	char text[SNIFF_WINDOW + 8];
	memset(text, 'a', sizeof(text));
	memcpy(text + SNIFF_WINDOW - 1, "\xe2\x82\xac", 3);
	text[sizeof(text) - 1] = '\n';
	put_bytes(e, "edge.txt", text, sizeof(text));
	e->rq.path = "edge.txt";
	e->rq.from_end = false;
	e->rq.offset = 0;
	read_result_free(&e->res);
	assert_int_equal(front_read_file(&e->policy, NULL, &e->rq, &e->res, &e->err), 0);
	assert_false(e->res.binary);
	assert_int_equal(e->res.text_len, sizeof(text));
}

static void test_read_limits_and_refusals(void **state)
{
	struct env *e = *state;

	put(e, "five.txt", FIVE);
	e->policy.max_read_bytes = 10;
	e->rq.path = "five.txt";
	read_fails(e, "TOO_LARGE");
	assert_int_equal(e->err.category, FRONT_RESOURCE);
	e->policy.max_read_bytes = 0; /* the default */
	read_ok(e, FIVE, 1, 5, false);
	e->rq.path = "../five.txt";
	read_fails(e, "OUTSIDE_ROOT");
	e->rq.path = "none.txt";
	read_fails(e, "NOT_FOUND");
}

/* ───────────────────────── writing ───────────────────────── */

static void test_write_creates(void **state)
{
	struct env *e = *state;
	char buf[64];

	mode_t mask = umask(022);
	assert_int_equal(front_write_file(&e->policy, "new.txt", "hello\n", 6, &e->wr, &e->err), 0);
	umask(mask);
	assert_true(e->wr.created);
	assert_int_equal(e->wr.bytes, 6);
	assert_string_equal(e->wr.rel, "new.txt");
	content(e, "new.txt", buf, sizeof(buf));
	assert_string_equal(buf, "hello\n");
	assert_int_equal(stat_of(e, "new.txt").st_mode & 07777, 0644);
	assert_int_equal(entries(e), 1);
	/* Empty content is a file too. */
	assert_int_equal(front_write_file(&e->policy, "empty", "", 0, &e->wr, &e->err), 0);
	assert_int_equal(stat_of(e, "empty").st_size, 0);
}

static void test_write_replaces_and_keeps_mode(void **state)
{
	struct env *e = *state;
	char buf[64], path[128];

	put(e, "run.sh", "old\n");
	snprintf(path, sizeof(path), "%s/run.sh", e->root);
	assert_int_equal(chmod(path, 0750), 0);
	ino_t before = stat_of(e, "run.sh").st_ino;
	assert_int_equal(front_write_file(&e->policy, "run.sh", "#!/bin/sh\n", 10, &e->wr,
					  &e->err), 0);
	assert_false(e->wr.created);
	content(e, "run.sh", buf, sizeof(buf));
	assert_string_equal(buf, "#!/bin/sh\n");
	struct stat st = stat_of(e, "run.sh");
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_not_equal(st.st_ino, before); /* renamed over, not rewritten */
	assert_int_equal(entries(e), 1);
}

/* New content is not what set-id bits were given to: they are dropped. */
static void test_write_drops_set_id_bits(void **state)
{
	struct env *e = *state;
	char path[128];

	put(e, "tool", "old\n");
	snprintf(path, sizeof(path), "%s/tool", e->root);
	assert_int_equal(chmod(path, 06755), 0);
	assert_int_equal(front_write_file(&e->policy, "tool", "new\n", 4, &e->wr, &e->err), 0);
	assert_int_equal(stat_of(e, "tool").st_mode & 07777, 0755);
}

/* A file the caller may not write is not replaced behind its back,
 * though the directory would let a rename do it. */
static void test_write_refuses_a_file_the_caller_may_not_write(void **state)
{
	struct env *e = *state;
	char path[128], buf[64];
	int status;

	if (geteuid() != 0)
		skip(); /* needs a second user to be */
	put(e, "theirs.txt", "theirs\n");
	snprintf(path, sizeof(path), "%s/theirs.txt", e->root);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(chmod(e->root, 0777), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct write_result w;
		struct front_error err;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		int r = front_write_file(&e->policy, "theirs.txt", "mine\n", 5, &w, &err);
		_exit(r == -1 && strcmp(err.code, "PERMISSION_DENIED") == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	content(e, "theirs.txt", buf, sizeof(buf));
	assert_string_equal(buf, "theirs\n");
	assert_int_equal(stat_of(e, "theirs.txt").st_uid, 0);
}

static void test_write_through_symlink_is_refused(void **state)
{
	struct env *e = *state;
	char buf[64], path[128];

	put(e, "real.txt", "real\n");
	snprintf(path, sizeof(path), "%s/link.txt", e->root);
	assert_int_equal(symlink("real.txt", path), 0);
	assert_int_equal(front_write_file(&e->policy, "link.txt", "x", 1, &e->wr, &e->err), -1);
	assert_string_equal(e->err.code, "SYMLINK_TARGET");
	assert_int_equal(e->err.category, FRONT_VALIDATION);
	content(e, "real.txt", buf, sizeof(buf));
	assert_string_equal(buf, "real\n");
	assert_true(S_ISLNK(stat_of(e, "link.txt").st_mode));
	/* A dangling one too: it would not create its target either. */
	snprintf(path, sizeof(path), "%s/dangling.txt", e->root);
	assert_int_equal(symlink("nowhere.txt", path), 0);
	assert_int_equal(front_write_file(&e->policy, "dangling.txt", "x", 1, &e->wr, &e->err),
			 -1);
	assert_string_equal(e->err.code, "SYMLINK_TARGET");
	/* An edit reads through the link and refuses to write through it. */
	assert_int_equal(front_edit_file(&e->policy, "link.txt", "real", 4, "fake", 4, &e->wr,
					 &e->err), -1);
	assert_string_equal(e->err.code, "SYMLINK_TARGET");
	content(e, "real.txt", buf, sizeof(buf));
	assert_string_equal(buf, "real\n");
	assert_int_equal(entries(e), 3);
}

static void test_failed_write_leaves_no_temp_file(void **state)
{
	struct env *e = *state;
	struct rlimit old, small = { 4, 4 };
	char buf[64];

	put(e, "keep.txt", "keep\n");
	/* Writes past 4 bytes fail with EFBIG, once SIGXFSZ is ignored. */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	small.rlim_max = old.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	int r = front_write_file(&e->policy, "keep.txt", "0123456789", 10, &e->wr, &e->err);
	int r2 = front_write_file(&e->policy, "new.txt", "0123456789", 10, &e->wr, &e->err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(r, -1);
	assert_int_equal(r2, -1);
	assert_string_equal(e->err.code, "IO_ERROR");
	assert_int_equal(entries(e), 1);
	content(e, "keep.txt", buf, sizeof(buf));
	assert_string_equal(buf, "keep\n");
}

static void test_write_limits_and_refusals(void **state)
{
	struct env *e = *state;
	char path[128];

	e->policy.max_write_bytes = 4;
	assert_int_equal(front_write_file(&e->policy, "big.txt", "12345", 5, &e->wr, &e->err), -1);
	assert_string_equal(e->err.code, "TOO_LARGE");
	assert_int_equal(e->err.category, FRONT_RESOURCE);
	assert_int_equal(front_write_file(&e->policy, "ok.txt", "1234", 4, &e->wr, &e->err), 0);
	snprintf(path, sizeof(path), "%s/dir", e->root);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(front_write_file(&e->policy, "dir", "x", 1, &e->wr, &e->err), -1);
	assert_string_equal(e->err.code, "NOT_A_FILE");
	assert_int_equal(front_write_file(&e->policy, "/etc/passwd", "x", 1, &e->wr, &e->err), -1);
	assert_string_equal(e->err.code, "OUTSIDE_ROOT");
	assert_int_equal(front_write_file(&e->policy, "dir/sub/x", "x", 1, &e->wr, &e->err), -1);
	assert_string_equal(e->err.code, "NOT_FOUND");
	assert_int_equal(entries(e), 2);
}

/* ───────────────────────── editing ───────────────────────── */

static void test_edit_once(void **state)
{
	struct env *e = *state;
	char buf[64], path[128];

	put(e, "greet.txt", "hello world\n");
	snprintf(path, sizeof(path), "%s/greet.txt", e->root);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(front_edit_file(&e->policy, "greet.txt", "world", 5, "there", 5, &e->wr,
					 &e->err), 0);
	assert_int_equal(e->wr.replacements, 1);
	assert_int_equal(e->wr.bytes, 12);
	assert_false(e->wr.created);
	content(e, "greet.txt", buf, sizeof(buf));
	assert_string_equal(buf, "hello there\n");
	assert_int_equal(stat_of(e, "greet.txt").st_mode & 07777, 0600);
	/* Replaced by nothing. */
	assert_int_equal(front_edit_file(&e->policy, "greet.txt", " there", 6, "", 0, &e->wr,
					 &e->err), 0);
	content(e, "greet.txt", buf, sizeof(buf));
	assert_string_equal(buf, "hello\n");
}

static void test_edit_not_found_not_unique(void **state)
{
	struct env *e = *state;
	char buf[64];

	put(e, "ab.txt", "a b a\n");
	assert_int_equal(front_edit_file(&e->policy, "ab.txt", "c", 1, "d", 1, &e->wr, &e->err),
			 -1);
	assert_string_equal(e->err.code, "NOT_FOUND");
	/* Each message names the argument as edit_file's schema does. */
	assert_non_null(strstr(e->err.message, "ab.txt: old_string not found"));
	assert_int_equal(front_edit_file(&e->policy, "ab.txt", "a", 1, "d", 1, &e->wr, &e->err),
			 -1);
	assert_string_equal(e->err.code, "NOT_UNIQUE");
	assert_non_null(strstr(e->err.message, "old_string occurs 2 times"));
	assert_int_equal(front_edit_file(&e->policy, "ab.txt", "", 0, "d", 1, &e->wr, &e->err),
			 -1);
	assert_string_equal(e->err.code, "EMPTY_OLD_STRING");
	assert_non_null(strstr(e->err.message, "old_string is empty"));
	assert_int_equal(e->err.category, FRONT_SYNTAX);
	content(e, "ab.txt", buf, sizeof(buf));
	assert_string_equal(buf, "a b a\n");
	/* Overlapping occurrences are no single place either. */
	put(e, "aaa.txt", "aaa");
	assert_int_equal(front_edit_file(&e->policy, "aaa.txt", "aa", 2, "b", 1, &e->wr, &e->err),
			 -1);
	assert_string_equal(e->err.code, "NOT_UNIQUE");
	assert_int_equal(front_edit_file(&e->policy, "none.txt", "a", 1, "b", 1, &e->wr, &e->err),
			 -1);
	assert_string_equal(e->err.code, "NOT_FOUND");
	assert_int_equal(entries(e), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)
		T(test_whole_file_and_ranges),
		T(test_numbered_like_cat_n),
		T(test_from_end),
		T(test_budget_lines_and_bytes),
		T(test_long_line_is_cut),
		T(test_total_lines_and_final_newline),
		T(test_empty_file),
		T(test_binary_summary),
		T(test_large_file_and_the_sniff_boundary),
		T(test_read_limits_and_refusals),
		T(test_write_creates),
		T(test_write_replaces_and_keeps_mode),
		T(test_write_drops_set_id_bits),
		T(test_write_refuses_a_file_the_caller_may_not_write),
		T(test_write_through_symlink_is_refused),
		T(test_failed_write_leaves_no_temp_file),
		T(test_write_limits_and_refusals),
		T(test_edit_once),
		T(test_edit_not_found_not_unique),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
