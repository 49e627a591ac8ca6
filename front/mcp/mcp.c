/*
 * toolrun mcp: JSON-RPC 2.0 on stdin and stdout, one message per line,
 * as the MCP specification's stdio transport says (revisions 2025-11-25
 * and 2025-06-18). json-c parses and writes every message.
 *
 * One thread. Requests are served in order; while a tool waits for a
 * toolrund session the server keeps reading its input, and progress
 * notifications go out once a second to a client that asked for them.
 * Each message is looked at as soon as it is read, even when many came
 * in one read: a ping is answered at once, notifications/cancelled
 * interrupts the command or drops the queued request it names. Other
 * requests wait their turn in a queue.
 *
 * At the end of input, and on SIGTERM, SIGHUP or SIGINT, the server
 * closes the sessions it made (unless --keep-sessions), so that a client
 * that starts a server per task leaves no bash behind.
 */
#include "mcp.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "jsontext.h"
#include "mcptools.h"
#include "options.h"
#include "util.h"

#define LATEST_VERSION "2025-11-25"
/* A message larger than this is refused (write_file's content is in it). */
#define MAX_MESSAGE (64u << 20)
#define PROGRESS_EVERY_MS 1000
/* How long toolrund may take past a call's own wait. */
#define ANSWER_GRACE_MS 10000

enum {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
};

static const char *const versions[] = {"2025-11-25", "2025-06-18"};

/* SIGTERM, SIGHUP or SIGINT arrived: the server stops, closing its
 * session first. Handlers interrupt reads and polls (no SA_RESTART), so
 * that the loops see it. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* A line read: a message, or why it is none (a static string). */
struct queued {
	struct json_object *m;
	const char *parse_error;
	bool dropped; /* cancelled while it waited: never answered */
};

struct mcp_server {
	struct mcp_tools T;
	char *in;           /* bytes read, not yet a whole line */
	size_t in_len, in_cap;
	bool in_eof, out_broken, skipping; /* skipping: the rest of a line too long */
	struct queued *queue; /* messages read, not yet served */
	size_t q_head, q_len, q_cap;
	/* The tools/call being served, and the session it waits on. */
	struct json_object *call_id, *progress_token;
	const char *call_session;
	bool call_cancelled;
};

/* ------------------------------------------------------------------ */
/* Output                                                              */

/* One line, valid UTF-8 whatever bytes a path, an error or a command's
 * output held (json_line). */
static void send_message(struct mcp_server *S, struct json_object *m)
{
	size_t n;
	char *s = json_line(m, &n);

	if (!s)
		S->out_broken = true; /* out of memory: nothing sane to say */
	if (!S->out_broken && (write_all(STDOUT_FILENO, s, n) < 0 ||
			       write_all(STDOUT_FILENO, "\n", 1) < 0))
		S->out_broken = true;
	free(s);
	json_object_put(m);
}

static struct json_object *envelope(struct json_object *id)
{
	struct json_object *m = json_object_new_object();

	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "id", id ? json_object_get(id) : NULL);
	return m;
}

static void send_result(struct mcp_server *S, struct json_object *id, struct json_object *result)
{
	struct json_object *m = envelope(id);

	json_object_object_add(m, "result", result);
	send_message(S, m);
}

__attribute__((format(printf, 4, 5))) static void
send_error(struct mcp_server *S, struct json_object *id, int code, const char *fmt, ...)
{
	struct json_object *m = envelope(id), *e = json_object_new_object();
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(text));
	json_object_object_add(m, "error", e);
	send_message(S, m);
}

static void send_progress(struct mcp_server *S, unsigned seconds)
{
	struct json_object *m = json_object_new_object(), *p = json_object_new_object();
	char text[64];

	snprintf(text, sizeof(text), "running for %u s", seconds);
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "method", json_object_new_string("notifications/progress"));
	json_object_object_add(p, "progressToken", json_object_get(S->progress_token));
	json_object_object_add(p, "progress", json_object_new_int((int)seconds));
	json_object_object_add(p, "message", json_object_new_string(text));
	json_object_object_add(m, "params", p);
	send_message(S, m);
}

/* ------------------------------------------------------------------ */
/* Input                                                               */

static const char *method_of(struct json_object *m)
{
	struct json_object *v;

	if (!json_object_is_type(m, json_type_object) ||
	    !json_object_object_get_ex(m, "method", &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (o && json_object_is_type(o, json_type_object))
		json_object_object_get_ex(o, key, &v);
	return v;
}

static bool queue_push(struct mcp_server *S, struct json_object *m, const char *parse_error)
{
	if (S->q_head + S->q_len == S->q_cap) {
		if (S->q_head) {
			memmove(S->queue, S->queue + S->q_head, S->q_len * sizeof(*S->queue));
			S->q_head = 0;
		} else {
			size_t cap = S->q_cap ? S->q_cap * 2 : 16;
			struct queued *q = realloc(S->queue, cap * sizeof(*q));
			if (!q) {
				json_object_put(m);
				return false;
			}
			S->queue = q;
			S->q_cap = cap;
		}
	}
	S->queue[S->q_head + S->q_len++] = (struct queued){m, parse_error, false};
	return true;
}

/* An id MCP allows: a string or an integer (a null id is present but no
 * id: MCP forbids it). */
static bool id_valid(struct json_object *id)
{
	return id && (json_object_is_type(id, json_type_string) ||
		      json_object_is_type(id, json_type_int));
}

/* A JSON-RPC 2.0 request or notification: "jsonrpc":"2.0", a string
 * method, and a valid id when there is one. */
static bool well_formed(struct json_object *m)
{
	struct json_object *version = member(m, "jsonrpc");
	bool has_id = json_object_is_type(m, json_type_object) &&
		      json_object_object_get_ex(m, "id", NULL);

	return method_of(m) && version && json_object_is_type(version, json_type_string) &&
	       strcmp(json_object_get_string(version), "2.0") == 0 &&
	       (!has_id || id_valid(member(m, "id")));
}

/* A cancelled request still waiting its turn is dropped, unanswered. */
static bool drop_queued(struct mcp_server *S, struct json_object *id)
{
	for (size_t i = S->q_head; i < S->q_head + S->q_len; i++) {
		struct json_object *qid = member(S->queue[i].m, "id");
		if (qid && method_of(S->queue[i].m) && json_object_equal(qid, id)) {
			S->queue[i].dropped = true;
			return true;
		}
	}
	return false;
}

/* Every message as soon as it is read, whether a tool waits or the
 * queue still holds calls to serve (a client may write many lines at
 * once): a ping is answered and a cancellation acted on at once, so that
 * a cancelled call still queued never runs; anything else waits its
 * turn. */
static void take_message(struct mcp_server *S, struct json_object *m)
{
	const char *method = method_of(m);
	struct json_object *id = member(m, "id");

	if (!well_formed(m)) {
		queue_push(S, m, NULL); /* its error is answered in its turn */
		return;
	}
	if (id && strcmp(method, "ping") == 0) {
		send_result(S, id, json_object_new_object());
		json_object_put(m);
		return;
	}
	if (!id && strcmp(method, "notifications/cancelled") == 0) {
		struct json_object *target = member(member(m, "params"), "requestId");
		if (target && S->call_id && json_object_equal(target, S->call_id) &&
		    !S->call_cancelled) {
			S->call_cancelled = true;
			if (S->call_session)
				mcp_tools_interrupt(&S->T, S->call_session);
		} else if (target) {
			drop_queued(S, target);
		}
		json_object_put(m);
		return;
	}
	queue_push(S, m, NULL);
}

/* One line as JSON: the whole of it must be one value (a lone "5" is a
 * value too, which is why the line's end is handed to the tokenizer).
 * NULL with *error set when it is not JSON; NULL without for `null`. */
static struct json_object *parse_line(char *line, size_t len, const char **error)
{
	struct json_tokener *tok = json_tokener_new();
	char saved = line[len]; /* the '\n', or a byte trimmed before it */
	struct json_object *m = NULL;

	*error = "out of memory";
	if (!tok)
		return NULL;
	line[len] = '\0';
	m = json_tokener_parse_ex(tok, line, (int)len + 1);
	enum json_tokener_error err = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	line[len] = saved;
	json_tokener_free(tok);
	*error = NULL;
	if (err != json_tokener_success)
		*error = json_tokener_error_desc(err);
	else if (end < len)
		*error = "more than one JSON value on the line";
	if (*error) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

static void take_line(struct mcp_server *S, char *line, size_t len)
{
	const char *error;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (!len)
		return;
	struct json_object *m = parse_line(line, len, &error);
	if (error)
		queue_push(S, NULL, error); /* answered in its turn */
	else
		take_message(S, m);
}

/* Split what was read into lines. */
static void take_lines(struct mcp_server *S)
{
	size_t start = 0;

	for (size_t i = 0; i < S->in_len; i++) {
		if (S->in[i] != '\n')
			continue;
		if (!S->skipping)
			take_line(S, S->in + start, i - start);
		S->skipping = false;
		start = i + 1;
	}
	memmove(S->in, S->in + start, S->in_len - start);
	S->in_len -= start;
	if (S->in_len >= MAX_MESSAGE && !S->skipping) {
		queue_push(S, NULL, "a message of more than 64 MiB, skipped");
		S->skipping = true;
	}
	if (S->skipping)
		S->in_len = 0;
}

/* One read of stdin; false at its end. */
static bool read_input(struct mcp_server *S)
{
	if (S->in_cap - S->in_len < 65536) {
		size_t cap = S->in_cap ? S->in_cap * 2 : 131072;
		char *p = realloc(S->in, cap);
		if (!p) {
			S->in_eof = true;
			return false;
		}
		S->in = p;
		S->in_cap = cap;
	}
	ssize_t n = read(STDIN_FILENO, S->in + S->in_len, S->in_cap - S->in_len);
	if (n < 0 && errno == EINTR)
		return true; /* a signal: the caller looks at stop_signal */
	if (n <= 0) {
		/* A last line without a newline still counts. */
		if (S->in_len && !S->skipping) {
			S->in[S->in_len] = '\n';
			S->in_len++;
			take_lines(S);
		}
		S->in_eof = true;
		return false;
	}
	S->in_len += (size_t)n;
	take_lines(S);
	return true;
}

/* The next line to serve into *q; false at the end of input. */
static bool next_message(struct mcp_server *S, struct queued *q)
{
	while (!S->q_len) {
		if (stop_signal || S->in_eof || S->out_broken || !read_input(S))
			if (!S->q_len)
				return false;
	}
	S->q_len--;
	*q = S->queue[S->q_head++];
	return true;
}

/* ------------------------------------------------------------------ */
/* Waiting for a session                                               */

/* Wait for the answer to the call sent, reading our own input meanwhile,
 * until the answer, the deadline or the end. */
static int wait_answer(struct mcp_server *S, struct mcp_tools *T, Toolrun__SessionCall *sc,
		       struct sess_answer *a, char *why, size_t len)
{
	int64_t start = monotonic_ms(), deadline = start + sc->timeout_ms + ANSWER_GRACE_MS;
	unsigned ticks = 0;

	for (;;) {
		struct pollfd p[2] = {{.fd = T->conn.fd, .events = POLLIN},
				      {.fd = S->in_eof ? -1 : STDIN_FILENO, .events = POLLIN}};
		int64_t now = monotonic_ms();
		int64_t next_tick = start + (int64_t)(ticks + 1) * PROGRESS_EVERY_MS;
		if (now >= deadline) {
			snprintf(why, len, "toolrund did not answer within %u s",
				 (sc->timeout_ms + ANSWER_GRACE_MS) / 1000);
			return -1;
		}
		int wait = (int)(MIN(deadline, next_tick) - now);
		int r = poll(p, 2, wait < 0 ? 0 : wait);
		if (stop_signal) {
			snprintf(why, len, "the server is stopping (SIG%s)",
				 sigabbrev_np(stop_signal));
			return -1;
		}
		if (r < 0 && errno != EINTR) {
			snprintf(why, len, "poll: %s", strerror(errno));
			return -1;
		}
		if (r > 0 && p[0].revents)
			return sess_client_receive(&T->conn, a, why, len);
		/* At the end of input the answers are still wanted (a client
		 * that pipes its requests): the wait goes on. */
		if (r > 0 && p[1].revents)
			read_input(S);
		if (S->out_broken) {
			snprintf(why, len, "the client closed its output");
			return -1;
		}
		if (monotonic_ms() >= next_tick) {
			ticks++;
			if (S->progress_token && !S->call_cancelled)
				send_progress(S, ticks);
		}
	}
}

/* mcp_wait_call_fn: send, then wait for toolrund's answer while
 * reading our own input. */
static int wait_call(void *server, struct mcp_tools *T, Toolrun__SessionCall *sc, int attach,
		     struct sess_answer *a, char *why, size_t len)
{
	struct mcp_server *S = server;

	*a = (struct sess_answer){0};
	if (sess_client_send(&T->conn, sc, attach, why, len) < 0)
		return -1;
	S->call_session = sc->session;
	int r = wait_answer(S, T, sc, a, why, len);
	S->call_session = NULL;
	return r;
}

/* ------------------------------------------------------------------ */
/* Methods                                                             */

static struct json_object *initialize_result(const struct mcp_tools *T,
					     struct json_object *params)
{
	struct json_object *r = json_object_new_object(), *caps = json_object_new_object();
	struct json_object *tools = json_object_new_object(), *info = json_object_new_object();
	struct json_object *asked = member(params, "protocolVersion");
	const char *version = LATEST_VERSION;

	for (size_t i = 0; asked && i < ARRAY_SIZE(versions); i++)
		if (json_object_is_type(asked, json_type_string) &&
		    strcmp(json_object_get_string(asked), versions[i]) == 0)
			version = versions[i];
	json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
	json_object_object_add(caps, "tools", tools);
	json_object_object_add(info, "name", json_object_new_string("toolrun"));
	json_object_object_add(info, "title", json_object_new_string("toolrun"));
	json_object_object_add(info, "version", json_object_new_string(TOOLRUN_VERSION));
	json_object_object_add(r, "protocolVersion", json_object_new_string(version));
	json_object_object_add(r, "capabilities", caps);
	json_object_object_add(r, "serverInfo", info);
	json_object_object_add(r, "instructions",
			       json_object_new_string(mcp_tools_instructions(T)));
	return r;
}

static void call_tool(struct mcp_server *S, struct json_object *id, struct json_object *params)
{
	struct json_object *name = member(params, "name");
	struct json_object *args = member(params, "arguments");

	if (!name || !json_object_is_type(name, json_type_string)) {
		send_error(S, id, RPC_INVALID_PARAMS, "tools/call: params.name (a string) is missing");
		return;
	}
	S->call_id = id;
	S->call_cancelled = false;
	S->progress_token = member(member(params, "_meta"), "progressToken");
	struct json_object *r = mcp_tools_call(&S->T, json_object_get_string(name), args);
	if (!r)
		send_error(S, id, RPC_INVALID_PARAMS, "unknown tool: %s (tools/list names them)",
			   json_object_get_string(name));
	else if (S->call_cancelled)
		json_object_put(r); /* a cancelled request is not answered */
	else
		send_result(S, id, r);
	S->call_id = NULL;
	S->progress_token = NULL;
}

static void serve_request(struct mcp_server *S, const char *method, struct json_object *id,
			  struct json_object *params)
{
	if (strcmp(method, "initialize") == 0) {
		send_result(S, id, initialize_result(&S->T, params));
	} else if (strcmp(method, "ping") == 0) {
		send_result(S, id, json_object_new_object());
	} else if (strcmp(method, "tools/list") == 0) {
		struct json_object *r = json_object_new_object();
		json_object_object_add(r, "tools", mcp_tools_list(&S->T));
		send_result(S, id, r);
	} else if (strcmp(method, "tools/call") == 0) {
		call_tool(S, id, params);
	} else {
		send_error(S, id, RPC_METHOD_NOT_FOUND, "method not found: %s", method);
	}
}

static void serve(struct mcp_server *S, const struct queued *q)
{
	struct json_object *m = q->m;
	const char *method = method_of(m);
	struct json_object *id = member(m, "id");

	if (q->dropped)
		return;
	if (q->parse_error) {
		send_error(S, NULL, RPC_PARSE_ERROR, "parse error: %s (one JSON-RPC message per line)",
			   q->parse_error);
		return;
	}
	if (json_object_is_type(m, json_type_array)) {
		send_error(S, NULL, RPC_INVALID_REQUEST, "batches are not supported: one message "
							 "per line");
		return;
	}
	/* A response to a request of ours: we make none. */
	if (!method && (member(m, "result") || member(m, "error")))
		return;
	if (!well_formed(m)) {
		send_error(S, id_valid(id) ? id : NULL, RPC_INVALID_REQUEST,
			   "not a JSON-RPC 2.0 request: it needs \"jsonrpc\":\"2.0\", a string "
			   "\"method\" and a string or integer \"id\"");
		return;
	}
	if (!id)
		return; /* notifications: initialized, cancelled (after its answer), ... */
	struct json_object *params = member(m, "params");
	if (params && !json_object_is_type(params, json_type_object)) {
		send_error(S, id, RPC_INVALID_PARAMS, "%s: params must be an object", method);
		return;
	}
	serve_request(S, method, id, params);
}

/* ------------------------------------------------------------------ */
/* Main                                                                */

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "toolrun mcp: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: toolrun mcp [--root DIR] [--tools toolrun|codex|all] [--session ID] "
			"[--keep-sessions] [--extensions LIST] [--index FILE] [--embed-command CMD]\n");
	return 2;
}

/* --tools: toolrun's shell tools (bash, ...), Codex's (exec_command,
 * write_stdin) or both; the file tools are in every set. */
static bool parse_tool_sets(const char *v, unsigned *sets)
{
	static const struct {
		const char *name;
		unsigned sets;
	} names[] = {{"toolrun", MCP_SET_TOOLRUN}, {"codex", MCP_SET_CODEX}, {"all", MCP_SET_ALL}};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(v, names[i].name) == 0) {
			*sets = names[i].sets;
			return true;
		}
	return false;
}

enum mcp_option {
	OPT_ROOT = OPT_LONG_ONLY,
	OPT_TOOLS,
	OPT_SESSION,
	OPT_KEEP_SESSIONS,
	OPT_EXTENSIONS,
	OPT_INDEX,
	OPT_EMBED_COMMAND,
};

static const struct option mcp_long_options[] = {
	{"root", required_argument, NULL, OPT_ROOT},
	{"tools", required_argument, NULL, OPT_TOOLS},
	{"session", required_argument, NULL, OPT_SESSION},
	{"keep-sessions", no_argument, NULL, OPT_KEEP_SESSIONS},
	{"extensions", required_argument, NULL, OPT_EXTENSIONS},
	{"index", required_argument, NULL, OPT_INDEX},
	{"embed-command", required_argument, NULL, OPT_EMBED_COMMAND},
	{NULL, 0, NULL, 0},
};

/* One option, or as 1 (the "-" at the head of optstring) a word that is
 * not one: toolrun mcp takes none. */
static int take_option(int opt, const char *value, void *ctx)
{
	struct mcp_options *o = ctx;

	switch (opt) {
	case OPT_ROOT:
		o->root = value;
		return 0;
	case OPT_TOOLS:
		return parse_tool_sets(value, &o->tool_sets)
			       ? 0
			       : usage_error("--tools takes toolrun, codex or all");
	case OPT_SESSION:
		o->session = value;
		return 0;
	case OPT_KEEP_SESSIONS:
		o->keep_sessions = true;
		return 0;
	case OPT_EXTENSIONS:
		o->extensions = value;
		return 0;
	case OPT_INDEX:
		o->index_path = value;
		return 0;
	case OPT_EMBED_COMMAND:
		o->embed_command = value;
		return 0;
	case 1:
		return usage_error("unknown option: %.200s", value);
	default:
		return usage_error("option %d: not handled", opt);
	}
}

/* argv[0] is the subcommand's name, as getopt expects. */
static int parse_options(int argc, char **argv, struct mcp_options *o)
{
	const char *refused;
	char shortname[4];
	int r = options_each(argc, argv, mcp_long_options, take_option, o, &refused, shortname,
			     sizeof(shortname));

	return r == OPTIONS_REFUSED ? usage_error("unknown option or missing value: %s", refused)
				    : r;
}

int mcp_main(const struct config *cfg, int argc, char **argv)
{
	struct mcp_options o = {0};
	struct mcp_server S = {0};
	struct front_error e;
	struct queued q;

	if (parse_options(argc, argv, &o) != 0)
		return 2;
	if (mcp_tools_init(&S.T, cfg, &o, &e) < 0) {
		fprintf(stderr, "toolrun mcp: %s\n", e.message);
		return 2;
	}
	/* A client that goes away is an error on write, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	catch_stop_signals();
	S.T.wait_call = wait_call;
	S.T.server = &S;
	while (!S.out_broken && !stop_signal && next_message(&S, &q)) {
		serve(&S, &q);
		json_object_put(q.m);
	}
	mcp_tools_end(&S.T);
	while (S.q_len)
		json_object_put(S.queue[S.q_head + --S.q_len].m);
	free(S.queue);
	free(S.in);
	mcp_tools_free(&S.T);
	if (stop_signal) {
		/* Ended by the signal, as the client that sent it expects. */
		signal(stop_signal, SIG_DFL);
		raise(stop_signal);
	}
	return 0;
}
