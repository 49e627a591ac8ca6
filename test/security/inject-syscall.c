/*
 * inject-syscall PID NAME: make a running process attempt a system call
 * of our choosing, the way a compromised process would.
 *
 * It attaches with ptrace, waits for the process's next system call
 * entry, and replaces that call's number with NAME's. The kernel runs
 * the seccomp filter after the tracer's changes, so the process meets
 * its own filter exactly as if its code had made the call. The
 * arguments stay those of the replaced call; a filter that lets the call
 * through gets an error for them at worst.
 *
 * Exit status: 0 once the call is injected and the process released,
 * 1 on failure (with a line saying why), 77 on an architecture this
 * does not support.
 */
#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>

static int fail(const char *what, pid_t pid)
{
	fprintf(stderr, "inject-syscall: %s (pid %d): %s\n", what, (int)pid, strerror(errno));
	return 1;
}

/* Wait for the tracee's next stop; false if it ended. */
static bool wait_stop(pid_t pid, int *status)
{
	for (;;) {
		if (waitpid(pid, status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		return WIFSTOPPED(*status);
	}
}

int main(int argc, char **argv)
{
#if !defined(__x86_64__)
	(void)argc;
	(void)argv;
	fprintf(stderr, "inject-syscall: only x86_64 is supported\n");
	return 77;
#else
	if (argc != 3) {
		fprintf(stderr, "usage: inject-syscall PID SYSCALL-NAME\n");
		return 2;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	int nr = seccomp_syscall_resolve_name(argv[2]);
	if (pid <= 0 || nr == __NR_SCMP_ERROR) {
		fprintf(stderr, "inject-syscall: bad pid or unknown call: %s %s\n", argv[1], argv[2]);
		return 2;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD) < 0)
		return fail("PTRACE_SEIZE", pid);
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0)
		return fail("PTRACE_INTERRUPT", pid);

	int status;
	if (!wait_stop(pid, &status))
		return fail("the process ended before it stopped", pid);
	/* Run to the next system call entry: a syscall-stop has bit 7 of
	 * the signal set (PTRACE_O_TRACESYSGOOD). Other stops (a signal
	 * arriving meanwhile) are passed over, their signal delivered. */
	int deliver = 0;
	for (int tries = 0; tries < 100; tries++) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, deliver) < 0)
			return fail("PTRACE_SYSCALL", pid);
		if (!wait_stop(pid, &status))
			return fail("the process ended before its next call", pid);
		int sig = WSTOPSIG(status);
		deliver = 0;
		if (sig == (SIGTRAP | 0x80)) {
			struct __ptrace_syscall_info info;
			if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info), &info) < 0)
				return fail("PTRACE_GET_SYSCALL_INFO", pid);
			if (info.op == PTRACE_SYSCALL_INFO_ENTRY)
				break;
			continue;
		}
		if ((status >> 16) == 0 && sig != SIGTRAP)
			deliver = sig;
	}
	if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
		errno = EAGAIN;
		return fail("no system call entry seen", pid);
	}

	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0)
		return fail("PTRACE_GETREGS", pid);
	unsigned long long was = regs.orig_rax;
	regs.orig_rax = (unsigned long long)nr;
	if (ptrace(PTRACE_SETREGS, pid, 0, &regs) < 0)
		return fail("PTRACE_SETREGS", pid);
	if (ptrace(PTRACE_DETACH, pid, 0, 0) < 0)
		return fail("PTRACE_DETACH", pid);
	printf("pid %d: call %llu replaced by %s (%d)\n", (int)pid, was, argv[2], nr);
	return 0;
#endif
}
