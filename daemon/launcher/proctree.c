/*
 * Processes seen through /proc (proctree.h).
 *
 * Process: the launcher.
 */
#include "proctree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A tree's passes: each one after the first finds only what the
 * processes stopped by the last one forked meanwhile, or waits a
 * millisecond for one still finishing a system call to stop, so this many
 * is reached only by a tree that forks faster than it is stopped, or a
 * process stuck in the kernel (it is killed all the same). */
#define KILL_TREE_PASSES 64

/* What /proc/PID/stat says of a process, as far as we need it. */
struct stat_line {
	char state;
	pid_t ppid;
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
	out->ppid = ppid;
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

/* ------------------------------------------------------------------ */
/* A process and everything below it                                  */

/* One live process of a snapshot of /proc. */
struct proc_entry {
	pid_t pid, ppid, session;
	char state;
};

/* The live processes of /proc, but the caller. Returns how many (in
 * *out, to be freed), or -errno. */
static ssize_t snapshot(struct proc_entry **out)
{
	int proc;
	DIR *d = open_proc(&proc);
	if (!d)
		return -errno;
	pid_t self = getpid();
	struct proc_entry *v = NULL;
	size_t n = 0, cap = 0;
	ssize_t r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat_line st;
		pid_t pid = entry_pid(e->d_name);
		if (pid == 0 || pid == self || read_stat(proc, pid, &st) < 0 || is_dead(st.state))
			continue;
		if (n == cap) {
			size_t grown = cap ? 2 * cap : 256;
			struct proc_entry *w = realloc(v, grown * sizeof(*v));
			if (!w) {
				r = -ENOMEM;
				break;
			}
			v = w;
			cap = grown;
		}
		v[n++] = (struct proc_entry){pid, st.ppid, st.session, st.state};
	}
	closedir(d);
	close(proc);
	if (r < 0) {
		free(v);
		return r;
	}
	*out = v;
	return (ssize_t)n;
}

static bool listed(pid_t pid, const pid_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

/*
 * Mark in below[] (one flag per entry) every process of the snapshot
 * below root: its children, theirs, and so on, and the members of the
 * session root leads. Parents come in any order in /proc, so the pass is
 * repeated until it marks nothing new (at most the tree's depth).
 */
static void mark_below(const struct proc_entry *v, size_t n, pid_t root, bool *below)
{
	bool grew = true;

	for (size_t i = 0; i < n; i++)
		below[i] = v[i].pid != root && (v[i].ppid == root || v[i].session == root);
	while (grew) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (below[i] || v[i].pid == root)
				continue;
			for (size_t k = 0; k < n && !below[i]; k++)
				if (below[k] && v[k].pid == v[i].ppid)
					below[i] = grew = true;
		}
	}
}

/* The pids a tree kill has reached, each once. */
struct reached {
	pid_t *v;
	size_t n, cap;
};

static bool reach(struct reached *r, pid_t pid)
{
	if (r->n == r->cap) {
		size_t grown = r->cap ? 2 * r->cap : 64;
		pid_t *w = realloc(r->v, grown * sizeof(*w));
		if (!w)
			return false;
		r->v = w;
		r->cap = grown;
	}
	r->v[r->n++] = pid;
	return true;
}

/* Stopped: it forks no more, and a fork it was making has finished. */
static bool is_stopped(char state)
{
	return state == 'T' || state == 't';
}

/* One pass: signal what is below root and not reached yet; add it to
 * the reached. Returns how many it signalled, or -errno; *moving: how
 * many processes below root (root too, with_root) are not stopped yet. */
static int tree_pass(pid_t root, bool with_root, int signo, struct reached *done,
		     unsigned *moving)
{
	struct proc_entry *v = NULL;
	ssize_t n = snapshot(&v);
	if (n < 0)
		return (int)n;
	bool *below = calloc((size_t)n + 1, sizeof(*below));
	if (!below) {
		free(v);
		return -ENOMEM;
	}
	mark_below(v, (size_t)n, root, below);
	int count = 0;
	*moving = 0;
	for (ssize_t i = 0; i < n; i++) {
		if ((below[i] || (with_root && v[i].pid == root)) && !is_stopped(v[i].state))
			(*moving)++;
		if (!below[i] || listed(v[i].pid, done->v, done->n))
			continue;
		if (kill(v[i].pid, signo) == 0 && reach(done, v[i].pid))
			count++;
	}
	free(below);
	free(v);
	return count;
}

/*
 * SIGKILL: freeze the tree first, then kill every process reached, root
 * last. Freezing: SIGSTOP to root, then pass after pass, each stopping
 * what it finds new, until one finds nothing new and every process is
 * stopped: a stopped process forks no more, and one that was in the
 * middle of a fork when SIGSTOP came stops only once the fork is done,
 * its child then visible to the next pass. A root killed first would
 * hand its children to init; one left running would go on with its
 * script (the `echo` after the `sleep` that was killed) before it is
 * killed.
 */
static int kill_frozen(pid_t root, bool with_root, struct reached *done)
{
	static const struct timespec settle = {0, 1000 * 1000};
	unsigned moving = 0;
	int r = 0;

	if (with_root)
		kill(root, SIGSTOP);
	for (int i = 0; i < KILL_TREE_PASSES; i++) {
		r = tree_pass(root, with_root, SIGSTOP, done, &moving);
		if (r < 0 || (r == 0 && moving == 0))
			break;
		if (r == 0)
			nanosleep(&settle, NULL);
	}
	for (size_t i = 0; i < done->n; i++)
		kill(done->v[i], SIGKILL);
	return r;
}

int proctree_kill_tree(pid_t root, int signo, bool with_root)
{
	if (root <= 0)
		return -EINVAL;
	struct reached done = {0};
	unsigned moving;
	int r = signo == SIGKILL ? kill_frozen(root, with_root, &done)
				 : tree_pass(root, false, signo, &done, &moving);
	int count = (int)done.n;
	free(done.v);
	if (r < 0 && count == 0)
		return r;
	if (with_root)
		kill(root, signo);
	return count;
}

int proctree_command_of(pid_t pid, const pid_t *roots, size_t nroots)
{
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc < 0)
		return -1;
	/* Its session first: a command leads one, and most of its processes
	 * stay in it. Then up the parents, as far as a command or init. */
	int found = -1;
	struct stat_line st;
	for (int depth = 0; found < 0 && pid > 1 && depth < 256; depth++) {
		if (read_stat(proc, pid, &st) < 0)
			break;
		for (size_t i = 0; i < nroots && found < 0; i++)
			if (roots[i] == pid || (depth == 0 && roots[i] == st.session))
				found = (int)i;
		pid = st.ppid;
	}
	close(proc);
	return found;
}

bool proctree_ignores(pid_t pid, int signo)
{
	char path[32], buf[2048];
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc < 0)
		return false;
	snprintf(path, sizeof(path), "%d/status", (int)pid);
	ssize_t n = read_small(proc, path, buf, sizeof(buf));
	close(proc);
	const char *line = n > 0 ? strstr(buf, "\nSigIgn:") : NULL;
	if (!line)
		return false;
	unsigned long long mask = strtoull(line + strlen("\nSigIgn:"), NULL, 16);
	return signo >= 1 && signo <= 64 && (mask >> (signo - 1) & 1);
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

/* ------------------------------------------------------------------ */
/* Is a session waiting for input?                                     */

/* Whether process pid's descriptor fd is the file (dev, ino). */
static bool fd_is(int proc, pid_t pid, unsigned long fd, dev_t dev, ino_t ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "%d/fd/%lu", (int)pid, fd);
	return fstatat(proc, path, &st, 0) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* Read len bytes of process pid's memory at addr. */
static bool read_memory(int proc, pid_t pid, unsigned long addr, void *buf, size_t len)
{
	char path[32];

	snprintf(path, sizeof(path), "%d/mem", (int)pid);
	int fd = openat(proc, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len;
}

/* poll()/ppoll() on (fds, nfds): is the input among those it waits to read? */
static bool polls_input(int proc, pid_t pid, unsigned long fds, unsigned long nfds,
			dev_t dev, ino_t ino)
{
	struct {
		int fd;
		short events, revents;
	} p[64];

	nfds = MIN(nfds, ARRAY_SIZE(p));
	if (nfds == 0 || !read_memory(proc, pid, fds, p, nfds * sizeof(p[0])))
		return false;
	for (unsigned long i = 0; i < nfds; i++)
		if (p[i].fd >= 0 && (p[i].events & 1 /* POLLIN */) &&
		    fd_is(proc, pid, (unsigned long)p[i].fd, dev, ino))
			return true;
	return false;
}

/* select()/pselect6() with (nfds, readfds): is the input among them? */
static bool selects_input(int proc, pid_t pid, unsigned long nfds, unsigned long set,
			  dev_t dev, ino_t ino)
{
	uint8_t bits[128];

	nfds = MIN(nfds, 8 * sizeof(bits));
	if (nfds == 0 || set == 0 || !read_memory(proc, pid, set, bits, (nfds + 7) / 8))
		return false;
	for (unsigned long fd = 0; fd < nfds; fd++)
		if ((bits[fd / 8] >> (fd % 8) & 1) && fd_is(proc, pid, fd, dev, ino))
			return true;
	return false;
}

/*
 * What process pid is blocked in, from /proc/PID/syscall ("NR arg0 arg1
 * ... sp pc", or "running"): 1 if it waits to read the input, 0 if not,
 * -errno if the kernel does not let us look.
 */
static int reads_input(int proc, pid_t pid, dev_t dev, ino_t ino)
{
	char path[32], line[512];
	long nr;
	unsigned long a[6];

	snprintf(path, sizeof(path), "%d/syscall", (int)pid);
	ssize_t n = read_small(proc, path, line, sizeof(line));
	if (n < 0)
		return (int)n;
	if (sscanf(line, "%ld %lx %lx %lx %lx %lx %lx", &nr, &a[0], &a[1], &a[2], &a[3],
		   &a[4], &a[5]) != 7)
		return 0; /* "running", or a kernel without the file's format */
	if (nr == SYS_read || nr == SYS_readv || nr == SYS_pread64 || nr == SYS_preadv)
		return fd_is(proc, pid, a[0], dev, ino);
	if (nr == SYS_ppoll)
		return polls_input(proc, pid, a[0], a[1], dev, ino);
	if (nr == SYS_pselect6)
		return selects_input(proc, pid, a[0], a[1], dev, ino);
#ifdef SYS_poll
	if (nr == SYS_poll)
		return polls_input(proc, pid, a[0], a[1], dev, ino);
#endif
#ifdef SYS_select
	if (nr == SYS_select)
		return selects_input(proc, pid, a[0], a[1], dev, ino);
#endif
	return 0;
}

static bool one_of(pid_t sid, const pid_t *sids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sids[i] == sid)
			return true;
	return false;
}

int proctree_session_waiting(const pid_t *sids, size_t nsids, dev_t dev, ino_t ino)
{
	int proc;
	DIR *d = open_proc(&proc);
	if (!d)
		return -errno;

	int found = 0, denied = 0;
	struct dirent *e;
	while (found == 0 && (e = readdir(d))) {
		struct stat_line st;
		pid_t pid = entry_pid(e->d_name);
		if (pid == 0 || read_stat(proc, pid, &st) < 0 || !one_of(st.session, sids, nsids))
			continue;
		if (st.state != 'S')
			continue; /* running, stopped, dead: not waiting to read */
		int r = reads_input(proc, pid, dev, ino);
		if (r < 0)
			denied = r;
		else
			found = r;
	}
	closedir(d);
	close(proc);
	return found ? 1 : denied;
}
