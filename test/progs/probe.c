/*
 * probe: a program that reports on itself, for the integration tests.
 * Listed as a tool by absolute path in the test config.
 *
 *   probe args            each argument on a line, bytes as \xHH escapes
 *                         for anything outside printable ASCII
 *   probe fds             the open descriptors, one per line
 *   probe cwd             the working directory
 *   probe env NAME...     NAME=value for each NAME, or NAME unset
 *   probe exit N          exit with status N
 *   probe kill SIGNAL     kill itself with SIGNAL (a number)
 *   probe both N          write N lines alternately to stdout and stderr
 *   probe pid             print its pid, then sleep until killed
 *   probe bytes N         write N bytes of 'x' (in lines of 64) to stdout
 *   probe block N PROG ARGS...   block signal N, then execvp PROG
 *   probe tty             open /dev/tty as an interactive program would and
 *                         say whether there is a controlling terminal
 *   probe catch N         print "ready", then wait for signal N and print
 *                         "caught N"
 *   probe big-exec BYTES PROG   execve PROG with BYTES of arguments (in
 *                         strings of 100 KiB) and print the errno it fails with
 *   probe session         say whether it leads its session and group
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_escaped(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\')
			putchar(*p);
		else
			printf("\\x%02x", *p);
	}
	putchar('\n');
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: probe args|fds|cwd|env|exit|kill|both|pid|bytes ...\n");
		return 2;
	}
	const char *cmd = argv[1];

	if (!strcmp(cmd, "args")) {
		for (int i = 0; i < argc; i++)
			print_escaped(argv[i]);
	} else if (!strcmp(cmd, "fds")) {
		DIR *d = opendir("/proc/self/fd");
		int self = d ? dirfd(d) : -1;
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.' && atoi(e->d_name) != self)
				printf("%s\n", e->d_name);
		if (d)
			closedir(d);
	} else if (!strcmp(cmd, "cwd")) {
		char buf[4096];
		printf("%s\n", getcwd(buf, sizeof(buf)) ? buf : "(unknown)");
	} else if (!strcmp(cmd, "env")) {
		for (int i = 2; i < argc; i++) {
			const char *v = getenv(argv[i]);
			if (v)
				printf("%s=%s\n", argv[i], v);
			else
				printf("%s unset\n", argv[i]);
		}
	} else if (!strcmp(cmd, "exit") && argc == 3) {
		return atoi(argv[2]);
	} else if (!strcmp(cmd, "kill") && argc == 3) {
		fflush(stdout);
		kill(getpid(), atoi(argv[2]));
		pause();
	} else if (!strcmp(cmd, "both") && argc == 3) {
		setvbuf(stdout, NULL, _IONBF, 0);
		for (int i = 0; i < atoi(argv[2]); i++)
			fprintf(i % 2 ? stderr : stdout, "line %d\n", i);
	} else if (!strcmp(cmd, "pid")) {
		printf("%d\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	} else if (!strcmp(cmd, "block") && argc >= 4) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, atoi(argv[2]));
		sigprocmask(SIG_BLOCK, &set, NULL);
		execvp(argv[3], argv + 3);
		perror("probe: execvp");
		return 127;
	} else if (!strcmp(cmd, "tty")) {
		int fd = open("/dev/tty", O_RDWR);
		if (fd < 0)
			printf("no controlling terminal: %s\n", strerror(errno));
		else
			printf("controlling terminal: yes\n");
	} else if (!strcmp(cmd, "catch") && argc == 3) {
		int sig = atoi(argv[2]);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready\n");
		fflush(stdout);
		int got = 0;
		sigwait(&set, &got);
		printf("caught %d\n", got);
	} else if (!strcmp(cmd, "big-exec") && argc == 4) {
		size_t total = (size_t)atol(argv[2]), chunk = 100 * 1024;
		size_t n = total / chunk + 2;
		char **v = calloc(n + 1, sizeof(char *));
		char *text = malloc(chunk + 1);
		memset(text, 'x', chunk);
		text[chunk] = '\0';
		v[0] = argv[3];
		for (size_t i = 1; i < n; i++)
			v[i] = text;
		extern char **environ;
		execve(argv[3], v, environ);
		printf("%s\n", strerrorname_np(errno));
	} else if (!strcmp(cmd, "session")) {
		pid_t pid = getpid();
		printf("session leader %s, group leader %s\n",
		       getsid(0) == pid ? "yes" : "no", getpgrp() == pid ? "yes" : "no");
	} else if (!strcmp(cmd, "bytes") && argc == 3) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			putchar((i % 64) == 63 ? '\n' : 'x');
	} else {
		fprintf(stderr, "probe: bad arguments\n");
		return 2;
	}
	return 0;
}
