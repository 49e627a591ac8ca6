/*
 * Seccomp filters (libseccomp) for toolrund's processes and programs.
 *
 *   listener  an allow-list. What it may not do at all (execve, open or
 *             create files or sockets, fork, ptrace, namespaces, mount)
 *             kills it: the SIGSYS handler writes the system call number
 *             to a "death note" fd for the supervisor, which logs it and
 *             restarts the daemon. Anything else not listed fails with
 *             ENOSYS.
 *   supervisor  a deny-list of what neither it nor any program needs
 *             (no allow-list: the launcher and every program inherit the
 *             supervisor's filter, and programs may do anything else).
 *   launcher  inherits that deny-list (installs it itself when it has no
 *             filter yet).
 *   programs  inherit that deny-list (EPERM, with clone3 and io_uring_*
 *             failing with ENOSYS so that libc falls back); with
 *             network = deny, a filter of their own on top makes socket()
 *             for anything but AF_UNIX fail with EACCES.
 *
 * Every process sets no_new_privs first.
 *
 * Processes: all three (each loads its filter; the supervisor also names a
 * killed listener's call).
 */
#ifndef TOOLRUN_SANDBOX_H
#define TOOLRUN_SANDBOX_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

/* Compiled once in the launcher, installed in each program without
 * allocating (between fork and exec), on top of the launcher's own
 * deny-list, which every program inherits. */
struct child_filters {
	struct sock_fprog deny_network; /* socket() other than AF_UNIX: EACCES */
};

/* Each returns 0, or -errno with a one-line reason in err. */
int sandbox_listener(int death_note_fd, char *err, size_t errlen);
int sandbox_supervisor(char *err, size_t errlen);
int sandbox_launcher(char *err, size_t errlen);
int sandbox_child_filters(struct child_filters *out, char *err, size_t errlen);

/* In a program's process, just before execve: async-signal-safe.
 * network = allow adds no filter of its own. */
int sandbox_child_apply(const struct child_filters *f, bool network);

/* The name of a system call of this architecture, for the log. */
const char *sandbox_syscall_name(int nr, char *buf, size_t len);

#endif
