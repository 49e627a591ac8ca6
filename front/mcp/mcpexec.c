/*
 * exec_command and write_stdin (mcpexec.h, docs/mcp.md).
 *
 * The arguments are those of Codex's unified exec (cmd, workdir, tty,
 * yield_time_ms, max_output_tokens; session_id, chars), its defaults
 * too; what each becomes in toolrund's terms is said where it is read.
 */
#include "mcpexec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcptools.h"
#include "sbuf.h"
#include "util.h"

/* yield_time_ms when absent, as Codex has them. */
#define EXEC_YIELD_MS 10000
#define WRITE_YIELD_MS 250
/* No call waits longer (Codex's bound too): a call that outlived a
 * client's request timeout (60 s in the MCP SDKs) would be cancelled,
 * and a cancelled call interrupts its command. */
#define YIELD_MAX_MS 30000
/* An empty write_stdin (a poll) waits at least this long, less when the
 * command ends or waits for input first (Codex's floor): polling a long
 * build then takes a few calls, not hundreds. */
#define POLL_MIN_YIELD_MS 5000
/* max_output_tokens as bytes: Codex's own estimate of a token. */
#define BYTES_PER_TOKEN 4
/* From this many tokens on, max_output_tokens cuts nothing a reply
 * could carry (it holds at most 48 KiB of a stream per part, 256 parts). */
#define MAX_OUTPUT_TOKENS 1e9
/* Room for the cut clauses of two streams, each naming a file. */
#define TOKEN_CLAUSES_MAX (2 * (PATH_MAX + 512))

#define MAX_OUTPUT_TOKENS_ARG                                                                \
	"\"max_output_tokens\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"At most " \
	"this many tokens of output in the result, counted as 4 bytes each: the middle of a " \
	"longer output is left out at a marker that names the file holding it. It only " \
	"lowers the server's own budget (the default)\"}"

#define EXEC_OUTPUT                                                                          \
	"{\"type\":\"object\",\"required\":[\"session_id\",\"state\",\"stdout\",\"stderr\"," \
	"\"exit_code\",\"wall_time_ms\"],\"properties\":{"                                   \
	"\"session_id\":" MCP_NULLABLE("integer") "," MCP_COMMAND_PROPERTIES ","                \
	"\"wall_time_ms\":{\"type\":\"integer\"},"                                           \
	"\"token_dropped_bytes\":{\"type\":\"integer\"},"                                    \
	"\"original_token_count\":" MCP_NULLABLE("integer") ","                              \
	"\"stdout_token_spill\":" MCP_NULLABLE("string") ","                                 \
	"\"stderr_token_spill\":" MCP_NULLABLE("string") ","                                 \
	"\"toolrun_session\":{\"type\":\"string\"},\"tty\":{\"type\":\"boolean\"}}}"

/* ------------------------------------------------------------------ */
/* The sessions                                                        */

static struct mcp_exec_session *exec_add(struct mcp_exec_sessions *t, const char *session,
					 bool tty)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct mcp_exec_session *s = realloc(t->s, cap * sizeof(*s));
		if (!s)
			return NULL;
		t->s = s;
		t->cap = cap;
	}
	struct mcp_exec_session *x = &t->s[t->n++];
	*x = (struct mcp_exec_session){.id = ++t->last_id, .tty = tty};
	snprintf(x->session, sizeof(x->session), "%s", session);
	return x;
}

static struct mcp_exec_session *exec_find(struct mcp_exec_sessions *t, int64_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->s[i].id == id)
			return &t->s[i];
	return NULL;
}

static void exec_remove(struct mcp_exec_sessions *t, const struct mcp_exec_session *x)
{
	size_t i = (size_t)(x - t->s);

	memmove(&t->s[i], &t->s[i + 1], (t->n - i - 1) * sizeof(*t->s));
	t->n--;
}

/* ------------------------------------------------------------------ */
/* max_output_tokens                                                   */

/* What max_output_tokens left out of this result. */
struct token_cut {
	uint64_t seen;    /* bytes of stdout and stderr before */
	uint64_t dropped; /* bytes left out */
	struct front_buf out, err; /* the streams as cut, when cut */
	/* Per stream (stdout, stderr): the file that holds what was left
	 * out, "" when nothing was or it could not be written. */
	char spill[2][PATH_MAX];
	char clauses[TOKEN_CLAUSES_MAX]; /* for the last line: "" or "stdout bytes ..." */
};

/* Where the head of s ends within h bytes: after a line's end in its
 * second half, else at a character's start. */
static size_t head_end(const char *s, size_t h)
{
	const char *nl = h ? memrchr(s, '\n', h) : NULL;

	if (nl && (size_t)(nl - s) + 1 >= h / 2)
		return (size_t)(nl - s) + 1;
	while (h && ((unsigned char)s[h] & 0xC0) == 0x80)
		h--;
	return h;
}

/* Where the tail of s[0..len) begins for t bytes: at a line's start in
 * its first half, else at a character's start. */
static size_t tail_start(const char *s, size_t len, size_t t)
{
	size_t p = len - t;
	const char *nl = t > 1 && p ? memchr(s + p - 1, '\n', t) : NULL;

	if (nl && len - (size_t)(nl - s + 1) >= t / 2)
		return (size_t)(nl - s) + 1;
	while (p < len && ((unsigned char)s[p] & 0xC0) == 0x80)
		p++;
	return p;
}

/* Make the server's spill directory, once: private (mkdtemp, 0700), in
 * ${TMPDIR:-/tmp}. 0, or -errno with why. */
static int token_spill_dir(struct mcp_exec_sessions *t, char *why, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	if (t->spill_dir[0])
		return 0;
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	int n = snprintf(t->spill_dir, sizeof(t->spill_dir), "%s/toolrun-mcp-XXXXXX", tmp);
	if (n < 0 || (size_t)n >= sizeof(t->spill_dir) || !mkdtemp(t->spill_dir)) {
		int err = n < 0 || (size_t)n >= sizeof(t->spill_dir) ? ENAMETOOLONG : errno;
		snprintf(why, len, "cannot make %s/toolrun-mcp-XXXXXX: %s", tmp, errno_text(err));
		t->spill_dir[0] = 0;
		return -err;
	}
	return 0;
}

/* Keep the whole of a stream of this result, which toolrund kept
 * nowhere, in a new file of the server's spill directory: its path in
 * path, or "" with why. */
static void token_spill_write(struct mcp_exec_sessions *t, int id, const char *name,
			      const ProtobufCBinaryData *b, char *path, size_t plen, char *why,
			      size_t wlen)
{
	path[0] = 0;
	if (token_spill_dir(t, why, wlen) < 0)
		return;
	char file[PATH_MAX];
	int n = snprintf(file, sizeof(file), "%s/%u-session%d-%s.log", t->spill_dir,
			 ++t->spills, id, name);
	if (n < 0 || (size_t)n >= sizeof(file)) {
		snprintf(why, wlen, "cannot name a file in %s: %s", t->spill_dir,
			 errno_text(ENAMETOOLONG));
		return;
	}
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int err = fd < 0 ? errno : write_all(fd, b->data, b->len) < 0 ? errno : 0;
	if (fd >= 0 && close(fd) < 0 && !err)
		err = errno;
	if (err) {
		snprintf(why, wlen, "cannot write %s: %s", file, errno_text(err));
		if (fd >= 0)
			unlink(file);
		return;
	}
	snprintf(path, plen, "%s", file);
}

/* Where the bytes max_output_tokens left out of a stream are, said for
 * the marker and the last line, and that place in spill: toolrund's
 * spill file, when it names one (it holds the whole stream), or a file
 * of the server's own that holds this result's stream whole. */
static void token_cut_where(struct mcp_exec_sessions *t, int id, const char *name,
			    const Toolrun__StreamStats *st, const ProtobufCBinaryData *b,
			    char *spill, char *where, size_t len)
{
	char why[PATH_MAX + 128];

	if (st && st->spill_path && st->spill_path[0] && !st->spill_partial) {
		snprintf(spill, PATH_MAX, "%s", st->spill_path);
		snprintf(where, len, "the whole %s is in %s", name, spill);
		return;
	}
	token_spill_write(t, id, name, b, spill, PATH_MAX, why, sizeof(why));
	if (spill[0])
		snprintf(where, len, "the whole %s of this result is in %s", name, spill);
	else
		snprintf(where, len, "not kept (%s)", why);
}

/* Cut stream *b to keep bytes: its head and its tail around one marker
 * line that says what was left out and where it is, in into; *b then
 * points at into, and a clause for the last line goes to sb. */
static void cut_stream(struct mcp_exec_sessions *t, int id, struct token_cut *c,
		       struct sbuf *sb, const char *name, const Toolrun__StreamStats *st,
		       ProtobufCBinaryData *b, size_t keep, struct front_buf *into, char *spill)
{
	const char *s = (const char *)b->data;
	size_t head = head_end(s, keep - keep / 2), tail = tail_start(s, b->len, keep / 2);
	char where[2 * PATH_MAX], range[128], left[128];

	token_cut_where(t, id, name, st, b, spill, where, sizeof(where));
	snprintf(range, sizeof(range), "bytes %zu-%zu of the %zu in this result", head + 1, tail,
		 (size_t)b->len);
	front_buf_add(into, s, head);
	if (head && s[head - 1] != '\n')
		front_buf_add(into, "\n", 1);
	snprintf(left, sizeof(left), "...[max_output_tokens left out %zu bytes of %s here: ",
		 tail - head, name);
	front_buf_add(into, left, strlen(left));
	front_buf_add(into, range, strlen(range));
	front_buf_add(into, "; ", 2);
	front_buf_add(into, where, strlen(where));
	front_buf_add(into, "]\n", 2);
	front_buf_add(into, s + tail, b->len - tail);
	c->dropped += tail - head;
	if (sb->len)
		sbuf_add(sb, ". And ");
	sbuf_add(sb, name);
	sbuf_addc(sb, ' ');
	sbuf_add(sb, range);
	sbuf_add(sb, ", for max_output_tokens (at the marker above); ");
	sbuf_add(sb, where);
	*b = (ProtobufCBinaryData){into->len, (uint8_t *)into->p};
}

/* Cut the output of view (a copy of the reply) to budget bytes in all, a
 * stream that needs less than half of it leaving the rest to the other.
 * toolrund's cut, its marker and its spill file stay as they are. */
static void cut_for_tokens(struct mcp_exec_sessions *t, const struct mcp_exec_session *x,
			   Toolrun__SessionReply *view, size_t budget, struct token_cut *c)
{
	size_t out = view->stdout.len, err = view->stderr.len, half = budget / 2;
	size_t keep_out = budget - half, keep_err = half;
	const Toolrun__Exit *e = view->exit;
	struct sbuf sb = SBUF_INIT(c->clauses);

	c->seen = out + err;
	if (!budget || out + err <= budget)
		return;
	if (err <= half) {
		keep_err = err;
		keep_out = budget - err;
	} else if (out <= half) {
		keep_out = out;
		keep_err = budget - out;
	}
	/* A terminal's one stream is "output", as toolrund's marker says. */
	if (out > keep_out)
		cut_stream(t, x->id, c, &sb, x->tty ? "output" : "stdout",
			   e ? e->stdout_stats : NULL, &view->stdout, keep_out, &c->out,
			   c->spill[0]);
	if (err > keep_err)
		cut_stream(t, x->id, c, &sb, "stderr", e ? e->stderr_stats : NULL, &view->stderr,
			   keep_err, &c->err, c->spill[1]);
}

/* Remove the server's spill directory and its files. */
static void token_spill_remove(struct mcp_exec_sessions *t)
{
	DIR *d = t->spill_dir[0] ? opendir(t->spill_dir) : NULL;

	for (struct dirent *e; d && (e = readdir(d));)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	if (d) {
		closedir(d);
		rmdir(t->spill_dir);
	}
}

/* ------------------------------------------------------------------ */
/* The server's end                                                    */

void mcp_exec_end(struct mcp_tools *T, bool keep)
{
	for (size_t i = 0; i < T->exec.n && !keep; i++)
		mcp_side_call(T, T->exec.s[i].session, TOOLRUN__SESSION_OP__SESSION_OP_CLOSE);
	if (!keep)
		token_spill_remove(&T->exec);
	free(T->exec.s);
	T->exec = (struct mcp_exec_sessions){.last_id = T->exec.last_id};
}

/* ------------------------------------------------------------------ */
/* Results                                                             */

/* The line after the output: what happened and what to do next. */
static void exec_status(const Toolrun__SessionReply *r, int id, char *s, size_t len)
{
	char exit[128];

	switch (r->state) {
	case TOOLRUN__SESSION_STATE__SESSION_STATE_RUNNING:
		snprintf(s, len, "[still running as session_id %d: call write_stdin with session_id "
				 "%d to wait for more output (empty chars) or to type input (chars "
				 "\"\\u0003\" is Ctrl-C)]", id, id);
		return;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT:
		snprintf(s, len, "[waiting for input as session_id %d: call write_stdin with "
				 "session_id %d and the text, \"\\n\" at its end to end the line]",
			 id, id);
		return;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_IDLE:
		/* bash_kill or bash_output named its toolrun_session. */
		snprintf(s, len, "[the command has ended: another tool's result reported it]");
		return;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED:
		if (!r->exit) {
			snprintf(s, len, "[its shell ended: %s]", r->message);
			return;
		}
		mcp_exit_summary(r->exit, exit, sizeof(exit));
		snprintf(s, len, "[%s; its shell ended: %s]", exit, r->message);
		return;
	default:
		mcp_exit_summary(r->exit, exit, sizeof(exit));
		snprintf(s, len, "[%s]", exit);
		return;
	}
}

/* structuredContent: session_id (null once the command has ended), then
 * the fields of a bash result but its session's (toolrun_session) and
 * command_number (always 1), then what this call adds. */
static struct json_object *exec_json(const Toolrun__SessionReply *view,
				     const struct mcp_exec_session *x, bool live, int64_t wall_ms,
				     const struct token_cut *c)
{
	struct json_object *o = json_object_new_object(), *r = sess_reply_json(view);

	json_object_object_add(o, "session_id", live ? json_object_new_int(x->id) : NULL);
	json_object_object_foreach(r, key, val) {
		if (strcmp(key, "session") != 0 && strcmp(key, "command_number") != 0)
			json_object_object_add(o, key, json_object_get(val));
	}
	json_object_put(r);
	json_object_object_add(o, "wall_time_ms", json_object_new_int64(wall_ms));
	json_object_object_add(o, "token_dropped_bytes", json_object_new_uint64(c->dropped));
	json_object_object_add(o, "original_token_count",
			       c->dropped ? json_object_new_uint64((c->seen + BYTES_PER_TOKEN - 1) /
								   BYTES_PER_TOKEN)
					  : NULL);
	json_object_object_add(o, "stdout_token_spill",
			       c->spill[0][0] ? json_object_new_string(c->spill[0]) : NULL);
	json_object_object_add(o, "stderr_token_spill",
			       c->spill[1][0] ? json_object_new_string(c->spill[1]) : NULL);
	json_object_object_add(o, "toolrun_session", json_object_new_string(x->session));
	json_object_object_add(o, "tty", json_object_new_boolean(x->tty));
	return o;
}

/* The result of a call about x (first: exec_command's, whose session_id
 * the model does not know yet). A command that has ended is forgotten,
 * its session closed (unless its shell ended with it): write_stdin
 * knows its session_id no more. */
static struct json_object *exec_result(struct mcp_tools *T, struct mcp_exec_session *x,
				       bool first, struct sess_answer *a, size_t budget,
				       int64_t start_ms)
{
	const Toolrun__SessionReply *r = a->reply;
	const struct mcp_exec_session was = *x;
	bool live = r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_RUNNING ||
		    r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT;

	if (r->error) {
		struct json_object *res = mcp_fail(FRONT_EXECUTION, "SESSION",
						   "session_id %d (toolrun session %s): %s", was.id,
						   was.session, r->message);
		/* Gone (closed by idle expiry or by hand, toolrund restarted):
		 * nothing to write to any more; or never known to the model. */
		if (first)
			mcp_side_call(T, was.session, TOOLRUN__SESSION_OP__SESSION_OP_CLOSE);
		if (first || r->error == TOOLRUN__ERROR_CODE__ERROR_NOT_ALLOWED)
			exec_remove(&T->exec, x);
		sess_answer_free(a);
		return res;
	}
	if (!live) {
		if (r->state != TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED)
			mcp_side_call(T, was.session, TOOLRUN__SESSION_OP__SESSION_OP_CLOSE);
		exec_remove(&T->exec, x);
	}
	Toolrun__SessionReply view = *r;
	struct token_cut *c = calloc(1, sizeof(*c));
	char status[512];
	if (!c) {
		sess_answer_free(a);
		return mcp_fail(FRONT_INTERNAL, "NO_MEMORY", "out of memory");
	}
	cut_for_tokens(&T->exec, &was, &view, budget, c);
	exec_status(&view, was.id, status, sizeof(status));
	char *text = mcp_command_text(&view, status, c->clauses);
	struct json_object *res =
		mcp_tool_result(exec_json(&view, &was, live, monotonic_ms() - start_ms, c),
				text ? text : "");
	free(text);
	free(c->out.p);
	free(c->err.p);
	free(c);
	sess_answer_free(a);
	return res;
}

/* ------------------------------------------------------------------ */
/* Arguments                                                           */

/* yield_time_ms, the call's wait: dflt when absent, at most
 * YIELD_MAX_MS, and for a poll at least POLL_MIN_YIELD_MS. A command
 * that ends or waits for input answers sooner. */
static uint32_t yield_ms(struct json_object *args, double dflt, bool poll, bool *bad)
{
	double ms = mcp_arg_number(args, "yield_time_ms", dflt, 1e15, bad);

	if (poll && ms < POLL_MIN_YIELD_MS)
		ms = POLL_MIN_YIELD_MS;
	return (uint32_t)(MIN(ms, YIELD_MAX_MS) + 0.5);
}

/* max_output_tokens as bytes, BYTES_PER_TOKEN a token; 0 when absent
 * (no cut but toolrund's). */
static size_t output_budget(struct json_object *args, bool *bad)
{
	struct json_object *v;

	if (!json_object_object_get_ex(args, "max_output_tokens", &v) ||
	    json_object_is_type(v, json_type_null))
		return 0;
	double tokens = mcp_arg_number(args, "max_output_tokens", 0, 1e15, bad);
	if (tokens < 1 || tokens != (double)(uint64_t)tokens) {
		*bad = true; /* an integer from 1, as the schema says */
		return 0;
	}
	return tokens >= MAX_OUTPUT_TOKENS ? 0 : (size_t)tokens * BYTES_PER_TOKEN;
}

/* ------------------------------------------------------------------ */
/* The tools                                                           */

/* A session for the command, in workdir (checked as a file tool's path:
 * the same names mean the same places); NULL with the error's result in
 * *res. */
static struct mcp_exec_session *exec_session(struct mcp_tools *T, const char *workdir, bool tty,
					     struct json_object **res)
{
	struct path_ref ref;
	struct front_error e;
	char why[512], id[65];

	if (path_open(&T->paths, workdir ? workdir : ".", PATH_DIR, &ref, &e) < 0) {
		*res = mcp_tool_error(&e);
		return NULL;
	}
	int r = mcp_connect(T, why, sizeof(why));
	if (r == 0)
		r = mcp_new_session(T, ref.fd, ref.abs, tty, id, why, sizeof(why));
	close(ref.fd);
	if (r < 0) {
		sess_client_close(&T->conn); /* a broken connection: the next call makes one */
		*res = mcp_fail(FRONT_EXECUTION, "TOOLRUND", "exec_command: %s", why);
		return NULL;
	}
	struct mcp_exec_session *x = exec_add(&T->exec, id, tty);
	if (!x) {
		mcp_side_call(T, id, TOOLRUN__SESSION_OP__SESSION_OP_CLOSE);
		*res = mcp_fail(FRONT_INTERNAL, "NO_MEMORY", "exec_command: out of memory");
	}
	return x;
}

static struct json_object *tool_exec_command(struct mcp_tools *T, struct json_object *args)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	int64_t start = monotonic_ms();
	struct front_error e = {.code = ""};
	struct json_object *res = NULL;
	struct sess_answer a;
	char why[512];
	bool bad = false;
	const char *cmd = mcp_arg_string(args, "cmd", &bad);
	const char *workdir = mcp_arg_string(args, "workdir", &bad);
	bool tty = mcp_arg_bool(args, "tty", false, &bad);
	uint32_t yield = yield_ms(args, EXEC_YIELD_MS, false, &bad);
	size_t budget = output_budget(args, &bad);

	if (bad || !cmd)
		return mcp_bad_arguments("exec_command", "cmd (a string) is required; workdir is a "
							 "string, tty a boolean, yield_time_ms a "
							 "number of milliseconds, max_output_tokens "
							 "an integer from 1");
	if (!cmd[0])
		return mcp_fail(FRONT_SYNTAX, "EMPTY_COMMAND", "exec_command: cmd is empty");
	if (mcp_holds_nul(args, "cmd"))
		return mcp_fail(FRONT_VALIDATION, "NUL_BYTE", "exec_command: cmd holds a NUL byte, "
							      "which would cut it short");
	/* Codex takes an empty workdir as none. */
	if (workdir && !workdir[0])
		workdir = NULL;
	if (workdir && !mcp_arg_path(args, "workdir", &bad, &e))
		return mcp_tool_error(&e);
	struct mcp_exec_session *x = exec_session(T, workdir, tty, &res);
	if (!x)
		return res;
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_RUN;
	sc.session = x->session;
	sc.command = (ProtobufCBinaryData){strlen(cmd), (uint8_t *)cmd};
	sc.timeout_ms = yield;
	if (T->wait_call(T->server, T, &sc, -1, &a, why, sizeof(why)) < 0) {
		/* Its session_id never reaches the model: end it here. */
		sess_client_close(&T->conn);
		mcp_side_call(T, x->session, TOOLRUN__SESSION_OP__SESSION_OP_CLOSE);
		exec_remove(&T->exec, x);
		return mcp_fail(FRONT_EXECUTION, "TOOLRUND", "exec_command: %s", why);
	}
	return exec_result(T, x, true, &a, budget, start);
}

/* A session_id write_stdin does not know: one whose end was reported,
 * or one never given. */
static struct json_object *unknown_session(const struct mcp_tools *T, int64_t id)
{
	if (id <= T->exec.last_id)
		return mcp_fail(FRONT_EXECUTION, "UNKNOWN_SESSION",
				"write_stdin: session_id %lld has ended: a result reported its "
				"command's end, with its exit code; exec_command runs a new command",
				(long long)id);
	return mcp_fail(FRONT_EXECUTION, "UNKNOWN_SESSION",
			"write_stdin: no session_id %lld in this server: exec_command gives one to "
			"a command that runs on (the last one given was %d)", (long long)id,
			T->exec.last_id);
}

static struct json_object *tool_write_stdin(struct mcp_tools *T, struct json_object *args)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	int64_t start = monotonic_ms(), id = 0;
	struct sess_answer a;
	struct json_object *v;
	char why[512];
	bool bad = false;
	const char *chars = mcp_arg_string(args, "chars", &bad);
	bool poll = !chars || !chars[0];
	uint32_t yield = yield_ms(args, WRITE_YIELD_MS, poll, &bad);
	size_t budget = output_budget(args, &bad);

	if (json_object_object_get_ex(args, "session_id", &v) && json_object_is_type(v, json_type_int))
		id = json_object_get_int64(v);
	if (bad || id < 1 || id > INT_MAX)
		return mcp_bad_arguments("write_stdin", "session_id (an integer exec_command gave) is "
							"required; chars is a string, yield_time_ms "
							"a number of milliseconds, max_output_tokens "
							"an integer from 1");
	if (!poll && mcp_holds_nul(args, "chars"))
		return mcp_fail(FRONT_VALIDATION, "NUL_BYTE", "write_stdin: chars holds a NUL byte "
							      "(a terminal cannot send one either)");
	struct mcp_exec_session *x = exec_find(&T->exec, id);
	if (!x)
		return unknown_session(T, id);
	sc.session = x->session;
	sc.timeout_ms = yield;
	if (poll) {
		sc.op = TOOLRUN__SESSION_OP__SESSION_OP_READ;
	} else if (!x->tty && strcmp(chars, "\x03") == 0) {
		/* Ctrl-C, which a pipe cannot carry: what a terminal would do. */
		sc.op = TOOLRUN__SESSION_OP__SESSION_OP_INTERRUPT;
	} else {
		sc.op = TOOLRUN__SESSION_OP__SESSION_OP_WRITE;
		sc.input = (ProtobufCBinaryData){strlen(chars), (uint8_t *)chars};
	}
	if (mcp_connect(T, why, sizeof(why)) < 0 ||
	    T->wait_call(T->server, T, &sc, -1, &a, why, sizeof(why)) < 0) {
		sess_client_close(&T->conn); /* the session may live on: the model may retry */
		return mcp_fail(FRONT_EXECUTION, "TOOLRUND", "write_stdin: %s", why);
	}
	return exec_result(T, x, false, &a, budget, start);
}

/* ------------------------------------------------------------------ */
/* The table                                                           */

const struct mcp_tool mcp_exec_tools[] = {
	{"exec_command", "Run a command",
	 "Run a shell command in a new bash inside the box, in `workdir` (default: the root). "
	 "Waits up to `yield_time_ms` (default 10000, at most 30000): a command that ends by "
	 "then gives its output and exit code; one that runs on, or waits for input, gives its "
	 "output so far and a `session_id` for write_stdin. Each command starts afresh: cd and "
	 "variables do not carry over, and background jobs end with the command. Output over the "
	 "budget is cut in the middle at a marker; the whole is kept in the spill file the result "
	 "names.",
	 "{\"type\":\"object\",\"required\":[\"cmd\"],\"properties\":{"
	 "\"cmd\":{\"type\":\"string\",\"description\":\"bash source, as typed at a prompt\"},"
	 "\"workdir\":{\"type\":\"string\",\"description\":\"The directory to run it in: "
	 "relative to the root, or absolute under it (default: the root)\"},"
	 "\"tty\":{\"type\":\"boolean\",\"description\":\"Run it on a terminal, for programs "
	 "that want one: one output stream, the input echoed (default false)\"},"
	 "\"yield_time_ms\":{\"type\":\"number\",\"minimum\":0,\"description\":\"How long to "
	 "wait for the command to end before answering with a session_id (default 10000, at "
	 "most 30000)\"}," MAX_OUTPUT_TOKENS_ARG "}}",
	 EXEC_OUTPUT, tool_exec_command, MCP_SET_CODEX},
	{"write_stdin", "Write to a running command",
	 "Type `chars` into the input of the command exec_command left running as `session_id`, "
	 "then wait up to `yield_time_ms` and return the output that came since the last result. "
	 "Empty `chars` only waits (at least 5000 ms, unless the command ends or waits for input "
	 "first); \"\\u0003\" is Ctrl-C. Once a result gives the command's exit code, its "
	 "session_id is gone.",
	 "{\"type\":\"object\",\"required\":[\"session_id\"],\"properties\":{"
	 "\"session_id\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The session_id "
	 "of a result of exec_command or write_stdin\"},"
	 "\"chars\":{\"type\":\"string\",\"description\":\"The text, sent as is: end it with "
	 "\\\"\\\\n\\\" to end a line (default: empty, to wait for output)\"},"
	 "\"yield_time_ms\":{\"type\":\"number\",\"minimum\":0,\"description\":\"How long to "
	 "wait before answering (default 250; with empty chars 5000 to 30000)\"},"
	 MAX_OUTPUT_TOKENS_ARG "}}",
	 EXEC_OUTPUT, tool_write_stdin, MCP_SET_CODEX},
};

const size_t mcp_exec_ntools = ARRAY_SIZE(mcp_exec_tools);
