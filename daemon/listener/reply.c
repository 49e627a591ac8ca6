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
	struct answer a;

	answer_hello(&a, version);
	return push(q, &a.msg);
}

int reply_started(struct outq *q, pid_t pid, uint32_t timeout_s)
{
	struct answer a;

	answer_started(&a, pid, timeout_s);
	return push(q, &a.msg);
}

int reply_output(struct outq *q, Toolrun__Stream stream, const uint8_t *p,
		 size_t n)
{
	while (n > 0) {
		struct answer a;
		size_t chunk = n < REPLY_OUTPUT_MAX ? n : REPLY_OUTPUT_MAX;

		answer_output(&a, stream, p, chunk);
		int r = push(q, &a.msg);
		if (r < 0)
			return r;
		p += chunk;
		n -= chunk;
	}
	return 0;
}

int reply_exit(struct outq *q, const struct exit_report *r)
{
	struct answer a;

	answer_exit(&a, r);
	return push(q, &a.msg);
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
	struct answer a;

	answer_error(&a, code, message);
	return push(q, &a.msg);
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
