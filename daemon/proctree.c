#include "proctree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* SIGKILL scans repeated at most this often: each one kills what the
 * last one missed (a child forked while it ran), and a process that is
 * killed can fork no more, so a few suffice. */
#define KILL_PASSES 8

/* What /proc/PID/stat says of a process, as far as we need it. */
struct stat_line {
	char state;
	pid_t session;
};

/* A /proc entry's name as a pid, or 0 when it is not one. */
static pid_t entry_pid(const char *name)
{
	char *end;

	if (name[0] < '1' || name[0] > '9')
		return 0;
	errno = 0;
	long v = strtol(name, &end, 10);
	if (errno || *end || v <= 0 || v > INT32_MAX)
		return 0;
	return (pid_t)v;
}

/* Read a small /proc file at dirfd/path, NUL-terminated. Returns the
 * length or -errno. */
static ssize_t read_small(int dirfd, const char *path, char *buf, size_t size)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = RETRY_EINTR(read(fd, buf, size - 1));
	close(fd);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return n;
}

/*
 * Parse "pid (comm) state ppid pgrp session ...". The comm is whatever
 * the process named itself, spaces and parentheses included; only the
 * last ')' of the line ends it, since nothing after it may contain one.
 */
static int parse_stat(const char *line, struct stat_line *out)
{
	const char *p = strrchr(line, ')');
	int ppid, pgrp, session;
	char state;

	if (!p || sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4)
		return -EPROTO;
	out->state = state;
	out->session = session;
	return 0;
}

static int read_stat(int proc, pid_t pid, struct stat_line *out)
{
	char path[32], line[1024];

	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	ssize_t n = read_small(proc, path, line, sizeof(line));
	if (n < 0)
		return (int)n;
	return parse_stat(line, out);
}

/* A zombie holds no fds and takes no signals; X is a process gone. */
static bool is_dead(char state)
{
	return state == 'Z' || state == 'X' || state == 'x';
}

static DIR *open_proc(int *proc)
{
	*proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*proc < 0)
		return NULL;
	DIR *d = dir_open_at(*proc, "", 0);
	if (!d)
		close_fd(proc);
	return d;
}

/* One pass over /proc: signal each live process of session sid. */
static int kill_pass(pid_t sid, int signo)
{
	int proc;
	DIR *d = open_proc(&proc);
	if (!d)
		return -errno;

	pid_t self = getpid();
	int count = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat_line st;
		pid_t pid = entry_pid(e->d_name);
		if (pid == 0 || pid == self || read_stat(proc, pid, &st) < 0)
			continue;
		if (st.session != sid || is_dead(st.state))
			continue;
		if (kill(pid, signo) == 0)
			count++;
	}
	closedir(d);
	close(proc);
	return count;
}

int proctree_kill_session(pid_t sid, int signo)
{
	if (sid <= 0)
		return -EINVAL;
	int first = kill_pass(sid, signo);
	if (first <= 0 || signo != SIGKILL)
		return first;
	for (int i = 1, n = first; i < KILL_PASSES && n > 0; i++)
		n = kill_pass(sid, signo);
	return first;
}

/* Whether /proc/PID/fdinfo/FD says the fd is open for writing. */
static bool fd_writes(int proc, pid_t pid, const char *fd)
{
	char path[300], info[512];

	snprintf(path, sizeof(path), "%d/fdinfo/%s", (int)pid, fd);
	if (read_small(proc, path, info, sizeof(info)) < 0)
		return false;
	const char *flags = strstr(info, "flags:");
	if (!flags)
		return false;
	char *end;
	unsigned long v = strtoul(flags + strlen("flags:"), &end, 8);
	if (end == flags + strlen("flags:"))
		return false;
	int mode = (int)(v & O_ACCMODE);
	return mode == O_WRONLY || mode == O_RDWR;
}

/* Whether process pid has (dev, ino) open for writing. */
static bool process_writes(int proc, pid_t pid, dev_t dev, ino_t ino)
{
	char path[32];

	snprintf(path, sizeof(path), "%d/fd", (int)pid);
	DIR *d = dir_open_at(proc, path, O_RDONLY);
	if (!d)
		return false; /* gone, or not ours to look at */
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		/* Following the link reaches the open file itself, a pipe
		 * included, wherever its name (if any) now points. */
		if (fstatat(dirfd(d), e->d_name, &st, 0) < 0)
			continue;
		if (!S_ISFIFO(st.st_mode) || st.st_dev != dev || st.st_ino != ino)
			continue;
		found = fd_writes(proc, pid, e->d_name);
	}
	closedir(d);
	return found;
}

bool proctree_pipe_has_writer(dev_t dev, ino_t ino, pid_t exclude_sid)
{
	int proc;
	DIR *d = open_proc(&proc);
	if (!d)
		return false;

	pid_t self = getpid();
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		struct stat_line st;
		pid_t pid = entry_pid(e->d_name);
		if (pid == 0 || pid == self || read_stat(proc, pid, &st) < 0)
			continue;
		if (is_dead(st.state) || (exclude_sid > 0 && st.session == exclude_sid))
			continue;
		found = process_writes(proc, pid, dev, ino);
	}
	closedir(d);
	close(proc);
	return found;
}
