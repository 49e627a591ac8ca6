/*
 * A client of toolrund's sessions (sessclient.h).
 */
#include "sessclient.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "connect.h"
#include "jsontext.h"
#include "sbuf.h"
#include "util.h"
#include "wire.h"

/* How long toolrund may take past the call's own wait. */
#define ANSWER_GRACE_S 10
/* A reply comes in at most this many parts (128 KiB each). */
#define MAX_PARTS 256

static bool send_failed(int r, char *why, size_t len)
{
	/* A daemon that refuses says why, then closes: read it. */
	if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
		snprintf(why, len, "cannot send to toolrund: %s", errno_text(r));
		return true;
	}
	return false;
}

int sess_client_open(struct sess_client *c, const struct config *cfg, char *why, size_t len)
{
	const char *where = cfg->socket;

	*c = (struct sess_client){.fd = -1};
	c->payload = malloc(FRAME_MAX_SERVER_PAYLOAD);
	if (!c->payload) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	c->rd = (struct frame_reader){
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.payload = c->payload,
		.payload_cap = FRAME_MAX_SERVER_PAYLOAD,
	};
	c->fd = connect_daemon(cfg, cfg->wait_daemon_s, &where, why, len);
	if (c->fd < 0) {
		sess_client_close(c);
		return -1;
	}
	if (send_failed(wire_hello(c->fd, TOOLRUN__VERSION__VERSION_2), why, len)) {
		sess_client_close(c);
		return -1;
	}
	return 0;
}

void sess_client_close(struct sess_client *c)
{
	close_fd(&c->fd);
	free(c->payload);
	c->payload = NULL;
}

int sess_client_send(struct sess_client *c, Toolrun__SessionCall *sc, int attach, char *why,
		     size_t len)
{
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;

	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_SESSION_CALL;
	m.session_call = sc;
	/* A CLOSE waits for the session's bash to end, up to its own bound. */
	c->pending_timeout_ms = sc->op == TOOLRUN__SESSION_OP__SESSION_OP_CLOSE
					? SESSION_CLOSE_WAIT_MS
					: sc->timeout_ms;
	return send_failed(wire_send(c->fd, &m, attach), why, len) ? -1 : 0;
}

/* The next reply, waiting out the call's own time and a grace. */
static Toolrun__ServerMessage *receive_one(struct sess_client *c, char *why, size_t len)
{
	return wire_receive(c->fd, &c->rd, (int)(c->pending_timeout_ms / 1000) + ANSWER_GRACE_S,
			    TOOLRUN__SERVER_MESSAGE__MSG_SESSION_REPLY, why, len);
}

/* Append b to *acc. */
static bool gather(ProtobufCBinaryData *acc, ProtobufCBinaryData b)
{
	if (!b.len)
		return true;
	uint8_t *p = realloc(acc->data, acc->len + b.len);
	if (!p)
		return false;
	memcpy(p + acc->len, b.data, b.len);
	acc->data = p;
	acc->len += b.len;
	return true;
}

/* Fetch the rest of a reply in parts: the answer shows the state of its
 * last part. A part that cannot be fetched ends it with what came. */
static void fetch_parts(struct sess_client *c, struct sess_answer *a)
{
	bool parts = false;
	char ignored[256];

	for (int n = 0; a->reply->more && !a->reply->error && n < MAX_PARTS; n++) {
		Toolrun__SessionCall more = TOOLRUN__SESSION_CALL__INIT;
		more.op = TOOLRUN__SESSION_OP__SESSION_OP_READ;
		more.session = a->reply->session;
		if (sess_client_send(c, &more, -1, ignored, sizeof(ignored)) < 0)
			break;
		Toolrun__ServerMessage *next = receive_one(c, ignored, sizeof(ignored));
		if (!next || !gather(&a->out, a->reply->stdout) ||
		    !gather(&a->err, a->reply->stderr)) {
			if (next)
				toolrun__server_message__free_unpacked(next, NULL);
			break;
		}
		toolrun__server_message__free_unpacked(a->sm, NULL);
		a->sm = next;
		a->reply = next->session_reply;
		parts = true;
	}
	a->own_out = a->reply->stdout;
	a->own_err = a->reply->stderr;
	if (parts && gather(&a->out, a->own_out) && gather(&a->err, a->own_err)) {
		a->reply->stdout = a->out;
		a->reply->stderr = a->err;
	}
}

int sess_client_receive(struct sess_client *c, struct sess_answer *a, char *why, size_t len)
{
	*a = (struct sess_answer){0};
	a->sm = receive_one(c, why, len);
	if (!a->sm)
		return -1;
	a->reply = a->sm->session_reply;
	fetch_parts(c, a);
	return 0;
}

int sess_client_call(struct sess_client *c, Toolrun__SessionCall *sc, int attach,
		     struct sess_answer *a, char *why, size_t len)
{
	*a = (struct sess_answer){0};
	if (sess_client_send(c, sc, attach, why, len) < 0)
		return -1;
	return sess_client_receive(c, a, why, len);
}

void sess_answer_free(struct sess_answer *a)
{
	if (a->sm) {
		a->reply->stdout = a->own_out;
		a->reply->stderr = a->own_err;
		toolrun__server_message__free_unpacked(a->sm, NULL);
	}
	free(a->out.data);
	free(a->err.data);
	*a = (struct sess_answer){0};
}

int sess_client_record(struct sess_client *c, const struct front_record *r, char *why,
		       size_t len)
{
	Toolrun__FrontRecord fr = TOOLRUN__FRONT_RECORD__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	size_t target_len = strlen(r->target);

	fr.front = (char *)r->front;
	fr.tool = (char *)r->tool;
	/* The log keeps the start of a long target: toolrund takes 4096 bytes. */
	fr.target = (ProtobufCBinaryData){MIN(target_len, 4096), (uint8_t *)r->target};
	fr.ok = r->ok;
	fr.error_code = (char *)(r->ok || !r->error_code ? "" : r->error_code);
	fr.bytes = r->bytes;
	fr.duration_us = r->duration_us;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_FRONT_RECORD;
	m.front_record = &fr;
	int e = wire_send(c->fd, &m, -1);
	if (e < 0) {
		snprintf(why, len, "cannot send an audit record to toolrund: %s", errno_text(e));
		return -1;
	}
	return 0;
}

bool sess_parse_seconds(const char *s, uint32_t *ms)
{
	char *end;

	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v * 1000 > SESS_MAX_TIMEOUT_MS)
		return false;
	*ms = (uint32_t)(v * 1000 + 0.5);
	return true;
}

bool sess_parse_signal(const char *s, int *signo)
{
	char *end;

	errno = 0;
	long n = strtol(s, &end, 10);
	if (end != s && !*end && !errno) {
		*signo = (int)n;
		return n >= 1 && n <= SESS_MAX_SIGNAL;
	}
	const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	for (int i = 1; i < NSIG; i++)
		if (sigabbrev_np(i) && strcasecmp(sigabbrev_np(i), name) == 0) {
			*signo = i;
			return true;
		}
	return false;
}

/* ------------------------------------------------------------------ */
/* What a reply says                                                   */

const char *sess_state_name(Toolrun__SessionState s)
{
	switch (s) {
	case TOOLRUN__SESSION_STATE__SESSION_STATE_IDLE: return "idle";
	case TOOLRUN__SESSION_STATE__SESSION_STATE_RUNNING: return "running";
	case TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT: return "waiting_input";
	case TOOLRUN__SESSION_STATE__SESSION_STATE_DONE: return "done";
	case TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED: return "closed";
	case TOOLRUN__SESSION_STATE__SESSION_STATE_UNSPECIFIED:
	default: return "unknown";
	}
}

const char *sess_error_name(Toolrun__ErrorCode c)
{
	switch (c) {
	case TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE: return "bad_message";
	case TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED: return "not_found";
	case TOOLRUN__ERROR_CODE__ERROR_BUSY: return "busy";
	case TOOLRUN__ERROR_CODE__ERROR_INTERNAL: return "internal";
	default: return "error";
	}
}

static struct json_object *bytes_json(ProtobufCBinaryData b)
{
	return json_text(b.data, b.len);
}

static void add_stream(struct json_object *o, const char *name, const Toolrun__StreamStats *st)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_dropped_bytes", name);
	json_object_object_add(o, key, json_object_new_uint64(st ? st->bytes_dropped : 0));
	snprintf(key, sizeof(key), "%s_dropped_lines", name);
	json_object_object_add(o, key, json_object_new_uint64(st ? st->lines_dropped : 0));
	snprintf(key, sizeof(key), "%s_spill", name);
	json_object_object_add(o, key,
			       st && st->spill_path && st->spill_path[0]
				       ? json_object_new_string(st->spill_path)
				       : NULL);
}

static void add_exit(struct json_object *o, const Toolrun__Exit *e)
{
	bool sig = e && e->status_case == TOOLRUN__EXIT__STATUS_SIGNAL;
	char name[32] = "";

	if (sig)
		snprintf(name, sizeof(name), "SIG%s",
			 sigabbrev_np(e->signal) ? sigabbrev_np(e->signal) : "UNKNOWN");
	json_object_object_add(o, "exit_code",
			       e && !sig ? json_object_new_int(e->code) : NULL);
	json_object_object_add(o, "signal", sig ? json_object_new_string(name) : NULL);
	json_object_object_add(o, "duration_ms",
			       e ? json_object_new_uint64(e->duration_us / 1000) : NULL);
	add_stream(o, "stdout", e ? e->stdout_stats : NULL);
	add_stream(o, "stderr", e ? e->stderr_stats : NULL);
}

struct json_object *sess_reply_json(const Toolrun__SessionReply *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "session", json_object_new_string(r->session));
	if (r->error) {
		json_object_object_add(o, "error", json_object_new_string(sess_error_name(r->error)));
		json_object_object_add(o, "message", json_object_new_string(r->message));
		return o;
	}
	json_object_object_add(o, "state", json_object_new_string(sess_state_name(r->state)));
	json_object_object_add(o, "command_number", json_object_new_uint64(r->command_number));
	json_object_object_add(o, "stdout", bytes_json(r->stdout));
	json_object_object_add(o, "stderr", bytes_json(r->stderr));
	add_exit(o, r->exit);
	json_object_object_add(o, "message",
			       r->message[0] ? json_object_new_string(r->message) : NULL);
	return o;
}

struct json_object *sess_info_json(const Toolrun__SessionInfo *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "session", json_object_new_string(s->session));
	json_object_object_add(o, "tty", json_object_new_boolean(s->tty));
	json_object_object_add(o, "state", json_object_new_string(sess_state_name(s->state)));
	json_object_object_add(o, "pid", json_object_new_int(s->pid));
	json_object_object_add(o, "cwd", bytes_json(s->cwd));
	json_object_object_add(o, "command", bytes_json(s->command));
	json_object_object_add(o, "commands", json_object_new_uint64(s->commands));
	json_object_object_add(o, "age_ms", json_object_new_uint64(s->age_ms));
	json_object_object_add(o, "idle_ms", json_object_new_uint64(s->idle_ms));
	return o;
}

int sess_command_status(const Toolrun__SessionReply *r)
{
	const Toolrun__Exit *e = r->exit;

	if (r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_RUNNING ||
	    r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT)
		return 124;
	if (!e)
		return r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED ? 125 : 0;
	if (e->status_case == TOOLRUN__EXIT__STATUS_SIGNAL)
		return 128 + e->signal;
	return e->code;
}

/* ------------------------------------------------------------------ */
/* What shaping cut                                                    */

/* The marker's words (daemon/rules/shape.c, emit_marker): "...[toolrun cut "
 * COUNT " of " WHOSE " here: " RANGE "; " WHERE "]", COUNT being "K
 * lines (B bytes)" or "B bytes". */
#define MARKER_START "...[toolrun cut "
/* The longest marker shape.c writes (its buffer: a path and words). */
#define MARKER_MAX (2 * CONFIG_PATH_MAX + 512)

struct marker {
	char range[256]; /* "lines 101-99900 of 100000" */
	char where[MARKER_MAX]; /* "the whole stdout is in PATH" */
};

/* "K line(s) (B byte(s))" or "B byte(s)" at *p, checked against the
 * stream's counts: a line the command printed to look like the marker
 * does not count unless it says what the daemon's does. */
static bool marker_counts(const char **p, const Toolrun__StreamStats *st)
{
	char *end;
	unsigned long long n = strtoull(*p, &end, 10), bytes = n;

	if (end == *p)
		return false;
	if (strncmp(end, " line", 5) == 0) {
		if (n != st->lines_dropped || !(end = strstr(end, " (")))
			return false;
		bytes = strtoull(end + 2, &end, 10);
	}
	if (bytes != st->bytes_dropped || strncmp(end, " byte", 5) != 0)
		return false;
	*p = end;
	return true;
}

/* line[0..len), without its newline, as the marker of stream name. */
static bool parse_marker(const char *line, size_t len, const char *name,
			 const Toolrun__StreamStats *st, struct marker *m)
{
	char text[MARKER_MAX];
	const char *p = text + strlen(MARKER_START);

	if (len >= sizeof(text) || len < strlen(MARKER_START) || line[len - 1] != ']')
		return false;
	memcpy(text, line, len - 1);
	text[len - 1] = '\0';
	if (!marker_counts(&p, st))
		return false;
	const char *here = strstr(p, " here: ");
	const char *whole = here ? strstr(here, "; the whole ") : NULL;
	size_t nlen = strlen(name);
	if (!whole || (size_t)(here - p) < nlen || strncmp(here - nlen, name, nlen) != 0)
		return false;
	here += strlen(" here: ");
	snprintf(m->range, sizeof(m->range), "%.*s", (int)(whole - here), here);
	snprintf(m->where, sizeof(m->where), "%s", whole + 2);
	return true;
}

/* The last marker of stream name in this reply's text of it. */
static bool find_marker(ProtobufCBinaryData t, const char *name, const Toolrun__StreamStats *st,
			struct marker *m)
{
	const char *s = (const char *)t.data;
	bool found = false;

	for (size_t i = 0; i < t.len;) {
		const char *nl = memchr(s + i, '\n', t.len - i);
		size_t end = nl ? (size_t)(nl - s) : t.len;
		if (end - i > strlen(MARKER_START) &&
		    memcmp(s + i, MARKER_START, strlen(MARKER_START)) == 0)
			found |= parse_marker(s + i, end - i, name, st, m);
		i = end + 1;
	}
	return found;
}

/* Where the whole stream is, from the counts alone. */
static void cut_where(struct sbuf *sb, const char *name, const Toolrun__StreamStats *st)
{
	sbuf_add(sb, "the whole ");
	sbuf_add(sb, name);
	if (!st->spill_path || !st->spill_path[0]) {
		sbuf_add(sb, " is not kept");
		return;
	}
	sbuf_add(sb, " is in ");
	sbuf_add(sb, st->spill_path);
	if (st->spill_partial)
		sbuf_add(sb, " (partial: its first part only)");
}

/* "stdout lines 101-99900 of 100000 (at the marker above); the whole
 * stdout is in PATH", or without the marker (an earlier reply carried
 * it, or a binary stream's summary stands for it) the counts: "stdout
 * 588002 of 688895 bytes, 99800 of 100000 lines; ...". A terminal's one
 * stream, stdout and stderr joined, is "output" in the marker. */
static void cut_clause(struct sbuf *sb, const char *name, const Toolrun__StreamStats *st,
		       ProtobufCBinaryData text)
{
	struct marker *m = malloc(sizeof(*m));
	bool joined = false;

	if (m && (find_marker(text, name, st, m) ||
		  (strcmp(name, "stdout") == 0 && (joined = find_marker(text, "output", st, m))))) {
		sbuf_add(sb, joined ? "output" : name);
		sbuf_addc(sb, ' ');
		sbuf_add(sb, m->range);
		sbuf_add(sb, " (at the marker above); ");
		sbuf_add(sb, m->where);
	} else {
		sbuf_add(sb, name);
		sbuf_addc(sb, ' ');
		sbuf_add_u64(sb, st->bytes_dropped);
		sbuf_add(sb, " of ");
		sbuf_add_u64(sb, st->bytes_seen);
		sbuf_add(sb, st->bytes_seen == 1 ? " byte, " : " bytes, ");
		sbuf_add_u64(sb, st->lines_dropped);
		sbuf_add(sb, " of ");
		sbuf_add_u64(sb, st->lines_seen);
		sbuf_add(sb, st->lines_seen == 1 ? " line; " : " lines; ");
		cut_where(sb, name, st);
	}
	free(m);
}

void sess_cut_line(const Toolrun__SessionReply *r, char *s, size_t len)
{
	struct sbuf sb = {.buf = s, .cap = len};
	const Toolrun__Exit *e = r->exit;
	const Toolrun__StreamStats *st[2] = {e ? e->stdout_stats : NULL,
					     e ? e->stderr_stats : NULL};
	const ProtobufCBinaryData text[2] = {r->stdout, r->stderr};
	static const char *const name[2] = {"stdout", "stderr"};
	unsigned clauses = 0;

	if (len)
		s[0] = '\0';
	if (r->state != TOOLRUN__SESSION_STATE__SESSION_STATE_DONE &&
	    r->state != TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED)
		return;
	for (int i = 0; i < 2; i++) {
		if (!st[i] || (!st[i]->bytes_dropped && !st[i]->lines_dropped))
			continue;
		sbuf_add(&sb, clauses++ ? ". And " : "cut: ");
		cut_clause(&sb, name[i], st[i], text[i]);
	}
}
