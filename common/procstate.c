#include "procstate.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
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

/* The value of "KEY:\t<hex>\n" (or octal, for Umask) in text. */
static bool status_field(const char *text, const char *key, unsigned base,
			 uint64_t *value)
{
	size_t klen = strlen(key);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, klen) != 0 || p[klen] != ':')
			continue;
		p += klen + 1;
		while (*p == ' ' || *p == '\t')
			p++;
		uint64_t v = 0;
		unsigned digits = 0;
		for (;; p++, digits++) {
			unsigned d = *p >= '0' && *p <= '9' ? (unsigned)(*p - '0')
				   : *p >= 'a' && *p <= 'f' ? (unsigned)(*p - 'a' + 10)
				   : base;
			if (d >= base)
				break;
			v = v * base + d;
		}
		*value = v;
		return digits > 0 && digits <= 16 && *p == '\n';
	}
	return false;
}

/* glibc keeps SIGCANCEL and SIGSETXID to itself: sigaction() refuses
 * them, so they are never reported as ignored. */
#define GLIBC_INTERNAL_SIGNALS (UINT64_C(3) << 31)
#define UNCATCHABLE_SIGNALS \
	((UINT64_C(1) << (SIGKILL - 1)) | (UINT64_C(1) << (SIGSTOP - 1)))

/*
 * umask, the signal mask and the ignored signals from the kernel's one
 * text: three system calls where asking for them takes 65 (umask set and
 * back, the mask, and one rt_sigaction per signal). thread-self, since
 * the mask is the calling thread's. The same values as those calls give;
 * false (nothing set) when the file or a line is missing.
 */
static bool read_status(struct procstate *st)
{
	char buf[4096];
	uint64_t um, blk, ign;
	int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	close_fd(&fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (!status_field(buf, "Umask", 8, &um) || um > 0777 ||
	    !status_field(buf, "SigBlk", 16, &blk) ||
	    !status_field(buf, "SigIgn", 16, &ign))
		return false;
	st->umask = (mode_t)um;
	st->blocked_signals = blk & ~UNCATCHABLE_SIGNALS;
	st->ignored_signals = ign & ~(UNCATCHABLE_SIGNALS | GLIBC_INTERNAL_SIGNALS);
	return true;
}

/* The same by system calls, where /proc cannot tell. */
static void ask_signals(struct procstate *st)
{
	sigset_t mask;

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
	struct sched_param param = {0};

	memset(st, 0, sizeof(*st));
	if (!read_status(st))
		ask_signals(st);

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
