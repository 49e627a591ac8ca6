/*
 * The listener process (listener.h): its start, set-up and sandbox,
 * signals, the supervisor's channel (configs, sockets, reload answers),
 * the launcher's replies routed to the jobs and sessions, and the main
 * loop. Connections are conn.c's, jobs jobs/', sessions sessions/',
 * orders to the launcher order.c's.
 *
 * Process: the listener.
 */
#include "listener.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "conn.h"
#include "control.h"
#include "event.h"
#include "frame.h"
#include "jobs/job.h"
#include "log.h"
#include "order.h"
#include "sandbox.h"
#include "sessions/session.h"
#include "status.h"
#include "util.h"

/* The listener process's one context. */
struct listener {
	struct config *cfg;
	struct event_loop loop;
	struct listen_socket *sock;
	int sigfd;
	struct event_source sig_ev;

	/* The supervisor's channel (control.h): new configs and sockets. */
	int control;
	struct event_source control_ev;
	struct frame_reader control_reader;
	int control_fds[FRAME_MAX_FDS];
	bool cfg_owned;         /* cfg came from a reload: ours to free */

	/* The launcher's channel: orders out, replies in. */
	struct order_link orders;
	struct frame_reader launcher_reader;
	int launcher_fds[FRAME_MAX_FDS]; /* SpillOpened brings one, PtyOpened two */
	char audit_log[CONFIG_PATH_MAX]; /* the launcher's (AuditLogAt); "": none */
	struct daemon_facts facts;      /* for a client's Status */

	struct conns conns;
	struct jobs jobs;
	struct sessions sessions;
	int exit_code;
};

/* ------------------------------------------------------------------ */
/* The launcher channel                                                */

/* The launcher's part of a Status answer: answer every client that
 * waits for one. */
static void answer_status(struct listener *L, const Toolrun__Launcher__LauncherState *st)
{
	struct status_reply *out = malloc(sizeof(*out));
	const struct status_sources src = {
		.facts = &L->facts,
		.cfg = L->cfg,
		.socket = L->sock->path,
		.served = L->conns.allowed,
		.nserved = L->conns.nallowed,
		.running_jobs = L->jobs.running,
		.open_sessions = sessions_open(&L->sessions),
		.connections = L->conns.n,
		.served_requests = L->jobs.served,
		.uptime_s = (monotonic_us() - L->conns.started_us) / 1000000,
	};

	if (!out) {
		log_error("out of memory: no Status answered");
		return;
	}
	status_build(out, &src, st);
	conns_answer_status(&L->conns, &out->r);
	free(out);
}

static void ask_status(void *owner)
{
	struct listener *L = owner;

	order_query_state(&L->orders);
}

/* One message from the launcher; fds: the files SpillOpened (one) or
 * PtyOpened (two) carry, or -1 (ours to close when nobody takes them). */
static void listener_dispatch_launcher(struct listener *L,
				       const Toolrun__Launcher__FromLauncher *m, int fd, int fd2)
{
	switch (m->msg_case) {
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPAWNED:
		if (!sessions_on_spawned(&L->sessions, m->spawned->job, m->spawned->pid,
					 m->spawned->error, m->spawned->step))
			jobs_on_spawned(&L->jobs, m->spawned->job, m->spawned->pid,
					m->spawned->error, m->spawned->step,
					m->spawned->command_job);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_KILLED:
		if (!sessions_on_killed(&L->sessions, m->killed->job, m->killed->processes,
					m->killed->leader_ignores_sigint))
			jobs_on_killed(&L->jobs, m->killed->job, m->killed->processes);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_EXITED:
		if (!sessions_on_exited(&L->sessions, m->exited->job, m->exited->wait_status))
			jobs_on_exited(&L->jobs, m->exited->job, m->exited->wait_status,
				       m->exited->user_us, m->exited->system_us,
				       m->exited->timed_out);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_PTY_OPENED:
		sessions_on_pty(&L->sessions, m->pty_opened->job,
				fd2 >= 0 ? m->pty_opened->error : (m->pty_opened->error ?: EPROTO),
				fd, fd2);
		fd = fd2 = -1;
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_WAITING_STATE:
		sessions_on_waiting(&L->sessions, m->waiting_state->job, m->waiting_state->waiting,
				    m->waiting_state->unknown);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_INPUT_STATE:
		jobs_on_input_state(&L->jobs, m->input_state->job,
				    m->input_state->producer_running);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPILL_OPENED:
		if (m->spill_opened->error && fd >= 0)
			close_fd(&fd);
		jobs_on_spill_opened(&L->jobs, m->spill_opened->job, m->spill_opened->stream,
				     fd, m->spill_opened->path, m->spill_opened->reason);
		fd = -1;
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_AUDIT_LOG_AT:
		snprintf(L->audit_log, sizeof(L->audit_log), "%s", m->audit_log_at->path);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_LAUNCHER_STATE:
		answer_status(L, m->launcher_state);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG__NOT_SET:
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
}

static void flush_orders(void *orders)
{
	order_flush_queued(orders);
}

static void on_launcher(struct event_loop *loop, uint32_t events, void *data)
{
	struct listener *L = data;

	if (events & EPOLLOUT)
		order_flush(&L->orders);
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		int r = frame_reader_read(&L->launcher_reader, L->orders.launcher.fd);
		if (r == FRAME_READ_AGAIN)
			return;
		if (r != FRAME_READ_READY) {
			log_error("the launcher is gone (%s); stopping",
				  r == FRAME_READ_EOF ? "end of channel" : errno_text(r));
			L->exit_code = 1;
			event_loop_stop(loop);
			return;
		}
		Toolrun__Launcher__FromLauncher *m = toolrun__launcher__from_launcher__unpack(
			NULL, L->launcher_reader.h.length, L->launcher_reader.payload);
		/* SpillOpened and PtyOpened carry files: ours before the
		 * reader moves on (it closes what is left). */
		int fd = -1, fd2 = -1;
		bool carries = m && (m->msg_case == TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPILL_OPENED ||
				     m->msg_case == TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_PTY_OPENED);
		if (carries && L->launcher_reader.nfds >= 1) {
			fd = L->launcher_reader.fds[0];
			fd2 = L->launcher_reader.nfds == 2 ? L->launcher_reader.fds[1] : -1;
			L->launcher_reader.nfds = 0;
		}
		frame_reader_next(&L->launcher_reader);
		if (!m) {
			log_error("undecodable message from the launcher; stopping");
			L->exit_code = 1;
			event_loop_stop(loop);
			return;
		}
		listener_dispatch_launcher(L, m, fd, fd2);
		toolrun__launcher__from_launcher__free_unpacked(m, NULL);
	}
}

static void read_launcher(void *owner)
{
	struct listener *L = owner;

	order_take_in(&L->orders);
}

/* ------------------------------------------------------------------ */
/* The supervisor's channel                                            */

static void use_config(struct listener *L, struct config *cfg)
{
	if (L->cfg_owned)
		free(L->cfg);
	/* Jobs copied what they need from the old one when they started. */
	L->cfg = cfg;
	L->cfg_owned = true;
	L->jobs.cfg = cfg;
	L->jobs.cfg_read_at = time(NULL);
	log_info("serving with the config read again from %s (%u tools, truncate=%s)",
		 cfg->file, cfg->ntools, cfg->truncate == TRUNCATE_SINK ? "sink" : "always");
}

static void use_socket(struct listener *L, int fd, const char *path)
{
	conns_unlisten(&L->conns);
	close(L->sock->fd);
	L->sock->fd = fd;
	snprintf(L->sock->path, sizeof(L->sock->path), "%s", path);
	if (conns_listen(&L->conns) < 0) {
		log_error("epoll: %s", errno_text(errno));
		L->exit_code = 1;
		event_loop_stop(&L->loop);
		return;
	}
	log_info("accepting on the new socket %s", path);
}

/* One message from the supervisor. Returns false if it is malformed. */
static bool listener_dispatch_supervisor(struct listener *L, const uint8_t *payload,
					 size_t len, int *fds, unsigned nfds)
{
	Toolrun__Control__ToListener *m =
		toolrun__control__to_listener__unpack(NULL, len, payload);
	bool ok = m != NULL;

	if (!m)
		return false;
	switch (m->msg_case) {
	case TOOLRUN__CONTROL__TO_LISTENER__MSG_CONFIG: {
		struct config *cfg = control_config(m->config);
		ok = cfg && nfds == 0;
		if (ok) {
			use_config(L, cfg);
			conns_answer_reloads(&L->conns, true, m->config->summary);
		} else {
			free(cfg);
		}
		break;
	}
	case TOOLRUN__CONTROL__TO_LISTENER__MSG_SOCKET:
		ok = nfds == 1;
		if (ok) {
			use_socket(L, fds[0], m->socket->path);
			fds[0] = -1; /* ours now */
		}
		break;
	case TOOLRUN__CONTROL__TO_LISTENER__MSG_RELOAD_REFUSED:
		conns_answer_reloads(&L->conns, false, m->reload_refused->message);
		break;
	case TOOLRUN__CONTROL__TO_LISTENER__MSG__NOT_SET:
	default:
		ok = false;
	}
	toolrun__control__to_listener__free_unpacked(m, NULL);
	return ok;
}

static void on_supervisor(struct event_loop *loop, uint32_t events, void *data)
{
	struct listener *L = data;
	(void)events;

	for (;;) {
		int r = frame_reader_read(&L->control_reader, L->control);
		if (r == FRAME_READ_AGAIN)
			return;
		if (r != FRAME_READ_READY) {
			log_error("the supervisor's channel failed (%s); stopping",
				  r == FRAME_READ_EOF ? "end of channel" : errno_text(r));
			L->exit_code = 1;
			event_loop_stop(loop);
			return;
		}
		bool ok = listener_dispatch_supervisor(L, L->control_reader.payload,
						       L->control_reader.h.length,
						       L->control_reader.fds,
						       L->control_reader.nfds);
		frame_reader_next(&L->control_reader);
		if (!ok) {
			log_error("malformed message from the supervisor; stopping");
			L->exit_code = 1;
			event_loop_stop(loop);
			return;
		}
	}
}

/* ------------------------------------------------------------------ */

static void on_signal(struct event_loop *loop, uint32_t events, void *data)
{
	struct listener *L = data;
	struct signalfd_siginfo si;
	(void)events;

	while (read(L->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			continue; /* the supervisor's: it reads the config again */
		log_info("%s: stopping", sigabbrev_np((int)si.ssi_signo));
		event_loop_stop(loop);
	}
}

/* A client's Reload: the supervisor reads the file (we cannot) and
 * answers on its channel (listener_dispatch_supervisor). */
static int ask_reload(void *owner)
{
	struct listener *L = owner;

	return control_send_reload(L->control);
}

/* The contexts of connections, jobs and orders, bound to one another. */
static int listener_contexts(struct listener *L)
{
	L->orders.loop = &L->loop;
	L->orders.ev.fd = -1;
	if (jobs_init(&L->jobs, &L->loop, &L->orders, &L->conns.queued) < 0) {
		log_error("out of memory");
		return -ENOMEM;
	}
	L->jobs.cfg = L->cfg;
	L->jobs.cfg_read_at = time(NULL);
	sessions_init(&L->sessions, &L->jobs, L->conns.allowed, L->conns.nallowed);
	conns_init(&L->conns, &L->loop, &L->jobs, &L->sessions, L->sock);
	L->conns.audit_log = L->audit_log;
	L->conns.ask_reload = ask_reload;
	L->conns.ask_status = ask_status;
	L->conns.read_launcher = read_launcher;
	L->conns.owner = L;
	return 0;
}

/* Everything that needs system calls the sandbox forbids. */
static int listener_init(struct listener *L)
{
	sigset_t mask;
	int r;

	if (listener_contexts(L) < 0)
		return -ENOMEM;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	L->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (L->sigfd < 0 || (r = event_loop_init(&L->loop)) < 0) {
		log_error("cannot set up the event loop: %s", errno_text(errno));
		return -errno;
	}
	L->launcher_reader = (struct frame_reader){
		.max_payload = 64 * 1024,
		.grow = frame_grow_heap,
		.fds = L->launcher_fds,
	};
	L->control_reader = control_reader(L->control_fds);
	L->sig_ev.fd = L->control_ev.fd = -1;
	if (conns_listen(&L->conns) < 0 ||
	    event_add(&L->loop, &L->sig_ev, L->sigfd, EPOLLIN, on_signal, L) < 0 ||
	    event_add(&L->loop, &L->orders.ev, L->orders.launcher.fd, EPOLLIN, on_launcher,
		      L) < 0 ||
	    event_add(&L->loop, &L->control_ev, L->control, EPOLLIN, on_supervisor, L) < 0) {
		log_error("epoll: %s", errno_text(errno));
		return -errno;
	}
	event_loop_before_sleep(&L->loop, flush_orders, &L->orders);
	return 0;
}

/* Stop: every program ended, then the launcher, which sees its channel
 * close. The supervisor removes the socket. */
static void listener_stop(struct listener *L)
{
	sessions_stop_all(&L->sessions);
	jobs_stop_all(&L->jobs);
	conns_drop_all(&L->conns);
	event_loop_close(&L->loop);
	order_close(&L->orders);
	frame_reader_drop_fds(&L->launcher_reader);
	free(L->launcher_reader.payload);
	frame_reader_drop_fds(&L->control_reader);
	free(L->control_reader.payload);
	close_fd(&L->control);
	if (L->cfg_owned)
		free(L->cfg);
	jobs_free(&L->jobs);
	close_fd(&L->sigfd);
	if (L->orders.broken)
		L->exit_code = 1;
}

static int listener_main(struct listener *L, int death_note)
{
	char err[256];

	if (listener_init(L) < 0)
		return 1;
	/* It parses every byte a client sends: it holds no capability, not
	 * even the daemon's permitted ones (caps.h). */
	int r = caps_clear();
	if (r < 0) {
		log_error("cannot drop the listener's capabilities: %s", errno_text(-r));
		return 1;
	}
	if (sandbox_listener(death_note, err, sizeof(err)) < 0) {
		log_error("%s", err);
		return 1;
	}
	log_info("serving %s (%u tools, truncate=%s)", L->sock->path, L->cfg->ntools,
		 L->cfg->truncate == TRUNCATE_SINK ? "sink" : "always");
	r = event_loop_run(&L->loop);
	if (r < 0) {
		log_error("event loop: %s", errno_text(r));
		L->exit_code = 1;
	}
	listener_stop(L);
	return L->exit_code;
}

/* The listener's process: it never returns. */
static NORETURN void listener_process(const struct listener_args *a, pid_t parent)
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
	L->cfg = a->cfg;
	L->sock = a->sock;
	L->orders.launcher = a->link;
	L->control = a->control;
	memcpy(L->conns.allowed, a->allowed, a->nallowed * sizeof(a->allowed[0]));
	L->conns.nallowed = a->nallowed;
	L->conns.self_uid = a->self_uid;
	L->conns.can_switch = a->can_switch;
	L->facts = (struct daemon_facts){
		.supervisor = parent,
		.listener = getpid(),
		.launcher = a->link.pid,
		.uid = a->self_uid,
		.gid = a->self_gid,
		.full_identity = a->can_switch,
		.identity_reason = a->identity_reason,
		.user_note = a->user_note,
		.socket_fallback = a->socket_fallback,
	};
	int code = listener_main(L, a->death_note);
	free(L);
	/* The raw call, not _exit(): a sanitizer build hooks _exit() to run
	 * a leak check, which needs clone and ptrace, and the listener's
	 * filter kills it for those. */
	syscall(SYS_exit_group, code);
	__builtin_unreachable();
}

pid_t listener_start(const struct listener_args *a, const int *close_in_child)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		for (const int *fd = close_in_child; *fd >= 0; fd++)
			close(*fd);
		listener_process(a, parent);
	}
	return pid;
}
