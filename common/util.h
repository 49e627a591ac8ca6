/*
 * Small helpers shared by every toolrun component.
 *
 * Error convention, used throughout toolrun:
 *   - A function that can fail returns an int: 0 (or a count) on success,
 *     and a negative errno value (-ENOENT, -EPROTO, ...) on failure.
 *   - A positive value that is not a count is an expected outcome the
 *     caller must handle; such functions name their results in an enum.
 *   - errno itself is only read straight after the call that set it.
 *
 * Everything here is async-signal-safe: the preload library uses it in
 * vfork children and in the fork child of multithreaded programs.
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
 * copy: dirfd stays the caller's). NULL with errno set. */
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
