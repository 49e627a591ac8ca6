#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launcher.h"
#include "listener.h"
#include "log.h"
#include "sandbox.h"
#include "util.h"

/* A pair that ran this long is restarted at once; quicker failures wait
 * 100 ms, doubling, never more than a second. */
#define STABLE_MS 5000
#define RESTART_MIN_MS 100
#define RESTART_MAX_MS 1000
/* How long the listener and launcher get to stop before SIGKILL. */
#define STOP_WAIT_MS 2000

struct pair {
	pid_t listener;
	pid_t launcher;
	int note;           /* read end of the listener's death note */
	uint64_t started_ms;
	uint64_t kill_at_ms; /* one of them ended: the other by then, or SIGKILL */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The listener's process: it never returns. */
static NORETURN void listener_process(struct supervisor *S, pid_t parent,
				      struct launcher_link link, int note)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	prctl(PR_SET_NAME, "toolrund-listen");
	log_set_role("listener");

	struct listener *L = calloc(1, sizeof(*L));
	if (!L) {
		log_error("out of memory");
		_exit(1);
	}
	L->cfg = S->cfg;
	L->sock = S->sock;
	L->launcher = link;
	memcpy(L->allowed, S->allowed, sizeof(L->allowed));
	L->nallowed = S->nallowed;
	int code = listener_main(L, note);
	free(L);
	/* The raw call, not _exit(): a sanitizer build hooks _exit() to run
	 * a leak check, which needs clone and ptrace, and the listener's
	 * filter kills it for those. */
	syscall(SYS_exit_group, code);
	__builtin_unreachable();
}

static int start_pair(struct supervisor *S, struct pair *p)
{
	int note[2];
	struct launcher_link link;

	if (pipe2(note, O_CLOEXEC) < 0) {
		log_error("cannot create a pipe: %s", errno_text(errno));
		return -1;
	}
	const int launcher_closes[] = {S->sock->fd, S->sock->lock_fd, note[0], note[1], -1};
	int r = launcher_start(&link, launcher_closes);
	if (r < 0) {
		log_error("cannot start the launcher: %s", errno_text(r));
		close(note[0]);
		close(note[1]);
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		log_error("cannot start the listener: %s", errno_text(errno));
		kill(link.pid, SIGKILL);
		close(link.fd);
		close(note[0]);
		close(note[1]);
		p->launcher = link.pid;
		p->note = -1;
		return -1;
	}
	if (pid == 0) {
		close(note[0]);
		listener_process(S, parent, link, note[1]);
	}
	/* The channel is the listener's: with our copy closed, either end's
	 * death is the other's end of file. */
	close(link.fd);
	close(note[1]);
	*p = (struct pair){
		.listener = pid,
		.launcher = link.pid,
		.note = note[0],
		.started_ms = now_ms(),
	};
	log_info("started the launcher (pid %d) and the listener (pid %d)",
		 (int)link.pid, (int)pid);
	return 0;
}

static void describe(char *buf, size_t len, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by SIG%s", sigabbrev_np(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended with wait status 0x%x", (unsigned)status);
}

/* The listener ended: say why, from its death note if it left one. */
static void listener_ended(struct pair *p, int status, bool stopping)
{
	char cause[96];
	int nr;

	if (p->note >= 0 && read(p->note, &nr, sizeof(nr)) == sizeof(nr)) {
		char name[64];
		log_error("the listener (pid %d) was killed by its seccomp filter for calling %s (%d)",
			  (int)p->listener, sandbox_syscall_name(nr, name, sizeof(name)), nr);
	} else if (!stopping || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		describe(cause, sizeof(cause), status);
		log_warn("the listener (pid %d) %s", (int)p->listener, cause);
	}
	close_fd(&p->note);
	p->listener = 0;
}

static void reap(struct pair *p, bool stopping)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			return;
		if (pid == p->listener) {
			listener_ended(p, status, stopping);
		} else if (pid == p->launcher) {
			if (!stopping || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				char cause[96];
				describe(cause, sizeof(cause), status);
				log_warn("the launcher (pid %d) %s", (int)pid, cause);
			}
			p->launcher = 0;
		}
		/* The survivor sees end of file on their channel and ends too;
		 * if it does not within STOP_WAIT_MS, it is killed. */
		if ((p->listener == 0) != (p->launcher == 0) && !p->kill_at_ms)
			p->kill_at_ms = now_ms() + STOP_WAIT_MS;
	}
}

static void kill_pair(struct pair *p, int sig)
{
	if (p->listener)
		kill(p->listener, sig);
	if (p->launcher)
		kill(p->launcher, sig);
}

static unsigned backoff_ms(unsigned quick)
{
	unsigned ms = RESTART_MIN_MS;
	for (unsigned i = 1; i < quick && ms < RESTART_MAX_MS; i++)
		ms *= 2;
	return MIN(ms, RESTART_MAX_MS);
}

int supervisor_run(struct supervisor *S)
{
	sigset_t mask;
	struct pair p = {.note = -1};
	bool stopping = false;
	uint64_t restart_at = 0, stop_deadline = 0;
	unsigned quick = 0;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		log_error("cannot block signals: %s", errno_text(errno));
		return 1;
	}
	_cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0) {
		log_error("signalfd: %s", errno_text(errno));
		return 1;
	}

	for (;;) {
		uint64_t now = now_ms();
		bool idle = !p.listener && !p.launcher;

		if (stopping && idle)
			break;
		if (!stopping && idle && now >= restart_at) {
			if (start_pair(S, &p) < 0)
				restart_at = now + RESTART_MAX_MS;
			continue;
		}
		if (p.kill_at_ms && now >= p.kill_at_ms) {
			kill_pair(&p, SIGKILL);
			p.kill_at_ms = 0;
		}
		if (stopping && now >= stop_deadline)
			kill_pair(&p, SIGKILL);

		int timeout = -1;
		uint64_t next = 0;
		if (!stopping && idle)
			next = restart_at;
		if (p.kill_at_ms && (!next || p.kill_at_ms < next))
			next = p.kill_at_ms;
		if (stopping && (!next || stop_deadline < next))
			next = stop_deadline;
		if (next)
			timeout = next > now ? (int)(next - now) : 0;

		struct pollfd pfd = {.fd = sigfd, .events = POLLIN};
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR) {
			log_error("poll: %s", errno_text(errno));
			kill_pair(&p, SIGKILL);
			return 1;
		}
		struct signalfd_siginfo si;
		while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
			switch (si.ssi_signo) {
			case SIGCHLD:
				break;
			case SIGHUP:
				log_info("SIGHUP: the config is read at start; restart toolrund to apply changes");
				break;
			default:
				if (!stopping) {
					log_info("SIG%s: stopping", sigabbrev_np((int)si.ssi_signo));
					stopping = true;
					stop_deadline = now_ms() + STOP_WAIT_MS;
					/* The listener ends every job, then the launcher
					 * sees its channel close and ends too. */
					if (p.listener)
						kill(p.listener, SIGTERM);
					else if (p.launcher)
						kill(p.launcher, SIGTERM);
				}
			}
		}
		reap(&p, stopping);
		if (!stopping && p.started_ms && !p.listener && !p.launcher) {
			uint64_t ran = now_ms() - p.started_ms;
			quick = ran >= STABLE_MS ? 0 : quick + 1;
			unsigned wait = quick ? backoff_ms(quick) : 0;
			restart_at = now_ms() + wait;
			p.started_ms = 0;
			log_warn("restarting the listener and the launcher in %u ms", wait);
		}
	}
	close_fd(&p.note);
	sock_close(S->sock);
	log_info("stopped");
	return 0;
}
