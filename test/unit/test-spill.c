/*
 * Unit tests for daemon/launcher/spill.c in real temporary directories: the
 * layout and modes, what is refused (a symbolic link, a directory of
 * someone else, one open to others), the directory made beside a
 * spill_dir that is not toolrund's, a held spill_dir that went away,
 * expiry, the total cap and unique names. Ownership is checked as root
 * does it; a test that needs root is skipped without it. One test drops
 * to another uid with the launcher's capabilities (caps.h), as toolrund
 * does with `user` set.
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
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

#include "caps.h"
#include "config.h"
#include "spill.h"

/* ───────────────────────── helpers ───────────────────────── */

#define USER 4242  /* a uid nobody on the test machine is likely to have */
#define OTHER 4343

struct env {
	struct config cfg;
	struct spill_root root; /* what the launcher holds */
	char base[64];   /* the temporary directory */
	char spill[128]; /* <base>/spill: spill_dir */
	char path[CONFIG_PATH_MAX + 320];
	char reason[CONFIG_PATH_MAX + 160];
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	config_init(&e->cfg, "test");
	e->root = (struct spill_root)SPILL_ROOT_INIT;
	snprintf(e->base, sizeof(e->base), "/tmp/test-spill-XXXXXX");
	if (!mkdtemp(e->base) || chmod(e->base, 0755) < 0)
		return -1;
	snprintf(e->spill, sizeof(e->spill), "%s/spill", e->base);
	snprintf(e->cfg.spill_dir, sizeof(e->cfg.spill_dir), "%s", e->spill);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[160];
	spill_root_close(&e->root);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->base);
	int r = system(cmd);
	free(e);
	return r == 0 ? 0 : -1;
}

static void skip_unless_root(void)
{
	if (geteuid() != 0)
		skip();
}

static int open_spill(struct env *e, uid_t uid, uint64_t job, const char *stream)
{
	return spill_open(&e->root, &e->cfg, uid, job, stream, e->path, sizeof(e->path),
			  e->reason, sizeof(e->reason));
}

/* The file at e->path is in <spill>.XXXXXX/<uid>/, a directory made
 * beside spill_dir: 0755, of this process's uid. */
static void assert_beside(const struct env *e, uid_t uid)
{
	char dir[256], uid_dir[32];
	struct stat st;
	size_t n = strlen(e->spill);

	assert_memory_equal(e->path, e->spill, n);
	assert_int_equal(e->path[n], '.');
	snprintf(dir, sizeof(dir), "%.*s", (int)(n + 7), e->path);
	assert_int_equal(strspn(dir + n + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "abcdefghijklmnopqrstuvwxyz0123456789"),
			 6);
	snprintf(uid_dir, sizeof(uid_dir), "/%u/", (unsigned)uid);
	assert_memory_equal(e->path + n + 7, uid_dir, strlen(uid_dir));
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(stat(e->path, &st), 0);
	assert_int_equal(st.st_uid, uid);
}

/* Entries of a directory, . and .. aside. */
static int entries(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "exit $(ls -A '%s' | wc -l)", dir);
	int r = system(cmd);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* <spill>/<uid>/<name> */
static void in_spill(const struct env *e, char *out, size_t len, uid_t uid, const char *name)
{
	snprintf(out, len, "%s/%u/%s", e->spill, (unsigned)uid, name);
}

/* A file of size bytes, modified `age` seconds ago. */
static void old_file(const struct env *e, uid_t uid, const char *name, off_t size, time_t age)
{
	char dir[256], path[512];
	snprintf(dir, sizeof(dir), "%s/%u", e->spill, (unsigned)uid);
	mkdir(e->spill, 0755);
	if (mkdir(dir, 0700) == 0)
		assert_int_equal(chown(dir, uid, (gid_t)-1), 0);
	in_spill(e, path, sizeof(path), uid, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	struct timespec t[2] = {{.tv_sec = time(NULL) - age}, {.tv_sec = time(NULL) - age}};
	assert_int_equal(futimens(fd, t), 0);
	close(fd);
}

static bool exists(const struct env *e, uid_t uid, const char *name)
{
	char path[512];
	struct stat st;
	in_spill(e, path, sizeof(path), uid, name);
	return lstat(path, &st) == 0;
}

/* ───────────────────────── layout ───────────────────────── */

static void test_layout_modes_and_owners(void **state)
{
	struct env *e = *state;
	struct stat st;
	regex_t re;

	skip_unless_root();
	int fd = open_spill(e, USER, 17, "stdout");
	assert_true(fd >= 0);

	/* <spill_dir>/<uid>/<UTC time>-<job>-<stream>.log */
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/%u/", e->spill, USER);
	assert_memory_equal(e->path, dir, strlen(dir));
	assert_int_equal(regcomp(&re, "^[0-9]{8}T[0-9]{6}Z-17-stdout\\.log$", REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regexec(&re, base_name(e->path), 0, NULL, 0), 0);
	regfree(&re);

	assert_int_equal(stat(e->spill, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, USER);

	/* The fd is the file at the path, for appending only. */
	struct stat by_fd;
	assert_int_equal(fstat(fd, &by_fd), 0);
	assert_int_equal(stat(e->path, &st), 0);
	assert_int_equal(st.st_ino, by_fd.st_ino);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, USER);
	assert_true(S_ISREG(st.st_mode));
	int fl = fcntl(fd, F_GETFL);
	assert_int_equal(fl & O_ACCMODE, O_WRONLY);
	assert_true(fl & O_APPEND);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(fd, "x\n", 2), 2);
	close(fd);

	fd = open_spill(e, USER, 17, "stderr");
	assert_true(fd >= 0);
	assert_non_null(strstr(e->path, "-17-stderr.log"));
	close(fd);
}

static void test_file_of_the_daemons_own_uid(void **state)
{
	struct env *e = *state;
	struct stat st;

	int fd = open_spill(e, geteuid(), 1, "stdout");
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	close(fd);
}

static void test_trailing_slash_of_spill_dir_is_not_repeated(void **state)
{
	struct env *e = *state;

	snprintf(e->cfg.spill_dir, sizeof(e->cfg.spill_dir), "%s/", e->spill);
	int fd = open_spill(e, geteuid(), 1, "stdout");
	assert_true(fd >= 0);
	assert_null(strstr(e->path, "//"));
	close(fd);
}

static void test_names_are_unique(void **state)
{
	struct env *e = *state;
	char first[sizeof(e->path)], second[sizeof(e->path)];

	int a = open_spill(e, geteuid(), 5, "stdout");
	assert_true(a >= 0);
	snprintf(first, sizeof(first), "%s", e->path);
	int b = open_spill(e, geteuid(), 5, "stdout");
	assert_true(b >= 0);
	snprintf(second, sizeof(second), "%s", e->path);
	assert_string_not_equal(first, second);
	int c = open_spill(e, geteuid(), 5, "stdout");
	assert_true(c >= 0);
	assert_string_not_equal(e->path, first);
	assert_string_not_equal(e->path, second);
	close(a);
	close(b);
	close(c);
}

static void test_collision_takes_a_numbered_name(void **state)
{
	struct env *e = *state;
	char stamp[32], name[128];
	struct tm tm;

	/* Take the plain name of every second about now: whichever one
	 * spill_open tries first is taken. */
	time_t now = time(NULL);
	for (int i = -1; i <= 60; i++) {
		time_t t = now + i;
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		snprintf(name, sizeof(name), "%s-9-stderr.log", stamp);
		old_file(e, geteuid(), name, 0, 0);
	}
	int fd = open_spill(e, geteuid(), 9, "stderr");
	assert_true(fd >= 0);
	assert_non_null(strstr(e->path, "-9-stderr-1.log"));
	close(fd);
}

/* ───────────────────────── refusals ───────────────────────── */

static void test_no_spill_dir(void **state)
{
	struct env *e = *state;

	e->cfg.spill_dir[0] = '\0';
	assert_int_equal(open_spill(e, geteuid(), 1, "stdout"), -ENOENT);
	assert_string_equal(e->reason, "no spill_dir is set");
}

static void test_unknown_stream(void **state)
{
	struct env *e = *state;

	assert_int_equal(open_spill(e, geteuid(), 1, "../x"), -EINVAL);
}

static void test_symlinked_spill_dir_is_not_followed(void **state)
{
	struct env *e = *state;
	char real[128];

	snprintf(real, sizeof(real), "%s/real", e->base);
	assert_int_equal(mkdir(real, 0755), 0);
	assert_int_equal(symlink(real, e->spill), 0);
	int fd = open_spill(e, geteuid(), 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	assert_beside(e, geteuid());
	/* Nothing was made through it. */
	assert_int_equal(entries(real), 0);
}

static void test_symlinked_uid_dir_is_refused(void **state)
{
	struct env *e = *state;
	char real[128], link[192];

	snprintf(real, sizeof(real), "%s/real", e->base);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(mkdir(e->spill, 0755), 0);
	snprintf(link, sizeof(link), "%s/%u", e->spill, (unsigned)geteuid());
	assert_int_equal(symlink(real, link), 0);
	assert_int_equal(open_spill(e, geteuid(), 1, "stdout"), -ELOOP);
	assert_non_null(strstr(e->reason, "is a symbolic link"));
}

static void test_missing_parent_is_named(void **state)
{
	struct env *e = *state;
	char expect[256];

	snprintf(e->cfg.spill_dir, sizeof(e->cfg.spill_dir), "%s/no/spill", e->base);
	assert_int_equal(open_spill(e, geteuid(), 1, "stdout"), -ENOENT);
	snprintf(expect, sizeof(expect), "spill_dir %s/no/spill: No such file or directory", e->base);
	assert_string_equal(e->reason, expect);
}

static void test_spill_dir_writable_by_others_is_not_used(void **state)
{
	struct env *e = *state;

	assert_int_equal(mkdir(e->spill, 0755), 0);
	assert_int_equal(chmod(e->spill, 01777), 0);
	int fd = open_spill(e, geteuid(), 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	assert_beside(e, geteuid());
	assert_int_equal(entries(e->spill), 0);
}

/* Another user made spill_dir first (the box: a caller's own
 * /tmp/toolrun-output): every uid's files go beside it, and nothing goes
 * into it. */
static void test_spill_dir_of_another_user_is_not_used(void **state)
{
	struct env *e = *state;

	skip_unless_root();
	assert_int_equal(mkdir(e->spill, 0755), 0);
	assert_int_equal(chown(e->spill, OTHER, (gid_t)-1), 0);
	int fd = open_spill(e, USER, 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	assert_beside(e, USER);
	fd = open_spill(e, 0, 2, "stdout");
	assert_true(fd >= 0);
	close(fd);
	assert_beside(e, 0);
	assert_int_equal(entries(e->spill), 0);
}

/* spill_prepare says which directory it holds: spill_dir when it is fit,
 * the one beside it otherwise. */
static void test_prepare_holds_spill_dir_or_one_beside_it(void **state)
{
	struct env *e = *state;
	char reason[CONFIG_PATH_MAX + 160];
	struct stat held;

	assert_int_equal(spill_prepare(&e->root, e->spill, reason, sizeof(reason)), 0);
	assert_string_equal(e->root.dir, e->spill);
	assert_int_equal(fstat(e->root.fd, &held), 0);
	assert_int_equal(held.st_mode & 07777, 0755);

	assert_int_equal(chmod(e->spill, 0775), 0);
	assert_int_equal(spill_prepare(&e->root, e->spill, reason, sizeof(reason)), 0);
	assert_string_not_equal(e->root.dir, e->spill);
	assert_int_equal(strncmp(e->root.dir, e->spill, strlen(e->spill)), 0);
	assert_int_equal(strlen(e->root.dir), strlen(e->spill) + 7);

	assert_int_equal(spill_prepare(&e->root, "", reason, sizeof(reason)), -ENOENT);
	assert_string_equal(reason, "no spill_dir is set");
}

/* A held spill_dir that was removed (a cleaner of /tmp) is made again at
 * its path: the marker's path names the file. */
static void test_removed_spill_dir_is_made_again(void **state)
{
	struct env *e = *state;
	char cmd[256];
	struct stat st;

	int fd = open_spill(e, geteuid(), 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->spill);
	assert_int_equal(system(cmd), 0);
	fd = open_spill(e, geteuid(), 2, "stdout");
	assert_true(fd >= 0);
	assert_non_null(strstr(e->path, "-2-stdout.log"));
	assert_memory_equal(e->path, e->spill, strlen(e->spill));
	assert_int_equal(e->path[strlen(e->spill)], '/');
	assert_int_equal(stat(e->path, &st), 0);
	struct stat by_fd;
	assert_int_equal(fstat(fd, &by_fd), 0);
	assert_int_equal(st.st_ino, by_fd.st_ino);
	close(fd);
}

/* A held spill_dir renamed away, and another user's directory put at its
 * path: not used; files go beside it. */
static void test_spill_dir_replaced_by_another_users_is_not_used(void **state)
{
	struct env *e = *state;
	char away[160];

	skip_unless_root();
	int fd = open_spill(e, USER, 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	snprintf(away, sizeof(away), "%s/away", e->base);
	assert_int_equal(rename(e->spill, away), 0);
	assert_int_equal(mkdir(e->spill, 0755), 0);
	assert_int_equal(chown(e->spill, OTHER, (gid_t)-1), 0);
	fd = open_spill(e, USER, 2, "stdout");
	assert_true(fd >= 0);
	close(fd);
	assert_beside(e, USER);
	assert_int_equal(entries(e->spill), 0);
}

static void test_uid_dir_of_someone_else_is_refused(void **state)
{
	struct env *e = *state;
	char dir[192], expect[320];

	skip_unless_root();
	assert_int_equal(mkdir(e->spill, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/%u", e->spill, USER);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chown(dir, OTHER, (gid_t)-1), 0);
	assert_int_equal(open_spill(e, USER, 1, "stdout"), -EPERM);
	snprintf(expect, sizeof(expect), "spill_dir %s: owned by uid %u, not by uid %u", dir,
		 OTHER, USER);
	assert_string_equal(e->reason, expect);
}

static void test_uid_dir_open_to_others_is_refused(void **state)
{
	struct env *e = *state;
	char dir[192];

	skip_unless_root();
	assert_int_equal(mkdir(e->spill, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/%u", e->spill, USER);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(chown(dir, USER, (gid_t)-1), 0);
	assert_int_equal(open_spill(e, USER, 1, "stdout"), -EPERM);
	assert_non_null(strstr(e->reason, "mode 0755 lets other users in"));
}

/* Not root: a file for another uid cannot be given to it, and is not
 * made. Run in a child that drops to another uid. */
static void test_file_for_another_uid_without_root_is_refused(void **state)
{
	struct env *e = *state;
	char dir[192];
	struct stat st;
	int p[2];

	skip_unless_root();
	assert_int_equal(mkdir(e->spill, 0755), 0);
	assert_int_equal(chown(e->spill, OTHER, (gid_t)-1), 0);
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (setresgid(OTHER, OTHER, OTHER) < 0 || setresuid(OTHER, OTHER, OTHER) < 0)
			_exit(2);
		int r = open_spill(e, USER, 1, "stdout");
		if (write(p[1], e->reason, strlen(e->reason)) < 0)
			_exit(3);
		_exit(r == -EPERM ? 0 : 1);
	}
	close(p[1]);
	char reason[512] = "";
	ssize_t n = read(p[0], reason, sizeof(reason) - 1);
	close(p[0]);
	reason[n > 0 ? n : 0] = '\0';
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_non_null(strstr(reason, "the file could not be given to uid 4242"));
	snprintf(dir, sizeof(dir), "%s/%u", e->spill, USER);
	assert_int_equal(stat(dir, &st), -1);
}

/* As the launcher of a daemon with `user` set: uid OTHER, with CAPS_KEPT
 * effective. Files for root, then for USER, then root again: each is
 * made and given to its uid (acting as uid 0 once took CAP_CHOWN away
 * for good: capabilities(7), caps.h). Exits 0 when all were, or 10 + the
 * one that was not, its reason on fd out. */
static __attribute__((noreturn)) void spill_as_a_launcher(struct env *e, int out)
{
	const uid_t order[] = {0, USER, 0};

	if (caps_keep_across_drop() < 0 || setresgid(OTHER, OTHER, OTHER) < 0 ||
	    setresuid(OTHER, OTHER, OTHER) < 0 || caps_after_drop() < 0 || caps_raise() < 0)
		_exit(2);
	for (int i = 0; i < 3; i++) {
		struct stat st;
		int fd = open_spill(e, order[i], (uint64_t)i, "stdout");
		if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != order[i]) {
			if (write(out, e->reason, strlen(e->reason)) < 0)
				_exit(3);
			_exit(10 + i);
		}
		close(fd);
	}
	_exit(0);
}

static void test_files_for_root_then_others_with_the_launchers_capabilities(void **state)
{
	struct env *e = *state;
	int p[2], status;

	skip_unless_root();
	assert_int_equal(mkdir(e->spill, 0755), 0);
	assert_int_equal(chown(e->spill, OTHER, (gid_t)-1), 0);
	assert_int_equal(pipe(p), 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		spill_as_a_launcher(e, p[1]);
	}
	close(p[1]);
	char reason[512] = "";
	ssize_t n = read(p[0], reason, sizeof(reason) - 1);
	close(p[0]);
	reason[n > 0 ? n : 0] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("child exit %d: %s", WEXITSTATUS(status), reason);
	char dir[192];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s/%u", e->spill, USER);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_uid, USER);
	snprintf(dir, sizeof(dir), "%s/0", e->spill);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_uid, 0);
}

/* ───────────────────────── clean-up ───────────────────────── */

static void test_expired_files_go_in_every_uid_dir(void **state)
{
	struct env *e = *state;
	uid_t me = geteuid();
	uid_t other = me == 0 ? USER : me;

	e->cfg.spill_expire_s = 3600;
	old_file(e, me, "old-mine.log", 10, 3700);
	old_file(e, me, "new-mine.log", 10, 60);
	old_file(e, other, "old-theirs.log", 10, 7200);
	old_file(e, other, "new-theirs.log", 10, 3500);

	int fd = open_spill(e, me, 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	assert_false(exists(e, me, "old-mine.log"));
	assert_false(exists(e, other, "old-theirs.log"));
	assert_true(exists(e, me, "new-mine.log"));
	assert_true(exists(e, other, "new-theirs.log"));
	assert_true(exists(e, me, base_name(e->path)));
}

static void test_total_cap_deletes_oldest_first(void **state)
{
	struct env *e = *state;
	uid_t me = geteuid();
	uid_t other = me == 0 ? USER : me;

	/* Room for 12 KiB once a 4 KiB file may still come. */
	e->cfg.spill_max_bytes = 4096;
	e->cfg.spill_total_bytes = 16384;
	old_file(e, other, "a.log", 4096, 400);
	old_file(e, me, "b.log", 4096, 300);
	old_file(e, other, "c.log", 4096, 200);
	old_file(e, me, "d.log", 4096, 100);

	int fd = open_spill(e, me, 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	/* 16 KiB: a goes (12 KiB, still not below 12), then b (8 KiB). */
	assert_false(exists(e, other, "a.log"));
	assert_false(exists(e, me, "b.log"));
	assert_true(exists(e, other, "c.log"));
	assert_true(exists(e, me, "d.log"));
}

static void test_under_the_cap_nothing_goes(void **state)
{
	struct env *e = *state;
	uid_t me = geteuid();

	e->cfg.spill_max_bytes = 4096;
	e->cfg.spill_total_bytes = 16384;
	old_file(e, me, "a.log", 4096, 400);
	old_file(e, me, "b.log", 4095, 300);
	old_file(e, me, "c.log", 4096, 200);

	int fd = open_spill(e, me, 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	assert_true(exists(e, me, "a.log"));
	assert_true(exists(e, me, "b.log"));
	assert_true(exists(e, me, "c.log"));
}

static void test_clean_up_leaves_links_and_other_entries_alone(void **state)
{
	struct env *e = *state;
	uid_t me = geteuid();
	char victim[128], link[256], stray[192];

	e->cfg.spill_max_bytes = 4096;
	e->cfg.spill_total_bytes = 4096; /* everything old would go */
	snprintf(victim, sizeof(victim), "%s/victim", e->base);
	int fd = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	old_file(e, me, "a.log", 4096, 100);
	in_spill(e, link, sizeof(link), me, "link.log");
	assert_int_equal(symlink(victim, link), 0);
	/* Not a uid directory: not ours to clean. */
	snprintf(stray, sizeof(stray), "%s/stray", e->spill);
	fd = open(stray, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);

	fd = open_spill(e, me, 1, "stdout");
	assert_true(fd >= 0);
	close(fd);
	struct stat st;
	assert_false(exists(e, me, "a.log"));
	assert_int_equal(lstat(link, &st), 0);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 1 << 20);
	assert_int_equal(stat(stray, &st), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_layout_modes_and_owners),
		T(test_file_of_the_daemons_own_uid),
		T(test_trailing_slash_of_spill_dir_is_not_repeated),
		T(test_names_are_unique),
		T(test_collision_takes_a_numbered_name),
		T(test_no_spill_dir),
		T(test_unknown_stream),
		T(test_symlinked_spill_dir_is_not_followed),
		T(test_symlinked_uid_dir_is_refused),
		T(test_missing_parent_is_named),
		T(test_spill_dir_writable_by_others_is_not_used),
		T(test_spill_dir_of_another_user_is_not_used),
		T(test_prepare_holds_spill_dir_or_one_beside_it),
		T(test_removed_spill_dir_is_made_again),
		T(test_spill_dir_replaced_by_another_users_is_not_used),
		T(test_uid_dir_of_someone_else_is_refused),
		T(test_uid_dir_open_to_others_is_refused),
		T(test_file_for_another_uid_without_root_is_refused),
		T(test_files_for_root_then_others_with_the_launchers_capabilities),
		T(test_expired_files_go_in_every_uid_dir),
		T(test_total_cap_deletes_oldest_first),
		T(test_under_the_cap_nothing_goes),
		T(test_clean_up_leaves_links_and_other_entries_alone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
