/*
 * Unit tests for common/procstate.c: what the library reports of its
 * caller's umask, signal mask and ignored signals, whichever way it reads
 * them (/proc or one system call per item), is what the process has.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "procstate.h"

static uint64_t bit(int sig)
{
	return UINT64_C(1) << (sig - 1);
}

/* Every signal glibc lets us touch back to its default, none blocked. */
static void reset_signals(void)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	for (int sig = 1; sig <= 64; sig++)
		(void)sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	assert_int_equal(sigprocmask(SIG_SETMASK, &none, NULL), 0);
}

static void ignore(int sig)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	assert_int_equal(sigaction(sig, &ign, NULL), 0);
}

/* Set a known state, capture it, and check each part. */
static void check_capture(void)
{
	struct procstate ps;
	sigset_t block;
	mode_t old = umask(027);

	reset_signals();
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGRTMIN + 5);
	sigaddset(&block, 64);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, NULL), 0);
	ignore(SIGUSR2);
	ignore(SIGPIPE);
	ignore(SIGRTMIN + 6);
	ignore(64);

	(void)procstate_capture(&ps); /* without /proc: no oom_score_adj */
	assert_int_equal(ps.umask, 027);
	assert_int_equal(ps.blocked_signals, bit(SIGUSR1) | bit(SIGRTMIN + 5) | bit(64));
	assert_int_equal(ps.ignored_signals,
			 bit(SIGUSR2) | bit(SIGPIPE) | bit(SIGRTMIN + 6) | bit(64));
	/* Reading it does not change it. */
	assert_int_equal(umask(old), 027);
	reset_signals();
}

static void test_reports_umask_mask_and_ignored_signals(void **state)
{
	(void)state;
	check_capture();
}

/* Without /proc (a tmpfs over it, in a mount namespace of a child's own):
 * the same answers from the system calls. Needs the right to make one. */
static void test_reports_the_same_without_proc(void **state)
{
	(void)state;
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0)
			_exit(77);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("none", "/proc", "tmpfs", 0, NULL) < 0 ||
		    access("/proc/thread-self/status", F_OK) == 0)
			_exit(77);
		check_capture();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_reports_nothing_for_a_default_process(void **state)
{
	(void)state;
	struct procstate ps;
	mode_t old = umask(0);

	reset_signals();
	(void)procstate_capture(&ps);
	assert_int_equal(ps.umask, 0);
	assert_int_equal(ps.blocked_signals, 0);
	assert_int_equal(ps.ignored_signals, 0);
	umask(old);
}

#if defined(__x86_64__) || defined(__aarch64__)
/* The kernel's struct sigaction on these two. */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* glibc's own two signals (SIGCANCEL, SIGSETXID) are never reported as
 * ignored, as sigaction() cannot say: set behind glibc's back, they stay
 * out of the report. */
static void test_glibc_internal_signals_are_not_reported(void **state)
{
	(void)state;
	struct ksigaction ign = {.handler = SIG_IGN}, old[2];
	struct procstate ps;

	reset_signals();
	for (int i = 0; i < 2; i++)
		assert_int_equal(syscall(SYS_rt_sigaction, 32 + i, &ign, &old[i], 8), 0);
	(void)procstate_capture(&ps);
	assert_int_equal(ps.ignored_signals, 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(syscall(SYS_rt_sigaction, 32 + i, &old[i], NULL, 8), 0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reports_umask_mask_and_ignored_signals),
		cmocka_unit_test(test_reports_the_same_without_proc),
		cmocka_unit_test(test_reports_nothing_for_a_default_process),
#if defined(__x86_64__) || defined(__aarch64__)
		cmocka_unit_test(test_glibc_internal_signals_are_not_reported),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
