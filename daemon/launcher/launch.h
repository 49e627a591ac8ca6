/*
 * The steps between vfork() and execve() for a program toolrun runs.
 *
 * In the child of the launcher: a new session (so the timeout can kill
 * the whole group), death with the launcher, the caller's fds at their
 * numbers and nothing else, the caller's working directory, umask,
 * resource limits, scheduling attributes (as far as the launcher may set
 * them), ignored signals and signal mask, the caller's identity (groups,
 * gid, uid; no capability left), no_new_privs and the seccomp filter,
 * then execve(). A failure is reported to the launcher as (step, errno)
 * in a struct launch_report of the launcher's.
 *
 * The child shares the launcher's memory until it execs (vfork), which
 * spares copying the launcher's page tables for every program. So it
 * only makes system calls, writes to its own stack and, when a step
 * fails, to the report, and it changes only what differs from the
 * launcher's own state, which the launcher records once (struct
 * launch_self). The launcher resumes only once the child has exec'd or
 * exited, so the report needs no pipe: the launcher reads it when
 * vfork returns (as glibc's posix_spawn does).
 *
 * Process: the launcher.
 */
#ifndef TOOLRUN_LAUNCH_H
#define TOOLRUN_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "execcheck.h"
#include "launchstep.h"
#include "procstate.h"
#include "sandbox.h"
#include "util.h"

/* The launcher's own process state: what a child already has. */
struct launch_self {
	pid_t pid;
	struct procstate state;
};

/* Record the calling process's state. Call once, before any launch. */
int launch_self_init(struct launch_self *self);

struct launch_plan {
	const char *path;
	char **argv;
	char **envp;
	int cwd_fd;
	const int *src_fds;       /* one per target, as received */
	const uint32_t *targets;  /* the fd number each gets in the program */
	unsigned ntargets;
	int *scratch;             /* 2 * ntargets ints, for the child's use */
	const struct launch_self *self; /* the launcher, the child's parent */
	/* The caller's process state (has_state), else the defaults. */
	bool has_state;
	mode_t umask;
	uint64_t blocked_signals; /* bit N-1: signal N */
	uint64_t ignored_signals;
	const struct launch_limit *limits;
	unsigned nlimits;
	/* Scheduling, applied as far as the launcher may (best effort). */
	int nice;
	const uint8_t *cpu_affinity; /* NULL: leave as it is */
	size_t cpu_affinity_len;
	int oom_score_adj;
	unsigned io_priority;
	int sched_policy;
	int sched_priority;
	unsigned long personality;
	/* Installed last, with no_new_privs; NULL: none. */
	const struct child_filters *filters;
	bool network;
	/* The caller's identity, when the program runs as it: groups, gid,
	 * then uid, and (drop_caps, a launcher that is not root) none of
	 * the launcher's capabilities left. */
	bool switch_identity;
	bool drop_caps;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
	/* For a tool: the file path must turn out to be, which is then what
	 * runs (execcheck.h). NULL: path is executed as it is (an agent
	 * command; a name listed with trusted_dirs empty). */
	const struct exec_expect *expect;
	/* fd 0 is a terminal that becomes the controlling one (a TTY
	 * session's bash). */
	bool controlling_tty;
	/* An agent command or a session's bash: it adopts what its tree
	 * orphans (PR_SET_CHILD_SUBREAPER, kept across execve), so that
	 * every process it started stays below it (proctree_kill_tree). */
	bool subreaper;
	/* Enter the caller's working directory as its owner (dir_owner),
	 * before becoming the caller: for a caller in a directory it may not
	 * search itself (launcher.c says why that gives it nothing). */
	bool enter_as_owner;
	uid_t dir_owner;
};

struct launch_limit {
	int resource;
	uint64_t soft, hard;
};

/* What a failing child writes, in the launcher's memory: step stays
 * LAUNCH_STEP_NONE when it exec'd (or died of a signal before it could). */
struct launch_report {
	int32_t step;
	int32_t err;
};

/* Start the program. Returns its pid, or -1 with errno set if no child
 * could be made; once it returns, the child has exec'd or failed, and
 * *report says which. */
pid_t launch_spawn(const struct launch_plan *plan, volatile struct launch_report *report);

#endif
