/*
 * The supervisor process (supervisor.h).
 *
 * Process: the supervisor.
 */
#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
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
/* How often the socket's file is checked: removed or replaced, it is made
 * again (clients would otherwise find nobody, and a new toolrund could not
 * start, since this one holds the lock). */
#define SOCKET_CHECK_MS 1000

struct pair {
	pid_t listener;
	pid_t launcher;
	int note;           /* read end of the listener's death note */
	int control;        /* our end of the control channel (control.h) */
	struct frame_reader control_reader;
	int control_fds[FRAME_MAX_FDS];
	uint64_t started_ms;
	uint64_t kill_at_ms; /* one of them ended: the other by then, or SIGKILL */
};

/* Times here are monotonic_ms() values, never negative. */
static uint64_t now_ms(void)
{
	return (uint64_t)monotonic_ms();
}

static void close_pair_fds(int note[2], int control[2])
{
	for (int i = 0; i < 2; i++) {
		close_fd(&note[i]);
		close_fd(&control[i]);
	}
}

static int start_pair(struct supervisor *S, struct pair *p)
{
	int note[2] = {-1, -1}, control[2] = {-1, -1};
	struct launcher_link link;

	if (pipe2(note, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) < 0) {
		log_error("cannot create the listener's channels: %s", errno_text(errno));
		close_pair_fds(note, control);
		return -1;
	}
	const int launcher_closes[] = {S->sock->fd, S->sock->lock_fd, note[0], note[1],
				       control[0], control[1], -1};
	const struct launcher_callers callers = {
		.can_switch = S->can_switch,
		.allowed = S->allowed,
		.nallowed = S->nallowed,
	};
	int r = launcher_start(&link, S->cfg, &callers, launcher_closes);
	if (r < 0) {
		log_error("cannot start the launcher: %s", errno_text(r));
		close_pair_fds(note, control);
		return -1;
	}
	const int listener_closes[] = {note[0], control[0], -1};
	const struct listener_args args = {
		.cfg = S->cfg,
		.sock = S->sock,
		.link = link,
		.control = control[1],
		.death_note = note[1],
		.allowed = S->allowed,
		.nallowed = S->nallowed,
		.self_uid = S->uid,
		.self_gid = S->gid,
		.can_switch = S->can_switch,
		.identity_reason = S->identity_reason,
		.user_note = S->user_note,
		.socket_fallback = S->socket_fallback,
	};
	pid_t pid = listener_start(&args, listener_closes);
	if (pid < 0) {
		log_error("cannot start the listener: %s", errno_text((int)-pid));
		kill(link.pid, SIGKILL);
		close(link.fd);
		close_pair_fds(note, control);
		p->launcher = link.pid;
		p->note = p->control = -1;
		return -1;
	}
	/* The channels are the listener's: with our copies closed, either
	 * end's death is the other's end of file. */
	close(link.fd);
	close(note[1]);
	close(control[1]);
	*p = (struct pair){
		.listener = pid,
		.launcher = link.pid,
		.note = note[0],
		.control = control[0],
		.started_ms = now_ms(),
	};
	p->control_reader = control_reader(p->control_fds);
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
	frame_reader_drop_fds(&p->control_reader);
	free(p->control_reader.payload);
	p->control_reader = control_reader(p->control_fds);
	close_fd(&p->control);
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

/* "FILE: 12 tools (was 11)", and what needs a restart to apply. */
static void reload_summary(char *buf, size_t len, const struct config *old,
			   const struct config *cfg)
{
	int n = snprintf(buf, len, "%s: %u tools (was %u), truncate=%s", cfg->file,
			 cfg->ntools, old->ntools,
			 cfg->truncate == TRUNCATE_SINK ? "sink" : "always");
	const char *fixed[8];
	unsigned nfixed = config_reload_fixed(old, cfg, fixed, ARRAY_SIZE(fixed));

	for (unsigned i = 0; i < nfixed && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%s",
			      i ? ", " : "; restart toolrund to apply ", fixed[i]);
}

/*
 * Read the config file again (SIGHUP, or a client's Reload through the
 * listener). A valid file becomes the config of every new request; an
 * invalid one is refused with its FILE:LINE reason and the old one stays.
 * socket, user, allow_uids, audit_* and spill_* keep their running values
 * until a restart.
 */
static void reload(struct supervisor *S, struct pair *p)
{
	struct config *cfg = malloc(sizeof(*cfg));
	char *scratch = malloc(CONFIG_MAX_FILE + 1);
	char msg[CONFIG_ERROR_MAX + 64];

	if (!cfg || !scratch) {
		snprintf(msg, sizeof(msg), "toolrund is out of memory");
	} else if (control_load_config(cfg, S->cfg->file, scratch) < 0) {
		snprintf(msg, sizeof(msg), "%s", cfg->error);
	} else {
		reload_summary(msg, sizeof(msg), S->cfg, cfg);
		log_info("config read again: %s", msg);
		if (S->cfg_owned)
			free(S->cfg);
		S->cfg = cfg;
		S->cfg_owned = true;
		free(scratch);
		if (p->control >= 0 && control_send_config(p->control, cfg, msg) < 0)
			log_warn("cannot send the new config to the listener");
		return;
	}
	log_error("config not read again, the old one stays: %s", msg);
	if (p->control >= 0)
		control_send_reload_refused(p->control, msg);
	free(cfg);
	free(scratch);
}

/* The listener asks on a client's behalf. */
static void supervisor_dispatch_listener(struct supervisor *S, struct pair *p)
{
	for (;;) {
		int r = frame_reader_read(&p->control_reader, p->control);
		if (r != FRAME_READ_READY)
			return; /* again later; or the listener is ending, reaped soon */
		Toolrun__Control__FromListener *m = toolrun__control__from_listener__unpack(
			NULL, p->control_reader.h.length, p->control_reader.payload);
		frame_reader_next(&p->control_reader);
		if (m && m->msg_case == TOOLRUN__CONTROL__FROM_LISTENER__MSG_RELOAD)
			reload(S, p);
		else
			log_error("malformed message from the listener on the control channel");
		if (m)
			toolrun__control__from_listener__free_unpacked(m, NULL);
	}
}

/* The socket file was removed or replaced: make it again, and hand the
 * new socket to the listener. If that fails, stop: a supervisor such as
 * toolrun-init starts a daemon that can. */
static bool check_socket(struct supervisor *S, struct pair *p)
{
	char why[CONFIG_SOCKET_MAX + 64], err[512];

	if (sock_still_ours(S->sock, why, sizeof(why)))
		return true;
	log_warn("%s; listening on a new socket there", why);
	if (sock_renew(S->sock, S->dir_mode, S->uid, S->gid, err, sizeof(err)) < 0) {
		log_error("cannot make the socket again: %s; stopping", err);
		return false;
	}
	if (p->control >= 0 && control_send_socket(p->control, S->sock->fd, S->sock->path) < 0)
		log_warn("cannot hand the new socket to the listener");
	return true;
}

/* The state of supervisor_run's loop. Times are now_ms() values. */
struct run {
	struct pair p;
	int sigfd;
	bool stopping;
	uint64_t restart_at;      /* no pair: start one then */
	uint64_t stop_deadline;   /* stopping: SIGKILL what is left then */
	uint64_t socket_check_at; /* check_socket then */
	unsigned quick;           /* pairs in a row that ended before STABLE_MS */
	int code;                 /* supervisor_run's result */
};

/* The signals the supervisor acts on, blocked and read from a signalfd
 * in its loop. Returns the fd, or -1 (logged). */
static int open_signalfd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		log_error("cannot block signals: %s", errno_text(errno));
		return -1;
	}
	int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		log_error("signalfd: %s", errno_text(errno));
	return sigfd;
}

/* Act on the deadlines that have come: start a pair, kill a survivor or
 * what is left when stopping, check the socket. Returns true when it
 * (tried to) start the pair: the loop looks at the time again at once. */
static bool run_deadlines(struct supervisor *S, struct run *r, uint64_t now)
{
	bool idle = !r->p.listener && !r->p.launcher;

	if (!r->stopping && idle && now >= r->restart_at) {
		if (start_pair(S, &r->p) < 0)
			r->restart_at = now + RESTART_MAX_MS;
		return true;
	}
	if (r->p.kill_at_ms && now >= r->p.kill_at_ms) {
		kill_pair(&r->p, SIGKILL);
		r->p.kill_at_ms = 0;
	}
	if (r->stopping && now >= r->stop_deadline)
		kill_pair(&r->p, SIGKILL);
	if (!r->stopping && now >= r->socket_check_at) {
		r->socket_check_at = now + SOCKET_CHECK_MS;
		if (!check_socket(S, &r->p)) {
			r->stopping = true;
			r->stop_deadline = now + STOP_WAIT_MS;
			kill_pair(&r->p, SIGTERM);
			r->code = 1;
		}
	}
	return false;
}

/* How long poll may wait: until the nearest deadline, or -1 for none. */
static int poll_timeout(const struct run *r, uint64_t now)
{
	bool idle = !r->p.listener && !r->p.launcher;
	uint64_t next = r->stopping ? 0 : r->socket_check_at;

	if (!r->stopping && idle)
		next = r->restart_at;
	if (r->p.kill_at_ms && (!next || r->p.kill_at_ms < next))
		next = r->p.kill_at_ms;
	if (r->stopping && (!next || r->stop_deadline < next))
		next = r->stop_deadline;
	if (next)
		return next > now ? (int)(next - now) : 0;
	return -1;
}

/* Wait for a signal or the listener's control messages, and serve the
 * latter. Returns -1 (logged) if poll fails. */
static int wait_for_events(struct supervisor *S, struct run *r, int timeout)
{
	struct pollfd pfd[2] = {
		{.fd = r->sigfd, .events = POLLIN},
		{.fd = r->p.control, .events = POLLIN},
	};

	if (poll(pfd, r->p.control >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR) {
		log_error("poll: %s", errno_text(errno));
		return -1;
	}
	if (r->p.control >= 0 && (pfd[1].revents & (POLLIN | POLLHUP)))
		supervisor_dispatch_listener(S, &r->p);
	return 0;
}

/* SIGTERM or SIGINT: stop the pair, SIGKILL by STOP_WAIT_MS. */
static void begin_stopping(struct run *r, int signo)
{
	if (r->stopping)
		return;
	log_info("SIG%s: stopping", sigabbrev_np(signo));
	r->stopping = true;
	r->stop_deadline = now_ms() + STOP_WAIT_MS;
	/* The listener ends every job, then the launcher
	 * sees its channel close and ends too. */
	if (r->p.listener)
		kill(r->p.listener, SIGTERM);
	else if (r->p.launcher)
		kill(r->p.launcher, SIGTERM);
}

/* SIGCHLD only wakes the loop (reap follows); SIGHUP reloads. */
static void read_signals(struct supervisor *S, struct run *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			break;
		case SIGHUP:
			log_info("SIGHUP: reading %s again", S->cfg->file);
			reload(S, &r->p);
			break;
		default:
			begin_stopping(r, (int)si.ssi_signo);
		}
	}
}

/* The pair ended on its own: start it again, at once if it ran long
 * enough, else after a backoff that grows with each quick end. */
static void schedule_restart(struct run *r)
{
	if (r->stopping || !r->p.started_ms || r->p.listener || r->p.launcher)
		return;
	uint64_t ran = now_ms() - r->p.started_ms;
	r->quick = ran >= STABLE_MS ? 0 : r->quick + 1;
	unsigned wait = r->quick ? backoff_ms(r->quick) : 0;
	r->restart_at = now_ms() + wait;
	r->p.started_ms = 0;
	log_warn("restarting the listener and the launcher in %u ms", wait);
}

int supervisor_run(struct supervisor *S)
{
	struct run r = {
		.p = {.note = -1, .control = -1},
		.socket_check_at = now_ms() + SOCKET_CHECK_MS,
	};
	char err[256];

	if (sandbox_supervisor(err, sizeof(err)) < 0) {
		log_error("%s", err);
		return 1;
	}
	_cleanup_close_ int sigfd = open_signalfd();
	if (sigfd < 0)
		return 1;
	r.sigfd = sigfd;

	for (;;) {
		uint64_t now = now_ms();

		if (r.stopping && !r.p.listener && !r.p.launcher)
			break;
		if (run_deadlines(S, &r, now))
			continue;
		if (wait_for_events(S, &r, poll_timeout(&r, now)) < 0) {
			kill_pair(&r.p, SIGKILL);
			return 1;
		}
		read_signals(S, &r);
		reap(&r.p, r.stopping);
		schedule_restart(&r);
	}
	close_fd(&r.p.note);
	close_fd(&r.p.control);
	free(r.p.control_reader.payload);
	sock_close(S->sock);
	log_info("stopped");
	return r.code;
}
