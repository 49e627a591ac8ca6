#include "listener.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "control.h"
#include "log.h"
#include "policy.h"
#include "outq.h"
#include "reply.h"
#include "sandbox.h"
#include "util.h"

/* Accepting stops this long when the process runs out of fds. */
#define ACCEPT_PAUSE_MS 100

/* ------------------------------------------------------------------ */
/* Connections                                                         */

static void conn_free(void *p)
{
	struct conn *c = p;

	outq_clear(&c->out);
	frame_reader_drop_fds(&c->reader);
	free(c->reader.payload);
	close_fd(&c->fd);
	free(c->groups);
	free(c);
}

/* The connection no longer counts against its uid's limit. */
static void conn_release_slot(struct conn *c)
{
	if (c->slot >= 0) {
		c->L->uid_conns[c->slot]--;
		c->slot = -1;
	}
}

/* What a reader's buffer counts against the budget: the first small
 * frame's worth is free, so that clients flooding the daemon with large
 * frames cannot keep others from saying Hello. The connection limit
 * bounds that part. */
static size_t charged(size_t cap)
{
	return cap > MAX_SMALL_FRAME ? cap : 0;
}

/* Give back a finished frame's fds and, if large, its memory. */
static void conn_reader_next(struct conn *c, bool keep_memory)
{
	struct listener *L = c->L;

	L->fds_held -= c->reader.nfds;
	frame_reader_next(&c->reader);
	if (!keep_memory || c->reader.payload_cap > 64 * 1024) {
		L->buffered -= charged(c->reader.payload_cap);
		free(c->reader.payload);
		c->reader.payload = NULL;
		c->reader.payload_cap = 0;
	}
}

/* The grow callback of a client's frame reader: the heap, within the
 * listener's budget for frames still arriving. */
static bool conn_grow(struct frame_reader *r, size_t need)
{
	struct conn *c = r->owner;
	struct listener *L = c->L;
	size_t cap = r->payload_cap ? r->payload_cap : MAX_SMALL_FRAME;

	while (cap < need)
		cap *= 2;
	if (L->buffered - charged(r->payload_cap) + charged(cap) > MAX_BUFFERED_BYTES)
		return false;
	uint8_t *p = realloc(r->payload, cap);
	if (!p)
		return false;
	L->buffered = L->buffered - charged(r->payload_cap) + charged(cap);
	r->payload = p;
	r->payload_cap = cap;
	return true;
}

/* Tear a connection down now; its memory goes after this batch. */
static void conn_drop(struct conn *c)
{
	struct listener *L = c->L;

	if (c->dead)
		return;
	c->dead = true;
	if (c->job) {
		struct job *j = c->job;
		c->job = NULL;
		job_client_gone(j);
	}
	conn_release_slot(c);
	conn_reader_next(c, false);
	event_del(&L->loop, &c->ev);
	timer_cancel(&L->loop, &c->deadline);
	if (c->prev)
		c->prev->next = c->next;
	else
		L->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	L->nconns--;
	if (event_release(&L->loop, c, conn_free) < 0) {
		/* No memory even to defer: leak the struct, keep the fd sane. */
		close_fd(&c->fd);
	}
}

bool conn_flush(struct conn *c)
{
	struct listener *L = c->L;

	if (c->dead)
		return false;
	int r = outq_flush(&c->out, c->fd);
	if (r < 0 && r != -EAGAIN) {
		log_debug("client pid %d: write: %s", (int)c->pid, errno_text(r));
		conn_drop(c);
		return false;
	}
	if (r == 0 && c->state == CONN_CLOSING) {
		conn_drop(c);
		return false;
	}
	uint32_t mask = c->state == CONN_CLOSING ? 0 : EPOLLIN;
	if (r == -EAGAIN)
		mask |= EPOLLOUT;
	event_modify(&L->loop, &c->ev, mask);
	if (c->job && c->out.bytes < OUTQ_LOW)
		output_resume(c->job);
	return true;
}

void conn_close_after_flush(struct conn *c)
{
	c->state = CONN_CLOSING;
	conn_release_slot(c);
	timer_cancel(&c->L->loop, &c->deadline);
	conn_flush(c);
}

static void on_refusal_read(struct event_loop *loop, void *data)
{
	(void)loop;
	conn_drop(data);
}

void conn_refuse(struct conn *c, Toolrun__ErrorCode code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("client pid %d uid %u: %s", (int)c->pid, (unsigned)c->uid, msg);
	if (c->job) {
		struct job *j = c->job;
		c->job = NULL;
		job_client_gone(j);
	}
	reply_error(&c->out, code, msg);
	conn_close_after_flush(c);
	/* A client that does not read why it was refused is not waited for. */
	if (!c->dead)
		timer_arm(&c->L->loop, &c->deadline, REFUSAL_LINGER_MS, on_refusal_read, c);
}

static void on_request_deadline(struct event_loop *loop, void *data)
{
	struct conn *c = data;
	(void)loop;
	conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_TIMEOUT,
		    "no complete request within %d s", REQUEST_DEADLINE_MS / 1000);
}

static void on_frame_deadline(struct event_loop *loop, void *data)
{
	struct conn *c = data;
	(void)loop;
	conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_TIMEOUT,
		    "a frame begun %d s ago is still incomplete", FRAME_DEADLINE_MS / 1000);
}

static void send_pong(struct conn *c)
{
	struct listener *L = c->L;
	Toolrun__Pong p = TOOLRUN__PONG__INIT;

	p.software = (char *)"toolrund " TOOLRUN_VERSION;
	p.connections = L->nconns;
	p.running = L->running;
	p.served = L->served;
	p.uptime_s = (monotonic_us() - L->started_us) / 1000000;
	p.audit_log = L->audit_log;
	reply_pong(&c->out, &p);
	conn_close_after_flush(c);
}

/* The supervisor reads the file (we cannot) and answers on the control
 * channel: see listener_dispatch_supervisor. */
static void ask_reload(struct conn *c)
{
	int r = control_send_reload(c->L->control);
	if (r < 0) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_INTERNAL,
			    "cannot reach toolrund's supervisor: %s", errno_text(r));
		return;
	}
	c->state = CONN_RELOADING;
	c->reader.max_payload = MAX_SMALL_FRAME;
}

/* Answer every client waiting for a reload. */
static void answer_reloads(struct listener *L, bool ok, const char *message)
{
	for (struct conn *c = L->conns; c; c = c->next) {
		if (c->dead || c->state != CONN_RELOADING)
			continue;
		reply_reloaded(&c->out, ok, message);
		conn_close_after_flush(c);
	}
}

static void conn_dispatch_client(struct conn *c, const Toolrun__ClientMessage *m)
{
	if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST && c->reader.nfds) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_FRAME,
			    "only a Request may carry file descriptors");
		return;
	}
	switch (c->state) {
	case CONN_HELLO:
		if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_HELLO) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
				    "the first message must be Hello");
			return;
		}
		if (m->hello->protocol_version != TOOLRUN__VERSION__VERSION_1) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNSUPPORTED_VERSION,
				    "protocol version %u is not supported (this daemon speaks %d)",
				    m->hello->protocol_version,
				    TOOLRUN__VERSION__VERSION_1);
			return;
		}
		reply_hello(&c->out, TOOLRUN__VERSION__VERSION_1);
		c->state = CONN_REQUEST;
		c->reader.max_payload = MAX_REQUEST_FRAME;
		conn_flush(c);
		return;
	case CONN_REQUEST:
		if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_PING) {
			send_pong(c);
			return;
		}
		if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_RELOAD) {
			ask_reload(c);
			return;
		}
		if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
				    "expected Request, Ping or Reload after Hello");
			return;
		}
		timer_cancel(&c->L->loop, &c->deadline);
		c->state = CONN_RUNNING;
		c->reader.max_payload = MAX_SMALL_FRAME;
		{
			unsigned nfds = c->reader.nfds;
			c->reader.nfds = 0; /* job_start owns them now */
			c->L->fds_held -= nfds;
			job_start(c, m->request, c->fds, nfds);
		}
		return;
	case CONN_RUNNING:
		if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_READER_GONE) {
			Toolrun__Stream st = m->reader_gone->stream;
			if (st != TOOLRUN__STREAM__STREAM_STDOUT &&
			    st != TOOLRUN__STREAM__STREAM_STDERR) {
				conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE,
					    "ReaderGone names no stream (%d)", (int)st);
				return;
			}
			if (c->job)
				job_reader_gone(c->job, st);
			return;
		}
		if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_SIGNAL) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
				    "only Signal or ReaderGone may follow a Request");
			return;
		}
		if (m->signal->signo < 1 || m->signal->signo >= NSIG) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE,
				    "signal number %d is out of range", m->signal->signo);
			return;
		}
		if (c->job)
			job_signal(c->job, m->signal->signo);
		return;
	case CONN_RELOADING:
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
			    "nothing may follow Reload");
		return;
	case CONN_CLOSING:
	default:
		return;
	}
}

/* After the Request, a frame begun must end in time; before it, the
 * request deadline covers everything. */
static void conn_watch_partial_frame(struct conn *c)
{
	if (c->dead || c->state != CONN_RUNNING)
		return;
	bool partial = c->reader.header_have > 0;
	if (partial && !c->deadline.armed)
		timer_arm(&c->L->loop, &c->deadline, FRAME_DEADLINE_MS, on_frame_deadline, c);
	else if (!partial && c->deadline.armed)
		timer_cancel(&c->L->loop, &c->deadline);
}

/* Refuse the frame being read, for the reason r gives. */
static void conn_read_failed(struct conn *c, int r)
{
	switch (r) {
	case FRAME_READ_EOF:
		conn_drop(c);
		return;
	case -EMSGSIZE:
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_FRAME_TOO_LARGE,
			    "frame of %u bytes exceeds the maximum of %u %s",
			    c->reader.h.length, c->reader.max_payload,
			    c->state == CONN_HELLO	  ? "for Hello"
			    : c->state == CONN_REQUEST ? "for a Request"
						   : "after the Request");
		return;
	case -EPROTO:
		if (c->reader.too_many_fds && !c->reader.have_header &&
		    c->reader.header_have == FRAME_HEADER_SIZE) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_FRAME,
				    "frame with %u file descriptors exceeds the maximum of %u",
				    c->reader.h.nfds, FRAME_MAX_FDS);
			return;
		}
		if (c->reader.too_many_fds) {
			/* They came before the header that counts them. */
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_FRAME,
				    "more than %u file descriptors came with one frame (the maximum)",
				    FRAME_MAX_FDS);
			return;
		}
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_FRAME,
			    "malformed frame (bad header, fds not matching its count, or cut short)");
		return;
	case -ENOMEM:
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			    "no room for a frame of %u bytes: %zu bytes of frames are "
			    "arriving already (the limit is %u)",
			    c->reader.h.length, c->L->buffered, MAX_BUFFERED_BYTES);
		return;
	default:
		log_debug("client pid %d: read: %s", (int)c->pid, errno_text(r));
		conn_drop(c);
		return;
	}
}

static void conn_read(struct conn *c)
{
	struct listener *L = c->L;

	while (!c->dead && c->state != CONN_CLOSING) {
		unsigned nfds_before = c->reader.nfds;
		int r = frame_reader_read(&c->reader, c->fd);
		L->fds_held += c->reader.nfds - nfds_before;
		if (L->fds_held > L->fd_budget) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY,
				    "too many file descriptors in flight (%u; the limit is %u)",
				    L->fds_held, L->fd_budget);
			return;
		}
		if (r == FRAME_READ_AGAIN)
			break;
		if (r != FRAME_READ_READY) {
			conn_read_failed(c, r);
			return;
		}
		char why[192];
		struct arena a;
		Toolrun__ClientMessage *m = policy_decode(c->reader.payload, c->reader.h.length,
							  &a, why, sizeof(why));
		if (!m) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE, "%s", why);
			conn_reader_next(c, true);
			return;
		}
		conn_dispatch_client(c, m);
		arena_release(&a);
		if (!c->dead)
			conn_reader_next(c, true);
	}
	conn_watch_partial_frame(c);
}

static void on_conn(struct event_loop *loop, uint32_t events, void *data)
{
	struct conn *c = data;
	(void)loop;

	if ((events & EPOLLOUT) && !conn_flush(c))
		return;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (c->state == CONN_CLOSING) {
			/* Only the last messages are owed; a gone peer ends it. */
			if (events & (EPOLLHUP | EPOLLERR))
				conn_drop(c);
			return;
		}
		conn_read(c);
	}
}

/* The uid's connection that has waited longest for its Request. */
static struct conn *oldest_waiting(struct listener *L, int slot)
{
	struct conn *found = NULL;

	for (struct conn *c = L->conns; c; c = c->next)
		if (c->slot == slot && (c->state == CONN_HELLO || c->state == CONN_REQUEST))
			found = c;
	return found;
}

static void accept_resume(struct event_loop *loop, void *data)
{
	struct listener *L = data;
	event_modify(loop, &L->listen_ev, EPOLLIN);
}

/*
 * Admit a new connection, or say why not. A uid at its limit makes room
 * by closing its own connection that has waited longest for a Request:
 * a client that floods the socket pushes out only its own idle
 * connections, and a uid's running jobs are never cut for a newcomer.
 */
static void conn_admit(struct listener *L, struct conn *c)
{
	if (L->nconns > MAX_CONNECTIONS) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			    "too many connections (the limit is %d)", MAX_CONNECTIONS);
		return;
	}
	int slot = uid_index(L->allowed, L->nallowed, c->uid);
	if (slot < 0) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED,
			    "uid %u is not served by this toolrund (it serves uid %u%s)",
			    (unsigned)c->uid, (unsigned)L->allowed[0],
			    L->nallowed > 1 ? " and others" : "");
		return;
	}
	/* Without the capabilities to switch, a program would run as the
	 * daemon's uid: another identity than its caller's. */
	if (!L->can_switch && c->uid != L->self_uid && c->uid != 0) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED,
			    "toolrund runs as uid %u and cannot run programs as uid %u "
			    "(it lacks CAP_SETUID, CAP_SETGID, CAP_KILL or CAP_CHOWN)",
			    (unsigned)L->self_uid, (unsigned)c->uid);
		return;
	}
	if (L->uid_conns[slot] >= MAX_CONNECTIONS_PER_UID) {
		struct conn *old = oldest_waiting(L, slot);
		if (!old) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY,
				    "uid %u has %d connections running (the limit per uid)",
				    (unsigned)c->uid, MAX_CONNECTIONS_PER_UID);
			return;
		}
		conn_refuse(old, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			    "uid %u has %d connections open (the limit per uid); this one, "
			    "waiting longest for its request, is closed",
			    (unsigned)c->uid, MAX_CONNECTIONS_PER_UID);
	}
	c->slot = slot;
	L->uid_conns[slot]++;
	timer_arm(&L->loop, &c->deadline, REQUEST_DEADLINE_MS, on_request_deadline, c);
}

/* Who is at the other end: uid, gid and pid as it connected, and its
 * supplementary groups. A peer that cannot be told is uid -1, which no
 * daemon serves. Returns 0, or -ENOMEM. */
static int peer_identity(struct conn *c, int fd)
{
	struct ucred cred = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
	socklen_t len = sizeof(cred);
	gid_t some[64], *groups = some;

	getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	/* Most peers have a few groups: one call. More: the kernel says
	 * how much room they need. */
	len = sizeof(some);
	int r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, some, &len);
	if (r < 0 && errno == ERANGE) {
		groups = malloc(len);
		if (!groups)
			return -ENOMEM;
		r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	}
	if (r == 0 && len >= sizeof(gid_t)) {
		c->ngroups = len / sizeof(gid_t);
		c->groups = groups == some ? malloc(len) : groups;
		if (!c->groups)
			return -ENOMEM;
		if (groups == some)
			memcpy(c->groups, some, len);
		return 0;
	}
	if (groups != some)
		free(groups);
	/* Without them a program would get groups its caller may not have:
	 * a peer that cannot be told is uid -1, which no daemon serves. */
	if (r < 0)
		c->uid = (uid_t)-1;
	return 0;
}

static void on_accept(struct event_loop *loop, uint32_t events, void *data)
{
	struct listener *L = data;
	(void)events;

	for (int i = 0; i < 64; i++) {
		int fd = accept4(L->sock->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return;
			log_warn("accept on %s: %s; pausing for %d ms", L->sock->path,
				 errno_text(errno), ACCEPT_PAUSE_MS);
			event_modify(loop, &L->listen_ev, 0);
			timer_arm(loop, &L->accept_pause, ACCEPT_PAUSE_MS, accept_resume, L);
			return;
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c || peer_identity(c, fd) < 0) {
			log_error("out of memory for a connection");
			if (c)
				free(c->groups);
			free(c);
			close(fd);
			continue;
		}
		c->L = L;
		c->fd = fd;
		c->slot = -1;
		c->ev.fd = -1;
		c->out.total = &L->queued;
		c->reader = (struct frame_reader){
			.max_payload = MAX_SMALL_FRAME,
			.grow = conn_grow,
			.owner = c,
			.fds = c->fds,
		};
		if (event_add(loop, &c->ev, fd, EPOLLIN, on_conn, c) < 0) {
			log_error("epoll: %s", errno_text(errno));
			conn_free(c);
			continue;
		}
		c->next = L->conns;
		if (L->conns)
			L->conns->prev = c;
		L->conns = c;
		L->nconns++;
		conn_admit(L, c);
	}
}

/* ------------------------------------------------------------------ */
/* The launcher channel                                                */

static void launcher_flush(struct listener *L)
{
	int r = outq_flush(&L->launcher_out, L->launcher.fd);
	if (r < 0 && r != -EAGAIN) {
		log_error("cannot write to the launcher: %s", errno_text(r));
		L->exit_code = 1;
		event_loop_stop(&L->loop);
		return;
	}
	event_modify(&L->loop, &L->launcher_ev, EPOLLIN | (r == -EAGAIN ? EPOLLOUT : 0));
}

void launcher_send(struct listener *L, Toolrun__Launcher__ToLauncher *msg,
		   const int *fds, unsigned nfds)
{
	if (outq_push(&L->launcher_out, &msg->base, fds, nfds) < 0) {
		log_error("out of memory for an order to the launcher");
		L->exit_code = 1;
		event_loop_stop(&L->loop);
		return;
	}
	launcher_flush(L);
}

/* One message from the launcher; fd: the file SpillOpened carries, or -1
 * (ours to close when nobody takes it). */
static void listener_dispatch_launcher(struct listener *L,
				       const Toolrun__Launcher__FromLauncher *m, int fd)
{
	switch (m->msg_case) {
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPAWNED:
		job_on_spawned(L, m->spawned->job, m->spawned->pid, m->spawned->error,
			       m->spawned->step);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_EXITED:
		job_on_exited(L, m->exited->job, m->exited->wait_status);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_INPUT_STATE:
		job_on_input_state(L, m->input_state->job, m->input_state->producer_running);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPILL_OPENED:
		if (m->spill_opened->error && fd >= 0)
			close_fd(&fd);
		job_on_spill_opened(L, m->spill_opened->job, m->spill_opened->stream, fd,
				    m->spill_opened->path, m->spill_opened->reason);
		fd = -1;
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_AUDIT_LOG_AT:
		snprintf(L->audit_log, sizeof(L->audit_log), "%s", m->audit_log_at->path);
		break;
	case TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG__NOT_SET:
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
}

static void on_launcher(struct event_loop *loop, uint32_t events, void *data)
{
	struct listener *L = data;

	if (events & EPOLLOUT)
		launcher_flush(L);
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		int r = frame_reader_read(&L->launcher_reader, L->launcher.fd);
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
		/* SpillOpened carries the file: ours before the reader moves on
		 * (it closes what is left). */
		int fd = -1;
		if (m && m->msg_case == TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPILL_OPENED &&
		    L->launcher_reader.nfds == 1) {
			fd = L->launcher_reader.fds[0];
			L->launcher_reader.nfds = 0;
		}
		frame_reader_next(&L->launcher_reader);
		if (!m) {
			log_error("undecodable message from the launcher; stopping");
			L->exit_code = 1;
			event_loop_stop(loop);
			return;
		}
		listener_dispatch_launcher(L, m, fd);
		toolrun__launcher__from_launcher__free_unpacked(m, NULL);
	}
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
	L->cfg_read_at = time(NULL);
	log_info("serving with the config read again from %s (%u tools, truncate=%s)",
		 cfg->file, cfg->ntools, cfg->truncate == TRUNCATE_SINK ? "sink" : "always");
}

static void use_socket(struct listener *L, int fd, const char *path)
{
	event_del(&L->loop, &L->listen_ev);
	close(L->sock->fd);
	L->sock->fd = fd;
	snprintf(L->sock->path, sizeof(L->sock->path), "%s", path);
	if (event_add(&L->loop, &L->listen_ev, fd, EPOLLIN, on_accept, L) < 0) {
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
			answer_reloads(L, true, m->config->summary);
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
		answer_reloads(L, false, m->reload_refused->message);
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

/* Everything that needs system calls the sandbox forbids. */
static int listener_init(struct listener *L)
{
	sigset_t mask;
	int r;

	L->started_us = monotonic_us();
	L->cfg_read_at = time(NULL);
	/* Half the fds for those arriving with requests: the rest stay for
	 * connections, pipes and the launcher's channel. */
	struct rlimit nofile;
	L->fd_budget = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
			       ? (unsigned)MIN(nofile.rlim_cur / 2, 1u << 20)
			       : 1u << 20;
	L->emit_cap = READ_CHUNK + 1024;
	L->emit = malloc(L->emit_cap);
	if (!L->emit) {
		log_error("out of memory");
		return -ENOMEM;
	}
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
	L->listen_ev.fd = L->sig_ev.fd = L->launcher_ev.fd = L->control_ev.fd = -1;
	if (event_add(&L->loop, &L->listen_ev, L->sock->fd, EPOLLIN, on_accept, L) < 0 ||
	    event_add(&L->loop, &L->sig_ev, L->sigfd, EPOLLIN, on_signal, L) < 0 ||
	    event_add(&L->loop, &L->launcher_ev, L->launcher.fd, EPOLLIN, on_launcher, L) < 0 ||
	    event_add(&L->loop, &L->control_ev, L->control, EPOLLIN, on_supervisor, L) < 0) {
		log_error("epoll: %s", errno_text(errno));
		return -errno;
	}
	return 0;
}

int listener_main(struct listener *L, int death_note)
{
	char err[256];

	if (listener_init(L) < 0)
		return 1;
	shape_global_init();
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

	/* Stop: every program ended, then the launcher, which sees its
	 * channel close. The supervisor removes the socket. */
	job_stop_all(L);
	while (L->conns)
		conn_drop(L->conns);
	event_loop_close(&L->loop);
	for (int i = 0; i < 1000 &&
			outq_flush(&L->launcher_out, L->launcher.fd) == -EAGAIN; i++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	outq_clear(&L->launcher_out);
	close_fd(&L->launcher.fd);
	frame_reader_drop_fds(&L->launcher_reader);
	free(L->launcher_reader.payload);
	frame_reader_drop_fds(&L->control_reader);
	free(L->control_reader.payload);
	close_fd(&L->control);
	if (L->cfg_owned)
		free(L->cfg);
	free(L->emit);
	close_fd(&L->sigfd);
	return L->exit_code;
}
