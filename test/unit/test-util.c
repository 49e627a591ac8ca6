/*
 * Unit tests for common/util.c's close_fd_list(): it closes exactly the
 * fds listed, whether they come in runs of consecutive numbers (one
 * close_range() each) or not, and still does where close_range() is
 * refused (a seccomp filter, as under an older one of toolrund's).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

enum { BASE = 100, SPAN = 12 };

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* fds BASE .. BASE + SPAN - 1, all open. */
static void open_span(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (int i = 0; i < SPAN; i++)
		assert_int_equal(fcntl(fd, F_DUPFD_CLOEXEC, BASE + i), BASE + i);
	close(fd);
}

/* Close a list of runs, singles and an unordered pair; the rest of the
 * span stays open. */
static void check_closes_exactly_the_list(void)
{
	static const int offsets[] = {1, 2, 3, 5, 8, 7, 10, 11};
	int list[sizeof(offsets) / sizeof(offsets[0])];
	bool listed[SPAN] = {false};
	unsigned n = sizeof(offsets) / sizeof(offsets[0]);

	open_span();
	for (unsigned i = 0; i < n; i++) {
		list[i] = BASE + offsets[i];
		listed[offsets[i]] = true;
	}
	close_fd_list(list, n);
	for (int i = 0; i < SPAN; i++)
		assert_int_equal(is_open(BASE + i), !listed[i]);
	for (int i = 0; i < SPAN; i++)
		close(BASE + i);
}

static void closes_runs_and_singles(void **state)
{
	(void)state;
	check_closes_exactly_the_list();
}

/* A filter that answers close_range() with ENOSYS. */
static int refuse_close_range(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void closes_without_close_range(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (refuse_close_range() < 0 ||
		    syscall(SYS_close_range, 1000U, 1001U, 0U) != -1 || errno != ENOSYS)
			_exit(2);
		check_closes_exactly_the_list();
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(closes_runs_and_singles),
		cmocka_unit_test(closes_without_close_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
