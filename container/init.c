/*
 * toolrun-init: PID 1 of the toolrun container.
 *
 *   toolrun-init [--] PROGRAM [ARGS...]
 *   toolrun-init /usr/sbin/toolrund --config /etc/toolrun/toolrun.conf
 *
 * It starts PROGRAM (the daemon) before anything else and keeps it
 * running:
 *   - The daemon's environment is ours without LD_PRELOAD, TOOLRUN and
 *     TOOLRUN_* other than TOOLRUN_CONFIG: it never runs under the
 *     preload library (which an image's `ENV LD_PRELOAD` gives every
 *     process, this one included), and it reads the config the library
 *     reads.
 *   - Whenever the daemon exits, for whatever cause, it is started again:
 *     at once after a run of STABLE_MS or more, else after a backoff that
 *     doubles from BACKOFF_MIN_MS and never exceeds BACKOFF_MAX_MS (1 s).
 *     Each exit is logged with its cause.
 *   - As PID 1 it reaps every process that ends up its child (orphans of
 *     `docker exec` sessions land here).
 *   - SIGTERM or SIGINT (`docker stop`): SIGTERM to the daemon, at most
 *     STOP_WAIT_MS for it to exit, then SIGKILL to its process group;
 *     exit 0. SIGHUP, SIGUSR1 and SIGUSR2 are passed on to the daemon.
 *   - It reads nothing and needs no terminal.
 *
 * One line per event on stderr (`docker logs`), in toolrund's format.
 */
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A daemon that ran this long is restarted without delay. */
#define STABLE_MS 5000
/* Quick exits in a row wait BACKOFF_MIN_MS, then twice as long each
 * time, up to BACKOFF_MAX_MS. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000
/* On SIGTERM, the daemon has this long before it is killed. */
#define STOP_WAIT_MS 1500
/* After SIGKILL, how long we wait to reap it before exiting anyway. */
#define KILL_WAIT_MS 300

extern char **environ;

enum level { LVL_ERROR, LVL_WARN, LVL_INFO };

/* The one context of the process. */
struct init {
	char **argv;     /* the daemon's command line */
	char **envp;     /* its environment */
	const char *name; /* its base name, for messages */
	sigset_t handled; /* blocked here, read from sigfd */
	sigset_t saved;   /* the mask we started with, for the daemon */
	int sigfd;

	pid_t daemon;         /* 0: not running */
	uint64_t started_ms;  /* when the current daemon started */
	uint64_t restart_ms;  /* daemon == 0: start it at this time */
	unsigned quick_exits; /* runs shorter than STABLE_MS in a row */

	bool stopping;
	bool killed;          /* stopping: SIGKILL sent */
	uint64_t deadline_ms; /* stopping: the next escalation */
};

static void say(enum level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(enum level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info"};
	char line[1024];
	struct timespec ts = {0, 0};
	struct tm tm;
	va_list ap;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || !gmtime_r(&ts.tv_sec, &tm))
		memset(&tm, 0, sizeof(tm));
	int n = snprintf(line, sizeof(line),
			 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ toolrun-init[%d] %s: ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, (int)getpid(),
			 names[level]);
	if (n < 0)
		return;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : MIN((size_t)m, sizeof(line) - (size_t)n - 2));
	line[len++] = '\n';
	(void)write_all(STDERR_FILENO, line, len);
}

static NORETURN void fatal(const char *what, int err)
{
	say(LVL_ERROR, "%s: %s", what, errno_text(err));
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		fatal("clock_gettime(CLOCK_MONOTONIC)", errno);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Variables the daemon must not see: the preload and its settings. The
 * config's path stays, so that the daemon and the library agree on it. */
static bool kept_variable(const char *var)
{
	if (strncmp(var, "TOOLRUN_CONFIG=", 15) == 0)
		return true;
	return strncmp(var, "LD_PRELOAD=", 11) != 0 &&
	       strncmp(var, "TOOLRUN=", 8) != 0 &&
	       strncmp(var, "TOOLRUN_", 8) != 0;
}

static char **daemon_environment(void)
{
	size_t n = 0, k = 0;

	while (environ[n])
		n++;
	char **envp = calloc(n + 1, sizeof(char *));
	if (!envp)
		fatal("allocate the daemon's environment", ENOMEM);
	for (size_t i = 0; i < n; i++)
		if (kept_variable(environ[i]))
			envp[k++] = environ[i];
	envp[k] = NULL;
	return envp;
}

/* In the child: our mask back, then the daemon. Never returns. */
static NORETURN void exec_daemon(struct init *I)
{
	char msg[512];

	if (sigprocmask(SIG_SETMASK, &I->saved, NULL) < 0) {
		snprintf(msg, sizeof(msg), "toolrun-init: cannot restore the signal mask for %s: %s\n",
			 I->argv[0], errno_text(errno));
		(void)write_all(STDERR_FILENO, msg, strlen(msg));
		_exit(127);
	}
	/* Its own process group: a stop can end the daemon and its helpers. */
	if (setpgid(0, 0) < 0) {
		snprintf(msg, sizeof(msg), "toolrun-init: cannot give %s its own process group: %s\n",
			 I->argv[0], errno_text(errno));
		(void)write_all(STDERR_FILENO, msg, strlen(msg));
		_exit(127);
	}
	execvpe(I->argv[0], I->argv, I->envp);
	snprintf(msg, sizeof(msg), "toolrun-init: cannot run %s: %s\n", I->argv[0],
		 errno_text(errno));
	(void)write_all(STDERR_FILENO, msg, strlen(msg));
	_exit(127);
}

static void start_daemon(struct init *I)
{
	pid_t pid = fork();

	if (pid < 0) {
		int err = errno;
		I->quick_exits++;
		unsigned delay = BACKOFF_MAX_MS;
		I->restart_ms = now_ms() + delay;
		say(LVL_ERROR, "cannot fork to start %s: %s; trying again in %u ms",
		    I->name, errno_text(err), delay);
		return;
	}
	if (pid == 0)
		exec_daemon(I);
	/* Both sides set the group, so that a kill right away finds it. */
	if (setpgid(pid, pid) < 0 && errno != EACCES && errno != ESRCH)
		say(LVL_WARN, "cannot give %s (pid %d) its own process group: %s",
		    I->name, (int)pid, errno_text(errno));
	I->daemon = pid;
	I->started_ms = now_ms();
	say(LVL_INFO, "started %s (pid %d)", I->argv[0], (int)pid);
}

static unsigned backoff_ms(unsigned quick_exits)
{
	if (quick_exits == 0)
		return 0;
	unsigned delay = BACKOFF_MIN_MS;
	for (unsigned i = 1; i < quick_exits && delay < BACKOFF_MAX_MS; i++)
		delay *= 2;
	return MIN(delay, BACKOFF_MAX_MS);
}

static void describe(char *buf, size_t len, int status)
{
	if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));
		snprintf(buf, len, "was killed by signal %d (SIG%s)%s", WTERMSIG(status),
			 abbrev ? abbrev : "?", WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		snprintf(buf, len, "ended with wait status 0x%x", (unsigned)status);
	}
}

static void daemon_ended(struct init *I, pid_t pid, int status)
{
	char cause[128];
	uint64_t now = now_ms();
	uint64_t ran = now - I->started_ms;

	describe(cause, sizeof(cause), status);
	I->daemon = 0;
	if (I->stopping) {
		say(LVL_INFO, "%s (pid %d) %s", I->name, (int)pid, cause);
		return;
	}
	I->quick_exits = ran >= STABLE_MS ? 0 : I->quick_exits + 1;
	unsigned delay = backoff_ms(I->quick_exits);
	I->restart_ms = now + delay;
	if (delay)
		say(LVL_WARN, "%s (pid %d) %s after %llu ms; restarting in %u ms",
		    I->name, (int)pid, cause, (unsigned long long)ran, delay);
	else
		say(LVL_WARN, "%s (pid %d) %s; restarting", I->name, (int)pid, cause);
}

/* Collect every child that ended: the daemon, and orphans we adopted. */
static void reap(struct init *I)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid == 0)
			return;
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				say(LVL_ERROR, "waitpid: %s", errno_text(errno));
			return;
		}
		if (pid == I->daemon)
			daemon_ended(I, pid, status);
	}
}

/* Signal the daemon's process group (it made one), else the daemon. */
static void signal_daemon(struct init *I, int sig)
{
	if (I->daemon <= 0)
		return;
	if (kill(-I->daemon, sig) == 0)
		return;
	if (errno == ESRCH && kill(I->daemon, sig) == 0)
		return;
	if (errno != ESRCH)
		say(LVL_ERROR, "cannot send SIG%s to %s (pid %d): %s", sigabbrev_np(sig),
		    I->name, (int)I->daemon, errno_text(errno));
}

static void begin_stop(struct init *I, int sig)
{
	if (I->stopping)
		return;
	I->stopping = true;
	if (I->daemon <= 0) {
		say(LVL_INFO, "SIG%s: stopping (%s is not running)", sigabbrev_np(sig), I->name);
		return;
	}
	say(LVL_INFO, "SIG%s: stopping %s (pid %d)", sigabbrev_np(sig), I->name, (int)I->daemon);
	/* The daemon alone: it ends its launcher and programs itself. */
	if (kill(I->daemon, SIGTERM) < 0 && errno != ESRCH)
		say(LVL_ERROR, "cannot send SIGTERM to %s (pid %d): %s", I->name,
		    (int)I->daemon, errno_text(errno));
	I->deadline_ms = now_ms() + STOP_WAIT_MS;
}

static void on_signals(struct init *I)
{
	struct signalfd_siginfo si;

	for (;;) {
		ssize_t n = read(I->sigfd, &si, sizeof(si));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			fatal("read from the signalfd", errno);
		}
		if (n != sizeof(si))
			fatal("read from the signalfd", EIO);
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap(I);
			break;
		case SIGTERM:
		case SIGINT:
			begin_stop(I, (int)si.ssi_signo);
			break;
		case SIGHUP:
		case SIGUSR1:
		case SIGUSR2:
			signal_daemon(I, (int)si.ssi_signo);
			break;
		default:
			break;
		}
	}
}

/* How long poll() may sleep: until the next restart or escalation. */
static int poll_timeout(const struct init *I, uint64_t now)
{
	uint64_t at;

	if (I->stopping)
		at = I->deadline_ms;
	else if (I->daemon == 0)
		at = I->restart_ms;
	else
		return -1;
	return at <= now ? 0 : (int)MIN(at - now, (uint64_t)60000);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: toolrun-init [--] PROGRAM [ARGS...]\n"
		"  Runs PROGRAM (toolrund) without LD_PRELOAD, TOOLRUN and TOOLRUN_*\n"
		"  (TOOLRUN_CONFIG stays), restarts it within %d ms whenever it\n"
		"  exits, reaps orphans, and on SIGTERM or SIGINT stops it (SIGKILL\n"
		"  after %d ms) and exits 0.\n",
		BACKOFF_MAX_MS, STOP_WAIT_MS);
}

TOOLRUN_NOT_A_COMMAND;

int main(int argc, char **argv)
{
	struct init I = {.sigfd = -1};
	int first = 1;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("toolrun-init %s\n", TOOLRUN_VERSION);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--") == 0)
		first = 2;
	if (first >= argc || argv[first][0] == '-') {
		usage(stderr);
		return 2;
	}
	I.argv = argv + first;
	I.name = path_base_name(I.argv[0]);
	I.envp = daemon_environment();

	sigemptyset(&I.handled);
	sigaddset(&I.handled, SIGCHLD);
	sigaddset(&I.handled, SIGTERM);
	sigaddset(&I.handled, SIGINT);
	sigaddset(&I.handled, SIGHUP);
	sigaddset(&I.handled, SIGUSR1);
	sigaddset(&I.handled, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &I.handled, &I.saved) < 0)
		fatal("block signals", errno);
	I.sigfd = signalfd(-1, &I.handled, SFD_CLOEXEC | SFD_NONBLOCK);
	if (I.sigfd < 0)
		fatal("create a signalfd", errno);
	/* Outside a container (tests, a shell), adopt orphans all the same. */
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		say(LVL_WARN, "cannot become a child subreaper: %s", errno_text(errno));

	start_daemon(&I);
	for (;;) {
		uint64_t now = now_ms();

		if (I.stopping) {
			if (I.daemon == 0)
				break;
			if (now >= I.deadline_ms) {
				if (I.killed) {
					say(LVL_WARN, "%s (pid %d) is still there after SIGKILL; exiting",
					    I.name, (int)I.daemon);
					break;
				}
				say(LVL_WARN, "%s (pid %d) did not stop within %d ms; killing it",
				    I.name, (int)I.daemon, STOP_WAIT_MS);
				signal_daemon(&I, SIGKILL);
				I.killed = true;
				I.deadline_ms = now + KILL_WAIT_MS;
			}
		} else if (I.daemon == 0 && now >= I.restart_ms) {
			start_daemon(&I);
		}

		struct pollfd p = {I.sigfd, POLLIN, 0};
		if (poll(&p, 1, poll_timeout(&I, now_ms())) < 0) {
			if (errno == EINTR)
				continue;
			fatal("poll", errno);
		}
		if (p.revents & POLLIN)
			on_signals(&I);
		else if (p.revents)
			fatal("poll on the signalfd", EIO);
	}
	if (close(I.sigfd) < 0)
		say(LVL_WARN, "close the signalfd: %s", errno_text(errno));
	free(I.envp);
	say(LVL_INFO, "stopped");
	return 0;
}
