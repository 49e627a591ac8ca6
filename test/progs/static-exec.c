/*
 * static-exec: a statically linked program that execs another. No
 * LD_PRELOAD library can load into it, so its exec is not intercepted:
 * the test of the limit that the README states.
 *
 *   static-exec PROGRAM [ARGS...]
 */
#include <stdio.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: static-exec PROGRAM [ARGS...]\n");
		return 2;
	}
	execve(argv[1], argv + 1, environ);
	perror("static-exec: execve");
	return 127;
}
