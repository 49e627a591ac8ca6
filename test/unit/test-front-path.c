/*
 * Unit tests for front/core/path.c in a real temporary tree: the seed's table
 * of path traversal attacks, symbolic links in and out of the root, the
 * extension allow-list and the errors of ordinary mistakes. Every case
 * runs twice: with openat2 where the kernel has it, and with the walk
 * that stands in for it elsewhere.
 *
 * The tree, under a temporary directory:
 *   outside/secret.txt
 *   root/file.txt  root/sub/inner.c  root/sub/deeper/x.md
 *   root/out_link -> ../outside/secret.txt   root/abs_out -> <base>/outside/secret.txt
 *   root/in_link -> sub/inner.c              root/abs_in -> <root>/sub/inner.c
 *   root/dir_out -> ../outside               root/dir_in -> sub
 *   root/sub/up -> ../file.txt               root/updir -> ..
 *   root/alias.c -> file.txt                 root/loop -> loop
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "path.h"

/* ───────────────────────── helpers ───────────────────────── */

struct env {
	char base[64];
	char root[128];
	struct path_policy policy;
	bool walk_only;
};

static void put(const char *dir, const char *name, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *dir, const char *name, const char *target)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(symlink(target, path), 0);
}

static void make_tree(struct env *e)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/outside", e->base);
	assert_int_equal(mkdir(path, 0755), 0);
	put(path, "secret.txt", "secret\n");
	assert_int_equal(mkdir(e->root, 0755), 0);
	put(e->root, "file.txt", "file\n");
	snprintf(path, sizeof(path), "%s/sub", e->root);
	assert_int_equal(mkdir(path, 0755), 0);
	put(path, "inner.c", "int x;\n");
	link_at(path, "up", "../file.txt");
	snprintf(path, sizeof(path), "%s/sub/deeper", e->root);
	assert_int_equal(mkdir(path, 0755), 0);
	put(path, "x.md", "# x\n");
	link_at(e->root, "out_link", "../outside/secret.txt");
	snprintf(path, sizeof(path), "%s/outside/secret.txt", e->base);
	link_at(e->root, "abs_out", path);
	link_at(e->root, "in_link", "sub/inner.c");
	snprintf(path, sizeof(path), "%s/sub/inner.c", e->root);
	link_at(e->root, "abs_in", path);
	link_at(e->root, "dir_out", "../outside");
	link_at(e->root, "dir_in", "sub");
	link_at(e->root, "updir", "..");
	link_at(e->root, "alias.c", "file.txt");
	link_at(e->root, "loop", "loop");
}

static int setup_with(void **state, bool walk_only)
{
	struct env *e = calloc(1, sizeof(*e));
	struct front_error err;

	if (!e)
		return -1;
	snprintf(e->base, sizeof(e->base), "/tmp/test-front-path-XXXXXX");
	if (!mkdtemp(e->base))
		return -1;
	/* The root by its canonical name, as the policy reports it. */
	char *real = realpath(e->base, NULL);
	if (!real)
		return -1;
	snprintf(e->root, sizeof(e->root), "%s/root", real);
	free(real);
	make_tree(e);
	if (path_policy_init(&e->policy, e->root, NULL, &err) < 0)
		return -1;
	e->policy.walk_only = walk_only;
	e->walk_only = walk_only;
	*state = e;
	return 0;
}

static int setup_kernel(void **state)
{
	return setup_with(state, false);
}

static int setup_walk(void **state)
{
	return setup_with(state, true);
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[160];

	path_policy_free(&e->policy);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->base);
	int r = system(cmd);
	free(e);
	return r == 0 ? 0 : -1;
}

static void refused(const struct path_policy *p, const char *path, enum path_use use,
		    enum front_category category, const char *code)
{
	struct path_ref ref;
	struct front_error err = { 0 };

	if (path_open(p, path, use, &ref, &err) == 0) {
		close(ref.fd);
		fail_msg("%s: not refused (%s expected)", path, code);
	}
	if (strcmp(err.code, code) != 0)
		fail_msg("%s: %s (%s) instead of %s", path, err.code, err.message, code);
	assert_int_equal(err.category, category);
	assert_null(strchr(err.message, '\n'));
	assert_int_equal(ref.fd, -1);
}

/* Opened; ref->rel as expected; the caller's ref holds the fd, closed. */
static void allowed(const struct path_policy *p, const char *path, enum path_use use,
		    const char *rel, struct path_ref *ref)
{
	struct front_error err = { 0 };

	if (path_open(p, path, use, ref, &err) < 0)
		fail_msg("%s: refused: %s %s", path, err.code, err.message);
	assert_true(ref->fd >= 0);
	assert_true(fcntl(ref->fd, F_GETFD) & FD_CLOEXEC);
	assert_string_equal(ref->rel, rel);
	close(ref->fd);
}

/* The first bytes of the file path names, read through the policy. */
static void reads(const struct path_policy *p, const char *path, const char *want)
{
	struct path_ref ref;
	struct front_error err = { 0 };
	char buf[64] = "";

	if (path_open(p, path, PATH_READ, &ref, &err) < 0)
		fail_msg("%s: refused: %s %s", path, err.code, err.message);
	assert_true(read(ref.fd, buf, sizeof(buf) - 1) >= 0);
	close(ref.fd);
	assert_string_equal(buf, want);
}

/* ───────────────────────── the seed's table ───────────────────────── */

static void test_seed_attacks_are_refused(void **state)
{
	struct env *e = *state;
	static const struct {
		const char *path, *code;
	} attacks[] = {
		{ "../../../etc/passwd", "OUTSIDE_ROOT" },
		{ "..\\..\\..\\windows\\system32\\config\\sam", "BACKSLASH_PATH" },
		{ "foo/../../../etc/passwd", "OUTSIDE_ROOT" },
		{ "/etc/passwd", "OUTSIDE_ROOT" },
		{ "~/.ssh/id_rsa", "HOME_PATH" },
		{ "file:///etc/passwd", "URL_PATH" },
	};

	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++) {
		refused(&e->policy, attacks[i].path, PATH_READ, FRONT_VALIDATION, attacks[i].code);
		refused(&e->policy, attacks[i].path, PATH_WRITE, FRONT_VALIDATION, attacks[i].code);
	}
}

static void test_message_names_path_and_root(void **state)
{
	struct env *e = *state;
	struct path_ref ref;
	struct front_error err;

	assert_int_equal(path_open(&e->policy, "/etc/passwd", PATH_READ, &ref, &err), -1);
	assert_non_null(strstr(err.message, "/etc/passwd"));
	assert_non_null(strstr(err.message, e->root));
}

static void test_other_urls_and_dotdot_forms(void **state)
{
	struct env *e = *state;

	refused(&e->policy, "https://example.com/x", PATH_READ, FRONT_VALIDATION, "URL_PATH");
	refused(&e->policy, "svn+ssh://host/x", PATH_READ, FRONT_VALIDATION, "URL_PATH");
	refused(&e->policy, "..", PATH_DIR, FRONT_VALIDATION, "OUTSIDE_ROOT");
	refused(&e->policy, "sub/../..", PATH_DIR, FRONT_VALIDATION, "OUTSIDE_ROOT");
	refused(&e->policy, "sub/..\\..", PATH_DIR, FRONT_VALIDATION, "BACKSLASH_PATH");
	/* "/.." is "/": still outside. */
	refused(&e->policy, "/../../etc/passwd", PATH_READ, FRONT_VALIDATION, "OUTSIDE_ROOT");
	/* A sibling whose name starts as the root's does. */
	char sibling[256];
	snprintf(sibling, sizeof(sibling), "%s2/x", e->root);
	refused(&e->policy, sibling, PATH_READ, FRONT_VALIDATION, "OUTSIDE_ROOT");
	/* A name with a colon is no URL. */
	struct path_ref ref;
	put(e->root, "a:b.txt", "x");
	allowed(&e->policy, "a:b.txt", PATH_READ, "a:b.txt", &ref);
}

/* ───────────────────────── symbolic links ───────────────────────── */

static void test_symlink_to_outside_is_refused(void **state)
{
	struct env *e = *state;

	refused(&e->policy, "out_link", PATH_READ, FRONT_VALIDATION, "SYMLINK_OUTSIDE");
	refused(&e->policy, "abs_out", PATH_READ, FRONT_VALIDATION, "SYMLINK_OUTSIDE");
	refused(&e->policy, "updir/outside/secret.txt", PATH_READ, FRONT_VALIDATION,
		"SYMLINK_OUTSIDE");
	/* A link out and a way back in is still a step out. */
	refused(&e->policy, "updir/root/file.txt", PATH_READ, FRONT_VALIDATION,
		"SYMLINK_OUTSIDE");
}

static void test_symlink_inside_is_followed(void **state)
{
	struct env *e = *state;
	struct path_ref ref;

	reads(&e->policy, "in_link", "int x;\n");
	allowed(&e->policy, "in_link", PATH_READ, "in_link", &ref);
	/* An absolute target under the root (openat2 alone refuses it). */
	reads(&e->policy, "abs_in", "int x;\n");
	/* A target that climbs and stays inside. */
	reads(&e->policy, "sub/up", "file\n");
	allowed(&e->policy, "dir_in", PATH_DIR, "dir_in", &ref);
	reads(&e->policy, "dir_in/deeper/x.md", "# x\n");
}

static void test_directory_symlink_escape_in_the_middle(void **state)
{
	struct env *e = *state;

	refused(&e->policy, "dir_out/secret.txt", PATH_READ, FRONT_VALIDATION, "SYMLINK_OUTSIDE");
	refused(&e->policy, "dir_out", PATH_DIR, FRONT_VALIDATION, "SYMLINK_OUTSIDE");
	refused(&e->policy, "dir_out/new.txt", PATH_WRITE, FRONT_VALIDATION, "SYMLINK_OUTSIDE");
	refused(&e->policy, "sub/../dir_out/secret.txt", PATH_READ, FRONT_VALIDATION,
		"SYMLINK_OUTSIDE");
}

static void test_symlink_loop(void **state)
{
	struct env *e = *state;

	refused(&e->policy, "loop", PATH_READ, FRONT_EXECUTION, "SYMLINK_LOOP");
	refused(&e->policy, "loop/x", PATH_READ, FRONT_EXECUTION, "SYMLINK_LOOP");
}

/* ───────────────────────── what stays inside ───────────────────────── */

static void test_dotdot_inside_is_allowed(void **state)
{
	struct env *e = *state;
	struct path_ref ref;

	allowed(&e->policy, "sub/../file.txt", PATH_READ, "file.txt", &ref);
	allowed(&e->policy, "sub/deeper/../../file.txt", PATH_READ, "file.txt", &ref);
	allowed(&e->policy, "./sub//inner.c", PATH_READ, "sub/inner.c", &ref);
	allowed(&e->policy, "sub/deeper/..", PATH_DIR, "sub", &ref);
}

static void test_absolute_under_root_is_allowed(void **state)
{
	struct env *e = *state;
	struct path_ref ref;
	char path[256];

	snprintf(path, sizeof(path), "%s/sub/inner.c", e->root);
	allowed(&e->policy, path, PATH_READ, "sub/inner.c", &ref);
	assert_string_equal(ref.abs, path);
	snprintf(path, sizeof(path), "%s/sub/../file.txt", e->root);
	allowed(&e->policy, path, PATH_READ, "file.txt", &ref);
	snprintf(path, sizeof(path), "%s/new.txt", e->root);
	allowed(&e->policy, path, PATH_WRITE, "new.txt", &ref);
	assert_string_equal(ref.name, "new.txt");
}

static void test_root_itself(void **state)
{
	struct env *e = *state;
	struct path_ref ref;

	allowed(&e->policy, ".", PATH_DIR, ".", &ref);
	assert_string_equal(ref.abs, e->root);
	allowed(&e->policy, e->root, PATH_DIR, ".", &ref);
	allowed(&e->policy, "sub/..", PATH_DIR, ".", &ref);
	refused(&e->policy, ".", PATH_READ, FRONT_EXECUTION, "NOT_A_FILE");
	refused(&e->policy, e->root, PATH_WRITE, FRONT_EXECUTION, "NOT_A_FILE");
	refused(&e->policy, "", PATH_READ, FRONT_SYNTAX, "EMPTY_PATH");
}

static void test_write_opens_the_parent(void **state)
{
	struct env *e = *state;
	struct path_ref ref;
	struct stat st;

	allowed(&e->policy, "sub/deeper/new.md", PATH_WRITE, "sub/deeper/new.md", &ref);
	assert_string_equal(ref.name, "new.md");
	/* The parent, not the file, which does not exist. */
	struct front_error err;
	assert_int_equal(path_open(&e->policy, "sub/deeper/new.md", PATH_WRITE, &ref, &err), 0);
	assert_int_equal(fstatat(ref.fd, "x.md", &st, 0), 0);
	close(ref.fd);
	allowed(&e->policy, "top.txt", PATH_WRITE, "top.txt", &ref);
	refused(&e->policy, "nodir/new.txt", PATH_WRITE, FRONT_EXECUTION, "NOT_FOUND");
	/* The message says which directory is missing and what to do. */
	assert_int_equal(path_open(&e->policy, "nodir/new.txt", PATH_WRITE, &ref, &err), -1);
	assert_non_null(strstr(err.message, "the directory nodir does not exist"));
	assert_non_null(strstr(err.message, "mkdir -p nodir"));
}

/* ───────────────────────── ordinary mistakes ───────────────────────── */

static void test_path_through_a_file(void **state)
{
	struct env *e = *state;

	refused(&e->policy, "file.txt/x", PATH_READ, FRONT_EXECUTION, "NOT_A_DIRECTORY");
	refused(&e->policy, "file.txt/x", PATH_WRITE, FRONT_EXECUTION, "NOT_A_DIRECTORY");
	refused(&e->policy, "in_link/x", PATH_READ, FRONT_EXECUTION, "NOT_A_DIRECTORY");
	refused(&e->policy, "file.txt", PATH_DIR, FRONT_EXECUTION, "NOT_A_DIRECTORY");
	refused(&e->policy, "file.txt/", PATH_READ, FRONT_EXECUTION, "NOT_A_FILE");
	refused(&e->policy, "sub/", PATH_READ, FRONT_EXECUTION, "NOT_A_FILE");
	refused(&e->policy, "sub/inner.c/.", PATH_WRITE, FRONT_EXECUTION, "NOT_A_FILE");
	refused(&e->policy, "sub/deeper/..", PATH_WRITE, FRONT_EXECUTION, "NOT_A_FILE");
}

static void test_not_found_and_not_a_file(void **state)
{
	struct env *e = *state;
	char path[256];

	refused(&e->policy, "nope.txt", PATH_READ, FRONT_EXECUTION, "NOT_FOUND");
	refused(&e->policy, "sub/nope/x.c", PATH_READ, FRONT_EXECUTION, "NOT_FOUND");
	refused(&e->policy, "sub", PATH_READ, FRONT_EXECUTION, "NOT_A_FILE");
	refused(&e->policy, "dir_in", PATH_READ, FRONT_EXECUTION, "NOT_A_FILE");
	/* A FIFO is refused, not waited on. */
	snprintf(path, sizeof(path), "%s/fifo", e->root);
	assert_int_equal(mkfifo(path, 0600), 0);
	refused(&e->policy, "fifo", PATH_READ, FRONT_EXECUTION, "NOT_A_FILE");
}

static void test_nul_via_bytes_check(void **state)
{
	struct front_error err;
	(void)state;

	assert_int_equal(path_check_bytes("a\0b", 3, &err), -1);
	assert_string_equal(err.code, "NUL_IN_PATH");
	assert_int_equal(err.category, FRONT_VALIDATION);
	assert_int_equal(path_check_bytes("file.txt\0", 9, &err), -1);
	assert_string_equal(err.code, "NUL_IN_PATH");
	assert_int_equal(path_check_bytes("", 0, &err), -1);
	assert_string_equal(err.code, "EMPTY_PATH");
	assert_int_equal(path_check_bytes("file.txt", 8, &err), 0);
}

static void test_too_long(void **state)
{
	struct env *e = *state;
	char path[PATH_MAX + 16];

	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	refused(&e->policy, path, PATH_READ, FRONT_SYNTAX, "PATH_TOO_LONG");
	memset(path, 'a', NAME_MAX + 1);
	path[NAME_MAX + 1] = '\0';
	refused(&e->policy, path, PATH_WRITE, FRONT_SYNTAX, "PATH_TOO_LONG");
}

/* ───────────────────────── the allow-list ───────────────────────── */

static void test_extension_allow_list(void **state)
{
	struct env *e = *state;
	struct path_policy p;
	struct path_ref ref;
	struct front_error err;

	assert_int_equal(path_policy_init(&p, e->root, " c, .md ,", &err), 0);
	p.walk_only = e->walk_only;
	assert_int_equal(p.nextensions, 2);
	allowed(&p, "sub/inner.c", PATH_READ, "sub/inner.c", &ref);
	allowed(&p, "sub/deeper/x.md", PATH_READ, "sub/deeper/x.md", &ref);
	allowed(&p, "sub/deeper/X.MD", PATH_WRITE, "sub/deeper/X.MD", &ref);
	allowed(&p, "sub", PATH_DIR, "sub", &ref);
	refused(&p, "file.txt", PATH_READ, FRONT_VALIDATION, "EXTENSION_NOT_ALLOWED");
	refused(&p, "new.txt", PATH_WRITE, FRONT_VALIDATION, "EXTENSION_NOT_ALLOWED");
	refused(&p, ".bashrc", PATH_WRITE, FRONT_VALIDATION, "EXTENSION_NOT_ALLOWED");
	refused(&p, "Makefile", PATH_WRITE, FRONT_VALIDATION, "EXTENSION_NOT_ALLOWED");
	/* A link whose name passes, to a file whose name does not. */
	refused(&p, "alias.c", PATH_READ, FRONT_VALIDATION, "EXTENSION_NOT_ALLOWED");
	path_policy_free(&p);

	assert_int_equal(path_policy_init(&p, e->root, "averyveryverylongextension", &err), -1);
	assert_string_equal(err.code, "BAD_EXTENSION");
	assert_int_equal(p.root_fd, -1);
}

static void test_policy_init(void **state)
{
	struct env *e = *state;
	struct path_policy p;
	struct front_error err;
	char path[256];

	assert_int_equal(path_policy_init(&p, e->root, "", &err), 0);
	assert_int_equal(p.nextensions, 0);
	assert_int_equal(p.max_read_bytes, PATH_DEFAULT_MAX_READ_BYTES);
	assert_int_equal(p.max_write_bytes, PATH_DEFAULT_MAX_WRITE_BYTES);
	path_policy_free(&p);
	assert_int_equal(p.root_fd, -1);
	/* The root's canonical name, through a link to it. */
	snprintf(path, sizeof(path), "%s/root/dir_in/..", e->base);
	assert_int_equal(path_policy_init(&p, path, NULL, &err), 0);
	assert_string_equal(p.root, e->root);
	path_policy_free(&p);
	snprintf(path, sizeof(path), "%s/root/file.txt", e->base);
	assert_int_equal(path_policy_init(&p, path, NULL, &err), -1);
	assert_string_equal(err.code, "NOT_A_DIRECTORY");
	snprintf(path, sizeof(path), "%s/none", e->base);
	assert_int_equal(path_policy_init(&p, path, NULL, &err), -1);
	assert_string_equal(err.code, "NOT_FOUND");
}

/* ───────────────────────── main ───────────────────────── */

#define BOTH(t)                                                                \
	cmocka_unit_test_setup_teardown(t, setup_kernel, teardown),            \
		cmocka_unit_test_setup_teardown(t, setup_walk, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_seed_attacks_are_refused),
		BOTH(test_message_names_path_and_root),
		BOTH(test_other_urls_and_dotdot_forms),
		BOTH(test_symlink_to_outside_is_refused),
		BOTH(test_symlink_inside_is_followed),
		BOTH(test_directory_symlink_escape_in_the_middle),
		BOTH(test_symlink_loop),
		BOTH(test_dotdot_inside_is_allowed),
		BOTH(test_absolute_under_root_is_allowed),
		BOTH(test_root_itself),
		BOTH(test_write_opens_the_parent),
		BOTH(test_path_through_a_file),
		BOTH(test_not_found_and_not_a_file),
		BOTH(test_too_long),
		BOTH(test_extension_allow_list),
		cmocka_unit_test(test_nul_via_bytes_check),
		cmocka_unit_test_setup_teardown(test_policy_init, setup_kernel, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
