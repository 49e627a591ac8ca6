/*
 * Unit tests for preload/cfgcache.c: the config a process sees, parsed
 * once, refreshed when its file changes, from real files.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cfgcache.h"

static char dir[64];
static char file[128];
static int saved_stderr = -1;
static int err_pipe[2] = {-1, -1};

static void write_config(const char *path, const char *text)
{
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0); /* a new inode: a new identity */
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-cfgcache.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(file, sizeof(file), "%s/toolrun.conf", dir);
	/* The cache's one warning goes to stderr: into a pipe of ours. */
	fflush(stderr);
	saved_stderr = dup(STDERR_FILENO);
	if (saved_stderr < 0 || pipe2(err_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	dup2(err_pipe[1], STDERR_FILENO);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	close(err_pipe[0]);
	close(err_pipe[1]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* What the cache wrote to stderr since the last call. */
static const char *warnings(void)
{
	static char buf[2048];
	ssize_t n = read(err_pipe[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void wait_past_a_second(void)
{
	struct timespec ts = {.tv_sec = 1, .tv_nsec = 100 * 1000 * 1000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* TOOLRUN_CONFIG in the exec's envp first (not empty), then the one the
 * process started with, then the default. */
static void test_which_file(void **state)
{
	(void)state;
	char set[] = "TOOLRUN_CONFIG=/etc/mine.conf", empty[] = "TOOLRUN_CONFIG=",
	     other[] = "TOOLRUN_CONFIGX=/nope";
	char *with[] = {other, set, NULL}, *with_empty[] = {empty, NULL}, *none[] = {NULL};

	assert_string_equal(cfgcache_file(with, "/inherited.conf"), "/etc/mine.conf");
	assert_string_equal(cfgcache_file(with_empty, "/inherited.conf"), "/inherited.conf");
	assert_string_equal(cfgcache_file(none, NULL), config_default_path);
	assert_string_equal(cfgcache_file(none, ""), config_default_path);
	assert_string_equal(cfgcache_file(NULL, "/inherited.conf"), "/inherited.conf");
}

/* Parsed once: a changed file is not read again by get, only by a
 * refresh, and only once a second has passed since the last look. */
static void test_parsed_once_refreshed_on_change(void **state)
{
	(void)state;
	struct cfgcache cc = {0};
	write_config(file, "max_bytes = 111\n");

	struct config *c = cfgcache_get(&cc, file);
	assert_non_null(c);
	assert_int_equal(c->defaults.max_bytes, 111);

	write_config(file, "max_bytes = 222\n");
	assert_ptr_equal(cfgcache_get(&cc, file), c);
	assert_int_equal(cfgcache_get(&cc, file)->defaults.max_bytes, 111);

	wait_past_a_second();
	cfgcache_refresh(&cc, file);
	struct config *d = cfgcache_get(&cc, file);
	assert_non_null(d);
	assert_ptr_not_equal(d, c);
	assert_int_equal(d->defaults.max_bytes, 222);
	/* The one replaced stays readable (another thread may hold it). */
	assert_int_equal(c->defaults.max_bytes, 111);

	/* Unchanged: the same config is kept. */
	wait_past_a_second();
	cfgcache_refresh(&cc, file);
	assert_ptr_equal(cfgcache_get(&cc, file), d);
	assert_string_equal(warnings(), "");
}

/* Another file is another config. */
static void test_another_file(void **state)
{
	(void)state;
	struct cfgcache cc = {0};
	char second[160];
	snprintf(second, sizeof(second), "%s/second.conf", dir);
	write_config(file, "max_bytes = 111\n");
	write_config(second, "max_bytes = 333\n");

	assert_int_equal(cfgcache_get(&cc, file)->defaults.max_bytes, 111);
	assert_int_equal(cfgcache_get(&cc, second)->defaults.max_bytes, 333);
	assert_string_equal(cfgcache_get(&cc, second)->file, second);
}

/* An invalid or missing config turns toolrun off (NULL), said once on
 * stderr; a changed file may be warned about again, and a valid one
 * turns it back on. */
static void test_invalid_config_warned_once(void **state)
{
	(void)state;
	struct cfgcache cc = {0};
	write_config(file, "max_bytes = lots\n");

	assert_null(cfgcache_get(&cc, file));
	const char *w = warnings();
	char want[256];
	snprintf(want, sizeof(want), "toolrun: %s:1: ", file);
	assert_memory_equal(w, want, strlen(want));
	assert_non_null(strstr(w, "; intercepting nothing\n"));
	assert_ptr_equal(strchr(w, '\n'), w + strlen(w) - 1); /* one line */
	assert_null(cfgcache_get(&cc, file));
	assert_string_equal(warnings(), "");
	/* Once for the process: not again for another file. */
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/none.conf", dir);
	assert_null(cfgcache_get(&cc, missing));
	assert_null(cfgcache_get(&cc, file));
	assert_string_equal(warnings(), "");

	write_config(file, "max_bytes = many\n");
	wait_past_a_second();
	cfgcache_refresh(&cc, file);
	assert_null(cfgcache_get(&cc, file));
	assert_non_null(strstr(warnings(), "intercepting nothing"));

	write_config(file, "max_bytes = 5\n");
	wait_past_a_second();
	cfgcache_refresh(&cc, file);
	assert_non_null(cfgcache_get(&cc, file));
	assert_int_equal(cfgcache_get(&cc, file)->defaults.max_bytes, 5);

	struct cfgcache other = {0};
	assert_null(cfgcache_get(&other, missing));
	assert_non_null(strstr(warnings(), "cannot read"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_which_file),
		T(test_parsed_once_refreshed_on_change),
		T(test_another_file),
		T(test_invalid_config_warned_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
