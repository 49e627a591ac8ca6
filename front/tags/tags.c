/*
 * toolrun tags [--root DIR] [--exec-enabled] [--json] [--passthrough]
 *              [--timeout S] [--extensions LIST] [--index PATH]
 *              [--session ID] [FILE|-]
 *
 * The interpreter of seed 004: a model's text, read from FILE or stdin as
 * it arrives, goes through the scanner (front/core/tagscan.h); each command it
 * delivers runs at once and its answer is written and flushed before the
 * next byte is read, so that a live stream gets its answers live.
 *
 *   <open PATH>                  front_read_file, numbered lines
 *   <write PATH>CONTENT</write>  front_write_file
 *   <search QUERY>               front_search
 *   <grep PATTERN [PATH]>        tagswalk.c
 *   <tree [PATH]>                tagswalk.c
 *   <exec COMMAND>               with --exec-enabled: a toolrund session
 *                                whose cwd is the root
 *
 * A failed command never stops the scan. Exit status: 0 every command
 * succeeded, 1 one or more failed, 2 a usage or configuration error, 124
 * an <exec> timed out (docs/tags.md).
 */
#include "tags.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "files.h"
#include "jsontext.h"
#include "options.h"
#include "path.h"
#include "results.h"
#include "search.h"
#include "sessclient.h"
#include "tagscan.h"
#include "tagswalk.h"
#include "util.h"

extern char **environ;

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124
#define DEFAULT_TIMEOUT_MS 30000u
/* How long an interrupted command gets to stop before we go on. */
#define INTERRUPT_WAIT_MS 2000u
/* The most of an argument an answer repeats. */
#define SHOWN_ARGUMENT 4096

struct tags_opts {
	const char *root;
	const char *extensions;
	const char *index;
	const char *session;
	const char *file;
	bool exec_enabled;
	bool json;
	bool passthrough;
	uint32_t timeout_ms;
};

/* One run of the interpreter: everything it keeps between commands. */
struct tags_ctx {
	const struct config *cfg;
	struct tags_opts o;
	struct path_policy policy;
	struct tag_scanner *scanner;
	struct sess_client daemon; /* for <exec> and the audit records */
	bool daemon_open;
	bool daemon_down;          /* tried once and failed: not again */
	char session[64];          /* the session of <exec>, "" before one */
	bool own_session;          /* made by us: closed at the end */
	char *text;                /* --json --passthrough: text not yet shown */
	size_t text_len, text_cap;
	bool mid_line;             /* --passthrough: the text shown ends inside a line */
	unsigned failed;
	bool timed_out;
};

/* What one command gave. */
struct outcome {
	bool ok;
	struct front_error err;
	struct json_object *result; /* owned; may come with an error (exec) */
	uint64_t bytes;             /* for the audit */
};

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "toolrun tags: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: toolrun tags [--root DIR] [--exec-enabled] [--json] "
			"[--passthrough]\n"
			"                   [--timeout S] [--extensions LIST] [--index PATH]\n"
			"                   [--session ID] [FILE|-]\n");
	return EXIT_USAGE;
}

/* ───────────────────────── options ───────────────────────── */

enum tags_option {
	OPT_EXEC_ENABLED = OPT_LONG_ONLY,
	OPT_JSON,
	OPT_PASSTHROUGH,
	OPT_ROOT,
	OPT_EXTENSIONS,
	OPT_INDEX,
	OPT_SESSION,
	OPT_TIMEOUT,
};

static const struct option tags_options[] = {
	{"exec-enabled", no_argument, NULL, OPT_EXEC_ENABLED},
	{"json", no_argument, NULL, OPT_JSON},
	{"passthrough", no_argument, NULL, OPT_PASSTHROUGH},
	{"root", required_argument, NULL, OPT_ROOT},
	{"extensions", required_argument, NULL, OPT_EXTENSIONS},
	{"index", required_argument, NULL, OPT_INDEX},
	{"session", required_argument, NULL, OPT_SESSION},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{NULL, 0, NULL, 0},
};

/* One option or, as 1 (the "-" at the head of optstring: words that are
 * not options come back in order), the input. */
static int take_option(int opt, const char *value, void *ctx)
{
	struct tags_opts *o = ctx;

	switch (opt) {
	case OPT_EXEC_ENABLED:
		o->exec_enabled = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_PASSTHROUGH:
		o->passthrough = true;
		return 0;
	case OPT_ROOT:
		o->root = value;
		return 0;
	case OPT_EXTENSIONS:
		o->extensions = value;
		return 0;
	case OPT_INDEX:
		o->index = value;
		return 0;
	case OPT_SESSION:
		o->session = value;
		return 0;
	case OPT_TIMEOUT:
		if (!sess_parse_seconds(value, &o->timeout_ms) || !o->timeout_ms)
			return usage_error("--timeout %s: not a number of seconds "
					   "above 0 and up to 3600", value);
		return 0;
	case 1:
		if (o->file)
			return usage_error("%s: one input only", value);
		o->file = value;
		return 0;
	default:
		return usage_error("option %d: not handled", opt);
	}
}

/* argv[0] is the subcommand's name, as getopt expects. */
static int parse_args(int argc, char **argv, struct tags_opts *o)
{
	const char *refused;
	char shortname[4];

	*o = (struct tags_opts){.root = ".", .timeout_ms = DEFAULT_TIMEOUT_MS};
	int r = options_each(argc, argv, tags_options, take_option, o, &refused, shortname,
			     sizeof(shortname));
	return r == OPTIONS_REFUSED ? usage_error("unknown option or missing value: %s", refused)
				    : r;
}

/* ───────────────────────── toolrund ───────────────────────── */

/* The connection to toolrund, opened on first use; NULL when it cannot
 * be reached (said once on stderr). */
static struct sess_client *daemon_of(struct tags_ctx *t)
{
	char why[512];

	if (t->daemon_open)
		return &t->daemon;
	if (t->daemon_down)
		return NULL;
	if (sess_client_open(&t->daemon, t->cfg, why, sizeof(why)) < 0) {
		fprintf(stderr, "toolrun tags: toolrund cannot be reached (%s): commands are "
				"not audited, and <exec> fails\n", why);
		t->daemon_down = true;
		return NULL;
	}
	t->daemon_open = true;
	return &t->daemon;
}

/* Best effort: the command is done whatever becomes of its record. */
static void audit(struct tags_ctx *t, const struct tag_command *c, const struct outcome *out,
		  uint64_t duration_us)
{
	struct sess_client *d = daemon_of(t);
	char why[512];

	if (!d)
		return;
	struct front_record r = {
		.front = "tags",
		.tool = tag_kind_name(c->kind),
		.target = c->argument,
		.ok = out->ok,
		.error_code = out->ok ? NULL : out->err.code,
		.bytes = out->bytes,
		.duration_us = duration_us,
	};
	if (sess_client_record(d, &r, why, sizeof(why)) < 0) {
		fprintf(stderr, "toolrun tags: %s: commands are no longer audited\n", why);
		sess_client_close(d);
		t->daemon_open = false;
		t->daemon_down = true;
	}
}

/* One session call; 0, or -1 with the error in *e. */
static int session_call(struct tags_ctx *t, Toolrun__SessionCall *sc, int attach,
			struct sess_answer *a, struct front_error *e)
{
	struct sess_client *d = daemon_of(t);
	char why[512];

	if (!d)
		return front_fail(e, FRONT_EXECUTION, "NO_DAEMON", "toolrund cannot be reached");
	if (sess_client_call(d, sc, attach, a, why, sizeof(why)) < 0) {
		sess_client_close(d);
		t->daemon_open = false;
		t->daemon_down = true;
		return front_fail(e, FRONT_EXECUTION, "NO_DAEMON", "%s", why);
	}
	if (a->reply->error) {
		front_fail(e, FRONT_EXECUTION, "SESSION_ERROR", "session %s: %s: %s",
			   a->reply->session, sess_error_name(a->reply->error), a->reply->message);
		sess_answer_free(a);
		return -1;
	}
	return 0;
}

/* Our environment as a session's; NULL when out of memory. */
static ProtobufCBinaryData *environment(size_t *n)
{
	size_t count = 0;

	while (environ[count])
		count++;
	ProtobufCBinaryData *env = calloc(count + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < count; i++)
		env[i] = (ProtobufCBinaryData){strlen(environ[i]), (uint8_t *)environ[i]};
	*n = count;
	return env;
}

/* The session <exec> runs in: --session, or a new one in the root. */
static int exec_session(struct tags_ctx *t, struct front_error *e)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	struct sess_answer a;

	if (t->session[0])
		return 0;
	if (t->o.session) {
		snprintf(t->session, sizeof(t->session), "%s", t->o.session);
		return 0;
	}
	int fd = open(t->policy.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return front_fail(e, FRONT_EXECUTION, "NO_SESSION", "root %s: %s",
				  t->policy.root, errno_text(errno));
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_NEW;
	sc.session = (char *)"";
	sc.cwd = (ProtobufCBinaryData){strlen(t->policy.root), (uint8_t *)t->policy.root};
	/* Ours, as `toolrun session new` gives it. */
	ProtobufCBinaryData *env = environment(&sc.n_envp);
	sc.envp = env;
	int r = env ? session_call(t, &sc, fd, &a, e)
		    : front_fail(e, FRONT_INTERNAL, "NO_MEMORY", "out of memory");
	free(env);
	close(fd);
	if (r < 0)
		return -1;
	snprintf(t->session, sizeof(t->session), "%s", a.reply->session);
	t->own_session = true;
	sess_answer_free(&a);
	return 0;
}

static void session_simple(struct tags_ctx *t, Toolrun__SessionOp op, uint32_t timeout_ms)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	struct sess_answer a;
	struct front_error ignored;

	sc.op = op;
	sc.session = t->session;
	sc.timeout_ms = timeout_ms;
	if (session_call(t, &sc, -1, &a, &ignored) == 0)
		sess_answer_free(&a);
}

/* ───────────────────────── commands ───────────────────────── */

static void run_open(struct tags_ctx *t, const struct tag_command *c, struct outcome *out)
{
	struct read_budget b = {t->cfg->defaults.max_bytes, t->cfg->defaults.max_lines};
	struct read_request rq = {.path = c->argument, .numbered = true};
	struct read_result r = {0};

	if (front_read_file(&t->policy, &b, &rq, &r, &out->err) < 0)
		return;
	out->ok = true;
	out->bytes = r.text_len;
	out->result = read_result_json(&r);
	read_result_free(&r);
}

static void run_write(struct tags_ctx *t, const struct tag_command *c, struct outcome *out)
{
	struct write_result w = {0};

	if (front_write_file(&t->policy, c->argument, c->content, c->content_len, &w,
			     &out->err) < 0)
		return;
	out->ok = true;
	out->bytes = c->content_len;
	out->result = write_result_json(&w, false);
}

static void run_search(struct tags_ctx *t, const struct tag_command *c, struct outcome *out)
{
	struct search_options so = {.index_path = t->o.index};
	struct search_result r = {0};

	if (front_search(&t->policy, &so, c->argument, &r, &out->err) < 0)
		return;
	out->ok = true;
	for (size_t i = 0; i < r.nhits; i++)
		out->bytes += strlen(r.hits[i].snippet);
	out->result = search_result_json(c->argument, &r);
	search_result_free(&r);
}

static void run_walk(struct tags_ctx *t, const struct tag_command *c, struct outcome *out)
{
	int r = c->kind == TAG_GREP ? tags_grep(&t->policy, c->argument, &out->result, &out->err)
				    : tags_tree(&t->policy, c->argument, &out->result, &out->err);
	if (r == 0) {
		out->ok = true;
		out->bytes = strlen(json_object_to_json_string(out->result));
	}
}

/* A command's end as an outcome: non-zero exit and signals fail it. */
static void exec_outcome(const Toolrun__SessionReply *r, struct outcome *out)
{
	const Toolrun__Exit *x = r->exit;

	out->result = sess_reply_json(r);
	out->bytes = r->stdout.len + r->stderr.len;
	if (x && x->status_case == TOOLRUN__EXIT__STATUS_SIGNAL)
		front_fail(&out->err, FRONT_EXECUTION, "SIGNAL", "killed by signal %d",
			   x->signal);
	else if (x && x->code != 0)
		front_fail(&out->err, FRONT_EXECUTION, "EXIT_STATUS", "exited with status %d",
			   x->code);
	else if (!x && r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED)
		front_fail(&out->err, FRONT_EXECUTION, "SESSION_CLOSED", "the session ended: %s",
			   r->message);
	else
		out->ok = true;
}

static void run_exec(struct tags_ctx *t, const struct tag_command *c, struct outcome *out)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	struct sess_answer a;

	if (!t->o.exec_enabled) {
		front_fail(&out->err, FRONT_VALIDATION, "EXEC_DISABLED",
			   "<exec> runs only with --exec-enabled");
		return;
	}
	if (exec_session(t, &out->err) < 0)
		return;
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_RUN;
	sc.session = t->session;
	sc.command = (ProtobufCBinaryData){c->argument_len, (uint8_t *)c->argument};
	sc.timeout_ms = t->o.timeout_ms;
	if (session_call(t, &sc, -1, &a, &out->err) < 0)
		return;
	if (a.reply->state == TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT) {
		/* A tags stream has no input to give it: stopped at once,
		 * and said so, rather than waited out as a timeout. */
		out->result = sess_reply_json(a.reply);
		session_simple(t, TOOLRUN__SESSION_OP__SESSION_OP_INTERRUPT, INTERRUPT_WAIT_MS);
		front_fail(&out->err, FRONT_EXECUTION, "WAITING_INPUT",
			   "the command waited for input, which <exec> cannot give: interrupted "
			   "(give it input in the command itself: echo yes | CMD, or CMD < FILE)");
	} else if (sess_command_status(a.reply) == EXIT_TIMEOUT &&
		   a.reply->state != TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED) {
		/* Still running: stopped, so that the next <exec> finds the
		 * session free; the output so far is in the result. */
		out->result = sess_reply_json(a.reply);
		session_simple(t, TOOLRUN__SESSION_OP__SESSION_OP_INTERRUPT, INTERRUPT_WAIT_MS);
		front_fail(&out->err, FRONT_RESOURCE, "TIMEOUT", "still running after %u ms: "
			   "interrupted", t->o.timeout_ms);
		t->timed_out = true;
	} else {
		exec_outcome(a.reply, out);
	}
	/* `exit` ends the session's bash: the next <exec> gets a new one. */
	if (a.reply->state == TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED) {
		t->session[0] = '\0';
		t->own_session = false;
	}
	sess_answer_free(&a);
}

/* Checks every command gets before it runs: the API takes C strings,
 * and a NUL would cut an argument short. */
static bool command_valid(const struct tag_command *c, struct outcome *out)
{
	if (c->kind == TAG_OPEN || c->kind == TAG_WRITE)
		return path_check_bytes(c->argument, c->argument_len, &out->err) == 0;
	if (memchr(c->argument, '\0', c->argument_len)) {
		front_fail(&out->err, FRONT_VALIDATION, "NUL_BYTE", "%s: a NUL byte in the argument",
			   tag_kind_name(c->kind));
		return false;
	}
	return true;
}

static void run_command(struct tags_ctx *t, const struct tag_command *c, struct outcome *out)
{
	uint64_t start = monotonic_us();

	if (!command_valid(c, out))
		return;
	switch (c->kind) {
	case TAG_OPEN: run_open(t, c, out); break;
	case TAG_WRITE: run_write(t, c, out); break;
	case TAG_SEARCH: run_search(t, c, out); break;
	case TAG_GREP:
	case TAG_TREE: run_walk(t, c, out); break;
	case TAG_EXEC: run_exec(t, c, out); return; /* toolrund audits what it runs */
	default: return;
	}
	audit(t, c, out, monotonic_us() - start);
}

/* ───────────────────────── printing ───────────────────────── */

static struct json_object *error_json(const struct front_error *e)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "category", json_object_new_string(front_category_name(e->category)));
	json_object_object_add(o, "code", json_object_new_string(e->code));
	json_object_object_add(o, "message",
			       json_text((const uint8_t *)e->message, strlen(e->message)));
	return o;
}

/* --json --passthrough: the text read since the last answer, as one
 * object, whatever the chunks it came in. */
static void flush_text_json(struct tags_ctx *t)
{
	if (!t->text_len)
		return;
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "text", json_text((const uint8_t *)t->text, t->text_len));
	json_print_line(o, stdout); /* UTF-8 whatever a file name held */
	json_object_put(o);
	t->text_len = 0;
}

static void print_answer_json(struct tags_ctx *t, const struct tag_command *c,
			      const struct outcome *out)
{
	struct json_object *o = json_object_new_object();

	flush_text_json(t);
	json_object_object_add(o, "index", json_object_new_uint64(c->index));
	json_object_object_add(o, "line", json_object_new_uint64(c->line));
	json_object_object_add(o, "command", json_object_new_string(tag_kind_name(c->kind)));
	json_object_object_add(o, "argument",
			       json_text((const uint8_t *)c->argument,
					 MIN(c->argument_len, SHOWN_ARGUMENT)));
	json_object_object_add(o, "ok", json_object_new_boolean(out->ok));
	if (out->result)
		json_object_object_add(o, "result", json_object_get(out->result));
	if (!out->ok)
		json_object_object_add(o, "error", error_json(&out->err));
	json_print_line(o, stdout);
	json_object_put(o);
}

/* Bytes as they are, ending with a newline. */
static void print_block(const char *s, size_t n)
{
	fwrite(s, 1, n, stdout);
	if (n && s[n - 1] != '\n')
		fputc('\n', stdout);
}

static void print_string_field(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		print_block(json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

static uint64_t field_u64(struct json_object *o, const char *key)
{
	return (uint64_t)json_object_get_int64(json_object_object_get(o, key));
}

/* After a file's lines, when some are left out: which ones were shown. */
static void print_open_span(struct json_object *r)
{
	struct read_result rr = {
		.total_lines = field_u64(r, "total_lines"),
		.first_line = field_u64(r, "first_line"),
		.last_line = field_u64(r, "last_line"),
		.binary = json_object_get_boolean(json_object_object_get(r, "binary")),
	};
	char span[128];

	read_result_span(&rr, span, sizeof(span));
	if (span[0] && rr.last_line < rr.total_lines)
		printf("[%s shown: the output budget left out the rest]\n", span);
	else if (span[0])
		printf("[%s]\n", span);
}

/* The result of a command for a person: its lines, not its JSON. */
static void print_result_text(const struct tag_command *c, struct json_object *r)
{
	struct json_object *list, *v;

	switch (c->kind) {
	case TAG_OPEN:
		print_string_field(r, "text");
		print_open_span(r);
		break;
	case TAG_WRITE:
		json_object_object_get_ex(r, "created", &v);
		printf("%s %s, %s bytes\n", json_object_get_boolean(v) ? "created" : "replaced",
		       json_object_get_string(json_object_object_get(r, "path")),
		       json_object_get_string(json_object_object_get(r, "bytes")));
		break;
	case TAG_EXEC:
		print_string_field(r, "stdout");
		if (json_object_get_string_len(json_object_object_get(r, "stderr")) > 0) {
			printf("-- stderr --\n");
			print_string_field(r, "stderr");
		}
		break;
	case TAG_SEARCH:
	case TAG_GREP:
		list = json_object_object_get(r, c->kind == TAG_SEARCH ? "hits" : "matches");
		if (json_object_array_length(list) == 0)
			printf("(nothing found)\n");
		for (size_t i = 0; i < json_object_array_length(list); i++) {
			struct json_object *h = json_object_array_get_idx(list, i);
			printf("%s:%s: %s\n", json_object_get_string(json_object_object_get(h, "path")),
			       json_object_get_string(json_object_object_get(h, "line")),
			       json_object_get_string(json_object_object_get(
				       h, c->kind == TAG_SEARCH ? "snippet" : "text")));
		}
		break;
	case TAG_TREE:
		list = json_object_object_get(r, "entries");
		if (json_object_array_length(list) == 0)
			printf("(empty)\n");
		for (size_t i = 0; i < json_object_array_length(list); i++)
			printf("%s\n", json_object_get_string(json_object_array_get_idx(list, i)));
		break;
	default:
		break;
	}
}

static void print_answer_text(struct tags_ctx *t, const struct tag_command *c,
			      const struct outcome *out)
{
	/* A block starts on a line of its own, after the text echoed. */
	if (t->mid_line)
		fputc('\n', stdout);
	t->mid_line = false;
	printf("==> [%llu] %s%s%.*s (line %llu) <==\n", (unsigned long long)c->index,
	       tag_kind_name(c->kind), c->argument_len ? " " : "",
	       (int)MIN(c->argument_len, 200), c->argument, (unsigned long long)c->line);
	if (out->result)
		print_result_text(c, out->result);
	if (!out->ok)
		printf("error: %s %s: %s\n", front_category_name(out->err.category), out->err.code,
		       out->err.message);
}

static void print_answer(struct tags_ctx *t, const struct tag_command *c,
			 const struct outcome *out)
{
	if (t->o.json)
		print_answer_json(t, c, out);
	else
		print_answer_text(t, c, out);
	fflush(stdout);
}

/* ───────────────────────── the scanner's calls ───────────────────────── */

static void on_text(void *arg, const char *p, size_t n)
{
	struct tags_ctx *t = arg;

	if (!t->o.passthrough)
		return;
	if (!t->o.json) {
		fwrite(p, 1, n, stdout);
		fflush(stdout);
		t->mid_line = p[n - 1] != '\n';
		return;
	}
	/* Kept until the next answer: one object whatever the chunks. */
	if (t->text_len + n > t->text_cap) {
		size_t cap = t->text_cap ? t->text_cap : 4096;
		while (cap < t->text_len + n)
			cap *= 2;
		char *grown = realloc(t->text, cap);
		if (!grown)
			return;
		t->text = grown;
		t->text_cap = cap;
	}
	memcpy(t->text + t->text_len, p, n);
	t->text_len += n;
}

static void on_command(void *arg, const struct tag_command *c)
{
	struct tags_ctx *t = arg;
	struct outcome out = {0};

	run_command(t, c, &out);
	if (!out.ok)
		t->failed++;
	print_answer(t, c, &out);
	json_object_put(out.result);
}

static void on_error(void *arg, const struct tag_command *c, const struct front_error *e)
{
	struct tags_ctx *t = arg;
	struct outcome out = {.err = *e};

	t->failed++;
	print_answer(t, c, &out);
}

static const struct tag_scanner_ops SCAN_OPS = {on_text, on_command, on_error};

/* ───────────────────────── main ───────────────────────── */

/* Read fd to its end, feeding the scanner what each read gives. */
static int scan_input(struct tags_ctx *t, int fd)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "toolrun tags: reading %s: %s\n", t->o.file ? t->o.file : "stdin",
				errno_text(errno));
			return -1;
		}
		if (n == 0)
			break;
		tag_scanner_feed(t->scanner, buf, (size_t)n);
	}
	tag_scanner_end(t->scanner);
	if (t->o.json)
		flush_text_json(t);
	fflush(stdout);
	return 0;
}

static int open_input(const struct tags_opts *o)
{
	if (!o->file || strcmp(o->file, "-") == 0)
		return STDIN_FILENO;
	int fd = open(o->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "toolrun tags: %s: %s\n", o->file, errno_text(errno));
	return fd;
}

static void finish(struct tags_ctx *t)
{
	if (t->own_session && t->daemon_open)
		session_simple(t, TOOLRUN__SESSION_OP__SESSION_OP_CLOSE, 0);
	if (t->daemon_open)
		sess_client_close(&t->daemon);
	tag_scanner_free(t->scanner);
	path_policy_free(&t->policy);
	free(t->text);
}

int tags_main(const struct config *cfg, int argc, char **argv)
{
	struct tags_ctx t = {.cfg = cfg};
	struct front_error e;

	if (parse_args(argc, argv, &t.o) != 0)
		return EXIT_USAGE;
	if (path_policy_init(&t.policy, t.o.root, t.o.extensions, &e) < 0) {
		fprintf(stderr, "toolrun tags: --root %s: %s\n", t.o.root, e.message);
		return EXIT_USAGE;
	}
	int fd = open_input(&t.o);
	if (fd < 0) {
		path_policy_free(&t.policy);
		return EXIT_USAGE;
	}
	t.scanner = tag_scanner_new(&SCAN_OPS, &t);
	if (!t.scanner) {
		fprintf(stderr, "toolrun tags: out of memory\n");
		finish(&t);
		return EXIT_FAILED;
	}
	int r = scan_input(&t, fd);
	if (fd != STDIN_FILENO)
		close(fd);
	finish(&t);
	if (t.timed_out)
		return EXIT_TIMEOUT;
	return r < 0 || t.failed ? EXIT_FAILED : 0;
}
