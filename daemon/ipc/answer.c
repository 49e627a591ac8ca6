/*
 * A client's Hello, Started and Exit (answer.h).
 *
 * Processes: the listener and the launcher.
 */
#include "answer.h"

#include <stdio.h>
#include <sys/wait.h>

#include "util.h"

void answer_hello(struct answer *a, uint32_t version)
{
	toolrun__server_message__init(&a->msg);
	toolrun__hello__init(&a->hello);
	a->hello.protocol_version = version;
	a->hello.software = (char *)"toolrund " TOOLRUN_VERSION;
	a->msg.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_HELLO;
	a->msg.hello = &a->hello;
}

void answer_started(struct answer *a, pid_t pid, uint32_t timeout_s)
{
	uint64_t ms = (uint64_t)timeout_s * 1000;

	toolrun__server_message__init(&a->msg);
	toolrun__started__init(&a->started);
	a->started.pid = pid;
	/* The config allows a week at most; the clamp is for the field. */
	a->started.timeout_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	a->msg.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_STARTED;
	a->msg.started = &a->started;
}

void answer_output(struct answer *a, Toolrun__Stream stream, const uint8_t *p, size_t n)
{
	toolrun__server_message__init(&a->msg);
	toolrun__output__init(&a->output);
	a->output.stream = stream;
	a->output.data.data = (uint8_t *)p;
	a->output.data.len = n;
	a->msg.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_OUTPUT;
	a->msg.output = &a->output;
}

void answer_error(struct answer *a, Toolrun__ErrorCode code, const char *message)
{
	toolrun__server_message__init(&a->msg);
	toolrun__error__init(&a->error);
	a->error.code = code;
	a->error.message = (char *)message;
	a->msg.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_ERROR;
	a->msg.error = &a->error;
}

static void fill_stats(Toolrun__StreamStats *s, const struct exit_report *r, int i)
{
	const struct exit_stream *st = &r->stats[i];

	toolrun__stream_stats__init(s);
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

void answer_exit(struct answer *a, const struct exit_report *r)
{
	Toolrun__Exit *e = &a->exit;

	toolrun__server_message__init(&a->msg);
	a->msg.msg_case = TOOLRUN__SERVER_MESSAGE__MSG_EXIT;
	a->msg.exit = e;
	toolrun__exit__init(e);
	if (r->signaled) {
		e->status_case = TOOLRUN__EXIT__STATUS_SIGNAL;
		e->signal = r->signal;
		e->core_dumped = r->core_dumped;
	} else {
		e->status_case = TOOLRUN__EXIT__STATUS_CODE;
		e->code = r->code;
	}
	e->timed_out = r->timed_out;
	fill_stats(&a->out, r, 0);
	fill_stats(&a->err, r, 1);
	e->stdout_stats = &a->out;
	e->stderr_stats = &a->err;
	e->duration_us = r->duration_us;
	e->user_us = r->user_us;
	e->system_us = r->system_us;
	e->exec_errno = r->exec_errno;
	e->reason = (char *)(r->reason ? r->reason : "");
}

void answer_wait_status(struct exit_report *r, int wait_status, bool timed_out)
{
	if (timed_out) {
		r->code = 124;
		r->timed_out = true;
	} else if (WIFSIGNALED(wait_status)) {
		r->signaled = true;
		r->signal = WTERMSIG(wait_status);
		r->core_dumped = WCOREDUMP(wait_status);
	} else {
		r->code = WEXITSTATUS(wait_status);
	}
}

void answer_not_run(struct exit_report *r, enum launch_step step, int err, char *reason,
		    size_t len)
{
	r->code = 1; /* toolrund failed */
	r->exec_errno = 0;
	if (step == LAUNCH_STEP_EXEC) {
		r->exec_errno = err;
		r->code = err == ENOENT ? 127 : 126;
		snprintf(reason, len, "%s", err == ENOENT ? "command not found" : errno_text(err));
	} else {
		snprintf(reason, len, "toolrund failed to %s: %s", launch_step_name(step),
			 errno_text(err));
	}
	r->reason = reason;
}
