/*
 * The tools of `toolrun mcp` (mcptools.h, docs/mcp.md).
 */
#include "mcptools.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results.h"
#include "util.h"

extern char **environ;

/* After toolrund could not take an audit record, how long file calls go
 * on without trying again. */
#define AUDIT_RETRY_MS 30000

/* ------------------------------------------------------------------ */
/* Schemas                                                             */

#define SESSION_ARG                                                                          \
	"\"session\":{\"type\":\"string\",\"description\":\"A session id (from an earlier "     \
	"result or `toolrun session new`); default: this server's own session\"}"
#define TIMEOUT_ARG(dflt)                                                                    \
	"\"timeout\":{\"type\":\"number\",\"minimum\":0,\"maximum\":3600,\"description\":"      \
	"\"Seconds to wait before answering while the command still runs (default " dflt     \
	"); the command keeps running after it\"}"

#define COMMAND_OUTPUT                                                                       \
	"{\"type\":\"object\",\"required\":[\"session\",\"state\",\"stdout\",\"stderr\"],"       \
	"\"properties\":{"                                                                   \
	"\"session\":{\"type\":\"string\"},"                                                 \
	"\"command_number\":{\"type\":\"integer\"}," MCP_COMMAND_PROPERTIES "}}"

/* ------------------------------------------------------------------ */
/* Results                                                             */

static struct json_object *text_block(const char *text)
{
	struct json_object *a = json_object_new_array(), *b = json_object_new_object();

	json_object_object_add(b, "type", json_object_new_string("text"));
	json_object_object_add(b, "text", json_object_new_string(text));
	json_object_array_add(a, b);
	return a;
}

struct json_object *mcp_tool_error(const struct front_error *e)
{
	struct json_object *r = json_object_new_object();
	char line[sizeof(e->message) + 64];

	snprintf(line, sizeof(line), "%s %s: %s", front_category_name(e->category), e->code,
		 e->message);
	json_object_object_add(r, "content", text_block(line));
	json_object_object_add(r, "isError", json_object_new_boolean(1));
	return r;
}

struct json_object *mcp_fail(enum front_category c, const char *code, const char *fmt, ...)
{
	struct front_error e = {.category = c};
	va_list ap;

	snprintf(e.code, sizeof(e.code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);
	return mcp_tool_error(&e);
}

struct json_object *mcp_tool_result(struct json_object *structured, const char *text)
{
	struct json_object *r = json_object_new_object();

	json_object_object_add(r, "content", text_block(text));
	json_object_object_add(r, "structuredContent", structured);
	json_object_object_add(r, "isError", json_object_new_boolean(0));
	return r;
}

/* ------------------------------------------------------------------ */
/* Arguments                                                           */

const char *mcp_arg_string(struct json_object *args, const char *key, bool *bad)
{
	struct json_object *v;

	if (!json_object_object_get_ex(args, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	if (!json_object_is_type(v, json_type_string)) {
		*bad = true;
		return NULL;
	}
	return json_object_get_string(v);
}

bool mcp_holds_nul(struct json_object *args, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(args, key, &v) &&
	       strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v);
}

/* JSON may hold \u0000, which a C string would cut short. */
const char *mcp_arg_path(struct json_object *args, const char *key, bool *bad,
			 struct front_error *e)
{
	struct json_object *v;

	const char *p = mcp_arg_string(args, key, bad);
	if (!p)
		return NULL;
	json_object_object_get_ex(args, key, &v);
	if (path_check_bytes(p, (size_t)json_object_get_string_len(v), e) < 0)
		return NULL;
	return p;
}

bool mcp_arg_bool(struct json_object *args, const char *key, bool dflt, bool *bad)
{
	struct json_object *v;

	if (!json_object_object_get_ex(args, key, &v) || json_object_is_type(v, json_type_null))
		return dflt;
	if (!json_object_is_type(v, json_type_boolean)) {
		*bad = true;
		return dflt;
	}
	return json_object_get_boolean(v);
}

double mcp_arg_number(struct json_object *args, const char *key, double dflt, double max,
		      bool *bad)
{
	struct json_object *v;

	if (!json_object_object_get_ex(args, key, &v) || json_object_is_type(v, json_type_null))
		return dflt;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
		*bad = true;
		return dflt;
	}
	double d = json_object_get_double(v);
	if (!(d >= 0 && d <= max)) {
		*bad = true;
		return dflt;
	}
	return d;
}

struct json_object *mcp_bad_arguments(const char *tool, const char *what)
{
	return mcp_fail(FRONT_SYNTAX, "BAD_ARGUMENT", "%s: %s (tools/list gives the input schema)",
			tool, what);
}

/* ------------------------------------------------------------------ */
/* The session                                                         */

int mcp_connect(struct mcp_tools *T, char *why, size_t len)
{
	if (T->conn.fd >= 0)
		return 0;
	return sess_client_open(&T->conn, T->cfg, why, len);
}

int mcp_new_session(struct mcp_tools *T, int dir_fd, const char *dir, bool tty, char *id,
		    char *why, size_t len)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	struct sess_answer a;
	size_t n = 0;

	while (environ[n])
		n++;
	ProtobufCBinaryData *env = calloc(n + 1, sizeof(*env));
	if (!env) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		env[i] = (ProtobufCBinaryData){strlen(environ[i]), (uint8_t *)environ[i]};
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_NEW;
	sc.session = (char *)"";
	sc.cwd = (ProtobufCBinaryData){strlen(dir), (uint8_t *)dir};
	sc.envp = env;
	sc.n_envp = n;
	sc.tty = tty;
	int r = sess_client_call(&T->conn, &sc, dir_fd, &a, why, len);
	free(env);
	if (r < 0)
		return -1;
	if (a.reply->error) {
		snprintf(why, len, "toolrund refused a new session: %s", a.reply->message);
		r = -1;
	} else {
		snprintf(id, 65, "%s", a.reply->session);
	}
	sess_answer_free(&a);
	return r;
}

/* The server's own session, for bash: in the root. */
static int own_session(struct mcp_tools *T, char *why, size_t len)
{
	if (mcp_new_session(T, T->paths.root_fd, T->paths.root, false, T->session, why, len) < 0)
		return -1;
	T->own_session = true;
	return 0;
}

/* One call to the session named by args (or ours, made on the first
 * bash call: create). On a closed connection (toolrund restarted) the
 * call is made once more on a new one, unless it was sent already. */
static int session_call(struct mcp_tools *T, struct json_object *args, Toolrun__SessionCall *sc,
			bool create, struct sess_answer *a, char *why, size_t len)
{
	bool bad = false;
	const char *id = mcp_arg_string(args, "session", &bad);

	if (mcp_connect(T, why, len) < 0)
		return -1;
	if (!id && !T->session[0]) {
		if (!create) {
			snprintf(why, len, "no command has run in this server's session yet: call "
					   "bash first, or name a session");
			return -1;
		}
		if (own_session(T, why, len) < 0)
			return -1;
	}
	sc->session = (char *)(id ? id : T->session);
	return T->wait_call(T->server, T, sc, -1, a, why, len);
}


/* After a KILL's command ended: what became of it and of the shell. A
 * command with no process below the shell (a loop of builtins) was
 * interrupted instead, which the reply does not tell apart. */
static const char *kill_note(const Toolrun__SessionCall *sc, const Toolrun__Exit *e)
{
	if (sc->op != TOOLRUN__SESSION_OP__SESSION_OP_KILL || !e)
		return "";
	return "; the command's processes were killed (a loop in the shell itself was "
	       "interrupted); the shell and its state (directory, variables, functions) are kept";
}

/* The last line of a command's text: what happened and what to do. */
static void status_line(const Toolrun__SessionCall *sc, const Toolrun__SessionReply *r, char *s,
			size_t len)
{
	const Toolrun__Exit *e = r->exit;

	switch (r->state) {
	case TOOLRUN__SESSION_STATE__SESSION_STATE_RUNNING:
		snprintf(s, len, "[still running in session %s: call bash_output to wait for more, "
				 "bash_input to send input, bash_interrupt to stop it (bash_kill if "
				 "it ignores Ctrl-C)]", r->session);
		return;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT:
		snprintf(s, len, "[waiting for input in session %s: call bash_input with the text, "
				 "or bash_interrupt to stop it]", r->session);
		return;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED:
		snprintf(s, len, "[session %s closed: %s; the next bash call starts a new session]",
			 r->session, r->message);
		return;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_IDLE:
		snprintf(s, len, "[no command is running in session %s]", r->session);
		return;
	default:
		break;
	}
	char exit[128];

	mcp_exit_summary(e, exit, sizeof(exit));
	snprintf(s, len, "[%s%s]", exit, kill_note(sc, e));
}

void mcp_exit_summary(const Toolrun__Exit *e, char *s, size_t len)
{
	if (e && e->status_case == TOOLRUN__EXIT__STATUS_SIGNAL)
		snprintf(s, len, "killed by signal %s after %llu ms",
			 sigabbrev_np(e->signal) ? sigabbrev_np(e->signal) : "?",
			 (unsigned long long)(e->duration_us / 1000));
	else if (e && e->code > 128 && e->code < 128 + NSIG && sigabbrev_np(e->code - 128))
		/* bash's status for a command a signal ended (an interrupt:
		 * 130, SIGINT). */
		snprintf(s, len, "exit %d (128+SIG%s) after %llu ms", e->code,
			 sigabbrev_np(e->code - 128), (unsigned long long)(e->duration_us / 1000));
	else
		snprintf(s, len, "exit %d after %llu ms", e ? e->code : 0,
			 (unsigned long long)(e ? e->duration_us / 1000 : 0));
}

char *mcp_command_text(const Toolrun__SessionReply *r, const char *status, const char *more)
{
	struct front_buf t = {0};
	char cut[SESS_CUT_LINE_MAX];

	front_buf_add(&t, "", 0);
	front_buf_add(&t, (const char *)r->stdout.data, r->stdout.len);
	if (r->stderr.len) {
		if (front_buf_mid_line(&t))
			front_buf_add(&t, "\n", 1);
		front_buf_add(&t, "[stderr]\n", 9);
		front_buf_add(&t, (const char *)r->stderr.data, r->stderr.len);
	}
	if (front_buf_mid_line(&t))
		front_buf_add(&t, "\n", 1);
	front_buf_add(&t, status, strlen(status));
	sess_cut_line(r, cut, sizeof(cut));
	if (cut[0] || more[0]) {
		front_buf_add(&t, "\n[", 2);
		front_buf_add(&t, cut[0] ? cut : "cut: ", strlen(cut[0] ? cut : "cut: "));
		if (cut[0] && more[0])
			front_buf_add(&t, ". And ", 6);
		front_buf_add(&t, more, strlen(more));
		front_buf_add(&t, "]", 1);
	}
	return t.p;
}

static struct json_object *command_result(struct mcp_tools *T, const Toolrun__SessionCall *sc,
					  struct sess_answer *a)
{
	const Toolrun__SessionReply *r = a->reply;

	if (r->error) {
		struct json_object *res = mcp_fail(FRONT_EXECUTION, "SESSION",
						   "session %s: %s", r->session[0] ? r->session : "-",
						   r->message);
		sess_answer_free(a);
		return res;
	}
	/* Our own session is gone (exit, idle): the next call makes one. */
	if (r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED &&
	    strcmp(r->session, T->session) == 0)
		T->session[0] = 0;
	char status[512];
	status_line(sc, r, status, sizeof(status));
	char *text = mcp_command_text(r, status, "");
	struct json_object *res = mcp_tool_result(sess_reply_json(r), text ? text : "");
	free(text);
	sess_answer_free(a);
	return res;
}

static uint32_t timeout_ms(double seconds)
{
	return (uint32_t)(seconds * 1000 + 0.5);
}

static struct json_object *run_session_op(struct mcp_tools *T, struct json_object *args,
					  Toolrun__SessionCall *sc, bool create)
{
	struct sess_answer a;
	char why[512];

	if (session_call(T, args, sc, create, &a, why, sizeof(why)) < 0) {
		sess_client_close(&T->conn); /* a broken connection: the next call makes one */
		return mcp_fail(FRONT_EXECUTION, "TOOLRUND", "%s", why);
	}
	/* Our session vanished (toolrund restarted): once more in a new one. */
	if (create && a.reply->error == TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED &&
	    !mcp_arg_string(args, "session", &(bool){0})) {
		sess_answer_free(&a);
		T->session[0] = 0;
		if (session_call(T, args, sc, create, &a, why, sizeof(why)) < 0) {
			sess_client_close(&T->conn);
			return mcp_fail(FRONT_EXECUTION, "TOOLRUND", "%s", why);
		}
	}
	return command_result(T, sc, &a);
}

static struct json_object *tool_bash(struct mcp_tools *T, struct json_object *args)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	bool bad = false;
	const char *cmd = mcp_arg_string(args, "command", &bad);
	double t = mcp_arg_number(args, "timeout", 30, 3600, &bad);

	mcp_arg_string(args, "session", &bad);
	if (bad || !cmd)
		return mcp_bad_arguments("bash", "command (a string) is required; session is a string; "
						 "timeout is seconds from 0 to 3600");
	if (!cmd[0])
		return mcp_fail(FRONT_SYNTAX, "EMPTY_COMMAND", "bash: the command is empty");
	if (mcp_holds_nul(args, "command"))
		return mcp_fail(FRONT_VALIDATION, "NUL_BYTE", "bash: the command holds a NUL byte, "
							   "which would cut it short");
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_RUN;
	sc.command = (ProtobufCBinaryData){strlen(cmd), (uint8_t *)cmd};
	sc.timeout_ms = timeout_ms(t);
	return run_session_op(T, args, &sc, true);
}

static struct json_object *tool_bash_output(struct mcp_tools *T, struct json_object *args)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	bool bad = false;
	double t = mcp_arg_number(args, "timeout", 10, 3600, &bad);

	mcp_arg_string(args, "session", &bad);
	if (bad)
		return mcp_bad_arguments("bash_output", "session is a string; timeout is seconds from "
							"0 to 3600");
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_READ;
	sc.timeout_ms = timeout_ms(t);
	return run_session_op(T, args, &sc, false);
}

static struct json_object *tool_bash_input(struct mcp_tools *T, struct json_object *args)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	bool bad = false;
	const char *text = mcp_arg_string(args, "text", &bad);
	bool newline = mcp_arg_bool(args, "newline", true, &bad);
	bool eof = mcp_arg_bool(args, "eof", false, &bad);
	double t = mcp_arg_number(args, "timeout", 1, 3600, &bad);

	mcp_arg_string(args, "session", &bad);
	if (bad || (!text && !eof))
		return mcp_bad_arguments("bash_input", "text (a string) is required unless eof is true");
	if (text && mcp_holds_nul(args, "text"))
		return mcp_fail(FRONT_VALIDATION, "NUL_BYTE", "bash_input: the text holds a NUL byte "
							      "(a terminal cannot send one either)");
	size_t n = text ? strlen(text) : 0;
	char *input = malloc(n + 2);
	if (!input)
		return mcp_fail(FRONT_INTERNAL, "NO_MEMORY", "bash_input: out of memory");
	memcpy(input, text ? text : "", n);
	if (text && newline)
		input[n++] = '\n';
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_WRITE;
	sc.input = (ProtobufCBinaryData){n, (uint8_t *)input};
	sc.eof = eof;
	sc.timeout_ms = timeout_ms(t);
	struct json_object *r = run_session_op(T, args, &sc, false);
	free(input);
	return r;
}

static struct json_object *tool_bash_interrupt(struct mcp_tools *T, struct json_object *args)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	bool bad = false;
	double t = mcp_arg_number(args, "timeout", 1, 3600, &bad);

	mcp_arg_string(args, "session", &bad);
	if (bad)
		return mcp_bad_arguments("bash_interrupt", "session is a string; timeout is seconds");
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_INTERRUPT;
	sc.timeout_ms = timeout_ms(t);
	return run_session_op(T, args, &sc, false);
}

void mcp_side_call(struct mcp_tools *T, const char *session, Toolrun__SessionOp op)
{
	struct sess_client c;
	struct sess_answer a;
	char why[512];
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;

	if (sess_client_open(&c, T->cfg, why, sizeof(why)) < 0)
		return;
	sc.op = op;
	sc.session = (char *)session;
	if (sess_client_call(&c, &sc, -1, &a, why, sizeof(why)) == 0)
		sess_answer_free(&a);
	sess_client_close(&c);
}

/* signal: absent (SIGKILL), a name ("TERM", "SIGTERM") or a number. */
static bool arg_signal(struct json_object *args, int *signo)
{
	struct json_object *v;

	*signo = SIGKILL;
	if (!json_object_object_get_ex(args, "signal", &v) || json_object_is_type(v, json_type_null))
		return true;
	if (json_object_is_type(v, json_type_int)) {
		int64_t n = json_object_get_int64(v);
		*signo = (int)n;
		return n >= 1 && n <= SESS_MAX_SIGNAL;
	}
	return json_object_is_type(v, json_type_string) &&
	       sess_parse_signal(json_object_get_string(v), signo);
}

static struct json_object *tool_bash_kill(struct mcp_tools *T, struct json_object *args)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	bool bad = false;
	double t = mcp_arg_number(args, "timeout", 1, 3600, &bad);

	mcp_arg_string(args, "session", &bad);
	if (bad || !arg_signal(args, &sc.signal))
		return mcp_bad_arguments("bash_kill", "session is a string; timeout is seconds; signal "
						      "is a name (TERM, SIGTERM) or a number from 1 to 64");
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_KILL;
	sc.timeout_ms = timeout_ms(t);
	return run_session_op(T, args, &sc, false);
}

void mcp_tools_interrupt(struct mcp_tools *T, const char *session)
{
	mcp_side_call(T, session, TOOLRUN__SESSION_OP__SESSION_OP_INTERRUPT);
}

void mcp_tools_end(struct mcp_tools *T)
{
	if (T->own_session && T->session[0] && !T->keep_sessions)
		mcp_side_call(T, T->session, TOOLRUN__SESSION_OP__SESSION_OP_CLOSE);
	T->own_session = false;
	mcp_exec_end(T, T->keep_sessions);
}

/* ------------------------------------------------------------------ */
/* Files and search                                                    */

/* One audit line for a call that ran no program; best effort. */
static void audit(struct mcp_tools *T, const char *tool, const char *target,
		  const struct front_error *e, uint64_t bytes, uint64_t start_us)
{
	struct front_record r = {
		.front = "mcp",
		.tool = tool,
		.target = target ? target : "",
		.ok = e == NULL,
		.error_code = e ? e->code : NULL,
		.bytes = bytes,
		.duration_us = monotonic_us() - start_us,
	};
	char why[512];

	/* toolrund down: a file call must not wait for it each time. */
	if (T->conn.fd < 0 && monotonic_ms() < T->audit_retry_ms)
		return;
	if (mcp_connect(T, why, sizeof(why)) == 0 &&
	    sess_client_record(&T->conn, &r, why, sizeof(why)) == 0)
		return;
	sess_client_close(&T->conn);
	T->audit_retry_ms = monotonic_ms() + AUDIT_RETRY_MS;
	if (!T->audit_warned)
		fprintf(stderr, "toolrun mcp: %s; file and search calls go unaudited until "
				"toolrund answers\n", why);
	T->audit_warned = true;
}

/* After the lines: which part of the file they are, and how to go on. */
static void read_note(const struct read_result *r, bool newline_first, char *s, size_t len)
{
	char span[128];

	s[0] = '\0';
	if (!r->binary && r->total_lines && !r->last_line) {
		snprintf(s, len, "[nothing shown: the offset is past the end of the file, which "
				 "has %llu line%s]", (unsigned long long)r->total_lines,
			 r->total_lines == 1 ? "" : "s");
		return;
	}
	read_result_span(r, span, sizeof(span));
	if (!span[0])
		return;
	if (r->last_line < r->total_lines)
		snprintf(s, len, "%s[%s shown; read_file with offset %llu reads on]",
			 newline_first ? "\n" : "", span, (unsigned long long)r->last_line + 1);
	else
		snprintf(s, len, "%s[%s]", newline_first ? "\n" : "", span);
}

static struct json_object *tool_read_file(struct mcp_tools *T, struct json_object *args)
{
	bool bad = false;
	struct read_request rq = {.numbered = true};
	struct read_result out = {0};
	struct front_error e;
	uint64_t start = monotonic_us();

	e.code[0] = 0;
	rq.path = mcp_arg_path(args, "path", &bad, &e);
	if (e.code[0])
		return mcp_tool_error(&e);
	rq.offset = (uint64_t)mcp_arg_number(args, "offset", 0, 1e15, &bad);
	rq.limit = (uint64_t)mcp_arg_number(args, "limit", 0, 1e15, &bad);
	rq.from_end = mcp_arg_bool(args, "from_end", false, &bad);
	if (bad || !rq.path)
		return mcp_bad_arguments("read_file", "path (a string) is required; offset and limit "
						      "are line counts; from_end is a boolean");
	if (front_read_file(&T->paths, &T->budget, &rq, &out, &e) < 0) {
		audit(T, "read_file", rq.path, &e, 0, start);
		return mcp_tool_error(&e);
	}
	audit(T, "read_file", rq.path, NULL, out.text_len, start);
	struct json_object *o = read_result_json(&out);
	struct front_buf text = {0};
	char note[PATH_MAX + 256] = "";
	front_buf_add(&text, out.text, out.text_len);
	read_note(&out, front_buf_mid_line(&text), note, sizeof(note));
	front_buf_add(&text, note, strlen(note));
	struct json_object *r = mcp_tool_result(o, text.p ? text.p : "");
	free(text.p);
	read_result_free(&out);
	return r;
}

static struct json_object *tool_write_file(struct mcp_tools *T, struct json_object *args)
{
	bool bad = false;
	struct write_result w = {0};
	struct front_error e = {.code = ""};
	uint64_t start = monotonic_us();
	const char *path = mcp_arg_path(args, "path", &bad, &e);
	struct json_object *content;

	if (e.code[0])
		return mcp_tool_error(&e);
	char text[PATH_MAX + 128];

	if (!json_object_object_get_ex(args, "content", &content) ||
	    !json_object_is_type(content, json_type_string) || bad || !path)
		return mcp_bad_arguments("write_file", "path and content (strings) are required");
	size_t len = (size_t)json_object_get_string_len(content);
	if (front_write_file(&T->paths, path, json_object_get_string(content), len, &w, &e) < 0) {
		audit(T, "write_file", path, &e, 0, start);
		return mcp_tool_error(&e);
	}
	audit(T, "write_file", path, NULL, len, start);
	snprintf(text, sizeof(text), "%s %s (%llu bytes)", w.created ? "created" : "replaced", w.rel,
		 (unsigned long long)w.bytes);
	return mcp_tool_result(write_result_json(&w, false), text);
}

static struct json_object *tool_edit_file(struct mcp_tools *T, struct json_object *args)
{
	bool bad = false;
	struct write_result w = {0};
	struct front_error e = {.code = ""};
	uint64_t start = monotonic_us();
	const char *path = mcp_arg_path(args, "path", &bad, &e);
	struct json_object *old, *new;

	if (e.code[0])
		return mcp_tool_error(&e);
	char text[PATH_MAX + 128];

	if (!json_object_object_get_ex(args, "old_string", &old) ||
	    !json_object_object_get_ex(args, "new_string", &new) ||
	    !json_object_is_type(old, json_type_string) ||
	    !json_object_is_type(new, json_type_string) || bad || !path)
		return mcp_bad_arguments("edit_file", "path, old_string and new_string (strings) are "
						      "required");
	if (front_edit_file(&T->paths, path, json_object_get_string(old),
			    (size_t)json_object_get_string_len(old), json_object_get_string(new),
			    (size_t)json_object_get_string_len(new), &w, &e) < 0) {
		audit(T, "edit_file", path, &e, 0, start);
		return mcp_tool_error(&e);
	}
	audit(T, "edit_file", path, NULL, w.bytes, start);
	snprintf(text, sizeof(text), "edited %s: 1 replacement, %llu bytes now", w.rel,
		 (unsigned long long)w.bytes);
	return mcp_tool_result(write_result_json(&w, true), text);
}

static char *search_text(const char *query, const struct search_result *s)
{
	struct front_buf t = {0};
	char line[512];

	front_buf_add(&t, "", 0);
	for (size_t i = 0; i < s->nhits; i++) {
		snprintf(line, sizeof(line), "%s:%llu: ", s->hits[i].path,
			 (unsigned long long)s->hits[i].line);
		front_buf_add(&t, line, strlen(line));
		front_buf_add(&t, s->hits[i].snippet, strlen(s->hits[i].snippet));
		front_buf_add(&t, "\n", 1);
	}
	snprintf(line, sizeof(line), "[%zu hit%s for \"%.200s\" in %llu indexed files]", s->nhits,
		 s->nhits == 1 ? "" : "s", query, (unsigned long long)s->files_indexed);
	front_buf_add(&t, line, strlen(line));
	return t.p;
}

static struct json_object *tool_search(struct mcp_tools *T, struct json_object *args)
{
	bool bad = false;
	struct search_result s = {0};
	struct front_error e;
	uint64_t start = monotonic_us();
	const char *query = mcp_arg_string(args, "query", &bad);
	struct search_options o = T->search;

	o.limit = (size_t)mcp_arg_number(args, "limit", SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT, &bad);
	if (bad || !query)
		return mcp_bad_arguments("search", "query (a string) is required; limit is 1 to 100");
	if (front_search(&T->paths, &o, query, &s, &e) < 0) {
		audit(T, "search", query, &e, 0, start);
		return mcp_tool_error(&e);
	}
	char *text = search_text(query, &s);
	audit(T, "search", query, NULL, text ? strlen(text) : 0, start);
	struct json_object *r = mcp_tool_result(search_result_json(query, &s), text ? text : "");
	free(text);
	search_result_free(&s);
	return r;
}

/* ------------------------------------------------------------------ */
/* The table                                                           */

static const struct mcp_tool tools[] = {
	{"bash", "Run a shell command",
	 "Run a command in a persistent bash session inside the box (cd, variables and functions "
	 "persist between calls). Returns its stdout and stderr, its exit code and its state. "
	 "Output over the budget is cut in the middle with a marker; the whole of it is kept in "
	 "the spill file named in the result. A command still running after `timeout` seconds "
	 "goes on: bash_output waits for more, bash_input answers a prompt, bash_interrupt stops it.",
	 "{\"type\":\"object\",\"required\":[\"command\"],\"properties\":{"
	 "\"command\":{\"type\":\"string\",\"description\":\"bash source, as typed at a prompt\"},"
	 SESSION_ARG "," TIMEOUT_ARG("30") "}}",
	 COMMAND_OUTPUT, tool_bash, MCP_SET_TOOLRUN},
	{"bash_output", "Wait for more output",
	 "Wait up to `timeout` seconds for more output of the command running in the session, and "
	 "return it (only what came since the last call) with the command's state.",
	 "{\"type\":\"object\",\"properties\":{" SESSION_ARG "," TIMEOUT_ARG("10") "}}",
	 COMMAND_OUTPUT, tool_bash_output, MCP_SET_TOOLRUN},
	{"bash_input", "Send input to the command",
	 "Send text to the standard input of the command running in the session (a newline is "
	 "added unless `newline` is false), then return its output and state. `eof` closes the "
	 "session's input for good: later commands of the session read end of file too, so use "
	 "it only for a command that must see the end of its input, in a session of its own.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"text\":{\"type\":\"string\"},"
	 "\"newline\":{\"type\":\"boolean\",\"description\":\"add a newline (default true)\"},"
	 "\"eof\":{\"type\":\"boolean\",\"description\":\"then close the command's input\"},"
	 SESSION_ARG "," TIMEOUT_ARG("1") "}}",
	 COMMAND_OUTPUT, tool_bash_input, MCP_SET_TOOLRUN},
	{"bash_interrupt", "Interrupt the command",
	 "Interrupt the command running in the session, as Ctrl-C does: the command ends, the "
	 "session and its state live on.",
	 "{\"type\":\"object\",\"properties\":{" SESSION_ARG "," TIMEOUT_ARG("1") "}}",
	 COMMAND_OUTPUT, tool_bash_interrupt, MCP_SET_TOOLRUN},
	{"bash_kill", "Kill the command",
	 "Kill the command running in the session when bash_interrupt does not stop it: the "
	 "signal (default SIGKILL) goes to every process the command started, wherever it went; "
	 "the session's shell and its state (directory, variables, functions) live on. A command "
	 "that runs in the shell itself (a loop of builtins) is interrupted instead; if the shell "
	 "ignores SIGINT too, only ending the shell stops it, and the session is closed (the "
	 "result says why).",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"signal\":{\"type\":[\"string\",\"integer\"],\"description\":\"The signal to send: a "
	 "name (TERM, SIGTERM) or a number from 1 to 64 (default KILL)\"},"
	 SESSION_ARG "," TIMEOUT_ARG("1") "}}",
	 COMMAND_OUTPUT, tool_bash_kill, MCP_SET_TOOLRUN},
	{"read_file", "Read a file",
	 "Read a text file's lines, numbered, within the output budget: `offset` is the first line "
	 "(from 1), `limit` how many; with `from_end`, `offset` counts from the end. Gives the total "
	 "line count. A binary file gives a one-line summary. Paths are relative to the root.",
	 "{\"type\":\"object\",\"required\":[\"path\"],\"properties\":{"
	 "\"path\":{\"type\":\"string\"},"
	 "\"offset\":{\"type\":\"integer\",\"minimum\":0},"
	 "\"limit\":{\"type\":\"integer\",\"minimum\":0},"
	 "\"from_end\":{\"type\":\"boolean\"}}}",
	 "{\"type\":\"object\",\"required\":[\"path\",\"total_lines\",\"text\"],\"properties\":{"
	 "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	 "\"total_lines\":{\"type\":\"integer\"},\"first_line\":{\"type\":\"integer\"},"
	 "\"last_line\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\"},"
	 "\"binary\":{\"type\":\"boolean\"},\"text\":{\"type\":\"string\"}}}",
	 tool_read_file, MCP_SET_ALL},
	{"write_file", "Write a file",
	 "Create or replace a file with `content`, atomically (a temporary file renamed over it); "
	 "an existing file keeps its mode. The directory must exist.",
	 "{\"type\":\"object\",\"required\":[\"path\",\"content\"],\"properties\":{"
	 "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}}}",
	 "{\"type\":\"object\",\"required\":[\"path\",\"bytes\"],\"properties\":{"
	 "\"path\":{\"type\":\"string\"},\"created\":{\"type\":\"boolean\"},"
	 "\"bytes\":{\"type\":\"integer\"}}}",
	 tool_write_file, MCP_SET_ALL},
	{"edit_file", "Edit a file",
	 "Replace `old_string` by `new_string` in a file. `old_string` must occur exactly once: "
	 "give more context around it when it occurs more often.",
	 "{\"type\":\"object\",\"required\":[\"path\",\"old_string\",\"new_string\"],"
	 "\"properties\":{\"path\":{\"type\":\"string\"},\"old_string\":{\"type\":\"string\"},"
	 "\"new_string\":{\"type\":\"string\"}}}",
	 "{\"type\":\"object\",\"required\":[\"path\",\"bytes\",\"replacements\"],\"properties\":{"
	 "\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
	 "\"replacements\":{\"type\":\"integer\"}}}",
	 tool_edit_file, MCP_SET_ALL},
	{"search", "Search the files",
	 "Ranked full-text search (bm25) over the text files under the root, for plain words. "
	 "Gives path, line and the matching line for each hit, best first.",
	 "{\"type\":\"object\",\"required\":[\"query\"],\"properties\":{"
	 "\"query\":{\"type\":\"string\"},"
	 "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100}}}",
	 "{\"type\":\"object\",\"required\":[\"query\",\"hits\"],\"properties\":{"
	 "\"query\":{\"type\":\"string\"},"
	 "\"hits\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	 "\"required\":[\"path\",\"line\",\"snippet\"],\"properties\":{"
	 "\"path\":{\"type\":\"string\"},\"line\":{\"type\":\"integer\"},"
	 "\"snippet\":{\"type\":\"string\"},\"score\":{\"type\":\"number\"}}}},"
	 "\"files_indexed\":{\"type\":\"integer\"},\"files_updated\":{\"type\":\"integer\"}}}",
	 tool_search, MCP_SET_ALL},
};

/* The tool at i of the whole table: exec_command and write_stdin first,
 * then the rest; NULL past the end. */
static const struct mcp_tool *tool_at(size_t i)
{
	if (i < mcp_exec_ntools)
		return &mcp_exec_tools[i];
	i -= mcp_exec_ntools;
	return i < ARRAY_SIZE(tools) ? &tools[i] : NULL;
}

struct json_object *mcp_tools_list(const struct mcp_tools *T)
{
	struct json_object *a = json_object_new_array();
	const struct mcp_tool *tool;

	for (size_t i = 0; (tool = tool_at(i)); i++) {
		if (!(tool->sets & T->tool_sets))
			continue;
		struct json_object *t = json_object_new_object();
		json_object_object_add(t, "name", json_object_new_string(tool->name));
		json_object_object_add(t, "title", json_object_new_string(tool->title));
		json_object_object_add(t, "description", json_object_new_string(tool->description));
		json_object_object_add(t, "inputSchema", json_tokener_parse(tool->input));
		json_object_object_add(t, "outputSchema", json_tokener_parse(tool->output));
		json_object_array_add(a, t);
	}
	return a;
}

const char *mcp_tools_instructions(const struct mcp_tools *T)
{
	switch (T->tool_sets) {
	case MCP_SET_CODEX:
		return "exec_command runs each command in a fresh bash inside the box, confined by "
		       "toolrund; one that runs on gets a session_id for write_stdin. Output is "
		       "bounded (head and tail kept, the whole in a spill file whose path the result "
		       "gives). File tools take paths relative to the root and refuse paths outside "
		       "it.";
	case MCP_SET_ALL:
		return "bash runs commands in a persistent bash session inside the box, exec_command "
		       "each in a fresh one (write_stdin continues it), both confined by toolrund; "
		       "output is bounded (head and tail kept, the whole in a spill file whose path "
		       "the result gives). File tools take paths relative to the root and refuse "
		       "paths outside it.";
	default:
		return "Commands run in a persistent bash session inside the box, confined by "
		       "toolrund; their output is bounded (head and tail kept, the whole in a spill "
		       "file whose path the result gives). File tools take paths relative to the "
		       "root and refuse paths outside it.";
	}
}

struct json_object *mcp_tools_call(struct mcp_tools *T, const char *name,
				   struct json_object *args)
{
	const struct mcp_tool *tool;

	for (size_t i = 0; (tool = tool_at(i)); i++)
		if ((tool->sets & T->tool_sets) && strcmp(tool->name, name) == 0) {
			if (args && !json_object_is_type(args, json_type_object))
				return mcp_bad_arguments(name, "arguments must be an object");
			struct json_object *empty = args ? NULL : json_object_new_object();
			struct json_object *r = tool->run(T, args ? args : empty);
			json_object_put(empty);
			return r;
		}
	return NULL;
}

int mcp_tools_init(struct mcp_tools *T, const struct config *cfg, const struct mcp_options *o,
		   struct front_error *e)
{
	char here[PATH_MAX];
	const char *root = o->root;

	*T = (struct mcp_tools){.cfg = cfg, .conn.fd = -1, .paths.root_fd = -1,
				.tool_sets = o->tool_sets ? o->tool_sets : MCP_SET_TOOLRUN};
	if (!root && !(root = getcwd(here, sizeof(here))))
		return front_fail(e, FRONT_EXECUTION, "NO_ROOT",
				  "the working directory cannot be named: %s; give --root",
				  strerror(errno));
	if (path_policy_init(&T->paths, root, o->extensions, e) < 0)
		return -1;
	if (o->session)
		snprintf(T->session, sizeof(T->session), "%s", o->session);
	T->keep_sessions = o->keep_sessions;
	T->search.index_path = o->index_path;
	T->search.embed_command = o->embed_command;
	T->budget.max_bytes = cfg->defaults.max_bytes;
	T->budget.max_lines = cfg->defaults.max_lines;
	return 0;
}

void mcp_tools_free(struct mcp_tools *T)
{
	sess_client_close(&T->conn);
	path_policy_free(&T->paths);
}
