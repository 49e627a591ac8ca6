/*
 * hookcall: call one function of the exec family, for the hook tests.
 *
 *   hookcall FUNCTION PROGRAM [ARGS...]
 *
 * FUNCTION is execve, execv, execvp, execvpe, execl, execle, execlp,
 * execveat, execveat-fd, fexecve, posix_spawn, posix_spawnp, vfork or
 * fork. The exec functions replace this process; if one returns, hookcall
 * prints "hookcall: FUNCTION failed: ERRNO-NAME" on stderr and exits 99.
 * The spawning ones (posix_spawn*, vfork, fork) wait for the child and
 * exit as it did.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int failed(const char *fn, int err)
{
	fprintf(stderr, "hookcall: %s failed: %s\n", fn, strerrorname_np(err));
	return 99;
}

static int exit_like(int status)
{
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
	}
	return WEXITSTATUS(status);
}

/* execl and friends take a fixed list: up to 6 arguments here. */
#define A(i) (argc > (i) ? argv[i] : NULL)

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: hookcall FUNCTION PROGRAM [ARGS...]\n");
		return 2;
	}
	const char *fn = argv[1];
	const char *prog = argv[2];
	char **args = argv + 2; /* argv[0] of the program is PROGRAM */
	argc -= 2;
	argv += 2;
	if (argc > 7) {
		fprintf(stderr, "hookcall: at most 6 arguments\n");
		return 2;
	}

	if (!strcmp(fn, "execve"))
		execve(prog, args, environ);
	else if (!strcmp(fn, "execv"))
		execv(prog, args);
	else if (!strcmp(fn, "execvp"))
		execvp(prog, args);
	else if (!strcmp(fn, "execvpe"))
		execvpe(prog, args, environ);
	else if (!strcmp(fn, "execl"))
		execl(prog, argv[0], A(1), A(2), A(3), A(4), A(5), A(6), (char *)NULL);
	else if (!strcmp(fn, "execlp"))
		execlp(prog, argv[0], A(1), A(2), A(3), A(4), A(5), A(6), (char *)NULL);
	else if (!strcmp(fn, "execle")) {
		/* A(argc) is NULL: the list ends there, the env follows it. */
		char *const *env = environ;
		switch (argc) {
		case 1: execle(prog, argv[0], (char *)NULL, env); break;
		case 2: execle(prog, argv[0], A(1), (char *)NULL, env); break;
		case 3: execle(prog, argv[0], A(1), A(2), (char *)NULL, env); break;
		case 4: execle(prog, argv[0], A(1), A(2), A(3), (char *)NULL, env); break;
		default: execle(prog, argv[0], A(1), A(2), A(3), A(4), (char *)NULL, env); break;
		}
	} else if (!strcmp(fn, "execveat")) {
		/* Relative to a directory fd. */
		char *copy = strdup(prog), *copy2 = strdup(prog);
		int dir = open(dirname(copy), O_PATH | O_DIRECTORY);
		if (dir < 0)
			return failed("open", errno);
		execveat(dir, basename(copy2), args, environ, 0);
	} else if (!strcmp(fn, "execveat-fd")) {
		int fd = open(prog, O_PATH);
		if (fd < 0)
			return failed("open", errno);
		execveat(fd, "", args, environ, AT_EMPTY_PATH);
	} else if (!strcmp(fn, "fexecve")) {
		int fd = open(prog, O_RDONLY);
		if (fd < 0)
			return failed("open", errno);
		fexecve(fd, args, environ);
	} else if (!strcmp(fn, "posix_spawn") || !strcmp(fn, "posix_spawnp")) {
		pid_t pid;
		int r = fn[11] == 'p' ? posix_spawnp(&pid, prog, NULL, NULL, args, environ)
				      : posix_spawn(&pid, prog, NULL, NULL, args, environ);
		if (r != 0)
			return failed(fn, r);
		int status;
		if (waitpid(pid, &status, 0) < 0)
			return failed("waitpid", errno);
		return exit_like(status);
	} else if (!strcmp(fn, "vfork") || !strcmp(fn, "fork")) {
		pid_t pid = fn[0] == 'v' ? vfork() : fork();
		if (pid < 0)
			return failed(fn, errno);
		if (pid == 0) {
			execve(prog, args, environ);
			_exit(127);
		}
		int status;
		if (waitpid(pid, &status, 0) < 0)
			return failed("waitpid", errno);
		return exit_like(status);
	} else {
		fprintf(stderr, "hookcall: unknown function %s\n", fn);
		return 2;
	}
	return failed(fn, errno);
}
