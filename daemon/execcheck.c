#include "execcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"

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
