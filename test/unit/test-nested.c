/*
 * Unit tests for preload/nested.c: hiding toolrun's variables from a
 * program that toolrund runs, and handing them on to its children.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nested.h"

extern char **environ;

static char **saved_environ;
static char *env_array[16];
static struct nested n;

static int setup(void **state)
{
	(void)state;
	saved_environ = environ;
	memset(&n, 0, sizeof(n));
	return 0;
}

static const char *const *given; /* what set_environ() was handed */

/* nested_hide() rewrites LD_PRELOAD into a string of its own, which a
 * process keeps for life; the tests swap environ, so they free it. */
static int teardown(void **state)
{
	(void)state;
	for (char **e = env_array; given && *e; e++) {
		bool ours = false;
		for (const char *const *g = given; *g; g++)
			ours = ours || *e == *g;
		if (!ours)
			free(*e);
	}
	given = NULL;
	environ = saved_environ;
	return 0;
}

/* Make environ a copy of the given list (the entries are not copied). */
static void set_environ(const char *const *vars)
{
	size_t i = 0;
	for (; vars[i]; i++)
		env_array[i] = (char *)vars[i];
	env_array[i] = NULL;
	environ = env_array;
	given = vars;
}

static size_t count(char **v)
{
	size_t i = 0;
	while (v[i])
		i++;
	return i;
}

static void test_hide_does_nothing_without_the_marker(void **state)
{
	(void)state;
	static const char *const vars[] = {"A=1", "TOOLRUN_CONFIG=/c", "LD_PRELOAD=/l/libtoolrun.so", NULL};
	set_environ(vars);
	nested_hide(&n);
	assert_false(n.active);
	assert_int_equal(count(environ), 3);
}

static void test_hide_takes_toolrun_variables_out_of_environ(void **state)
{
	(void)state;
	static const char *const vars[] = {
		"A=1", "TOOLRUN_CONFIG=/c", "TOOLRUN_NESTED=1", "B=2", "TOOLRUN_AGENT_STDOUT=1:2", NULL,
	};
	set_environ(vars);
	nested_hide(&n);
	assert_true(n.active);
	assert_int_equal(count(environ), 2);
	assert_string_equal(environ[0], "A=1");
	assert_string_equal(environ[1], "B=2");
	assert_null(getenv("TOOLRUN_CONFIG"));
	assert_int_equal(n.nvars, 3);
	assert_string_equal(n.vars[0], "TOOLRUN_CONFIG=/c");
	assert_null(n.library); /* no LD_PRELOAD: nothing to remember */
}

static void test_hide_removes_only_our_library_from_ld_preload(void **state)
{
	(void)state;
	static const char *const vars[] = {
		"LD_PRELOAD=/opt/liba.so:/usr/lib/toolrun/libtoolrun.so libb.so", "TOOLRUN_NESTED=1", NULL,
	};
	set_environ(vars);
	nested_hide(&n);
	assert_string_equal(getenv("LD_PRELOAD"), "/opt/liba.so:libb.so");
	assert_non_null(n.library);
	assert_int_equal(n.library_len, strlen("/usr/lib/toolrun/libtoolrun.so"));
	assert_memory_equal(n.library, "/usr/lib/toolrun/libtoolrun.so", n.library_len);
}

static void test_hide_drops_ld_preload_that_held_only_our_library(void **state)
{
	(void)state;
	static const char *const vars[] = {"LD_PRELOAD=libtoolrun.so", "TOOLRUN_NESTED=1", "A=1", NULL};
	set_environ(vars);
	nested_hide(&n);
	assert_null(getenv("LD_PRELOAD"));
	assert_int_equal(count(environ), 1);
	assert_memory_equal(n.library, "libtoolrun.so", n.library_len);
}

static void test_hide_leaves_similar_library_names_alone(void **state)
{
	(void)state;
	static const char *const vars[] = {"LD_PRELOAD=libtoolrun.so.1:/x/mylibtoolrun.so", "TOOLRUN_NESTED=1", NULL};
	set_environ(vars);
	nested_hide(&n);
	assert_string_equal(getenv("LD_PRELOAD"), "libtoolrun.so.1:/x/mylibtoolrun.so");
	assert_null(n.library);
}

/* Build a child's envp from the hidden state. */
static char **child(char *const *envp)
{
	static char space[4096];
	size_t need = nested_space(&n, envp);
	assert_true(need <= sizeof(space));
	return nested_envp(&n, envp, space);
}

static const char *find(char **envp, const char *name)
{
	size_t len = strlen(name);
	for (; *envp; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

static void hide_standard(void)
{
	static const char *const vars[] = {
		"LD_PRELOAD=/l/libtoolrun.so:/opt/liba.so", "TOOLRUN_CONFIG=/c", "TOOLRUN_NESTED=1",
		"HOME=/h", NULL,
	};
	set_environ(vars);
	nested_hide(&n);
}

static void test_child_gets_the_hidden_variables_back(void **state)
{
	(void)state;
	hide_standard();
	char **out = child(environ);
	assert_string_equal(find(out, "HOME"), "/h");
	assert_string_equal(find(out, "TOOLRUN_CONFIG"), "/c");
	assert_string_equal(find(out, "TOOLRUN_NESTED"), "1");
	assert_string_equal(find(out, "LD_PRELOAD"), "/l/libtoolrun.so:/opt/liba.so");
	assert_int_equal(count(out), 4);
}

static void test_child_without_ld_preload_gets_ours(void **state)
{
	(void)state;
	hide_standard();
	static char *const envp[] = {(char *)"X=1", NULL}; /* as from env -i X=1 */
	char **out = child(envp);
	assert_string_equal(find(out, "LD_PRELOAD"), "/l/libtoolrun.so");
	assert_string_equal(find(out, "X"), "1");
	assert_string_equal(find(out, "TOOLRUN_CONFIG"), "/c");
}

static void test_child_keeps_its_own_toolrun_settings(void **state)
{
	(void)state;
	hide_standard();
	static char *const envp[] = {(char *)"TOOLRUN_CONFIG=/other", NULL};
	char **out = child(envp);
	assert_string_equal(find(out, "TOOLRUN_CONFIG"), "/other");
	assert_int_equal(count(out), 3); /* its config, LD_PRELOAD, the marker */
}

static void test_child_ld_preload_is_extended_once(void **state)
{
	(void)state;
	hide_standard();
	static char *const mine[] = {(char *)"LD_PRELOAD=/opt/libz.so", NULL};
	char **out = child(mine);
	assert_string_equal(find(out, "LD_PRELOAD"), "/l/libtoolrun.so:/opt/libz.so");
	static char *const ours[] = {(char *)"LD_PRELOAD=/opt/libz.so:/l/libtoolrun.so", NULL};
	out = child(ours);
	assert_string_equal(find(out, "LD_PRELOAD"), "/opt/libz.so:/l/libtoolrun.so");
}

static void test_child_extends_the_last_ld_preload(void **state)
{
	(void)state;
	hide_standard();
	static char *const envp[] = {(char *)"LD_PRELOAD=/a.so", (char *)"LD_PRELOAD=/b.so", NULL};
	char **out = child(envp);
	assert_string_equal(out[0], "LD_PRELOAD=/a.so");
	assert_string_equal(out[1], "LD_PRELOAD=/l/libtoolrun.so:/b.so");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_hide_does_nothing_without_the_marker),
		T(test_hide_takes_toolrun_variables_out_of_environ),
		T(test_hide_removes_only_our_library_from_ld_preload),
		T(test_hide_drops_ld_preload_that_held_only_our_library),
		T(test_hide_leaves_similar_library_names_alone),
		T(test_child_gets_the_hidden_variables_back),
		T(test_child_without_ld_preload_gets_ours),
		T(test_child_keeps_its_own_toolrun_settings),
		T(test_child_ld_preload_is_extended_once),
		T(test_child_extends_the_last_ld_preload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
