/*
 * bomb: resource bombs that stop at the first failure and say where,
 * with a ceiling of their own so that a missing limit cannot take the
 * machine down.
 *
 *   bomb fork MAX   print "group PGID", then fork children that wait,
 *                   until fork fails or MAX were made; print "forked N"
 *                   and "fork ERRNO-NAME" (or "fork never failed"), then
 *                   read stdin to its end and exit, leaving the children
 *                   to whoever ends the group
 *   bomb mem MAX    allocate and touch 1 MiB blocks until malloc fails or
 *                   MAX MiB were taken; print "allocated N MiB" and
 *                   "malloc ERRNO-NAME" (or "malloc never failed")
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *errname(int err)
{
	return strerrorname_np(err) ? strerrorname_np(err) : "unknown";
}

static int fork_bomb(long max)
{
	pid_t *kids = calloc((size_t)max, sizeof(pid_t));
	long n = 0;
	int err = 0;

	if (!kids)
		return 1;
	printf("group %d\n", (int)getpgrp());
	while (n < max) {
		pid_t pid = fork();
		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid == 0) {
			for (;;)
				pause();
		}
		kids[n++] = pid;
	}
	printf("forked %ld\n", n);
	if (n == max) {
		/* No limit stopped it: clean up here rather than rely on the
		 * group being ended. */
		printf("fork never failed\n");
		for (long i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		while (wait(NULL) > 0)
			;
		return 1;
	}
	printf("fork %s\n", errname(err));
	fflush(stdout);
	char buf[256];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}

static int mem_bomb(long max_mib)
{
	const size_t block = 1024 * 1024;
	long n = 0;
	int err = 0;

	while (n < max_mib) {
		char *p = malloc(block);
		if (!p) {
			err = errno;
			break;
		}
		memset(p, 0x5a, block);
		n++;
	}
	printf("allocated %ld MiB\n", n);
	if (n == max_mib)
		printf("malloc never failed\n");
	else
		printf("malloc %s\n", errname(err));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "fork") && atol(argv[2]) > 0)
		return fork_bomb(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "mem") && atol(argv[2]) > 0)
		return mem_bomb(atol(argv[2]));
	fprintf(stderr, "usage: bomb fork MAX | mem MAX-MIB\n");
	return 2;
}
