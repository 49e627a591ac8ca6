/*
 * From vfork() to execve() (launch.h).
 *
 * Process: the launcher.
 */
#include "launch.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "sbuf.h"

/* The report is the launcher's memory, which this child shares until it
 * execs or exits (vfork): the launcher reads it once vfork returns. */
static NORETURN void fail(volatile struct launch_report *report, enum launch_step step)
{
	report->err = errno;
	report->step = step;
	_exit(127);
}

int launch_self_init(struct launch_self *self)
{
	self->pid = getpid();
	/* Every part but the best-effort affinity and I/O priority. */
	return procstate_capture(&self->state) ? -1 : 0;
}

static void sort_ints(int *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		int x = v[i];
		unsigned j = i;
		while (j > 0 && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

struct fd_range {
	unsigned lo, hi;
};

static void cloexec_if_in(int fd, void *arg)
{
	const struct fd_range *r = arg;
	if ((unsigned)fd >= r->lo && (unsigned)fd <= r->hi)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* Mark close-on-exec every fd in [lo, hi]. */
static int cloexec_range(unsigned lo, unsigned hi)
{
	if (syscall(SYS_close_range, lo, hi, CLOSE_RANGE_CLOEXEC) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL)
		return -1;
	/* Kernels before 5.11: walk the fd table. */
	struct fd_range r = {lo, hi};
	return fd_walk(cloexec_if_in, &r) == FD_WALK_DONE ? 0 : -1;
}

/* Put each source fd at its target number; everything else is closed at
 * exec. Sources first move above every target, so no dup2() clobbers a
 * source that is still to be placed. */
static int arrange_fds(const struct launch_plan *p, int *cwd_fd)
{
	int *moved = p->scratch, *sorted = p->scratch + p->ntargets;
	int base = 3;

	for (unsigned i = 0; i < p->ntargets; i++)
		if ((int)p->targets[i] + 1 > base)
			base = (int)p->targets[i] + 1;

	for (unsigned i = 0; i < p->ntargets; i++) {
		moved[i] = fcntl(p->src_fds[i], F_DUPFD_CLOEXEC, base);
		if (moved[i] < 0)
			return -1;
	}
	int c = fcntl(*cwd_fd, F_DUPFD_CLOEXEC, base);
	if (c < 0)
		return -1;
	*cwd_fd = c;

	for (unsigned i = 0; i < p->ntargets; i++) {
		/* dup2() leaves the new fd without FD_CLOEXEC. */
		if (dup2(moved[i], (int)p->targets[i]) < 0)
			return -1;
		sorted[i] = (int)p->targets[i];
	}
	sort_ints(sorted, p->ntargets);

	unsigned from = 0;
	for (unsigned i = 0; i < p->ntargets; i++) {
		unsigned t = (unsigned)sorted[i];
		if (t > from && cloexec_range(from, t - 1) < 0)
			return -1;
		from = t + 1;
	}
	return cloexec_range(from, ~0U);
}

/* The caller's limits, lowered to what this process may set: raising a
 * hard limit takes a privilege the daemon does not have. */
static int apply_limits(const struct launch_plan *p)
{
	for (unsigned i = 0; i < p->nlimits; i++) {
		const struct launch_limit *l = &p->limits[i];
		const struct rlimit *cur = &p->self->state.limits[l->resource];
		struct rlimit want;
		want.rlim_max = MIN((rlim_t)l->hard, cur->rlim_max);
		want.rlim_cur = MIN((rlim_t)l->soft, want.rlim_max);
		if ((want.rlim_cur != cur->rlim_cur || want.rlim_max != cur->rlim_max) &&
		    setrlimit(l->resource, &want) < 0)
			return -1;
	}
	return 0;
}

/* Scheduling attributes the caller had. Each is best effort: one the
 * launcher lacks the privilege for (a lower nice value, a real-time
 * policy) leaves the program with the launcher's own. */
static void apply_scheduling(const struct launch_plan *p)
{
	const struct procstate *self = &p->self->state;
	struct sched_param param = {.sched_priority = p->sched_priority};

	if (p->nice != self->nice)
		setpriority(PRIO_PROCESS, 0, p->nice);
	if (p->cpu_affinity && p->cpu_affinity_len &&
	    (p->cpu_affinity_len != self->cpu_affinity_len ||
	     memcmp(p->cpu_affinity, self->cpu_affinity, p->cpu_affinity_len) != 0))
		syscall(SYS_sched_setaffinity, 0, p->cpu_affinity_len, p->cpu_affinity);
	if (p->sched_policy != self->sched_policy || p->sched_priority != self->sched_priority)
		sched_setscheduler(0, p->sched_policy, &param);
	if (p->io_priority && p->io_priority != self->io_priority)
		syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, p->io_priority);
	if (p->oom_score_adj != self->oom_score_adj) {
		char buf[16];
		struct sbuf sb = SBUF_INIT(buf);
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			sbuf_add_i64(&sb, p->oom_score_adj);
			(void)write_all(fd, buf, sb.len);
			close(fd);
		}
	}
	/* Last: it may change how the next image is laid out. */
	if (p->personality != self->personality)
		personality(p->personality);
}

/*
 * Ignored signals, then the mask: both survive the exec; a handler does
 * not (exec resets it), so only dispositions that differ from what the
 * caller wants are set: the launcher's own ignored signals back to the
 * default, the caller's to ignored.
 */
static int apply_signals(const struct launch_plan *p)
{
	struct sigaction ign = {.sa_handler = SIG_IGN}, dfl = {.sa_handler = SIG_DFL};
	uint64_t want = p->has_state ? p->ignored_signals : 0;
	uint64_t change = want ^ p->self->state.ignored_signals;
	sigset_t mask;

	sigemptyset(&mask);
	for (int sig = 1; sig <= 64; sig++) {
		uint64_t bit = UINT64_C(1) << (sig - 1);
		if ((change & bit) && sig != SIGKILL && sig != SIGSTOP &&
		    sigaction(sig, (want & bit) ? &ign : &dfl, NULL) < 0 && errno != EINVAL)
			return -1;
		if (p->has_state && (p->blocked_signals & bit))
			sigaddset(&mask, sig);
	}
	return sigprocmask(SIG_SETMASK, &mask, NULL);
}

/*
 * Become the caller: groups, gid, uid, then (a launcher that is not root)
 * no capability left. Raw system calls: glibc's wrappers keep process-wide
 * state, and this child shares the launcher's memory. A change of
 * credentials clears the parent-death signal, so it is set again, and the
 * parent checked again.
 */
static int become_caller(const struct launch_plan *p)
{
	if (syscall(SYS_setgroups, p->ngroups, p->groups) < 0 ||
	    syscall(SYS_setresgid, p->gid, p->gid, p->gid) < 0 ||
	    syscall(SYS_setresuid, p->uid, p->uid, p->uid) < 0)
		return -1;
	if (p->drop_caps && caps_clear() < 0)
		return -1;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -1;
	if (getppid() != p->self->pid) {
		errno = ESRCH;
		return -1;
	}
	return 0;
}

/* A tool: open its path as the program would be executed (from its
 * working directory, with the credentials it runs with), check what was
 * opened, run that. An open that fails is the execve failure it stands
 * for (ENOENT, EACCES, ELOOP). */
static NORETURN void exec_checked(const struct launch_plan *p,
				  volatile struct launch_report *report)
{
	int fd = execcheck_open(p->path);

	if (fd < 0)
		fail(report, LAUNCH_STEP_EXEC);
	switch (execcheck_file(fd, p->expect)) {
	case EXECCHECK_OK:
		break;
	case EXECCHECK_ERROR:
		fail(report, LAUNCH_STEP_CHECK_FILE);
	case EXECCHECK_OTHER_FILE:
		errno = EACCES;
		fail(report, LAUNCH_STEP_CHECK_FILE);
	case EXECCHECK_WRITABLE:
	default:
		errno = EACCES;
		fail(report, LAUNCH_STEP_CHECK_WRITERS);
	}
	execcheck_exec(fd, p->expect, p->argv, p->envp);
	fail(report, LAUNCH_STEP_EXEC);
}

static NORETURN void launch_child(const struct launch_plan *plan,
				  volatile struct launch_report *report)
{
	int cwd_fd = plan->cwd_fd;
	sigset_t all;

	/* No signal until the program's own mask is in place. */
	sigfillset(&all);
	if (sigprocmask(SIG_SETMASK, &all, NULL) < 0)
		fail(report, LAUNCH_STEP_SIGNALS);
	if (setsid() < 0)
		fail(report, LAUNCH_STEP_SESSION);
	/* If the launcher dies, so does the program; and it may already
	 * have died before the request took effect. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		fail(report, LAUNCH_STEP_PARENT_DEATH);
	if (getppid() != plan->self->pid) {
		errno = ESRCH;
		fail(report, LAUNCH_STEP_PARENT_DEATH);
	}
	if (plan->subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		fail(report, LAUNCH_STEP_SESSION);
	if (arrange_fds(plan, &cwd_fd) < 0)
		fail(report, LAUNCH_STEP_FDS);
	/* A TTY session's bash: its terminal, at fd 0, becomes the new
	 * session's controlling terminal, so that Ctrl-C reaches it. */
	if (plan->controlling_tty && ioctl(0, TIOCSCTTY, 0) < 0)
		fail(report, LAUNCH_STEP_SESSION);
	umask(plan->has_state ? plan->umask : 022);
	if (plan->has_state) {
		apply_scheduling(plan);
		if (apply_limits(plan) < 0)
			fail(report, LAUNCH_STEP_LIMITS);
	}
	if (apply_signals(plan) < 0)
		fail(report, LAUNCH_STEP_SIGNALS);
	/* Where the caller is, but may not search, as its owner. */
	bool entered = false;
	if (plan->enter_as_owner) {
		syscall(SYS_setfsuid, plan->dir_owner);
		entered = fchdir(cwd_fd) == 0;
	}
	/* After the steps that /proc/self writes need the launcher's uid for
	 * (oom_score_adj), before anything the caller's rules should bind
	 * (it sets the file system uid too). */
	if (plan->switch_identity && become_caller(plan) < 0)
		fail(report, LAUNCH_STEP_IDENTITY);
	/* As the caller: its directory may be closed to toolrund's user. */
	if (!entered && fchdir(cwd_fd) < 0)
		fail(report, LAUNCH_STEP_CWD);
	/* Last: the filter would deny some of the steps above. */
	if (plan->filters && sandbox_child_apply(plan->filters, plan->network) < 0)
		fail(report, LAUNCH_STEP_SANDBOX);
	if (plan->expect)
		exec_checked(plan, report);
	execve(plan->path, plan->argv, plan->envp);
	fail(report, LAUNCH_STEP_EXEC);
}

/* Kept out of line, with nothing live across vfork() but its arguments:
 * the child borrows this frame's stack until it execs. */
__attribute__((noinline)) pid_t launch_spawn(const struct launch_plan *plan,
					     volatile struct launch_report *report)
{
	report->step = LAUNCH_STEP_NONE;
	report->err = 0;
	pid_t pid = vfork();
	if (pid == 0)
		launch_child(plan, report);
	return pid;
}
