/*
 * Client connections (conn.h): accept and admit, read frames within
 * their deadlines and budgets, answer Hello, Ping and Reload, hand a
 * Request to the jobs and carry its job's messages back.
 *
 *   on_accept, conn_admit   who is at the other end, and whether served
 *   conn_read               frames, within the budgets; listener_dispatch_client
 *   conn_start_job          the Request becomes a job (job_start)
 *   conn_client_ops         the job's Started, Output and Exit, queued; or
 *                           the connection handed to the launcher, which
 *                           answers a tool with no shaped stream itself
 *   conn_refuse             Error, then close
 *
 * Process: the listener.
 */
#include "conn.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "audit.h"
#include "log.h"
#include "policy.h"
#include "reply.h"
#include "util.h"

/* Accepting stops this long when the process runs out of fds. */
#define ACCEPT_PAUSE_MS 100

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
		c->C->uid_conns[c->slot]--;
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
	struct conns *C = c->C;

	C->fds_held -= c->reader.nfds;
	frame_reader_next(&c->reader);
	if (!keep_memory || c->reader.payload_cap > 64 * 1024) {
		C->buffered -= charged(c->reader.payload_cap);
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
	struct conns *C = c->C;
	size_t cap = r->payload_cap ? r->payload_cap : MAX_SMALL_FRAME;

	while (cap < need)
		cap *= 2;
	if (C->buffered - charged(r->payload_cap) + charged(cap) > MAX_BUFFERED_BYTES)
		return false;
	uint8_t *p = realloc(r->payload, cap);
	if (!p)
		return false;
	C->buffered = C->buffered - charged(r->payload_cap) + charged(cap);
	r->payload = p;
	r->payload_cap = cap;
	return true;
}

/* Tear a connection down now; its memory goes after this batch. */
static void conn_drop(struct conn *c)
{
	struct conns *C = c->C;

	if (c->dead)
		return;
	c->dead = true;
	if (c->client.job)
		job_client_gone(c->client.job);
	sessions_peer_gone(C->sessions, &c->peer);
	conn_release_slot(c);
	conn_reader_next(c, false);
	event_del(C->loop, &c->ev);
	timer_cancel(C->loop, &c->deadline);
	LIST_REMOVE(c, link);
	C->n--;
	if (event_release(C->loop, c, conn_free) < 0) {
		/* No memory even to defer: leak the struct, keep the fd sane. */
		close_fd(&c->fd);
	}
}

/* A reply could not be queued (outq_push's only failure: no memory).
 * Sending on would show the client less than was said, or leave it
 * waiting for a message that never comes: a dropped Output would shorten
 * what the agent sees with nothing to say so. So the connection ends at
 * its next flush instead, unsent frames and all: the client reports a
 * lost connection (status 1), and its job, if any, is treated as having
 * lost its client. Not dropped here: the caller may be inside the job's
 * own output path. */
static void conn_reply_lost(struct conn *c, const char *what, int err)
{
	log_warn("client pid %d: cannot queue its %s: %s; closing the connection", (int)c->pid,
		 what, errno_text(err));
	c->reply_lost = true;
}

/* Write what the client takes. Returns false if the connection is gone. */
static bool conn_flush(struct conn *c)
{
	if (c->dead)
		return false;
	/* The launcher writes to it now; nothing is queued here. */
	if (c->handed_over) {
		if (c->state != CONN_CLOSING)
			return true;
		conn_drop(c);
		return false;
	}
	c->hello_unsent = false;
	if (c->reply_lost) {
		conn_drop(c);
		return false;
	}
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
	/* Unarmed for EPOLLOUT, the rest of the queue would never go out. */
	r = event_modify(c->C->loop, &c->ev, mask);
	if (r < 0) {
		log_warn("client pid %d: epoll: %s; closing the connection", (int)c->pid,
			 errno_text(r));
		conn_drop(c);
		return false;
	}
	if (c->client.job && c->out.bytes < OUTQ_LOW)
		job_resume_output(c->client.job);
	return true;
}

static void conn_close_after_flush(struct conn *c)
{
	c->state = CONN_CLOSING;
	conn_release_slot(c);
	timer_cancel(c->C->loop, &c->deadline);
	conn_flush(c);
}

static void on_refusal_read(struct event_loop *loop, void *data)
{
	(void)loop;
	conn_drop(data);
}

/* Send an Error and close. */
static __attribute__((format(printf, 3, 4))) void
conn_refuse(struct conn *c, Toolrun__ErrorCode code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("client pid %d uid %u: %s", (int)c->pid, (unsigned)c->uid, msg);
	/* Its frames are the launcher's to write: an Error of ours could cut
	 * one in two. The launcher sends it. */
	if (c->handed_over) {
		if (c->client.job)
			job_client_refused(c->client.job, code, msg);
		conn_drop(c);
		return;
	}
	if (c->client.job)
		job_client_gone(c->client.job);
	int r = reply_error(&c->out, code, msg);
	if (r < 0)
		conn_reply_lost(c, "Error", r);
	conn_close_after_flush(c);
	/* A client that does not read why it was refused is not waited for. */
	if (!c->dead)
		timer_arm(c->C->loop, &c->deadline, REFUSAL_LINGER_MS, on_refusal_read, c);
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
	struct conns *C = c->C;
	Toolrun__Pong p = TOOLRUN__PONG__INIT;

	p.software = (char *)"toolrund " TOOLRUN_VERSION;
	p.connections = C->n;
	p.running = C->jobs->running;
	p.served = C->jobs->served;
	p.uptime_s = (monotonic_us() - C->started_us) / 1000000;
	p.audit_log = (char *)C->audit_log;
	int r = reply_pong(&c->out, &p);
	if (r < 0)
		conn_reply_lost(c, "Pong", r);
	conn_close_after_flush(c);
}

/* The supervisor reads the file (we cannot) and answers on the control
 * channel: see conns_answer_reloads. */
static void ask_reload(struct conn *c)
{
	int r = c->C->ask_reload(c->C->owner);
	if (r < 0) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_INTERNAL,
			    "cannot reach toolrund's supervisor: %s", errno_text(r));
		return;
	}
	c->state = CONN_RELOADING;
	c->reader.max_payload = MAX_SMALL_FRAME;
}

/* The launcher knows part of the answer (spill, audit, what programs
 * get): the listener asks it, and answers through conns_answer_status. */
static void ask_status(struct conn *c)
{
	bool asked = conns_waiting_status(c->C) > 0;

	c->state = CONN_STATUS;
	c->reader.max_payload = MAX_SMALL_FRAME;
	/* One question answers every client waiting. */
	if (!asked)
		c->C->ask_status(c->C->owner);
}

unsigned conns_waiting_status(const struct conns *C)
{
	const struct conn *c;
	unsigned n = 0;

	LIST_FOREACH(c, &C->list, link)
		n += !c->dead && c->state == CONN_STATUS;
	return n;
}

void conns_answer_status(struct conns *C, const Toolrun__StatusReply *r)
{
	struct conn *c;
	LIST_FOREACH(c, &C->list, link) {
		if (c->dead || c->state != CONN_STATUS)
			continue;
		int rc = reply_status(&c->out, r);
		if (rc < 0)
			conn_reply_lost(c, "StatusReply", rc);
		conn_close_after_flush(c);
	}
}

void conns_answer_reloads(struct conns *C, bool ok, const char *message)
{
	struct conn *c;
	LIST_FOREACH(c, &C->list, link) {
		if (c->dead || c->state != CONN_RELOADING)
			continue;
		int r = reply_reloaded(&c->out, ok, message);
		if (r < 0)
			conn_reply_lost(c, "Reloaded", r);
		conn_close_after_flush(c);
	}
}

/* ------------------------------------------------------------------ */
/* The connection as its job's client                                  */

static struct conn *conn_of(const struct job_client *jc)
{
	return (struct conn *)((const char *)jc - offsetof(struct conn, client));
}

static void client_started(struct job_client *jc, pid_t pid, uint32_t timeout_s)
{
	struct conn *c = conn_of(jc);

	if (c->handed_over)
		return;
	int r = reply_started(&c->out, pid, timeout_s);
	if (r < 0)
		conn_reply_lost(c, "Started", r);
	conn_flush(c);
}

static void client_output(struct job_client *jc, Toolrun__Stream stream,
			  const uint8_t *p, size_t n)
{
	struct conn *c = conn_of(jc);

	if (c->handed_over)
		return;
	int r = reply_output(&c->out, stream, p, n);
	/* The job's next flush ends the connection. */
	if (r < 0)
		conn_reply_lost(c, "Output", r);
}

static bool client_flush(struct job_client *jc)
{
	return conn_flush(conn_of(jc));
}

static size_t client_queued(const struct job_client *jc)
{
	return conn_of(jc)->out.bytes;
}

static void client_finished(struct job_client *jc, const struct exit_report *r)
{
	struct conn *c = conn_of(jc);

	if (!c->handed_over) {
		int e = reply_exit(&c->out, r);
		if (e < 0)
			conn_reply_lost(c, "Exit", e);
	}
	conn_close_after_flush(c);
}

/* Only while the queue holds nothing, or the Hello reply alone: the
 * launcher's frames must be the next the client reads. */
static int client_answer_fd(struct job_client *jc, bool *hello_owed, uint32_t *version)
{
	struct conn *c = conn_of(jc);

	if (c->dead || c->reply_lost || (c->out.bytes && !c->hello_unsent))
		return -1;
	*hello_owed = c->out.bytes > 0;
	*version = c->version;
	return fcntl(c->fd, F_DUPFD_CLOEXEC, 3);
}

static void client_handed_over(struct job_client *jc)
{
	struct conn *c = conn_of(jc);

	outq_clear(&c->out); /* the Hello, which the launcher sends */
	c->handed_over = true;
}

static const struct job_client_ops conn_client_ops = {
	.started = client_started,
	.output = client_output,
	.flush = client_flush,
	.queued = client_queued,
	.finished = client_finished,
	.answer_fd = client_answer_fd,
	.handed_over = client_handed_over,
};

/* The Request: its fds pass to the job, or are closed if refused. */
static void conn_start_job(struct conn *c, const Toolrun__Request *req)
{
	struct conns *C = c->C;
	unsigned nfds = c->reader.nfds;
	struct job_caller who = {
		.uid = c->uid,
		.gid = c->gid,
		.groups = c->groups,
		.ngroups = c->ngroups,
		.pid = c->pid,
	};
	Toolrun__ErrorCode code;
	char why[512];

	timer_cancel(C->loop, &c->deadline);
	c->state = CONN_RUNNING;
	c->reader.max_payload = MAX_SMALL_FRAME;
	c->reader.nfds = 0; /* job_start owns them now */
	C->fds_held -= nfds;
	if (job_start(C->jobs, &who, &c->client, req, c->fds, nfds, &code, why,
		      sizeof(why)) < 0)
		conn_refuse(c, code, "%s", why);
}

/* While its job runs, what may follow the Request: Signal, ReaderGone. */
static void conn_while_running(struct conn *c, const Toolrun__ClientMessage *m)
{
	if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_READER_GONE) {
		Toolrun__Stream st = m->reader_gone->stream;
		if (st != TOOLRUN__STREAM__STREAM_STDOUT &&
		    st != TOOLRUN__STREAM__STREAM_STDERR) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE,
				    "ReaderGone names no stream (%d)", (int)st);
			return;
		}
		if (c->client.job)
			job_reader_gone(c->client.job, st);
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
	if (c->client.job)
		job_signal(c->client.job, m->signal->signo);
}

/* ------------------------------------------------------------------ */
/* Session calls                                                       */

static void peer_reply(struct session_peer *p, const Toolrun__SessionReply *r)
{
	struct conn *c = (struct conn *)((char *)p - offsetof(struct conn, peer));

	if (c->dead)
		return;
	if (reply_session(&c->out, r) < 0) {
		conn_drop(c);
		return;
	}
	conn_flush(c);
}

static const struct session_peer_ops conn_peer_ops = {.reply = peer_reply};

/* A connection that made a session call or sent a front record is a
 * front end's: it lasts as long as its client keeps it. */
static void conn_become_session(struct conn *c)
{
	if (c->state == CONN_SESSION)
		return;
	timer_cancel(c->C->loop, &c->deadline);
	c->state = CONN_SESSION;
	c->peer.ops = &conn_peer_ops;
	c->peer.who = (struct job_caller){
		.uid = c->uid, .gid = c->gid, .groups = c->groups, .ngroups = c->ngroups,
		.pid = c->pid,
	};
}

/* A SessionCall: the connection serves session calls from now on, for
 * as long as its client keeps it, one call at a time. */
static void conn_session_call(struct conn *c, const Toolrun__SessionCall *call)
{
	struct conns *C = c->C;
	unsigned nfds = c->reader.nfds;

	if (c->version < TOOLRUN__VERSION__VERSION_2) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
			    "session calls need protocol version 2 (this Hello said %u)", c->version);
		return;
	}
	if (c->peer.waiting_on) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
			    "one session call at a time: wait for the answer to the last one");
		return;
	}
	if (nfds > 1) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_FRAME,
			    "a session call carries at most one fd (NEW's directory)");
		return;
	}
	conn_become_session(c);
	c->reader.nfds = 0; /* the session's now */
	C->fds_held -= nfds;
	sessions_call(C->sessions, &c->peer, call, nfds ? c->fds[0] : -1);
}

/* A front end's audit record: checked, then one line in the log. */
static void conn_front_record(struct conn *c, const Toolrun__FrontRecord *r)
{
	char why[256];

	if (c->version < TOOLRUN__VERSION__VERSION_2) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
			    "FrontRecord needs protocol version 2");
		return;
	}
	if (!policy_front_record(r, why, sizeof(why))) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE, "FrontRecord: %s", why);
		return;
	}
	conn_become_session(c);
	struct audit_front f = {
		.start_ms = wall_ms(),
		.uid = c->uid,
		.caller_pid = c->pid,
		.front = r->front,
		.tool = r->tool,
		.target = r->target.data,
		.target_len = r->target.len,
		.ok = r->ok,
		.error_code = r->error_code,
		.bytes = r->bytes,
		.duration_us = r->duration_us,
	};
	char *line = audit_format_front(&f);
	if (!line) {
		log_error("out of memory for a front end's audit record");
		return;
	}
	order_audit(c->C->jobs->orders, line);
	free(line);
}

/* Hello: the versions this daemon speaks are 1 and 2. */
static void conn_hello(struct conn *c, const Toolrun__Hello *h)
{
	if (h->protocol_version != TOOLRUN__VERSION__VERSION_1 &&
	    h->protocol_version != TOOLRUN__VERSION__VERSION_2) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNSUPPORTED_VERSION,
			    "protocol version %u is not supported (this daemon speaks %d and %d)",
			    h->protocol_version, TOOLRUN__VERSION__VERSION_1,
			    TOOLRUN__VERSION__VERSION_2);
		return;
	}
	c->version = h->protocol_version;
	c->hold_hello = h->request_follows;
	int r = reply_hello(&c->out, c->version);
	if (r < 0)
		conn_reply_lost(c, "Hello", r);
	c->hello_unsent = r == 0 && c->out.bytes > 0;
	c->state = CONN_REQUEST;
	c->reader.max_payload = MAX_REQUEST_FRAME;
	/* Not flushed here: see conn_read_done(). */
}

/* One message from a client, by what its connection is waiting for.
 * Anything out of turn is refused (Error, then close), never fatal: the
 * client is untrusted. A closing connection's messages are dropped. */
static void listener_dispatch_client(struct conn *c, const Toolrun__ClientMessage *m)
{
	/* The message the Hello reply waited for, whatever it is. */
	c->hold_hello = false;
	if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST &&
	    m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_SESSION_CALL && c->reader.nfds) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_FRAME,
			    "only a Request or a SessionCall may carry file descriptors");
		return;
	}
	if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_SESSION_CALL &&
	    (c->state == CONN_REQUEST || c->state == CONN_SESSION)) {
		conn_session_call(c, m->session_call);
		return;
	}
	if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_FRONT_RECORD &&
	    (c->state == CONN_REQUEST || c->state == CONN_SESSION)) {
		conn_front_record(c, m->front_record);
		return;
	}
	switch (c->state) {
	case CONN_HELLO:
		if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_HELLO) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
				    "the first message must be Hello");
			return;
		}
		conn_hello(c, m->hello);
		return;
	case CONN_SESSION:
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
			    "only session calls and front records may follow a session call");
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
		if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_STATUS) {
			ask_status(c);
			return;
		}
		if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
				    "expected Request, Ping, Reload or Status after Hello");
			return;
		}
		conn_start_job(c, m->request);
		return;
	case CONN_RUNNING:
		conn_while_running(c, m);
		return;
	case CONN_RELOADING:
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
			    "nothing may follow Reload");
		return;
	case CONN_STATUS:
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_UNEXPECTED_MESSAGE,
			    "nothing may follow Status");
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
	if (c->dead || (c->state != CONN_RUNNING && c->state != CONN_SESSION))
		return;
	bool partial = c->reader.header_have > 0;
	if (partial && !c->deadline.armed)
		timer_arm(c->C->loop, &c->deadline, FRAME_DEADLINE_MS, on_frame_deadline, c);
	else if (!partial && c->deadline.armed)
		timer_cancel(c->C->loop, &c->deadline);
}

/*
 * The client closed its connection. One the launcher answered may have
 * read its Exit and gone before the listener read the Exited the launcher
 * sent first: take that in, so that its job ends as the client saw it,
 * not as a job whose client is gone.
 */
static void conn_client_left(struct conn *c)
{
	if (c->handed_over && c->client.job)
		c->C->read_launcher(c->C->owner);
	conn_drop(c);
}

/* Refuse the frame being read, for the reason r gives. */
static void conn_read_failed(struct conn *c, int r)
{
	switch (r) {
	case FRAME_READ_EOF:
		conn_client_left(c);
		return;
	case -EMSGSIZE:
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_FRAME_TOO_LARGE,
			    "frame of %u bytes exceeds the maximum of %u %s",
			    c->reader.h.length, c->reader.max_payload,
			    c->state == CONN_HELLO	  ? "for Hello"
			    : c->state == CONN_REQUEST ? "for a Request"
			    : c->state == CONN_SESSION ? "for a session call"
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
			    c->reader.h.length, c->C->buffered, MAX_BUFFERED_BYTES);
		return;
	default:
		log_debug("client pid %d: read: %s", (int)c->pid, errno_text(r));
		conn_drop(c);
		return;
	}
}

/*
 * The end of a read. A client sends its Request right behind its Hello,
 * so the Hello reply waits in the queue: with a job started, until its
 * Started (or Exit), so that the client wakes once for both instead of
 * twice; until the next message arrives, when the Hello said that one
 * follows (request_follows: the two frames may arrive in two reads, the
 * Request's apart since it carries fds); otherwise (a refusal, a Pong, a
 * client that waits for our Hello before it says more) it goes now.
 */
static void conn_read_done(struct conn *c)
{
	if (c->dead || c->hold_hello || (c->state == CONN_RUNNING && c->client.job))
		return;
	conn_flush(c);
}

static void conn_read(struct conn *c)
{
	struct conns *C = c->C;

	while (!c->dead && c->state != CONN_CLOSING) {
		unsigned nfds_before = c->reader.nfds;
		int r = frame_reader_read(&c->reader, c->fd);
		C->fds_held += c->reader.nfds - nfds_before;
		if (C->fds_held > C->fd_budget) {
			conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY,
				    "too many file descriptors in flight (%u; the limit is %u)",
				    C->fds_held, C->fd_budget);
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
		/* m's argv and envp point into the payload, which a reply
		 * that ends the connection frees (conn_drop): a handler
		 * reads them before it answers. */
		listener_dispatch_client(c, m);
		arena_release(&a);
		if (!c->dead)
			conn_reader_next(c, true);
	}
	conn_read_done(c);
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
static struct conn *oldest_waiting(struct conns *C, int slot)
{
	struct conn *found = NULL;

	struct conn *c;
	LIST_FOREACH(c, &C->list, link)
		if (c->slot == slot && (c->state == CONN_HELLO || c->state == CONN_REQUEST))
			found = c;
	return found;
}

static void accept_resume(struct event_loop *loop, void *data)
{
	struct conns *C = data;
	/* Left unarmed, the socket would take no client ever again: try
	 * again after the same pause. */
	int r = event_modify(loop, &C->listen_ev, EPOLLIN);
	if (r < 0) {
		log_warn("%s: cannot watch for clients again: %s; trying again in %d ms",
			 C->sock->path, errno_text(r), ACCEPT_PAUSE_MS);
		timer_arm(loop, &C->accept_pause, ACCEPT_PAUSE_MS, accept_resume, C);
	}
}

/*
 * Admit a new connection, or say why not. A uid at its limit makes room
 * by closing its own connection that has waited longest for a Request:
 * a client that floods the socket pushes out only its own idle
 * connections, and a uid's running jobs are never cut for a newcomer.
 */
static void conn_admit(struct conns *C, struct conn *c)
{
	if (C->n > MAX_CONNECTIONS) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			    "too many connections (the limit is %d)", MAX_CONNECTIONS);
		return;
	}
	int slot = uid_index(C->allowed, C->nallowed, c->uid);
	if (slot < 0) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED,
			    "uid %u is not served by this toolrund (it serves uid %u%s)",
			    (unsigned)c->uid, (unsigned)C->allowed[0],
			    C->nallowed > 1 ? " and others" : "");
		return;
	}
	/* Without the capabilities to switch, a program would run as the
	 * daemon's uid: another identity than its caller's. */
	if (!C->can_switch && c->uid != C->self_uid && c->uid != 0) {
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED,
			    "toolrund runs as uid %u and cannot run programs as uid %u "
			    "(it lacks CAP_SETUID, CAP_SETGID, CAP_KILL or CAP_CHOWN)",
			    (unsigned)C->self_uid, (unsigned)c->uid);
		return;
	}
	if (C->uid_conns[slot] >= MAX_CONNECTIONS_PER_UID) {
		struct conn *old = oldest_waiting(C, slot);
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
	C->uid_conns[slot]++;
	timer_arm(C->loop, &c->deadline, REQUEST_DEADLINE_MS, on_request_deadline, c);
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

/* A new connection, listed, its frames read; NULL if it cannot be. */
static struct conn *conn_new(struct conns *C, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c || peer_identity(c, fd) < 0) {
		log_error("out of memory for a connection");
		if (c)
			free(c->groups);
		free(c);
		close(fd);
		return NULL;
	}
	c->C = C;
	c->fd = fd;
	c->slot = -1;
	c->ev.fd = -1;
	c->out.total = &C->queued;
	c->client.ops = &conn_client_ops;
	c->reader = (struct frame_reader){
		.max_payload = MAX_SMALL_FRAME,
		.grow = conn_grow,
		.owner = c,
		.fds = c->fds,
	};
	if (event_add(C->loop, &c->ev, fd, EPOLLIN, on_conn, c) < 0) {
		log_error("epoll: %s", errno_text(errno));
		conn_free(c);
		return NULL;
	}
	LIST_INSERT_HEAD(&C->list, c, link);
	C->n++;
	return c;
}

static void on_accept(struct event_loop *loop, uint32_t events, void *data)
{
	struct conns *C = data;
	(void)events;

	for (int i = 0; i < 64; i++) {
		int fd = accept4(C->sock->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return;
			log_warn("accept on %s: %s; pausing for %d ms", C->sock->path,
				 errno_text(errno), ACCEPT_PAUSE_MS);
			/* A pause that fails leaves the socket armed, and its
			 * mask unchanged: the next turn calls here again, the
			 * accept fails again and the pause is tried again. */
			IGNORE_RESULT(event_modify(loop, &C->listen_ev, 0));
			timer_arm(loop, &C->accept_pause, ACCEPT_PAUSE_MS, accept_resume, C);
			return;
		}
		struct conn *c = conn_new(C, fd);
		if (c)
			conn_admit(C, c);
	}
}

/* ------------------------------------------------------------------ */
/* The context                                                         */

void conns_init(struct conns *C, struct event_loop *loop, struct jobs *jobs,
		struct sessions *sessions, struct listen_socket *sock)
{
	C->loop = loop;
	C->jobs = jobs;
	C->sessions = sessions;
	C->sock = sock;
	C->started_us = monotonic_us();
	/* Half the fds for those arriving with requests: the rest stay for
	 * connections, pipes and the launcher's channel. */
	struct rlimit nofile;
	C->fd_budget = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
			       ? (unsigned)MIN(nofile.rlim_cur / 2, 1u << 20)
			       : 1u << 20;
	C->listen_ev.fd = -1;
}

void conns_unlisten(struct conns *C)
{
	event_del(C->loop, &C->listen_ev);
}

int conns_listen(struct conns *C)
{
	return event_add(C->loop, &C->listen_ev, C->sock->fd, EPOLLIN, on_accept, C);
}

void conns_drop_all(struct conns *C)
{
	while (!LIST_EMPTY(&C->list))
		conn_drop(LIST_FIRST(&C->list));
}
