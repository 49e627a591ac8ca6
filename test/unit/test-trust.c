/*
 * Unit tests for client/trust.c: whether toolrund's socket may be
 * trusted, from the real modes and owners of directories made for the
 * test and the credentials of a real peer. The owner and peer cases need
 * root (chown, another uid) and skip without it.
 */
#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "trust.h"

#define OTHER_UID 43219 /* an account that exists nowhere */

static struct config cfg;
static char top[64];
static char why[512];

static const char *at(const char *rel)
{
	static char path[4][256];
	static unsigned next;
	char *p = path[next++ % 4];
	snprintf(p, 256, "%s/%s", top, rel);
	return p;
}

static void make_dir(const char *rel, mode_t mode)
{
	assert_int_equal(mkdir(at(rel), 0700), 0);
	assert_int_equal(chmod(at(rel), mode), 0);
}

static int setup(void **state)
{
	(void)state;
	config_init(&cfg, "test.conf");
	why[0] = '\0';
	snprintf(top, sizeof(top), "/tmp/test-trust.XXXXXX");
	return mkdtemp(top) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

/* The socket's own directory: its owner's alone. Sticky does not help
 * there, since the socket itself could be replaced by its owner's peers. */
static void test_socket_directory_mode(void **state)
{
	(void)state;
	make_dir("run", 0755);
	assert_int_equal(trust_socket_path(&cfg, at("run/toolrun.sock"), why, sizeof(why)), 0);
	assert_string_equal(why, "");

	assert_int_equal(chmod(at("run"), 0775), 0);
	assert_int_equal(trust_socket_path(&cfg, at("run/toolrun.sock"), why, sizeof(why)), -EPERM);
	char want[512];
	snprintf(want, sizeof(want), "refusing toolrund's socket %s: %s is writable by its "
		 "group (mode 0775)", at("run/toolrun.sock"), at("run"));
	assert_string_equal(why, want);

	assert_int_equal(chmod(at("run"), 01777), 0);
	assert_int_equal(trust_socket_path(&cfg, at("run/toolrun.sock"), why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "is writable by others (mode 1777)"));
}

/* Above it, a directory others may write to must be sticky. */
static void test_directories_above(void **state)
{
	(void)state;
	make_dir("shared", 0777);
	make_dir("shared/run", 0755);
	const char *sock = at("shared/run/toolrun.sock");

	assert_int_equal(trust_socket_path(&cfg, sock, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, at("shared")));
	assert_non_null(strstr(why, "writable by others (mode 0777)"));

	assert_int_equal(chmod(at("shared"), 01777), 0);
	assert_int_equal(trust_socket_path(&cfg, sock, why, sizeof(why)), 0);

	/* A directory that does not exist is for connect() to report. */
	assert_int_equal(trust_socket_path(&cfg, at("shared/none/toolrun.sock"), why,
					   sizeof(why)), 0);
	/* Only absolute paths are walked. */
	assert_int_equal(trust_socket_path(&cfg, "relative/toolrun.sock", why, sizeof(why)), 0);
}

/* Owned by root, the caller or the config's user, by number or by name
 * (from /etc/passwd); anyone else is refused. */
static void test_directory_owner(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	make_dir("run", 0755);
	const char *sock = at("run/toolrun.sock");
	assert_int_equal(chown(at("run"), OTHER_UID, 0), 0);

	assert_int_equal(trust_socket_path(&cfg, sock, why, sizeof(why)), -EPERM);
	char want[512];
	snprintf(want, sizeof(want), "refusing toolrund's socket %s: %s is owned by uid %d, "
		 "not root or the caller (the config sets no user)", sock, at("run"), OTHER_UID);
	assert_string_equal(why, want);

	snprintf(cfg.user, sizeof(cfg.user), "%d", OTHER_UID);
	assert_int_equal(trust_socket_path(&cfg, sock, why, sizeof(why)), 0);
	snprintf(cfg.user, sizeof(cfg.user), "%d", OTHER_UID + 1);
	assert_int_equal(trust_socket_path(&cfg, sock, why, sizeof(why)), -EPERM);

	struct passwd *pw = getpwnam("nobody");
	if (!pw)
		return;
	snprintf(cfg.user, sizeof(cfg.user), "nobody");
	assert_int_equal(trust_socket_path(&cfg, sock, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "toolrund's user (nobody) or the caller"));
	assert_int_equal(chown(at("run"), pw->pw_uid, 0), 0);
	assert_int_equal(trust_socket_path(&cfg, sock, why, sizeof(why)), 0);
}

/* A peer of our own uid is trusted; one served by another uid only when
 * that uid is the config's user. */
static void test_peer_credentials(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(trust_peer(&cfg, "/run/toolrun.sock", sv[0], why, sizeof(why)), 0);
	close(sv[0]);
	close(sv[1]);

	if (geteuid() != 0)
		skip();
	/* A listener that another uid made: SO_PEERCRED names that uid. */
	assert_int_equal(chmod(top, 0711), 0);
	make_dir("run", 0777);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", at("run/peer.sock"));
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (setresgid(OTHER_UID, OTHER_UID, OTHER_UID) < 0 ||
		    setresuid(OTHER_UID, OTHER_UID, OTHER_UID) < 0 || s < 0 ||
		    bind(s, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(s, 1) < 0)
			_exit(1);
		(void)!write(ready[1], "r", 1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);

	int r = trust_peer(&cfg, addr.sun_path, fd, why, sizeof(why));
	char want[512];
	snprintf(want, sizeof(want), "refusing toolrund's socket %s: it is served by uid %d, "
		 "not root or the caller (the config sets no user)", addr.sun_path, OTHER_UID);
	snprintf(cfg.user, sizeof(cfg.user), "%d", OTHER_UID);
	char why_user[512];
	int as_user = trust_peer(&cfg, addr.sun_path, fd, why_user, sizeof(why_user));
	close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(r, -EPERM);
	assert_string_equal(why, want);
	assert_int_equal(as_user, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_socket_directory_mode),
		T(test_directories_above),
		T(test_directory_owner),
		T(test_peer_credentials),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
