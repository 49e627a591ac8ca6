#include "procstate.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* A small signed decimal from a /proc file. */
static int read_proc_int(const char *path, int *value)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	close_fd(&fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	int v = 0, sign = 1;
	const char *p = buf;
	if (*p == '-') {
		sign = -1;
		p++;
	}
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	*value = sign * v;
	return 0;
}

static void missing(unsigned *lost, unsigned bit, int *first_err)
{
	if (!*lost)
		*first_err = errno;
	*lost |= bit;
}

unsigned procstate_capture(struct procstate *st)
{
	unsigned lost = 0;
	int first_err = 0;
	sigset_t mask;
	struct sched_param param = {0};

	memset(st, 0, sizeof(*st));
	st->umask = umask(0);
	umask(st->umask);

	sigprocmask(SIG_BLOCK, NULL, &mask);
	for (int sig = 1; sig <= 64; sig++) {
		struct sigaction sa;
		uint64_t bit = UINT64_C(1) << (sig - 1);
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (sigismember(&mask, sig) == 1)
			st->blocked_signals |= bit;
		/* glibc refuses its own two internal signals: they are its. */
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			st->ignored_signals |= bit;
	}

	for (int r = 0; r < RLIM_NLIMITS; r++) {
		if (prlimit(0, (enum __rlimit_resource)r, NULL, &st->limits[r]) == 0)
			st->limits_read |= UINT32_C(1) << r;
		else
			missing(&lost, PROCSTATE_NO_LIMIT, &first_err);
	}

	errno = 0;
	int nice = getpriority(PRIO_PROCESS, 0);
	if (errno)
		missing(&lost, PROCSTATE_NO_NICE, &first_err);
	else
		st->nice = nice;

	long n = syscall(SYS_sched_getaffinity, 0, sizeof(st->cpu_affinity),
			 st->cpu_affinity);
	st->cpu_affinity_len = n > 0 ? (size_t)n : 0;

	if (read_proc_int("/proc/self/oom_score_adj", &st->oom_score_adj) < 0)
		missing(&lost, PROCSTATE_NO_OOM_SCORE_ADJ, &first_err);

	long prio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	st->io_priority = prio > 0 ? (unsigned)prio : 0;

	int policy = sched_getscheduler(0);
	if (policy >= 0 && sched_getparam(0, &param) == 0) {
		st->sched_policy = policy;
		st->sched_priority = param.sched_priority;
	} else {
		missing(&lost, PROCSTATE_NO_SCHED, &first_err);
	}

	int pers = personality(0xffffffff);
	if (pers >= 0)
		st->personality = (unsigned long)pers;
	else
		missing(&lost, PROCSTATE_NO_PERSONALITY, &first_err);

	if (lost)
		errno = first_err;
	return lost;
}
