/*
 * What a process passes on across exec besides its fds and working
 * directory: umask, signal mask and ignored signals, resource limits and
 * scheduling attributes. The library captures its caller's (the state a
 * program it runs must get); the launcher its own (what a child already
 * has, and need not set again).
 *
 * System calls only (and one read of /proc/thread-self/status), into
 * the caller's struct: no allocation, usable in a vfork child or an exec
 * hook.
 */
#ifndef TOOLRUN_PROCSTATE_H
#define TOOLRUN_PROCSTATE_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

struct procstate {
	mode_t umask;
	uint64_t blocked_signals; /* bit N-1: signal N; never SIGKILL, SIGSTOP */
	uint64_t ignored_signals;
	struct rlimit limits[RLIM_NLIMITS];
	uint32_t limits_read;     /* bit r: limits[r] was read */
	int nice;
	uint8_t cpu_affinity[sizeof(cpu_set_t)];
	size_t cpu_affinity_len;  /* 0: not read */
	int oom_score_adj;
	unsigned io_priority;     /* 0: not read, or none set */
	int sched_policy;
	int sched_priority;
	unsigned long personality;
};

/* What procstate_capture could not read; such a field is left 0. */
enum {
	PROCSTATE_NO_LIMIT = 1 << 0, /* one or more of the limits */
	PROCSTATE_NO_NICE = 1 << 1,
	PROCSTATE_NO_OOM_SCORE_ADJ = 1 << 2,
	PROCSTATE_NO_SCHED = 1 << 3, /* policy and priority */
	PROCSTATE_NO_PERSONALITY = 1 << 4,
};

/*
 * Fill st with the calling process's state. Returns the PROCSTATE_NO_*
 * bits of what could not be read (0: all of it), with errno that of the
 * first such failure. CPU affinity and I/O priority are best effort and
 * never reported. umask, the signal mask and the ignored signals come
 * from /proc/thread-self/status (3 system calls); where that cannot be
 * read, from umask() set and back (call it where no other thread
 * creates files), the mask and one sigaction() per signal (65).
 */
unsigned procstate_capture(struct procstate *st);

#endif
