/*
 * Unit tests for preload/resolve.c: the file an exec would run, found as
 * glibc's execvp finds it, over real files in a temporary directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "resolve.h"

static char dir[64];
static char cwd_before[PATH_MAX];

/* dir/rel, a file with mode (its directories made first). */
static void make_file(const char *rel, mode_t mode)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void make_dir(const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static const char *in_dir(const char *rel)
{
	static char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return path;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-resolve.XXXXXX");
	if (!mkdtemp(dir) || !getcwd(cwd_before, sizeof(cwd_before)))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	if (chdir(cwd_before) < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A name with a slash is taken as it is, and only if it may run. */
static void test_slash_taken_as_is(void **state)
{
	(void)state;
	char out[PATH_MAX];
	make_file("run", 0755);
	make_file("data", 0644);

	assert_true(resolve_program(in_dir("run"), "/nonexistent", out));
	assert_string_equal(out, in_dir("run"));
	assert_false(resolve_program(in_dir("data"), NULL, out));
	assert_false(resolve_program(in_dir("missing"), NULL, out));
	assert_true(resolve_is_executable(in_dir("run")));
	assert_false(resolve_is_executable(in_dir("data")));
	assert_false(resolve_is_executable(dir)); /* a directory */
}

/* The search skips what is missing, not executable or not a regular
 * file, and takes the first match that may run. */
static void test_search_skips_what_cannot_run(void **state)
{
	(void)state;
	char out[PATH_MAX], list[4 * PATH_MAX];
	make_dir("a");
	make_dir("b");
	make_dir("c");
	make_dir("d");
	make_dir("b/prog");          /* a directory of that name */
	make_file("c/prog", 0644);   /* not executable */
	make_file("d/prog", 0755);
	make_dir("e");
	make_file("e/prog", 0755);   /* later: not reached */

	snprintf(list, sizeof(list), "%s/a:%s/b:%s/c:%s/d:%s/e", dir, dir, dir, dir, dir);
	assert_true(resolve_program("prog", list, out));
	assert_string_equal(out, in_dir("d/prog"));

	snprintf(list, sizeof(list), "%s/a:%s/b:%s/c", dir, dir, dir);
	assert_false(resolve_program("prog", list, out));
}

/* A file in a search directory's place (ENOTDIR) lets the search go on,
 * as execvp's does; an error it does not expect (a symlink loop) ends it. */
static void test_search_errors(void **state)
{
	(void)state;
	char out[PATH_MAX], list[3 * PATH_MAX], loop[PATH_MAX];
	make_file("notadir", 0644);
	make_dir("bin");
	make_file("bin/prog", 0755);

	snprintf(list, sizeof(list), "%s/notadir:%s/bin", dir, dir);
	assert_true(resolve_program("prog", list, out));
	assert_string_equal(out, in_dir("bin/prog"));

	snprintf(loop, sizeof(loop), "%s/loop", dir);
	assert_int_equal(symlink(loop, loop), 0);
	snprintf(list, sizeof(list), "%s/loop:%s/bin", dir, dir);
	assert_false(resolve_program("prog", list, out));
}

/* An empty element is the current directory: the name comes back as it
 * is, relative to it. */
static void test_empty_element_is_cwd(void **state)
{
	(void)state;
	char out[PATH_MAX], list[PATH_MAX];
	make_dir("empty");
	make_file("here", 0755);
	assert_int_equal(chdir(dir), 0);

	snprintf(list, sizeof(list), "%s/empty::/nonexistent", dir);
	assert_true(resolve_program("here", list, out));
	assert_string_equal(out, "here");
	snprintf(list, sizeof(list), "%s/empty:", dir);
	assert_true(resolve_program("here", list, out));
	assert_string_equal(out, "here");
	snprintf(list, sizeof(list), "%s/empty", dir);
	assert_false(resolve_program("here", list, out));
}

/* Without PATH, glibc's default; names too long for a file are no file. */
static void test_default_path_and_long_names(void **state)
{
	(void)state;
	char out[PATH_MAX], name[NAME_MAX + 2];

	assert_true(resolve_program("sh", NULL, out));
	assert_true(strcmp(out, "/bin/sh") == 0);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_false(resolve_program(name, "/bin", out));
	assert_false(resolve_program("", "/bin", out));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_slash_taken_as_is),
		T(test_search_skips_what_cannot_run),
		T(test_search_errors),
		T(test_empty_element_is_cwd),
		T(test_default_path_and_long_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
