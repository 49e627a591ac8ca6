/*
 * Sessions: the calls, a command's life in its session, and the answers.
 *
 *   sessions_call     NEW (start.c), RUN, READ, WRITE, INTERRUPT,
 *                     KILL, CLOSE, LIST
 *   session_wait      a call that waits: answered when the command ends,
 *                     when it waits for input, or at the call's timeout
 *   on_status         the status pipe: the command ended
 *   session_end       its bash is gone: tell the waiter, keep the news
 *
 * A command runs as a job attached to the session's pipes (job.h); the
 * session is that job's client, and keeps what the job hands it until a
 * reply carries it.
 *
 * Process: the listener.
 */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "log.h"
#include "policy.h"
#include "util.h"

/* Looks for a command waiting for input: the first this long after the
 * command started or was sent input (a reader woken by that input must
 * not be taken for one still waiting), then at this interval. */
#define CHECK_AFTER_INPUT_MS 100
#define CHECK_INTERVAL_MS 150
/* A session ended is kept this long for a client to hear of it. */
#define ENDED_KEEP_MS (10 * 60 * 1000)
/* CLOSE: SIGHUP, then SIGKILL after this. */
#define CLOSE_GRACE_MS 1000

static void session_answer(struct session *s);
static void arm_check(struct session *s, int64_t delay_ms);

static struct session *session_of_client(struct job_client *c)
{
	return (struct session *)((char *)c - offsetof(struct session, client));
}

static struct job *current_job(const struct session *s)
{
	return s->client.job;
}

/* ------------------------------------------------------------------ */
/* The current command's client                                        */

static void client_started(struct job_client *c, pid_t pid, uint32_t timeout_s)
{
	(void)c;
	(void)pid;
	(void)timeout_s;
}

static void client_output(struct job_client *c, Toolrun__Stream stream, const uint8_t *p,
			  size_t n)
{
	struct session *s = session_of_client(c);
	struct session_pending *q = &s->pending[stream == TOOLRUN__STREAM__STREAM_STDERR];

	if (n == 0)
		return;
	if (q->len + n > q->cap) {
		size_t cap = MAX(q->cap * 2, q->len + n);
		uint8_t *b = realloc(q->p, cap);
		if (!b) {
			log_error("session %s: out of memory: %zu bytes of output lost", s->id, n);
			return;
		}
		q->p = b;
		q->cap = cap;
	}
	memcpy(q->p + q->len, p, n);
	q->len += n;
}

static bool client_flush(struct job_client *c)
{
	(void)c;
	return true;
}

/* Nothing ever waits on a session's pending output: the shaper bounds it
 * (the command's budget a stream, SHAPE_HOLD_MAX at most), and a command
 * paused on it could not end before a reply had drained it, so a call
 * would wait out its whole timeout. */
static size_t client_queued(const struct job_client *c)
{
	(void)c;
	return 0;
}

static void client_finished(struct job_client *c, const struct exit_report *r)
{
	struct session *s = session_of_client(c);

	s->last.r = *r;
	for (int i = 0; i < 2; i++) {
		snprintf(s->last.spill[i], sizeof(s->last.spill[i]), "%s",
			 r->spill_path[i] ? r->spill_path[i] : "");
		s->last.r.spill_path[i] = r->spill_path[i] ? s->last.spill[i] : NULL;
	}
	s->last.r.reason = NULL;
	s->done_unread = true;
	s->waiting_input = false;
	timer_cancel(s->S->J->loop, &s->check_timer);
	/* An ended session tells its waiter once it is done ending. */
	if (s->waiter && s->phase != SESSION_ENDED)
		session_answer(s);
}

const struct job_client_ops session_client_ops = {
	.started = client_started,
	.output = client_output,
	.flush = client_flush,
	.queued = client_queued,
	.finished = client_finished,
};

/* ------------------------------------------------------------------ */
/* Answers                                                             */

static Toolrun__SessionState current_state(const struct session *s)
{
	if (s->phase == SESSION_ENDED)
		return TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED;
	if (current_job(s))
		return s->waiting_input ? TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT
					: TOOLRUN__SESSION_STATE__SESSION_STATE_RUNNING;
	if (s->done_unread)
		return TOOLRUN__SESSION_STATE__SESSION_STATE_DONE;
	return TOOLRUN__SESSION_STATE__SESSION_STATE_IDLE;
}

/* Take up to one reply's worth of a stream's pending output. */
static ProtobufCBinaryData take(struct session_pending *q, size_t *taken)
{
	*taken = MIN(q->len, SESSION_REPLY_CHUNK);
	return (ProtobufCBinaryData){*taken, q->p};
}

static void drop_taken(struct session *s, const size_t taken[2])
{
	for (int i = 0; i < 2; i++) {
		struct session_pending *q = &s->pending[i];
		if (taken[i] == 0)
			continue;
		memmove(q->p, q->p + taken[i], q->len - taken[i]);
		q->len -= taken[i];
	}
	struct job *j = current_job(s);
	if (j && (taken[0] || taken[1]))
		job_resume_output(j);
}

static void reply_error_to(struct session_peer *p, const char *id, Toolrun__ErrorCode code,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void reply_error_to(struct session_peer *p, const char *id, Toolrun__ErrorCode code,
			   const char *fmt, ...)
{
	Toolrun__SessionReply r = TOOLRUN__SESSION_REPLY__INIT;
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	r.session = (char *)id;
	r.error = code;
	r.message = message;
	p->ops->reply(p, &r);
}

/* Answer the waiting call (or p, when no call waits) with the state and
 * the output so far. */
static void answer_to(struct session *s, struct session_peer *p)
{
	Toolrun__SessionReply r = TOOLRUN__SESSION_REPLY__INIT;
	struct answer a;
	size_t taken[2];

	if (current_job(s))
		output_settle(current_job(s));
	r.session = s->id;
	r.state = current_state(s);
	r.stdout = take(&s->pending[0], &taken[0]);
	r.stderr = take(&s->pending[1], &taken[1]);
	r.more = s->pending[0].len > taken[0] || s->pending[1].len > taken[1];
	r.command_number = s->commands;
	r.message = s->phase == SESSION_ENDED ? s->end_reason : "";
	bool tell_exit = s->done_unread && !current_job(s);
	if (tell_exit) {
		answer_exit(&a, &s->last.r);
		r.exit = &a.exit;
	}
	p->ops->reply(p, &r);
	drop_taken(s, taken);
	if (tell_exit && !r.more)
		s->done_unread = false;
}

/* An ended session whose end, and its last command's, were told. */
static bool told_the_end(const struct session *s)
{
	return s->phase == SESSION_ENDED && !s->done_unread && !current_job(s);
}

/* The call that waits, if any, no longer waits: it is the caller's to
 * answer (or, gone, nobody's). */
static struct session_peer *take_waiter(struct session *s)
{
	struct session_peer *p = s->waiter;

	if (!p)
		return NULL;
	s->waiter = NULL;
	p->waiting_on = NULL;
	timer_cancel(s->S->J->loop, &s->wait_timer);
	timer_cancel(s->S->J->loop, &s->check_timer);
	return p;
}

static void session_answer(struct session *s)
{
	struct session_peer *p = take_waiter(s);

	if (!p)
		return;
	answer_to(s, p);
	if (told_the_end(s))
		session_forget(s);
}

static void on_wait_timeout(struct event_loop *loop, void *data)
{
	(void)loop;
	session_answer(data);
}

/* Answer now if there is news, else when there is or at timeout_ms. */
static void session_wait(struct session *s, struct session_peer *p, uint32_t timeout_ms)
{
	bool news = !current_job(s) || s->waiting_input || timeout_ms == 0 ||
		    s->pending[0].len > SESSION_REPLY_CHUNK || s->pending[1].len > SESSION_REPLY_CHUNK;

	if (news) {
		answer_to(s, p);
		if (told_the_end(s))
			session_forget(s);
		return;
	}
	if (s->waiter) {
		reply_error_to(p, s->id, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			       "another call already waits on session %s; try again when it "
			       "has its answer", s->id);
		return;
	}
	s->waiter = p;
	p->waiting_on = s;
	timer_arm(s->S->J->loop, &s->wait_timer, timeout_ms, on_wait_timeout, s);
	if (!s->checking && !s->check_timer.armed) {
		int64_t since = monotonic_ms() - s->input_at_ms;
		arm_check(s, since >= CHECK_AFTER_INPUT_MS ? 0 : CHECK_AFTER_INPUT_MS - since);
	}
}

/* ------------------------------------------------------------------ */
/* Does the command wait for input?                                    */

static void on_check(struct event_loop *loop, void *data)
{
	struct session *s = data;
	(void)loop;

	if (!current_job(s) || !s->waiter || s->checking)
		return;
	s->checking = true;
	order_check_waiting(s->S->J->orders, s->job_id, s->in_dev, s->in_ino);
}

static void arm_check(struct session *s, int64_t delay_ms)
{
	timer_arm(s->S->J->loop, &s->check_timer, delay_ms, on_check, s);
}

bool sessions_on_waiting(struct sessions *S, uint64_t id, bool waiting, bool unknown)
{
	struct session *s = session_by_job(S, id);

	if (!s)
		return false;
	s->checking = false;
	if (!current_job(s))
		return true;
	/* Input sent since the look began may have woken the reader. */
	bool fresh = monotonic_ms() - s->input_at_ms >= CHECK_AFTER_INPUT_MS;
	s->waiting_input = waiting && !unknown && fresh;
	if (s->waiting_input)
		session_answer(s);
	else if (s->waiter && !unknown)
		arm_check(s, CHECK_INTERVAL_MS);
	return true;
}

/* ------------------------------------------------------------------ */
/* A command                                                           */

/*
 * A record of the status pipe: "ready" once, then "KEY STATUS CWD" for
 * each command that ended, KEY being the one sent with it. Bytes a
 * command wrote to the pipe may come before the key (the builtin writes
 * a record whole, so nothing comes inside it): what is not after the
 * current key counts for nothing.
 */
static void status_record(struct session *s, const char *rec, size_t len)
{
	struct job *j = current_job(s);

	if (s->phase == SESSION_LOADING) {
		if (strcmp(rec, "ready") == 0)
			session_loop_ready(s);
		return;
	}
	const char *at = s->key[0] ? memmem(rec, len, s->key, SESSION_KEY_LEN) : NULL;
	char *end;
	long status = at ? strtol(at + SESSION_KEY_LEN, &end, 10) : -1;
	if (!at || at[SESSION_KEY_LEN] != ' ' || status < 0 || status > 255 ||
	    (*end && *end != ' ')) {
		log_warn("session %s: a status record without the running command's key, "
			 "ignored (the command wrote to its shell's status pipe)", s->id);
		return;
	}
	s->key[0] = '\0'; /* one end per command */
	if (*end == ' ') {
		free(s->cwd);
		s->cwd = strdup(end + 1);
	}
	if (j)
		job_attached_ended(j, W_EXITCODE((int)status, 0), true);
}

/* Read the status pipe: false once it has nothing more to give. */
static bool read_status(struct session *s)
{
	if (s->status_fd < 0)
		return false;
	ssize_t n = read(s->status_fd, s->status_buf + s->status_len,
			 sizeof(s->status_buf) - s->status_len);
	if (n < 0 && errno == EINTR)
		return true;
	if (n < 0 && errno == EAGAIN)
		return false;
	if (n <= 0) {
		/* Its bash is gone (Exited follows) or closed fd 4. */
		event_del(s->S->J->loop, &s->status_ev);
		return false;
	}
	s->status_len += (size_t)n;
	char *nul;
	while ((nul = memchr(s->status_buf, '\0', s->status_len))) {
		status_record(s, s->status_buf, (size_t)(nul - s->status_buf));
		size_t used = (size_t)(nul - s->status_buf) + 1;
		memmove(s->status_buf, nul + 1, s->status_len - used);
		s->status_len -= used;
	}
	if (s->status_len == sizeof(s->status_buf))
		s->status_len = 0; /* a record longer than any PWD: drop it */
	return true;
}

static void on_status(struct event_loop *loop, uint32_t events, void *data)
{
	struct session *s = data;

	(void)loop;
	(void)events;
	/* The tools the command ran told the launcher their end before
	 * their callers went on, so before the command's own end: log
	 * theirs first. It may end this session (its bash's Exited); s
	 * stays valid to the end of the turn, its status pipe closed. */
	order_take_in(s->S->J->orders);
	read_status(s);
}

int session_watch_status(struct session *s)
{
	return event_add(s->S->J->loop, &s->status_ev, s->status_fd, EPOLLIN, on_status, s);
}

/* A fresh key for the next command: 16 random bytes in hex. */
static int new_key(struct session *s)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t b[SESSION_KEY_LEN / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EAGAIN;
	for (size_t i = 0; i < sizeof(b); i++) {
		s->key[2 * i] = hex[b[i] >> 4];
		s->key[2 * i + 1] = hex[b[i] & 15];
	}
	s->key[SESSION_KEY_LEN] = '\0';
	return 0;
}

static int send_command(struct session *s, const ProtobufCBinaryData *cmd)
{
	/* The pipe holds a key, SESSION_COMMAND_MAX bytes and a NUL
	 * (start.c), and bash has read the last command whole
	 * before it ran it. */
	uint8_t nul = 0;
	int r = new_key(s);
	if (r < 0)
		return r;
	struct iovec v[3] = {{s->key, SESSION_KEY_LEN}, {cmd->data, cmd->len}, {&nul, 1}};
	ssize_t w = writev(s->cmd_fd, v, 3);
	if (w == (ssize_t)(SESSION_KEY_LEN + cmd->len + 1))
		return 0;
	s->key[0] = '\0';
	return w < 0 ? -errno : -EAGAIN;
}

static void session_run(struct session *s, struct session_peer *p, const Toolrun__SessionCall *c)
{
	char why[256];

	if (current_job(s)) {
		reply_error_to(p, s->id, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			       "session %s is still running command %llu: read it, send it input, "
			       "or interrupt it first", s->id, (unsigned long long)s->commands);
		return;
	}
	s->done_unread = false;
	s->pending[0].len = s->pending[1].len = 0;
	free(s->command);
	s->command = strndup((const char *)c->command.data, c->command.len);
	if (session_attach_command(s, &c->command, why, sizeof(why)) < 0 ||
	    send_command(s, &c->command) < 0) {
		if (current_job(s))
			job_attached_ended(current_job(s), W_EXITCODE(1, 0), false);
		reply_error_to(p, s->id, TOOLRUN__ERROR_CODE__ERROR_INTERNAL, "%s",
			       why[0] ? why : "toolrund could not hand the command to bash");
		return;
	}
	s->commands++;
	s->waiting_input = false;
	s->input_at_ms = monotonic_ms();
	session_wait(s, p, c->timeout_ms);
}

/* Write all of input to the command's stdin, or say why not. */
static int send_input(struct session *s, const ProtobufCBinaryData *in, bool eof, char *why,
		      size_t len)
{
	static const uint8_t ctrl_d = 0x04;
	size_t off = 0;

	while (off < in->len) {
		ssize_t w = write(s->in_fd, in->data + off, in->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			snprintf(why, len, errno == EAGAIN
						   ? "the command has not read the input sent before: "
						     "%zu of %zu bytes sent"
						   : "writing its input failed: %zu of %zu bytes sent",
				 off, in->len);
			return -1;
		}
		off += (size_t)w;
	}
	if (eof && s->tty && write(s->in_fd, &ctrl_d, 1) != 1) {
		snprintf(why, len, "the terminal took no end-of-file character");
		return -1;
	}
	if (eof && !s->tty) {
		close_fd(&s->in_fd);
		s->in_closed = true;
	}
	return 0;
}

static void session_write(struct session *s, struct session_peer *p,
			  const Toolrun__SessionCall *c)
{
	char why[sizeof(((struct session *)0)->end_reason)];

	if (!current_job(s)) {
		reply_error_to(p, s->id, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			       "session %s runs no command to send input to", s->id);
		return;
	}
	if (s->in_closed) {
		reply_error_to(p, s->id, TOOLRUN__ERROR_CODE__ERROR_BUSY,
			       "the stdin of session %s was closed by an earlier end-of-file "
			       "(write --eof); only a TTY session can be sent input again", s->id);
		return;
	}
	if (send_input(s, &c->input, c->eof, why, sizeof(why)) < 0) {
		reply_error_to(p, s->id, TOOLRUN__ERROR_CODE__ERROR_BUSY, "session %s: %s", s->id,
			       why);
		return;
	}
	s->waiting_input = false;
	s->input_at_ms = monotonic_ms();
	session_wait(s, p, c->timeout_ms);
}

/* SIGINT to the running command, as Ctrl-C at a prompt. */
static void interrupt_command(struct session *s)
{
	static const uint8_t ctrl_c = 0x03;

	/* The terminal turns Ctrl-C into SIGINT for its foreground process
	 * group, unless the program reads it raw; without one, bash and its
	 * foreground programs share a group. */
	if (s->tty)
		(void)!write(s->in_fd, &ctrl_c, 1);
	else
		order_kill(s->S->J->orders, s->job_id, SIGINT, KILL_GROUP);
	s->waiting_input = false;
	s->input_at_ms = monotonic_ms();
}

static void session_interrupt(struct session *s, struct session_peer *p,
			      const Toolrun__SessionCall *c)
{
	if (current_job(s))
		interrupt_command(s);
	session_wait(s, p, c->timeout_ms);
}

/* KILL: the signal to every process below the bash; the launcher's
 * answer (sessions_on_killed) says whether there was any. */
static void session_kill(struct session *s, struct session_peer *p,
			 const Toolrun__SessionCall *c)
{
	if (current_job(s) && !s->killing) {
		s->killing = true;
		order_kill(s->S->J->orders, s->job_id, c->signal ? c->signal : SIGKILL,
			   KILL_BELOW);
		s->waiting_input = false;
		s->input_at_ms = monotonic_ms();
	}
	session_wait(s, p, c->timeout_ms);
}

static void session_kill_shell(struct session *s, const char *why);

bool sessions_on_killed(struct sessions *S, uint64_t id, unsigned processes,
			bool shell_ignores_sigint)
{
	struct session *s = session_by_job(S, id);

	if (!s)
		return false;
	if (!s->killing)
		return true; /* the answer to a close's Kill */
	s->killing = false;
	if (!current_job(s) || processes > 0 || s->phase != SESSION_READY)
		return true;
	/* No process below the bash: the command runs in the bash itself
	 * (builtins, a loop), where only an interrupt reaches it. */
	if (!shell_ignores_sigint) {
		interrupt_command(s);
		return true;
	}
	session_kill_shell(s, "the command ran in the shell itself, with no process below it, "
			      "and the shell ignores SIGINT (trap '' INT): only killing the shell "
			      "could stop it, and the session ended with it");
	return true;
}

/* ------------------------------------------------------------------ */
/* The end                                                             */

/* A second after SIGHUP: SIGKILL, as a Kill, not a Release, so that the
 * launcher still reports its bash's end and the session ends (a Release
 * reaps without a word, and a close would wait for nothing). */
static void on_close_grace(struct event_loop *loop, void *data)
{
	struct session *s = data;
	(void)loop;

	order_kill(s->S->J->orders, s->job_id, SIGKILL, KILL_TREE);
}

void session_close(struct session *s, const char *why)
{
	if (s->phase == SESSION_ENDED || s->phase == SESSION_CLOSING)
		return;
	snprintf(s->end_reason, sizeof(s->end_reason), "%s", why);
	if (s->phase != SESSION_READY && s->phase != SESSION_LOADING) {
		session_end(s, why);
		return;
	}
	s->phase = SESSION_CLOSING;
	order_kill(s->S->J->orders, s->job_id, SIGHUP, KILL_TREE);
	timer_arm(s->S->J->loop, &s->idle_timer, CLOSE_GRACE_MS, on_close_grace, s);
}

/* End the session now: SIGKILL to its bash and everything below it. */
static void session_kill_shell(struct session *s, const char *why)
{
	snprintf(s->end_reason, sizeof(s->end_reason), "%s", why);
	s->phase = SESSION_CLOSING;
	order_kill(s->S->J->orders, s->job_id, SIGKILL, KILL_TREE);
	timer_arm(s->S->J->loop, &s->idle_timer, CLOSE_GRACE_MS, on_close_grace, s);
}

static void on_idle(struct event_loop *loop, void *data)
{
	struct session *s = data;
	char why[128];
	(void)loop;

	if (s->phase == SESSION_ENDED) {
		session_forget(s);
		return;
	}
	snprintf(why, sizeof(why), "no call for %u s (session_idle)", s->S->J->cfg->session_idle_s);
	session_close(s, why);
}

void session_touch(struct session *s)
{
	s->last_call_ms = monotonic_ms();
	if (s->phase == SESSION_READY && s->S->J->cfg->session_idle_s)
		timer_arm(s->S->J->loop, &s->idle_timer,
			  (int64_t)s->S->J->cfg->session_idle_s * 1000, on_idle, s);
}

/* Its bash has ended (or never ran): finish the command it ran, tell the
 * waiter, and keep the news for a while. */
void session_end(struct session *s, const char *why)
{
	struct event_loop *loop = s->S->J->loop;

	if (!s->end_reason[0])
		snprintf(s->end_reason, sizeof(s->end_reason), "%s", why);
	s->phase = SESSION_ENDED;
	event_del(loop, &s->status_ev);
	timer_cancel(loop, &s->check_timer);
	struct job *j = current_job(s);
	if (j)
		job_attached_ended(j, W_EXITCODE(0, SIGKILL), false);
	session_close_fds(s);
	order_release(s->S->J->orders, s->job_id);
	timer_arm(loop, &s->idle_timer, ENDED_KEEP_MS, on_idle, s);
	if (s->waiter)
		session_answer(s);
}

bool sessions_on_exited(struct sessions *S, uint64_t id, int wait_status)
{
	struct session *s = session_by_job(S, id);
	char why[sizeof(((struct session *)0)->end_reason)];

	if (!s)
		return false;
	/* A status written before its bash ended counts first. */
	while (read_status(s))
		;
	if (session_loop_failed(s, wait_status))
		return true;
	if (s->end_reason[0])
		snprintf(why, sizeof(why), "%s", s->end_reason);
	else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == SESSION_LOOP_BROKEN)
		snprintf(why, sizeof(why),
			 "a command broke the session's loop (it redefined `builtin`, or disabled "
			 "toolrun's builtin), so no end could be reported: its bash (pid %d) ended",
			 (int)s->pid);
	else if (WIFSIGNALED(wait_status))
		snprintf(why, sizeof(why), "its bash (pid %d) was killed by signal %d",
			 (int)s->pid, WTERMSIG(wait_status));
	else
		snprintf(why, sizeof(why), "its bash (pid %d) exited with status %d",
			 (int)s->pid, WEXITSTATUS(wait_status));
	snprintf(s->end_reason, sizeof(s->end_reason), "%s", why);
	s->phase = SESSION_ENDED;
	/* A command that ended the shell (exit 3, a signal) ends with it:
	 * no status record came for it. */
	struct job *j = current_job(s);
	if (j)
		job_attached_ended(j, wait_status, false);
	session_end(s, why);
	return true;
}

/* A close whose bash has not ended long after its SIGKILL (a machine so
 * loaded that it is not reaped yet, a process stuck in the kernel): the
 * caller hears so, with what will happen. */
static void on_close_overdue(struct event_loop *loop, void *data)
{
	struct session *s = data;
	struct session_peer *p = take_waiter(s);
	(void)loop;

	if (!p)
		return;
	reply_error_to(p, s->id, TOOLRUN__ERROR_CODE__ERROR_BUSY,
		       "session %s is closing, but its bash (pid %d) has not ended %d s after "
		       "SIGHUP and SIGKILL; the session ends when it does (close again to wait "
		       "for it)", s->id, (int)s->pid, SESSION_CLOSE_WAIT_MS / 1000);
}

/* CLOSE: answered when its bash has gone (CLOSED, with the reason), or,
 * past SESSION_CLOSE_WAIT_MS (frame.h), with an error that says why not yet: never
 * with a state that says nothing. */
static void session_close_call(struct session *s, struct session_peer *p)
{
	if (s->waiter)
		session_answer(s);
	session_close(s, "closed by a client (CLOSE)");
	if (s->phase == SESSION_ENDED) {
		session_wait(s, p, 0);
		return;
	}
	s->waiter = p;
	p->waiting_on = s;
	timer_arm(s->S->J->loop, &s->wait_timer, SESSION_CLOSE_WAIT_MS, on_close_overdue, s);
}

/* ------------------------------------------------------------------ */
/* Calls                                                               */

static void session_list(struct sessions *S, struct session_peer *p)
{
	Toolrun__SessionReply r = TOOLRUN__SESSION_REPLY__INIT;
	Toolrun__SessionInfo *infos = calloc(S->count + 1, sizeof(*infos));
	Toolrun__SessionInfo **ptrs = calloc(S->count + 1, sizeof(*ptrs));
	int64_t now = monotonic_ms();

	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		reply_error_to(p, "", TOOLRUN__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return;
	}
	struct session *s;
	TAILQ_FOREACH(s, &S->list, link) {
		if (s->uid != p->who.uid || s->phase == SESSION_ENDED)
			continue;
		Toolrun__SessionInfo *i = &infos[r.n_sessions];
		toolrun__session_info__init(i);
		i->session = s->id;
		i->tty = s->tty;
		i->state = current_state(s);
		i->pid = s->pid;
		i->cwd = (ProtobufCBinaryData){s->cwd ? strlen(s->cwd) : 0, (uint8_t *)s->cwd};
		i->command = (ProtobufCBinaryData){s->command ? strlen(s->command) : 0,
						   (uint8_t *)s->command};
		i->commands = s->commands;
		i->age_ms = (uint64_t)(now - s->created_ms);
		i->idle_ms = (uint64_t)(now - s->last_call_ms);
		ptrs[r.n_sessions++] = i;
	}
	r.session = (char *)"";
	r.sessions = ptrs;
	p->ops->reply(p, &r);
	free(infos);
	free(ptrs);
}

static bool valid_call(struct session_peer *p, const Toolrun__SessionCall *c, int cwd_fd)
{
	char why[160];

	if (policy_session_call(c, cwd_fd >= 0 ? 1 : 0, why, sizeof(why)))
		return true;
	/* An id that breaks the rules is not echoed back. */
	reply_error_to(p, "", TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE, "bad SessionCall: %s", why);
	return false;
}

void sessions_call(struct sessions *S, struct session_peer *p, const Toolrun__SessionCall *c,
		   int cwd_fd)
{
	if (!valid_call(p, c, cwd_fd)) {
		if (cwd_fd >= 0)
			close(cwd_fd);
		return;
	}
	if (c->op == TOOLRUN__SESSION_OP__SESSION_OP_NEW) {
		session_new(S, p, c, cwd_fd);
		return;
	}
	if (c->op == TOOLRUN__SESSION_OP__SESSION_OP_LIST) {
		session_list(S, p);
		return;
	}
	struct session *s = session_by_id(S, c->session, p->who.uid);
	if (!s) {
		reply_error_to(p, c->session, TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED,
			       "no session '%s' for uid %u: it was closed or expired, toolrund "
			       "restarted since it was made, or it is another user's",
			       c->session, (unsigned)p->who.uid);
		return;
	}
	session_touch(s);
	switch (c->op) {
	case TOOLRUN__SESSION_OP__SESSION_OP_RUN:
		if (s->phase != SESSION_READY)
			session_wait(s, p, 0);
		else
			session_run(s, p, c);
		return;
	case TOOLRUN__SESSION_OP__SESSION_OP_WRITE:
		session_write(s, p, c);
		return;
	case TOOLRUN__SESSION_OP__SESSION_OP_INTERRUPT:
		session_interrupt(s, p, c);
		return;
	case TOOLRUN__SESSION_OP__SESSION_OP_KILL:
		session_kill(s, p, c);
		return;
	case TOOLRUN__SESSION_OP__SESSION_OP_CLOSE:
		session_close_call(s, p);
		return;
	case TOOLRUN__SESSION_OP__SESSION_OP_READ:
	default:
		session_wait(s, p, c->timeout_ms);
		return;
	}
}

void sessions_peer_gone(struct sessions *S, struct session_peer *p)
{
	struct session *s = p->waiting_on;
	(void)S;

	if (!s)
		return;
	take_waiter(s);
	/* Its creator left before it heard the id: nobody can use it. */
	if (s->phase == SESSION_OPENING_PTY || s->phase == SESSION_STARTING)
		s->orphan = true;
}

unsigned sessions_open(const struct sessions *S)
{
	const struct session *s;
	unsigned n = 0;

	TAILQ_FOREACH(s, &S->list, link)
		n += s->phase != SESSION_ENDED;
	return n;
}

void sessions_stop_all(struct sessions *S)
{
	for (struct session *s = TAILQ_FIRST(&S->list), *next; s; s = next) {
		next = TAILQ_NEXT(s, link);
		if (s->phase != SESSION_ENDED)
			session_end(s, "toolrund is stopping");
	}
}
