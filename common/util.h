/*
 * Small helpers shared by every toolrun component.
 *
 * Error conventions. toolrun has these, each in its own kind of function;
 * a module keeps to one for the functions of one kind, and its header
 * says which where it is not the first.
 *   1. Negative errno, the default: a function that can fail returns an
 *      int (or ssize_t, int64_t), 0 or a count on success, -ENOENT,
 *      -EPROTO, ... on failure. Most of common/, proto/, daemon/, client/wire.c
 *      and preload/. Where the caller must also say what failed, a buffer
 *      (char *why / *err, size_t len) gets one line naming the object:
 *      daemon/base/sandbox.c, sock.c, spill.c, auditlog.c, client/connect.c;
 *      config.c puts it in cfg->error.
 *   2. An expected outcome the caller must handle is a positive value,
 *      named in an enum or in the header: fd_walk's FD_WALK_NO_DIR,
 *      auditchain_verify's AUDITCHAIN_BROKEN, proctree's "1: waiting".
 *   3. 0 or -1 with a one-line reason, where a failure has no errno of
 *      its own (a refusal, a malformed request) and the caller only passes
 *      the reason on: job_start and session_attach_command (why), the
 *      session client (client/sessclient.h, why), and front/ (struct
 *      front_error: a code, a category, a message; front/core/front.h).
 *   4. -1 (or NULL) with errno set, as the call it stands for: what
 *      reports like a syscall to a caller that expects one. launch_spawn
 *      (a fork), execcheck (execve's errno), dir_open_at, and the
 *      library's exec hooks, which fail as glibc's exec functions do.
 *   5. bool, false on failure, for a step whose only failure is obvious
 *      from its name: out of memory (json_print_line, a buffer's grow), a
 *      lookup that finds nothing, "the connection is gone" (conn_flush).
 *   6. NULL for "none" or "out of memory" from a function that returns an
 *      object (json_text, job_find, arena_alloc).
 *   errno itself is only read straight after the call that set it.
 *   MUST_CHECK marks a result that may not be dropped unseen (a lost
 *   reply, an fd left unwatched); IGNORE_RESULT drops one on purpose,
 *   with a comment saying why. write_all is not marked: most of its
 *   callers print a diagnostic on stderr, best effort.
 *
 * Everything here but dir_open_at is async-signal-safe: the preload
 * library uses it in vfork children and in the fork child of
 * multithreaded programs.
 */
#ifndef TOOLRUN_UTIL_H
#define TOOLRUN_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define NORETURN __attribute__((noreturn))
/* A result the caller must look at: a failure it may not drop unseen
 * (the compiler warns, and -Werror stops the build). */
#define MUST_CHECK __attribute__((warn_unused_result))
/* Drop a MUST_CHECK result on purpose; a comment beside it says why.
 * GCC does not take a plain (void) cast for that; the '!' makes it a
 * value used. */
#define IGNORE_RESULT(expr) ((void)!(expr))
#define HIDDEN __attribute__((visibility("hidden")))

/* toolrun's own programs (toolrund, toolrun-init, toolrun, toolrun-exec)
 * export this symbol, so that the library, preloaded into them too, never
 * takes one of them over as an agent command (preload/command.h). Each
 * main file says TOOLRUN_NOT_A_COMMAND; meson exports the symbol. */
#define TOOLRUN_NOT_A_COMMAND_SYMBOL "toolrun_not_a_command"
#define TOOLRUN_NOT_A_COMMAND                                                  \
	__attribute__((visibility("default"), used)) const char                \
		toolrun_not_a_command[] = "toolrun's own program"

/* Close an fd, keeping errno, and mark it closed. */
static inline void close_fd(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
		*fd = -1;
	}
}

/* `_cleanup_close_ int fd = ...;` closes fd when it goes out of scope. */
#define _cleanup_close_ __attribute__((cleanup(close_fd)))

/* Hand an fd over to a new owner: the cleanup no longer closes it. */
static inline int steal_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

/* Retry a syscall that failed with EINTR. Returns -errno on failure. */
#define RETRY_EINTR(expr)                                                      \
	({                                                                     \
		long _r;                                                       \
		do                                                             \
			_r = (long)(expr);                                     \
		while (_r < 0 && errno == EINTR);                              \
		_r < 0 ? -(long)errno : _r;                                    \
	})

/* Write all of buf to fd (blocking). Returns 0 or -errno. */
int write_all(int fd, const void *buf, size_t len);

/* Read exactly len bytes. Returns 0, -errno, or -EPIPE at early EOF. */
int read_exact(int fd, void *buf, size_t len);

/* The English text of an errno value, without locale or allocation. */
const char *errno_text(int err);

/* CLOCK_MONOTONIC in milliseconds and in microseconds: the one clock of
 * every timer, deadline and duration (async-signal-safe). */
int64_t monotonic_ms(void);
/* CLOCK_REALTIME in milliseconds since the epoch: for records that say
 * when (the audit log), never for durations. */
int64_t wall_ms(void);

/* A directory stream for path, opened from dirfd with flags (O_DIRECTORY
 * and O_CLOEXEC are added); with path "", one of its own over dirfd (a
 * copy: dirfd stays the caller's). NULL with errno set. Not
 * async-signal-safe: fdopendir allocates the stream. */
DIR *dir_open_at(int dirfd, const char *path, int flags);

/*
 * Call visit(fd, arg) for each fd open in this process, as /proc/self/fd
 * lists them, but not the fd of the walk itself: getdents64 into a buffer
 * on the stack, no allocation (a vfork child may walk).
 * Returns FD_WALK_DONE; FD_WALK_NO_DIR, with errno set and nothing
 * visited, when /proc/self/fd cannot be opened (no /proc, no fd left);
 * or -errno when reading it failed part-way (some fds visited).
 */
enum fd_walk_result {
	FD_WALK_DONE = 0,
	FD_WALK_NO_DIR = 1,
};
int fd_walk(void (*visit)(int fd, void *arg), void *arg);

/*
 * Close the n fds listed: each run of consecutive numbers (an order's
 * fds, received in one recvmsg, usually are one) in one close_range(),
 * which closes exactly that run, and one by one where close_range() is
 * refused (an older kernel, a seccomp filter).
 */
void close_fd_list(const int *fds, unsigned n);

/* The last component of a path ("cat" of "/usr/bin/cat"). */
const char *path_base_name(const char *path);

/* Is the LD_PRELOAD entry entry[0..len) (a path without ld.so's ':' or
 * ' ' separators) a file named libtoolrun.so? Whatever the directory, that
 * is toolrun's library, to the library itself and to toolrund. */
bool preload_entry_is_toolrun(const char *entry, size_t len);

/* Where uid is in uids[0..n), or -1 (allow_uids: who is served). */
int uid_index(const uid_t *uids, unsigned n, uid_t uid);
uint64_t monotonic_us(void);

#endif
