/*
 * escape: real attempts to get out of what toolrun runs a program under.
 * Each ends with the line "WHAT ok" or "WHAT ERRNO-NAME" and exits 0
 * whatever the outcome: the tests judge.
 *
 *   escape ptrace-attach PID   PTRACE_ATTACH to PID, then detach
 *   escape ptrace-seize PID    PTRACE_SEIZE of PID, then detach
 *   escape tiocsti FD          type a character into the terminal on FD;
 *                              first says "fd FD tty yes|no"
 *   escape ids                 uid=N euid=N
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *what, int r, int err)
{
	if (r >= 0)
		printf("%s ok\n", what);
	else
		printf("%s %s\n", what, strerrorname_np(err) ? strerrorname_np(err) : "unknown");
}

/* A tracee must be in a ptrace stop to be detached from; it is resumed
 * without a signal, so the caller never notices. */
static void detach(pid_t pid)
{
	int status;
	if (waitpid(pid, &status, __WALL) == pid)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "ptrace-attach")) {
		pid_t pid = (pid_t)atoi(argv[2]);
		long r = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
		int err = errno;
		if (r == 0)
			detach(pid);
		report("ptrace-attach", r == 0 ? 0 : -1, err);
	} else if (argc == 3 && !strcmp(argv[1], "ptrace-seize")) {
		pid_t pid = (pid_t)atoi(argv[2]);
		long r = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
		int err = errno;
		if (r == 0 && ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) == 0)
			detach(pid);
		report("ptrace-seize", r == 0 ? 0 : -1, err);
	} else if (argc == 3 && !strcmp(argv[1], "tiocsti")) {
		int fd = atoi(argv[2]);
		char c = '#';
		printf("fd %d tty %s\n", fd, isatty(fd) ? "yes" : "no");
		int r = ioctl(fd, TIOCSTI, &c);
		report("tiocsti", r, errno);
	} else if (argc == 2 && !strcmp(argv[1], "ids")) {
		printf("uid=%u euid=%u\n", (unsigned)getuid(), (unsigned)geteuid());
	} else {
		fprintf(stderr, "usage: escape ptrace-attach PID | ptrace-seize PID | "
				"tiocsti FD | ids\n");
		return 2;
	}
	return 0;
}
