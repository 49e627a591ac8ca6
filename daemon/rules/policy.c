/*
 * Policy (policy.h).
 *
 * Process: the listener (pure functions: no loop, no fds).
 */
#include "policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "util.h"

static bool has_nul(const ProtobufCBinaryData *b)
{
	return b->len && memchr(b->data, '\0', b->len) != NULL;
}

static enum policy_verdict malformed(struct policy_decision *out,
				     const char *what)
{
	snprintf(out->error, sizeof(out->error), "%s", what);
	return POLICY_MALFORMED;
}

static enum policy_verdict nul_inside(struct policy_decision *out,
				      const char *field, size_t index)
{
	snprintf(out->error, sizeof(out->error), "%s[%zu] contains a NUL byte",
		 field, index);
	return POLICY_MALFORMED;
}

/* Strict decoding: fields this version does not know are refused, since
 * the version handshake says which fields exist. */
static bool has_unknown_fields(const Toolrun__ClientMessage *m)
{
	const ProtobufCMessage *inner = NULL;

	switch (m->msg_case) {
	case TOOLRUN__CLIENT_MESSAGE__MSG_HELLO: inner = &m->hello->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST: inner = &m->request->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_SIGNAL: inner = &m->signal->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_PING: inner = &m->ping->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_READER_GONE: inner = &m->reader_gone->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_RELOAD: inner = &m->reload->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_SESSION_CALL: inner = &m->session_call->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_FRONT_RECORD: inner = &m->front_record->base; break;
	case TOOLRUN__CLIENT_MESSAGE__MSG__NOT_SET:
	default: break;
	}
	if (m->base.n_unknown_fields || (inner && inner->n_unknown_fields))
		return true;
	if (m->msg_case != TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST)
		return false;
	if (m->request->agent_streams && m->request->agent_streams->base.n_unknown_fields)
		return true;
	if (m->request->state) {
		const Toolrun__ProcessState *st = m->request->state;
		if (st->base.n_unknown_fields)
			return true;
		for (size_t i = 0; i < st->n_limits; i++)
			if (st->limits[i]->base.n_unknown_fields)
				return true;
	}
	return false;
}

Toolrun__ClientMessage *policy_decode(const uint8_t *payload, size_t len,
				      struct arena *a, char *err, size_t errlen)
{
	ProtobufCMessage *base;
	int r = arena_unpack(a, &toolrun__client_message__descriptor, len, payload, &base);

	if (r == -E2BIG) {
		snprintf(err, errlen, "argv and envp take %zu bytes as execve counts them (each "
			 "string, its NUL and an 8-byte pointer): more than the %u any execve takes",
			 a->exec_bytes, FRAME_MAX_EXEC_BYTES);
		return NULL;
	}
	if (r == -EMSGSIZE) {
		snprintf(err, errlen, "the message has too many fields for its %zu bytes: "
			 "decoding it would take more than %zu bytes", len, a->cap);
		return NULL;
	}
	if (r < 0) {
		snprintf(err, errlen, r == -EBADMSG ? "payload is not a ClientMessage"
						    : "no memory to decode the payload");
		return NULL;
	}
	Toolrun__ClientMessage *m = (Toolrun__ClientMessage *)base;
	if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG__NOT_SET || has_unknown_fields(m)) {
		snprintf(err, errlen, "message of an unknown type or with unknown fields");
		arena_release(a);
		return NULL;
	}
	return m;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

enum policy_verdict policy_check(struct config *cfg, const Toolrun__Request *req,
				 unsigned nfds, int cwd_fd,
				 struct policy_decision *out)
{
	memset(out, 0, sizeof(*out));
	out->tool = -1;

	if (req->executable.len == 0)
		return malformed(out, "executable is empty");
	if (req->executable.len >= PATH_MAX)
		return malformed(out, "executable is longer than PATH_MAX");
	if (has_nul(&req->executable))
		return malformed(out, "executable contains a NUL byte");
	for (size_t i = 0; i < req->n_argv; i++)
		if (has_nul(&req->argv[i]))
			return nul_inside(out, "argv", i);
	for (size_t i = 0; i < req->n_envp; i++)
		if (has_nul(&req->envp[i]))
			return nul_inside(out, "envp", i);
	if (has_nul(&req->cwd))
		return malformed(out, "cwd contains a NUL byte");

	if (nfds == 0)
		return malformed(out, "no working directory fd attached");
	if (req->n_fds != nfds - 1)
		return malformed(out, "fds lists a number of descriptors other than the attached ones");
	if (req->n_fds > 0) {
		uint32_t sorted[req->n_fds];
		memcpy(sorted, req->fds, req->n_fds * sizeof(uint32_t));
		qsort(sorted, req->n_fds, sizeof(uint32_t), cmp_u32);
		for (size_t i = 0; i < req->n_fds; i++) {
			if (sorted[i] >= POLICY_FD_MAX)
				return malformed(out, "fds holds a descriptor number above 1048575");
			if (i > 0 && sorted[i] == sorted[i - 1])
				return malformed(out, "fds holds a descriptor number twice");
			if ((sorted[i] == 1 && req->shape_stdout) ||
			    (sorted[i] == 2 && req->shape_stderr))
				return malformed(out, "a shaped stream is also attached as an fd");
		}
	}
	if (req->stderr_joins_stdout && !(req->shape_stdout && req->shape_stderr))
		return malformed(out, "stderr_joins_stdout needs both streams shaped");
	if (req->state) {
		const Toolrun__ProcessState *st = req->state;
		uint32_t seen = 0;
		if (st->umask > 0777)
			return malformed(out, "state.umask is above 0777");
		for (size_t i = 0; i < st->n_limits; i++) {
			const Toolrun__Limit *l = st->limits[i];
			if (l->resource >= RLIM_NLIMITS)
				return malformed(out, "state.limits names a resource Linux does not have");
			if (seen & (1u << l->resource))
				return malformed(out, "state.limits names a resource twice");
			seen |= 1u << l->resource;
			if (l->soft > l->hard)
				return malformed(out, "state.limits has a soft limit above its hard limit");
		}
		if (st->nice < -20 || st->nice > 19)
			return malformed(out, "state.nice is outside -20..19");
		if (st->cpu_affinity.len > 1024)
			return malformed(out, "state.cpu_affinity is longer than 1024 bytes");
		if (st->oom_score_adj < -1000 || st->oom_score_adj > 1000)
			return malformed(out, "state.oom_score_adj is outside -1000..1000");
	}

	if (req->command) {
		if (!cfg->agent_commands)
			return POLICY_COMMANDS_OFF;
		out->tool = -1;
		out->limits = policy_command_limits(cfg);
		out->shape_stdout = req->shape_stdout;
		out->shape_stderr = req->shape_stderr;
		out->joined = req->stderr_joins_stdout;
		out->agent_stdout = out->agent_stderr = true;
		return POLICY_RUN;
	}
	char exe[PATH_MAX];
	memcpy(exe, req->executable.data, req->executable.len);
	exe[req->executable.len] = '\0';
	out->tool = config_find_tool_at(cfg, cwd_fd, exe, &out->file);
	if (out->tool < 0)
		return POLICY_NOT_LISTED;

	out->limits = config_tool_limits(cfg, out->tool);
	/* Which streams reach the agent, as the client knows them; one that
	 * does not say (older than agent_streams) counts every stream. */
	const Toolrun__AgentStreams *agent = req->agent_streams;
	out->agent_stdout = !agent || agent->stdout_reaches_agent;
	out->agent_stderr = !agent || agent->stderr_reaches_agent;
	/* A stream the client asks to be shaped has no fd of its own in the
	 * request: it must get a pipe. `always` adds the others, where the
	 * limits could cut something, but for a stream the client says is the
	 * agent's: inside an agent command, the command cuts that once. */
	bool always = cfg->truncate == TRUNCATE_ALWAYS &&
		      (out->limits.max_bytes || out->limits.max_lines);
	out->shape_stdout = req->shape_stdout ||
			    (always && !(agent && agent->stdout_reaches_agent));
	out->shape_stderr = req->shape_stderr ||
			    (always && !(agent && agent->stderr_reaches_agent));
	out->joined = req->stderr_joins_stdout;
	return POLICY_RUN;
}

static bool starts_with(const ProtobufCBinaryData *b, const char *prefix)
{
	size_t n = strlen(prefix);
	return b->len >= n && memcmp(b->data, prefix, n) == 0;
}

static const char preload_key[] = "LD_PRELOAD=";

/* Is one of the entries of an LD_PRELOAD=... variable toolrun's library?
 * That is the path `preload` names, or any file whose base name is
 * libtoolrun.so: the image may preload it by another path (a symlink,
 * /lib for /usr/lib, a copy) than the config names. A program that kept
 * such an entry but lost toolrun's variables would take itself for the
 * first process of a tree and declare its own output, a pipe into
 * another program, to be the agent's stream. */
static bool preload_names(const ProtobufCBinaryData *e, const char *path)
{
	const char *v = (const char *)e->data + sizeof(preload_key) - 1;
	size_t vlen = e->len - (sizeof(preload_key) - 1), plen = strlen(path);

	/* ld.so separates entries with colons or spaces. */
	for (size_t i = 0; i < vlen;) {
		size_t j = i;
		while (j < vlen && v[j] != ':' && v[j] != ' ')
			j++;
		if (plen && j - i == plen && memcmp(v + i, path, plen) == 0)
			return true;
		if (preload_entry_is_toolrun(v + i, j - i))
			return true;
		i = j + 1;
	}
	return false;
}

bool policy_env_matches(const char *patterns, const uint8_t *var, size_t len)
{
	/* protobuf-c gives an empty bytes field a NULL pointer, which
	 * memchr and memcpy must not see, even with a length of 0. */
	const uint8_t *eq = len ? memchr(var, '=', len) : NULL;
	size_t name_len = eq ? (size_t)(eq - var) : len;
	char stack[256], *name = stack;
	bool hit = false;

	if (name_len >= sizeof(stack) && !(name = malloc(name_len + 1)))
		return true; /* cannot tell: treat as matching (drop it) */
	if (name_len)
		memcpy(name, var, name_len);
	name[name_len] = '\0';
	for (const char *p = patterns; *p && !hit;) {
		size_t n = strcspn(p, " \t");
		char pat[256];
		if (n > 0 && n < sizeof(pat)) {
			memcpy(pat, p, n);
			pat[n] = '\0';
			hit = fnmatch(pat, name, 0) == 0;
		}
		p += n;
		p += strspn(p, " \t");
	}
	if (name != stack)
		free(name);
	return hit;
}

/* Does the tool's environment filter let this variable through? */
static bool env_passes(const struct config *cfg, const struct limits *lim,
		       const ProtobufCBinaryData *e)
{
	if (lim->env_allow_len &&
	    !policy_env_matches(config_text(cfg, lim->env_allow), e->data, e->len))
		return false;
	return !(lim->env_deny_len &&
		 policy_env_matches(config_text(cfg, lim->env_deny), e->data, e->len));
}

struct limits policy_command_limits(const struct config *cfg)
{
	struct limits lim = cfg->defaults;

	lim.timeout_s = cfg->command_timeout_s;
	for (int r = 0; r < POLICY_RLIMIT_COUNT; r++)
		lim.rlimit[r] = POLICY_UNLIMITED;
	lim.network = NETWORK_ALLOW;
	lim.env_allow_len = lim.env_deny_len = 0;
	lim.from_section = 0;
	return lim;
}

static size_t name_len(const ProtobufCBinaryData *e)
{
	const uint8_t *eq = e->len ? memchr(e->data, '=', e->len) : NULL;
	return eq ? (size_t)(eq - e->data) : e->len;
}

/* Does one of extra set the same variable as e? */
static bool replaced(const ProtobufCBinaryData *e, const ProtobufCBinaryData *extra,
		     size_t nextra)
{
	size_t n = name_len(e);

	for (size_t i = 0; i < nextra; i++)
		if (name_len(&extra[i]) == n && memcmp(extra[i].data, e->data, n) == 0)
			return true;
	return false;
}

/* One of the variables the library reads (and hides below a program). */
static bool toolrun_variable(const ProtobufCBinaryData *e)
{
	static const char *const names[] = {
		"TOOLRUN_AGENT_STDOUT", "TOOLRUN_AGENT_STDERR", "TOOLRUN_COMMAND",
		"TOOLRUN_CONFIG",       "TOOLRUN_DIRECT",       "TOOLRUN_NESTED",
		"TOOLRUN_SESSION",
	};
	size_t n = name_len(e);

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == n && memcmp(e->data, names[i], n) == 0)
			return true;
	return false;
}

bool policy_shell_env_keeps(const struct config *cfg, const ProtobufCBinaryData *e)
{
	return toolrun_variable(e) || env_passes(cfg, &cfg->defaults, e);
}

int policy_environment(const Toolrun__Request *req, const struct config *cfg,
		       const struct limits *lim, const ProtobufCBinaryData *extra,
		       size_t nextra, ProtobufCBinaryData **out, size_t *n)
{
	static const char marker[] = "TOOLRUN_NESTED=1";
	const size_t keylen = sizeof(preload_key) - 1, liblen = strlen(cfg->preload);
	/* An agent command has no filters of its own: the global ones. */
	const struct limits *filter = req->command ? &cfg->defaults : lim;
	size_t last = SIZE_MAX, k = 0;
	bool has_ours = false, marked = false, keep_preload = true;

	/* The last LD_PRELOAD is the one ld.so reads. */
	for (size_t i = 0; i < req->n_envp; i++)
		if (starts_with(&req->envp[i], preload_key))
			last = i;
	if (last != SIZE_MAX) {
		has_ours = preload_names(&req->envp[last], cfg->preload);
		/* LD_PRELOAD is a name like any other to the filters. */
		keep_preload = env_passes(cfg, filter, &req->envp[last]);
	}
	/* A program that keeps toolrun's library is nested; an agent
	 * command is the first process of its tree, not nested: its
	 * constructor sees the declaration and stays itself. */
	bool nested = has_ours && !req->command;

	/* Room for the entries, the marker, and "LD_PRELOAD=<our library>"
	 * after them, for a nested program whose LD_PRELOAD the policy drops. */
	size_t room = (req->n_envp + nextra + 1) * sizeof(ProtobufCBinaryData);
	ProtobufCBinaryData *env = malloc(room + keylen + liblen);
	if (!env)
		return -ENOMEM;
	uint8_t *ours = (uint8_t *)env + room;
	memcpy(ours, preload_key, keylen);
	memcpy(ours + keylen, cfg->preload, liblen);

	for (size_t i = 0; i < req->n_envp; i++) {
		const ProtobufCBinaryData *e = &req->envp[i];
		if (replaced(e, extra, nextra))
			continue;
		if (req->command && !starts_with(e, preload_key)) {
			/* Its shell stands for the agent's: the global filters,
			 * toolrun's own variables excepted. */
			if (policy_shell_env_keeps(cfg, e))
				env[k++] = *e;
			continue;
		}
		if (starts_with(e, "TOOLRUN_")) {
			/* With the library loaded, its constructor hides them
			 * from the program; without it, nothing would. Only
			 * toolrun's own names pass the filters unasked: a
			 * TOOLRUN_API_KEY is the caller's, like any other. */
			if (!nested || (!toolrun_variable(e) && !env_passes(cfg, lim, e)))
				continue;
			if (e->len == sizeof(marker) - 1 &&
			    memcmp(e->data, marker, sizeof(marker) - 1) == 0)
				marked = true;
		} else if (starts_with(e, preload_key)) {
			if (!keep_preload) {
				/* Other libraries go; ours stays, alone. */
				if (has_ours && i == last)
					env[k++] = (ProtobufCBinaryData){keylen + liblen, ours};
				continue;
			}
		} else if (!env_passes(cfg, filter, e)) {
			continue;
		}
		env[k++] = *e;
	}
	for (size_t i = 0; i < nextra; i++)
		env[k++] = extra[i];
	if (nested && !marked) {
		env[k].data = (uint8_t *)marker;
		env[k].len = sizeof(marker) - 1;
		k++;
	}
	*out = env;
	*n = k;
	return 0;
}

/* ───────────────────────── session calls ───────────────────────── */

static bool session_id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > POLICY_SESSION_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    c != '-' && c != '_')
			return false;
	}
	return true;
}

static bool session_env_ok(const Toolrun__SessionCall *c, char *why, size_t len)
{
	for (size_t i = 0; i < c->n_envp; i++) {
		const ProtobufCBinaryData *e = &c->envp[i];
		const uint8_t *eq = e->len ? memchr(e->data, '=', e->len) : NULL;
		if (!eq || eq == e->data || memchr(e->data, '\0', e->len)) {
			snprintf(why, len, "environment entry %zu is not NAME=value without NUL", i);
			return false;
		}
	}
	if (c->cwd.len && memchr(c->cwd.data, '\0', c->cwd.len)) {
		snprintf(why, len, "the working directory's path holds a NUL");
		return false;
	}
	return true;
}

/* The op's own fields. */
static bool session_op_fields_ok(const Toolrun__SessionCall *c, char *why, size_t len)
{
	switch (c->op) {
	case TOOLRUN__SESSION_OP__SESSION_OP_NEW:
		return session_env_ok(c, why, len);
	case TOOLRUN__SESSION_OP__SESSION_OP_RUN:
		if (c->command.len == 0 || c->command.len > POLICY_SESSION_COMMAND_MAX ||
		    memchr(c->command.data, '\0', c->command.len)) {
			snprintf(why, len, "the command must be 1 to %u bytes without NUL",
				 POLICY_SESSION_COMMAND_MAX);
			return false;
		}
		return true;
	case TOOLRUN__SESSION_OP__SESSION_OP_WRITE:
		if (c->input.len > POLICY_SESSION_INPUT_MAX) {
			snprintf(why, len, "input of %zu bytes: at most %u at once", c->input.len,
				 POLICY_SESSION_INPUT_MAX);
			return false;
		}
		return true;
	case TOOLRUN__SESSION_OP__SESSION_OP_KILL:
		if (c->signal < 0 || c->signal > 64) {
			snprintf(why, len, "signal %d: 1 to 64, or 0 for SIGKILL", (int)c->signal);
			return false;
		}
		return true;
	default:
		if (c->signal != 0) {
			snprintf(why, len, "only a KILL call names a signal");
			return false;
		}
		return true;
	}
}

bool policy_session_call(const Toolrun__SessionCall *c, unsigned nfds, char *why, size_t len)
{
	bool is_new = c->op == TOOLRUN__SESSION_OP__SESSION_OP_NEW;
	bool names_one = !is_new && c->op != TOOLRUN__SESSION_OP__SESSION_OP_LIST;

	if (c->op <= TOOLRUN__SESSION_OP__SESSION_OP_UNSPECIFIED ||
	    c->op > TOOLRUN__SESSION_OP__SESSION_OP_KILL) {
		snprintf(why, len, "unknown session op %d", (int)c->op);
		return false;
	}
	if (nfds != (is_new ? 1u : 0u)) {
		snprintf(why, len, is_new ? "a NEW call must attach its working directory's fd"
					  : "only a NEW call attaches an fd");
		return false;
	}
	if (names_one && !session_id_ok(c->session)) {
		snprintf(why, len, "a session id is 1 to %d letters, digits, '-' or '_'",
			 POLICY_SESSION_ID_MAX);
		return false;
	}
	if (c->timeout_ms > POLICY_SESSION_TIMEOUT_MAX_MS) {
		snprintf(why, len, "timeout of %u ms: at most %u", c->timeout_ms,
			 POLICY_SESSION_TIMEOUT_MAX_MS);
		return false;
	}
	return session_op_fields_ok(c, why, len);
}

/* 1 to 32 characters, each in set. */
static bool word_of(const char *w, const char *set)
{
	size_t n = strlen(w);
	return n >= 1 && n <= 32 && strspn(w, set) == n;
}

bool policy_front_record(const Toolrun__FrontRecord *r, char *why, size_t len)
{
	if (strcmp(r->front, "mcp") != 0 && strcmp(r->front, "tags") != 0) {
		snprintf(why, len, "front end \"%.32s\": expected mcp or tags", r->front);
		return false;
	}
	if (!word_of(r->tool, "abcdefghijklmnopqrstuvwxyz_")) {
		snprintf(why, len, "tool name: 1 to 32 of a-z and '_'");
		return false;
	}
	if (r->target.len > POLICY_FRONT_TARGET_MAX) {
		snprintf(why, len, "target of %zu bytes: at most %u", r->target.len,
			 POLICY_FRONT_TARGET_MAX);
		return false;
	}
	if (r->ok ? r->error_code[0] != 0
		  : !word_of(r->error_code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_")) {
		snprintf(why, len, r->ok ? "a record that succeeded has no error code"
					 : "error code: 1 to 32 of A-Z and '_'");
		return false;
	}
	return true;
}
