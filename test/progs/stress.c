/*
 * stress: run a program N times through one way of starting it, from a
 * process whose other threads keep malloc and stdio locks busy, and check
 * every run. The exec hooks must neither hang nor corrupt the parent in
 * any of these.
 *
 *   stress MODE N EXPECTED PROGRAM [ARGS...]
 *
 * MODE: posix_spawn, vfork (vfork + execve) or fork (fork + execve);
 * "-threads" appended (fork-threads, ...) adds 8 busy threads.
 * Each run's stdout (through a pipe) must equal EXPECTED and its status
 * must be 0. Prints "N runs ok" and exits 0, or says what went wrong.
 */
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static atomic_bool stop;

/* Hold malloc's and stdio's locks as often as possible. */
static void *busy(void *arg)
{
	FILE *sink = fopen("/dev/null", "w");
	unsigned n = (unsigned)(size_t)arg;

	/* Lowest priority: they still hold the locks whenever they run, but
	 * leave the CPU to the daemon and the programs on a small machine. */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
	while (!atomic_load(&stop)) {
		void *p = malloc(16 + (n++ % 4096));
		fprintf(sink, "%u %p\n", n, p);
		fprintf(stderr, "%s", "");
		free(p);
	}
	fclose(sink);
	return NULL;
}

static int run_once(const char *mode, char **argv, const char *expected)
{
	int out[2];
	pid_t pid;

	if (pipe(out) < 0)
		return -1;
	if (!strncmp(mode, "posix_spawn", 11)) {
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, out[1], 1);
		posix_spawn_file_actions_addclose(&fa, out[0]);
		int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		if (r) {
			fprintf(stderr, "stress: posix_spawn: %s\n", strerror(r));
			return -1;
		}
	} else {
		pid = !strncmp(mode, "vfork", 5) ? vfork() : fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			dup2(out[1], 1);
			close(out[0]);
			close(out[1]);
			execve(argv[0], argv, environ);
			_exit(127);
		}
	}
	close(out[1]);
	char buf[4096];
	size_t have = 0;
	ssize_t n;
	while ((n = read(out[0], buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)n;
	close(out[0]);
	buf[have] = '\0';
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "stress: run ended with status 0x%x\n", status);
		return -1;
	}
	if (strcmp(buf, expected) != 0) {
		fprintf(stderr, "stress: output %zu bytes, not the expected %zu\n",
			have, strlen(expected));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: stress MODE N EXPECTED PROGRAM [ARGS...]\n");
		return 2;
	}
	const char *mode = argv[1];
	int n = atoi(argv[2]);
	char *expected = argv[3];
	pthread_t threads[8];
	int nthreads = strstr(mode, "-threads") ? 8 : 0;

	for (int i = 0; i < nthreads; i++)
		pthread_create(&threads[i], NULL, busy, (void *)(size_t)i);
	int ok = 0;
	for (int i = 0; i < n; i++) {
		if (run_once(mode, argv + 4, expected) < 0) {
			fprintf(stderr, "stress: run %d of %d failed\n", i + 1, n);
			break;
		}
		/* The parent's own heap and stdio must still work. */
		char *p = malloc(100);
		snprintf(p, 100, "%d", i);
		free(p);
		ok++;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	printf("%d runs ok\n", ok);
	return ok == n ? 0 : 1;
}
