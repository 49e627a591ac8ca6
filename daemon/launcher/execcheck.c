/*
 * What runs is what was checked (execcheck.h).
 *
 * Process: the launcher.
 */
#include "execcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"

/* The most descriptors closed to make room: RLIMIT_NOFILE's ceiling. */
#define CLOSE_MAX (1u << 20)

int execcheck_open(const char *path)
{
	int fd = openat(AT_FDCWD, path, O_PATH | O_CLOEXEC);
	if (fd >= 0 || errno != EMFILE)
		return fd;
	/*
	 * The program's RLIMIT_NOFILE is in force, and every number below it
	 * is taken, mostly by descriptors exec is about to close anyway (the
	 * launcher's own, copies made while arranging the program's). Close
	 * those now, as exec would, to make room for this one: an execve by
	 * path, as the program would run directly, needs none.
	 */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	for (rlim_t i = 0; i < rl.rlim_cur && i < CLOSE_MAX; i++) {
		int flags = fcntl((int)i, F_GETFD);
		if (flags >= 0 && (flags & FD_CLOEXEC))
			close((int)i);
	}
	return openat(AT_FDCWD, path, O_PATH | O_CLOEXEC);
}

enum execcheck_verdict execcheck_file(int fd, const struct exec_expect *e)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return EXECCHECK_ERROR;
	if (st.st_dev != e->dev || st.st_ino != e->ino)
		return EXECCHECK_OTHER_FILE;
	/* The program runs with the caller's credentials by now: asking as
	 * this process asks about the caller. */
	if (e->by_name && config_writable_by_self(fd, "", &st))
		return EXECCHECK_WRITABLE;
	return EXECCHECK_OK;
}

void execcheck_exec(int fd, const struct exec_expect *e, char **argv, char **envp)
{
	/* The system call itself: glibc's fexecve() would retry through
	 * /proc/self/fd, which is the path this step exists to avoid. */
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	/* ENOENT for a file that is open: a `#!` script (or another
	 * interpreted format) whose interpreter cannot be handed a
	 * close-on-exec fd. See execcheck.h. */
	if (errno == ENOENT && e->path[0])
		execve(e->path, argv, envp);
}
