/*
 * What runs is what was checked: the last step of a tool's launch.
 *
 * The listener matched the tool by a path it looked up itself, in its own
 * view (its /proc/self, its moment); the program's path may name another
 * file by the time it is executed (a symlink flipped, /proc/self/fd/N,
 * a file replaced). So the launcher's child, with the program's own
 * credentials, opens the path (O_PATH), checks that what it opened is the
 * file the listener matched, and executes that descriptor.
 *
 * Scripts: the kernel cannot execute a `#!` script through a
 * close-on-exec descriptor (the interpreter would be handed /dev/fd/N,
 * closed by then: ENOENT), and a descriptor left open would become the
 * script's $0 and an fd it never had. So a script, once checked, is
 * executed by the path it was matched through (the listed path, or
 * DIR/NAME in trusted_dirs), which only whoever may write there can
 * change; the interpreter its `#!` line names then reads it by that path,
 * as a direct exec of that path would.
 *
 * All of it runs in a vfork child: system calls only, nothing allocated.
 *
 * Process: the launcher.
 */
#ifndef TOOLRUN_EXECCHECK_H
#define TOOLRUN_EXECCHECK_H

#include <stdbool.h>
#include <sys/types.h>

/* The file a tool must be (launcher.proto: CheckedFile). */
struct exec_expect {
	const char *path; /* the listed path, or DIR/NAME */
	dev_t dev;
	ino_t ino;
	bool by_name; /* the caller must not be able to rewrite it */
};

enum execcheck_verdict {
	EXECCHECK_OK,
	EXECCHECK_ERROR,      /* fstat failed: errno says why */
	EXECCHECK_OTHER_FILE, /* not the file the listener matched */
	EXECCHECK_WRITABLE,   /* listed by name, and the caller could rewrite it */
};

/* Open path (O_PATH, from the working directory) for the check. Returns
 * the fd, or -1 with errno set as execve would for that path. */
int execcheck_open(const char *path);

/* Check the opened executable (fd, O_PATH) against what was matched. */
enum execcheck_verdict execcheck_file(int fd, const struct exec_expect *e);

/* Execute fd (checked), or e->path for a `#!` script. Returns only on
 * failure, with errno set as execve would. */
void execcheck_exec(int fd, const struct exec_expect *e, char **argv, char **envp);

#endif
