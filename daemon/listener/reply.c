/*
 * Messages to a client (reply.h).
 *
 * Process: the listener.
 */
#include "reply.h"

static int push(struct outq *q, Toolrun__ServerMessage *m)
{
	return outq_push(q, &m->base, NULL, 0);
}

int reply_hello(struct outq *q, uint32_t version)
{
	Toolrun__Hello h = TOOLRUN__HELLO__INIT;
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;

	h.protocol_version = version;
	h.software = (char *)"toolrund " TOOLRUN_VERSION;
	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_HELLO;
	m.hello = &h;
	return push(q, &m);
}

int reply_started(struct outq *q, pid_t pid, uint32_t timeout_s)
{
	Toolrun__Started s = TOOLRUN__STARTED__INIT;
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;
	uint64_t ms = (uint64_t)timeout_s * 1000;

	s.pid = pid;
	/* The config allows a week at most; the clamp is for the field. */
	s.timeout_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_STARTED;
	m.started = &s;
	return push(q, &m);
}

int reply_output(struct outq *q, Toolrun__Stream stream, const uint8_t *p,
		 size_t n)
{
	while (n > 0) {
		Toolrun__Output o = TOOLRUN__OUTPUT__INIT;
		Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;
		size_t chunk = n < REPLY_OUTPUT_MAX ? n : REPLY_OUTPUT_MAX;

		o.stream = stream;
		o.data.data = (uint8_t *)p;
		o.data.len = chunk;
		m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_OUTPUT;
		m.output = &o;
		int r = push(q, &m);
		if (r < 0)
			return r;
		p += chunk;
		n -= chunk;
	}
	return 0;
}

static void fill_stats(Toolrun__StreamStats *s, const struct exit_report *r, int i)
{
	const struct shape_stats *st = &r->stats[i];

	s->shaped = r->shaped[i];
	if (!s->shaped)
		return;
	s->bytes_seen = st->bytes_seen;
	s->lines_seen = st->lines_seen;
	s->bytes_dropped = st->bytes_dropped;
	s->lines_dropped = st->lines_dropped;
	s->spill_path = (char *)(r->spill_path[i] ? r->spill_path[i] : "");
	s->spill_partial = r->spill_partial[i];
}

void reply_fill_exit(Toolrun__Exit *e, Toolrun__StreamStats *out, Toolrun__StreamStats *err,
		     const struct exit_report *r)
{
	toolrun__exit__init(e);
	toolrun__stream_stats__init(out);
	toolrun__stream_stats__init(err);
	if (r->signaled) {
		e->status_case = TOOLRUN__EXIT__STATUS_SIGNAL;
		e->signal = r->signal;
		e->core_dumped = r->core_dumped;
	} else {
		e->status_case = TOOLRUN__EXIT__STATUS_CODE;
		e->code = r->code;
	}
	e->timed_out = r->timed_out;
	fill_stats(out, r, 0);
	fill_stats(err, r, 1);
	e->stdout_stats = out;
	e->stderr_stats = err;
	e->duration_us = r->duration_us;
	e->user_us = r->user_us;
	e->system_us = r->system_us;
	e->exec_errno = r->exec_errno;
	e->reason = (char *)(r->reason ? r->reason : "");
}

int reply_exit(struct outq *q, const struct exit_report *r)
{
	Toolrun__Exit e;
	Toolrun__StreamStats out, err;
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;

	reply_fill_exit(&e, &out, &err, r);
	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_EXIT;
	m.exit = &e;
	return push(q, &m);
}

int reply_session(struct outq *q, const Toolrun__SessionReply *r)
{
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;

	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_SESSION_REPLY;
	m.session_reply = (Toolrun__SessionReply *)r;
	return push(q, &m);
}

int reply_error(struct outq *q, Toolrun__ErrorCode code, const char *message)
{
	Toolrun__Error e = TOOLRUN__ERROR__INIT;
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;

	e.code = code;
	e.message = (char *)message;
	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_ERROR;
	m.error = &e;
	return push(q, &m);
}

int reply_pong(struct outq *q, const Toolrun__Pong *pong)
{
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;

	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_PONG;
	m.pong = (Toolrun__Pong *)pong;
	return push(q, &m);
}

int reply_status(struct outq *q, const Toolrun__StatusReply *status)
{
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;

	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_STATUS_REPLY;
	m.status_reply = (Toolrun__StatusReply *)status;
	return push(q, &m);
}

int reply_reloaded(struct outq *q, bool ok, const char *message)
{
	Toolrun__ServerMessage m = TOOLRUN__SERVER_MESSAGE__INIT;
	Toolrun__Reloaded r = TOOLRUN__RELOADED__INIT;

	r.ok = ok;
	r.message = (char *)message;
	m.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_RELOADED;
	m.reloaded = &r;
	return push(q, &m);
}
