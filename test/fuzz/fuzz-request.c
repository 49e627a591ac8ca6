/*
 * libFuzzer harness: the path a client's bytes take in toolrund.
 *
 * The input is a byte stream as a client would write it to the daemon's
 * socket: one or more frames (8-byte header, then a ClientMessage), maybe
 * cut short, maybe with a bad header. Each input is run twice:
 *
 *  1. Directly, as the listener handles each frame: frame_header_parse()
 *     with the client maximum, then policy_decode() of the payload (copied
 *     to a buffer of exactly its length, so that AddressSanitizer sees any
 *     read past its end; decoded into an arena as the listener does, and
 *     once more into one too small for it, so that running out is
 *     exercised too), and for a Request policy_check() (nfds from the
 *     header, the working directory a fixed directory fd) and, when the
 *     verdict is to run it, policy_environment().
 *
 *  2. Through the incremental reader that actually reads the socket:
 *     the stream is written to a socketpair in pieces whose sizes are
 *     derived from the input, each frame with the descriptors its header
 *     announces (sometimes one too many or too few) as SCM_RIGHTS, and
 *     frame_reader_read() with the daemon's grow callback reads it back.
 *     Every frame it returns must be the next frame of the input, with
 *     its fds; the way it ends (EOF, -EPROTO, -EMSGSIZE) must be the one
 *     the stream calls for; no descriptor may be left open. Each frame is
 *     then handled as job_start() does: decoded from the reader's buffer,
 *     checked with the received fds (the first is the working directory).
 *
 *  3. The same bytes without descriptors through a client's read-ahead
 *     reader (read_ahead_stream), which must give the same frames.
 *
 * A broken expectation aborts, so libFuzzer reports it like a crash.
 * Nothing is shared between runs except what LLVMFuzzerInitialize sets up:
 * the parsed config (each run works on a fresh copy, since path lookups
 * cache file identities in it) and the working directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arena.h"
#include "check.h"
#include "config.h"
#include "frame.h"
#include "outq.h"
#include "policy.h"
#include "toolrun.pb-c.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Tools by name, one by absolute path (which /bin/env and the symlink in
 * the working directory also name); one with its output limits turned off
 * (so that `truncate = always` shapes it only on request), one with an
 * environment allow list. */
static const char fuzz_config[] =
	"# toolrun.conf for the fuzzer\n"
	"truncate = always\n"
	"max_bytes = 4000\n"
	"max_lines = 200\n"
	"timeout = 30\n"
	"env_deny = *TOKEN* *SECRET* *KEY* AWS_*\n"
	"preload = /usr/lib/x86_64-linux-gnu/toolrun/libtoolrun.so\n"
	"tools = cat ls grep make\n"
	"        /usr/bin/env\n"
	"[tool.make]\n"
	"max_bytes = 0\n"
	"max_lines = 0\n"
	"timeout = 600\n"
	"rlimit_as = 4G\n"
	"network = allow\n"
	"[tool.grep]\n"
	"env_allow = PATH HOME LANG LC_* TERM [A-C]?\n"
	"env_deny = LC_ALL\n";

/* Set up once. */
static struct config cfg_pristine;
static char workdir[64];
static int workdir_fd = -1;
static unsigned fd_budget; /* most fds one frame may carry here */
static bool trace;          /* FUZZ_REQUEST_TRACE=1: say what each frame does */
static bool fd_check;       /* /proc/self/fd can be read: count descriptors */

/* Per run. */
static struct config cfg;
static bool cfg_fresh;

static void cleanup(void)
{
	char link[sizeof(workdir) + 16];

	snprintf(link, sizeof(link), "%s/env-link", workdir);
	unlink(link);
	rmdir(workdir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;

	trace = getenv("FUZZ_REQUEST_TRACE") != NULL;
	config_init(&cfg_pristine, "fuzz.conf");
	if (config_parse_text(&cfg_pristine, fuzz_config) < 0) {
		fprintf(stderr, "fuzz-request: built-in config: %s\n", cfg_pristine.error);
		exit(1);
	}

	/* The working directory: empty but for a symlink to the tool listed
	 * by path, so that a relative executable can name it. */
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/' || strlen(tmp) > 32)
		tmp = "/tmp";
	snprintf(workdir, sizeof(workdir), "%s/toolrun-fuzz.XXXXXX", tmp);
	if (!mkdtemp(workdir)) {
		perror("fuzz-request: mkdtemp");
		exit(1);
	}
	atexit(cleanup);
	char link[sizeof(workdir) + 16];
	snprintf(link, sizeof(link), "%s/env-link", workdir);
	if (symlink("/usr/bin/env", link) < 0) {
		perror("fuzz-request: symlink");
		exit(1);
	}
	workdir_fd = open(workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (workdir_fd < 0) {
		perror("fuzz-request: open");
		exit(1);
	}

	int probe = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd_check = probe >= 0;
	if (probe >= 0)
		close(probe);

	/* A frame may carry 1024 fds: make room for them if the hard limit
	 * allows, else send only what fits (the rest count as missing). */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		fd_budget = rl.rlim_cur > 2 * FRAME_MAX_FDS + 256
				    ? FRAME_MAX_FDS + 1
				    : (unsigned)(rl.rlim_cur / 2 > 256 ? rl.rlim_cur / 2 - 256
								     : 0);
	}
	return 0;
}

/* ───────────────────────── one frame's message ───────────────────────── */

static void use_config(void)
{
	if (!cfg_fresh) {
		memcpy(&cfg, &cfg_pristine, sizeof(cfg));
		cfg_fresh = true;
	}
}

static volatile uint8_t sink;

/* Read every byte, so that AddressSanitizer checks the whole range. */
static void touch(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc ^= p[i];
	sink = acc;
}

/* A session call, as the listener checks it before any session sees it:
 * accepted, it keeps the rules policy.h states; refused, it says why. */
static void check_session_call(const Toolrun__SessionCall *c, unsigned nfds)
{
	char why[256] = "";
	bool ok = policy_session_call(c, nfds, why, sizeof(why));

	CHECK(ok == (why[0] == '\0'));
	if (!ok)
		return;
	CHECK(nfds == (c->op == TOOLRUN__SESSION_OP__SESSION_OP_NEW ? 1u : 0u));
	CHECK(c->timeout_ms <= POLICY_SESSION_TIMEOUT_MAX_MS);
	if (c->op == TOOLRUN__SESSION_OP__SESSION_OP_RUN)
		CHECK(c->command.len > 0 && !memchr(c->command.data, '\0', c->command.len));
	for (size_t i = 0; c->op == TOOLRUN__SESSION_OP__SESSION_OP_NEW && i < c->n_envp; i++)
		CHECK(memchr(c->envp[i].data, '=', c->envp[i].len) != NULL);
	touch(c->command.data, c->command.len);
	touch(c->input.data, c->input.len);
}

/* A front end's audit record: accepted, its strings keep the rules
 * toolrun.proto states, so that the audit line cannot be forged. */
static void check_front_record(const Toolrun__FrontRecord *r)
{
	char why[256] = "";
	bool ok = policy_front_record(r, why, sizeof(why));

	CHECK(ok == (why[0] == '\0'));
	if (!ok)
		return;
	CHECK(strcmp(r->front, "mcp") == 0 || strcmp(r->front, "tags") == 0);
	CHECK(strlen(r->tool) >= 1 && strlen(r->tool) <= 32);
	CHECK(strspn(r->tool, "abcdefghijklmnopqrstuvwxyz_") == strlen(r->tool));
	CHECK(r->target.len <= POLICY_FRONT_TARGET_MAX);
	CHECK(r->ok == (r->error_code[0] == '\0'));
	touch(r->target.data, r->target.len);
}

static bool same_bytes(const ProtobufCBinaryData *a, const ProtobufCBinaryData *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static bool starts_with(const ProtobufCBinaryData *b, const char *prefix)
{
	size_t n = strlen(prefix);
	return b->len >= n && memcmp(b->data, prefix, n) == 0;
}

static bool contains(const uint8_t *p, size_t n, const char *what)
{
	return n >= strlen(what) && memmem(p, n, what, strlen(what)) != NULL;
}

/* The built-in config's filters, restated: grep sees PATH, HOME, LANG,
 * TERM, LC_* but LC_ALL, and two-letter names starting with A to C; the
 * other tools see everything but *TOKEN*, *SECRET*, *KEY* and AWS_*.
 * Only the variables the library reads pass unfiltered (other TOOLRUN_
 * names do not); LD_PRELOAD is filtered like any other name. */
static bool env_filter_passes(const char *tool, const ProtobufCBinaryData *e)
{
	const uint8_t *eq = e->len ? memchr(e->data, '=', e->len) : NULL;
	size_t n = eq ? (size_t)(eq - e->data) : e->len;
	const uint8_t *name = e->data;
#define IS(s) (n == strlen(s) && memcmp(name, s, n) == 0)
	/* The variables the library reads pass unasked. */
	if (IS("TOOLRUN_CONFIG") || IS("TOOLRUN_AGENT_STDOUT") || IS("TOOLRUN_AGENT_STDERR") ||
	    IS("TOOLRUN_COMMAND") || IS("TOOLRUN_SESSION") || IS("TOOLRUN_NESTED"))
		return true;
	if (strcmp(tool, "grep") == 0)
		return (IS("PATH") || IS("HOME") || IS("LANG") || IS("TERM") ||
			(n >= 3 && memcmp(name, "LC_", 3) == 0) ||
			(n == 2 && name[0] >= 'A' && name[0] <= 'C')) &&
		       !IS("LC_ALL");
#undef IS
	return !contains(name, n, "TOKEN") && !contains(name, n, "SECRET") &&
	       !contains(name, n, "KEY") && !(n >= 4 && memcmp(name, "AWS_", 4) == 0);
}

/* Does the LD_PRELOAD entry e have `preload` itself, or a file named
 * libtoolrun.so, among its entries (separated by colons or spaces)?
 * Restated. */
static bool names_our_library(const ProtobufCBinaryData *e)
{
	static const char base[] = "/libtoolrun.so";
	size_t plen = strlen(cfg.preload), blen = sizeof(base) - 1;

	for (size_t i = strlen("LD_PRELOAD="); i < e->len;) {
		size_t j = i;
		while (j < e->len && e->data[j] != ':' && e->data[j] != ' ')
			j++;
		if (j - i == plen && memcmp(e->data + i, cfg.preload, plen) == 0)
			return true;
		if (j - i == blen - 1 && memcmp(e->data + i, base + 1, blen - 1) == 0)
			return true;
		if (j - i >= blen && memcmp(e->data + j - blen, base, blen) == 0)
			return true;
		i = j + 1;
	}
	return false;
}

/* The environment must be the request's entries in order, some left out,
 * plus at most the marker at the end; the marker is there exactly when
 * the last LD_PRELOAD names toolrun's library; without it, no TOOLRUN_
 * entry may be left; every entry passes the tool's filters, but for
 * LD_PRELOAD=<preload> standing for the last LD_PRELOAD of a nested
 * program, and every request entry left out was one to leave out. */
static void check_environment(const Toolrun__Request *req, const char *tool,
			      const struct limits *lim)
{
	static const ProtobufCBinaryData marker = {
		sizeof("TOOLRUN_NESTED=1") - 1, (uint8_t *)"TOOLRUN_NESTED=1"};
	char ours_text[sizeof("LD_PRELOAD=") + CONFIG_PATH_MAX];
	const ProtobufCBinaryData ours = {
		(size_t)snprintf(ours_text, sizeof(ours_text), "LD_PRELOAD=%s", cfg.preload),
		(uint8_t *)ours_text};
	ProtobufCBinaryData *env = NULL;
	size_t n = 0, last = SIZE_MAX;

	for (size_t j = 0; j < req->n_envp; j++)
		if (starts_with(&req->envp[j], "LD_PRELOAD="))
			last = j;
	bool nested = last != SIZE_MAX && names_our_library(&req->envp[last]);
	if (policy_environment(req, &cfg, lim, NULL, 0, &env, &n) < 0)
		return;
	CHECK(env != NULL);
	CHECK(n <= req->n_envp + 1);
	if (trace)
		fprintf(stderr, "  environment: %zu of %zu entries\n", n, req->n_envp);

	bool marked = false;
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		touch(env[i].data, env[i].len);
		if (!env_filter_passes(tool, &env[i])) {
			/* Our library alone, where the last LD_PRELOAD was. */
			CHECK(nested && j <= last && same_bytes(&env[i], &ours));
			for (; j < last; j++)
				CHECK(!env_filter_passes(tool, &req->envp[j]) ||
				      starts_with(&req->envp[j], "TOOLRUN_"));
			j = last + 1;
			continue;
		}
		while (j < req->n_envp && env[i].data != req->envp[j].data) {
			/* Left out: filtered, or toolrun's own without the
			 * library. */
			CHECK(!env_filter_passes(tool, &req->envp[j]) ||
			      starts_with(&req->envp[j], "TOOLRUN_"));
			j++;
		}
		if (j < req->n_envp) {
			CHECK(env[i].len == req->envp[j].len);
			j++;
		} else {
			/* Not one of the request's: the marker, added last. */
			CHECK(i == n - 1);
			CHECK(same_bytes(&env[i], &marker));
		}
		if (same_bytes(&env[i], &marker))
			marked = true;
	}
	for (; j < req->n_envp; j++)
		CHECK(!env_filter_passes(tool, &req->envp[j]) ||
		      starts_with(&req->envp[j], "TOOLRUN_"));
	CHECK(marked == nested);
	if (!marked)
		for (size_t i = 0; i < n; i++)
			CHECK(!starts_with(&env[i], "TOOLRUN_"));
	free(env);
}

/* An agent command's environment: the request's entries in order, less
 * those the global filters drop (toolrun's own variables pass unasked;
 * this config's filters keep LD_PRELOAD), then the daemon's (here none);
 * never the marker. */
static void check_command_environment(const Toolrun__Request *req)
{
	ProtobufCBinaryData *env = NULL;
	size_t n = 0, j = 0;

	if (policy_environment(req, &cfg, &cfg.defaults, NULL, 0, &env, &n) < 0)
		return;
	CHECK(env != NULL);
	CHECK(n <= req->n_envp);
	for (size_t i = 0; i < n; i++) {
		touch(env[i].data, env[i].len);
		while (j < req->n_envp && env[i].data != req->envp[j].data) {
			CHECK(!env_filter_passes("-", &req->envp[j]));
			j++;
		}
		CHECK(j < req->n_envp && env[i].len == req->envp[j].len);
		CHECK(env_filter_passes("-", &env[i]));
		j++;
	}
	for (; j < req->n_envp; j++)
		CHECK(!env_filter_passes("-", &req->envp[j]));
	free(env);
}

static void check_request(const Toolrun__Request *req, unsigned nfds, int cwd_fd)
{
	struct policy_decision d;

	use_config();
	enum policy_verdict v = policy_check(&cfg, req, nfds, cwd_fd, &d);
	if (trace)
		fprintf(stderr, "  Request: %s%s%s\n",
			v == POLICY_RUN ? "run " : v == POLICY_NOT_LISTED ? "not listed"
						   : v == POLICY_COMMANDS_OFF ? "commands off" : "malformed: ",
			v == POLICY_RUN ? (d.tool >= 0 ? config_tool_name(&cfg, d.tool) : "a command") : "",
			v == POLICY_MALFORMED ? d.error : "");
	CHECK(memchr(d.error, '\0', sizeof(d.error)) != NULL);
	if (req->command) {
		/* An agent command: no tool; the command's limits. */
		CHECK(v != POLICY_NOT_LISTED);
		if (v == POLICY_RUN) {
			struct limits want = policy_command_limits(&cfg);
			CHECK(d.tool == -1);
			CHECK(d.limits.max_bytes == want.max_bytes &&
			      d.limits.max_lines == want.max_lines &&
			      d.limits.timeout_s == cfg.command_timeout_s &&
			      d.limits.shape == want.shape && d.limits.network == NETWORK_ALLOW &&
			      d.limits.env_allow_len == 0 && d.limits.env_deny_len == 0);
			for (int r = 0; r < POLICY_RLIMIT_COUNT; r++)
				CHECK(d.limits.rlimit[r] == POLICY_UNLIMITED);
			CHECK(d.shape_stdout == req->shape_stdout);
			CHECK(d.shape_stderr == req->shape_stderr);
			CHECK(nfds == req->n_fds + 1);
			check_command_environment(req);
		} else if (v == POLICY_COMMANDS_OFF) {
			CHECK(!cfg.agent_commands);
		}
		if (v != POLICY_MALFORMED)
			CHECK(d.error[0] == '\0');
		return;
	}
	switch (v) {
	case POLICY_RUN:
		CHECK(d.tool >= 0 && (unsigned)d.tool < cfg.ntools);
		CHECK(d.error[0] == '\0');
		CHECK(d.shape_stdout || !req->shape_stdout);
		CHECK(d.shape_stderr || !req->shape_stderr);
		CHECK(!d.joined || (d.shape_stdout && d.shape_stderr));
		CHECK(nfds == req->n_fds + 1);
		CHECK(strlen(config_tool_name(&cfg, d.tool)) > 0);
		check_environment(req, config_tool_name(&cfg, d.tool), &d.limits);
		break;
	case POLICY_NOT_LISTED:
		CHECK(d.tool < 0);
		CHECK(d.error[0] == '\0');
		break;
	case POLICY_MALFORMED:
		CHECK(d.error[0] != '\0');
		break;
	default:
		CHECK(!"policy_check returned an unknown verdict");
	}
}

/*
 * The same payload decoded into an arena far smaller than policy_decode
 * gives it (twice the payload and 1 MiB, at least):
 * a cut anywhere between nothing and twice the payload, taken from its
 * bytes, so that protobuf-c's failing allocations and what it then frees
 * of a half-built message (nothing, in an arena) are exercised too.
 * Running out must end in NULL, never in a crash or a message.
 */
static void decode_in_small_arena(const uint8_t *payload, size_t len)
{
	uint32_t h = 2166136261u;
	struct arena a;

	for (size_t i = 0; i < len; i++)
		h = (h ^ payload[i]) * 16777619u;
	CHECK(arena_init(&a, h % (2 * len + 256)) == 0);
	ProtobufCMessage *m = protobuf_c_message_unpack(&toolrun__client_message__descriptor,
							&a.allocator, len, payload);
	CHECK(m == NULL || !a.exhausted);
	CHECK(a.used <= a.cap);
	arena_release(&a);
}

/* Handle one payload as the listener does. */
static void handle_payload(const uint8_t *payload, size_t len, unsigned nfds,
			   int cwd_fd)
{
	decode_in_small_arena(payload, len);
	char why[192];
	struct arena a;

	why[0] = '\0';
	Toolrun__ClientMessage *m = policy_decode(payload, len, &a, why, sizeof(why));
	if (!m) {
		CHECK(why[0] != '\0');
		CHECK(a.small.base == NULL && a.large.base == NULL); /* a refusal holds nothing */
		if (trace)
			fprintf(stderr, "  %zu bytes, %u fds: %s\n", len, nfds, why);
		return;
	}
	if (trace)
		fprintf(stderr, "  %zu bytes, %u fds: %s\n", len, nfds,
			m->base.descriptor->short_name);
	switch (m->msg_case) {
	case TOOLRUN__CLIENT_MESSAGE__MSG_HELLO:
		CHECK(m->hello != NULL);
		if (m->hello->software)
			touch((const uint8_t *)m->hello->software,
			      strlen(m->hello->software));
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST:
		CHECK(m->request != NULL);
		check_request(m->request, nfds, cwd_fd);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_SIGNAL:
		CHECK(m->signal != NULL);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_PING:
		CHECK(m->ping != NULL);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_READER_GONE:
		CHECK(m->reader_gone != NULL);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_RELOAD:
		CHECK(m->reload != NULL);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_STATUS:
		CHECK(m->status != NULL);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_SESSION_CALL:
		CHECK(m->session_call != NULL);
		check_session_call(m->session_call, nfds);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG_FRONT_RECORD:
		CHECK(m->front_record != NULL);
		check_front_record(m->front_record);
		break;
	case TOOLRUN__CLIENT_MESSAGE__MSG__NOT_SET:
	default:
		CHECK(!"policy_decode returned a message of no known type");
	}
	/* Decoding took no more than the payload's size allows. */
	CHECK(a.cap <= arena_capacity(len) && a.used <= a.cap);
	arena_release(&a);
}

/* ───────────────────────── part 1: frame by frame ───────────────────────── */

/* How the stream ends, as frame_header_parse sees it. */
struct stream_scan {
	size_t frames; /* whole frames with a valid header */
	int end;       /* FRAME_READ_EOF, or the error the reader must return */
};

static struct stream_scan parse_frames(const uint8_t *data, size_t size)
{
	struct stream_scan s = {0, FRAME_READ_EOF};
	size_t off = 0;

	while (off < size) {
		struct frame_header h;
		if (size - off < FRAME_HEADER_SIZE) {
			s.end = -EPROTO; /* EOF inside a header */
			break;
		}
		int err = frame_header_parse(data + off, FRAME_MAX_CLIENT_PAYLOAD, &h);
		if (err < 0) {
			CHECK(err == -EPROTO || err == -EMSGSIZE);
			s.end = err;
			break;
		}
		CHECK(h.length <= FRAME_MAX_CLIENT_PAYLOAD && h.nfds <= FRAME_MAX_FDS);
		off += FRAME_HEADER_SIZE;
		if (h.length > size - off) {
			s.end = -EPROTO; /* EOF inside a payload */
			break;
		}
		/* Exactly the payload's bytes, so that a read past them is
		 * caught (malloc(0) is a valid, empty buffer). */
		uint8_t *copy = malloc(h.length);
		CHECK(copy != NULL);
		if (h.length)
			memcpy(copy, data + off, h.length);
		handle_payload(copy, h.length, h.nfds, workdir_fd);
		free(copy);
		off += h.length;
		s.frames++;
	}
	return s;
}

/* ───────────────────────── part 2: the reader ───────────────────────── */

/* splitmix64: the piece sizes and fd counts come from the input's hash. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

static uint64_t hash_input(const uint8_t *data, size_t size)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3u;
	return h ^ size;
}

/* The fds the feeder attaches to frame `index` whose header asks for
 * `want`: usually exactly those, one time in 32 one more or one fewer. */
static unsigned plan_fds(uint64_t seed, size_t index, unsigned want)
{
	uint64_t r = mix(seed ^ mix(index));
	unsigned k = want;

	switch (r % 64) {
	case 0: k = want + 1; break;
	case 1: k = want ? want - 1 : 0; break;
	default: break;
	}
	return k <= fd_budget ? k : 0;
}

/* A frame of the input as the feeder sees it. */
struct span {
	size_t start, end; /* end: past its last byte present in the input */
	bool valid;        /* a whole, valid header: fds may be attached */
	unsigned fds;      /* planned */
};

static struct span span_at(const uint8_t *data, size_t size, size_t start,
			   size_t index, uint64_t seed)
{
	struct span s = {.start = start, .end = size};
	struct frame_header h;

	if (size - start >= FRAME_HEADER_SIZE &&
	    frame_header_parse(data + start, FRAME_MAX_CLIENT_PAYLOAD, &h) == 0) {
		s.valid = true;
		s.fds = plan_fds(seed, index, h.nfds);
		if (h.length <= size - start - FRAME_HEADER_SIZE)
			s.end = start + FRAME_HEADER_SIZE + h.length;
	}
	return s;
}

/* Descriptors currently open, from /proc/self/fd, without allocating. */
static long count_open_fds(void)
{
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[8192];
	long n = 0;

	CHECK(dir >= 0);
	for (;;) {
		long got = syscall(SYS_getdents64, dir, buf, sizeof(buf));
		CHECK(got >= 0);
		if (got == 0)
			break;
		for (long off = 0; off < got;) {
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			const char *name = buf + off + 19;
			if (name[0] != '.')
				n++;
			off += reclen;
		}
	}
	close(dir);
	return n - 1; /* not dir itself */
}

struct feed {
	const uint8_t *data;
	size_t size;
	uint64_t seed;
	uint64_t rng;
	int sock;
	size_t pos;         /* next byte to send */
	struct span cur;    /* the frame pos is in */
	size_t cur_index;
	unsigned fds_left;  /* of cur's planned fds, not yet sent */
	unsigned long fds_sent;
	size_t avg_piece;
	int fdbuf[FRAME_FDS_PER_SENDMSG];
};

/* Make f->cur the frame that holds f->pos. */
static void feed_track(struct feed *f)
{
	while (f->cur.valid && f->pos >= f->cur.end && f->cur.end < f->size) {
		f->cur = span_at(f->data, f->size, f->cur.end, ++f->cur_index, f->seed);
		f->fds_left = f->cur.fds;
	}
}

/* Send the next piece. Returns false when the socket is full. */
static bool feed_piece(struct feed *f)
{
	feed_track(f);
	f->rng = mix(f->rng);

	size_t len = 1 + (size_t)(f->rng % (2 * f->avg_piece));
	unsigned group = 0;
	if (f->fds_left) {
		/* This frame's fds go with its first bytes, at most 253 per
		 * sendmsg, each later group with at least one more byte. */
		CHECK(f->pos >= f->cur.start && f->pos < f->cur.end);
		group = f->fds_left < FRAME_FDS_PER_SENDMSG ? f->fds_left
							   : FRAME_FDS_PER_SENDMSG;
		if (f->fds_left > group)
			len = 1;
	}
	if (len > f->size - f->pos)
		len = f->size - f->pos;
	/* A piece may run on into later frames, but not into one that gets
	 * fds: those must arrive with that frame's own first byte. */
	if (f->cur.valid) {
		struct span s = f->cur;
		size_t index = f->cur_index;
		while (s.valid && s.end < f->size && s.end < f->pos + len) {
			s = span_at(f->data, f->size, s.end, ++index, f->seed);
			if (s.fds) {
				len = s.start - f->pos;
				break;
			}
		}
	}
	CHECK(len > 0);

	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * FRAME_FDS_PER_SENDMSG)];
	} control;
	struct iovec iov = {.iov_base = (void *)(f->data + f->pos), .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (group) {
		memset(control.buf, 0, sizeof(control.buf));
		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * group);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * group);
		memcpy(CMSG_DATA(cm), f->fdbuf, sizeof(int) * group);
	}
	ssize_t n = sendmsg(f->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0) {
		CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
		return false;
	}
	CHECK(n > 0);
	f->pos += (size_t)n;
	f->fds_left -= group;
	f->fds_sent += group;
	return true;
}

static void read_stream(const uint8_t *data, size_t size, struct stream_scan expect)
{
	struct feed f = {.data = data, .size = size};
	int sv[2];

	f.seed = hash_input(data, size);
	f.rng = f.seed;
	/* Between 1 and 16 pieces on average; many small frames still
	 * cost one read each for their header and payload. */
	f.avg_piece = size / (1 + (size_t)(mix(f.seed) % 16)) + 1;
	for (unsigned i = 0; i < FRAME_FDS_PER_SENDMSG; i++)
		f.fdbuf[i] = workdir_fd;

	/* Count descriptors only when some will be sent. */
	bool any_fds = false;
	size_t index = 0;
	for (struct span s = span_at(data, size, 0, 0, f.seed); fd_check;) {
		if (s.fds)
			any_fds = true;
		if (any_fds || !s.valid || s.end >= size)
			break;
		s = span_at(data, size, s.end, ++index, f.seed);
	}
	long fds_before = any_fds ? count_open_fds() : 0;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	f.sock = sv[0];
	f.cur = span_at(data, size, 0, 0, f.seed);
	f.fds_left = f.cur.fds;

	int fdstore[FRAME_MAX_FDS];
	struct frame_reader r = {
		.max_payload = FRAME_MAX_CLIENT_PAYLOAD,
		.grow = frame_grow_heap,
		.fds = fdstore,
	};
	size_t off = 0, frames = 0;
	int result = FRAME_READ_AGAIN;
	bool shut = false;

	while (result == FRAME_READ_AGAIN) {
		if (f.pos < size) {
			feed_piece(&f); /* when the socket is full: read first */
		} else if (!shut) {
			CHECK(shutdown(sv[0], SHUT_WR) == 0);
			shut = true;
		}
		for (;;) {
			int rv = frame_reader_read(&r, sv[1]);
			if (rv == FRAME_READ_AGAIN) {
				/* With the whole stream sent and the writer shut,
				 * the reader must come to an end. */
				CHECK(!shut);
				break;
			}
			if (rv != FRAME_READ_READY) {
				result = rv;
				break;
			}
			/* The next frame of the input, whole, with its fds. */
			struct frame_header h;
			CHECK(size - off >= FRAME_HEADER_SIZE);
			CHECK(frame_header_parse(data + off, FRAME_MAX_CLIENT_PAYLOAD, &h) == 0);
			CHECK(memcmp(r.header, data + off, FRAME_HEADER_SIZE) == 0);
			CHECK(r.h.length == h.length && r.h.nfds == h.nfds);
			CHECK(r.payload_have == h.length);
			CHECK(h.length <= size - off - FRAME_HEADER_SIZE);
			CHECK(h.length == 0 ||
			      memcmp(r.payload, data + off + FRAME_HEADER_SIZE, h.length) == 0);
			CHECK(r.nfds == h.nfds);
			struct span s = span_at(data, size, off, frames, f.seed);
			CHECK(s.fds == h.nfds);
			for (unsigned i = 0; i < r.nfds; i++)
				CHECK(fcntl(r.fds[i], F_GETFD) == FD_CLOEXEC);

			handle_payload(r.payload, r.h.length, r.nfds,
				       r.nfds ? r.fds[0] : -1);
			frame_reader_next(&r);
			if (r.payload_cap > 64 * 1024) {
				free(r.payload);
				r.payload = NULL;
				r.payload_cap = 0;
			}
			off += FRAME_HEADER_SIZE + h.length;
			frames++;
		}
	}

	if (trace)
		fprintf(stderr, "%zu frames, then %s (%lu fds sent)\n", frames,
			result == FRAME_READ_EOF ? "the end" : strerror(-result), f.fds_sent);

	/* It ended where and how the stream says: after the same frames, or
	 * at the first frame whose fds did not match its count. */
	if (frames < expect.frames) {
		struct frame_header h;
		CHECK(frame_header_parse(data + off, FRAME_MAX_CLIENT_PAYLOAD, &h) == 0);
		CHECK(span_at(data, size, off, frames, f.seed).fds != h.nfds);
		CHECK(result == -EPROTO);
	} else {
		CHECK(frames == expect.frames);
		if (result != expect.end) {
			/* A cut-short frame whose fds were off: -EPROTO too. */
			fprintf(stderr, "reader ended with %d after %zu frames; expected %d\n",
				result, frames, expect.end);
			CHECK(result == expect.end);
		}
	}
	frame_reader_drop_fds(&r);
	free(r.payload);
	close(sv[0]);
	close(sv[1]);
	if (any_fds) {
		long fds_after = count_open_fds();
		if (fds_after != fds_before)
			fprintf(stderr, "descriptors open: %ld before, %ld after (%lu sent)\n",
				fds_before, fds_after, f.fds_sent);
		CHECK(fds_after == fds_before);
	}
}

/*
 * The same bytes, without descriptors, through the read-ahead reader of a
 * client (toolrund's messages, at most FRAME_MAX_SERVER_PAYLOAD): fed in
 * pieces, it must return each whole frame of the input in turn, and end
 * as the stream calls for: EOF after the last, -EMSGSIZE at a frame over
 * the limit, -EPROTO at a bad header, a frame cut short, or one that
 * announces descriptors (none may come).
 */
static int ra_expected_end(const uint8_t *data, size_t size, size_t off)
{
	struct frame_header h;

	if (off == size)
		return FRAME_READ_EOF;
	if (size - off < FRAME_HEADER_SIZE)
		return -EPROTO;
	int r = frame_header_parse(data + off, FRAME_MAX_SERVER_PAYLOAD, &h);
	if (r < 0)
		return r;
	return -EPROTO; /* cut short, or announces fds */
}

static void read_ahead_stream(const uint8_t *data, size_t size)
{
	static uint8_t buf[FRAME_HEADER_SIZE + FRAME_MAX_SERVER_PAYLOAD];
	struct frame_reader r = {
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.ra = buf,
		.ra_cap = sizeof(buf),
	};
	uint64_t rng = mix(hash_input(data, size) ^ 0x5a);
	size_t pos = 0, off = 0;
	int sv[2], result = FRAME_READ_AGAIN;
	bool shut = false;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	while (result == FRAME_READ_AGAIN) {
		if (pos < size) {
			rng = mix(rng);
			size_t piece = 1 + (size_t)(rng % (size - pos));
			ssize_t n = send(sv[0], data + pos, piece, MSG_DONTWAIT | MSG_NOSIGNAL);
			CHECK(n > 0 || errno == EAGAIN || errno == EWOULDBLOCK);
			pos += n > 0 ? (size_t)n : 0;
		} else if (!shut) {
			CHECK(shutdown(sv[0], SHUT_WR) == 0);
			shut = true;
		}
		/* Twice AGAIN in a row: the second one asked the socket. */
		int agains = 0;
		while (agains < 2) {
			int rv = frame_reader_read(&r, sv[1]);
			if (rv == FRAME_READ_AGAIN) {
				agains++;
				continue;
			}
			agains = 0;
			if (rv != FRAME_READ_READY) {
				result = rv;
				break;
			}
			struct frame_header h;
			CHECK(frame_header_parse(data + off, FRAME_MAX_SERVER_PAYLOAD, &h) == 0);
			CHECK(h.nfds == 0 && r.h.length == h.length);
			CHECK(h.length <= size - off - FRAME_HEADER_SIZE);
			CHECK(h.length == 0 ||
			      memcmp(r.payload, data + off + FRAME_HEADER_SIZE, h.length) == 0);
			frame_reader_next(&r);
			off += FRAME_HEADER_SIZE + h.length;
		}
		CHECK(result != FRAME_READ_AGAIN || !shut);
	}
	CHECK(result == ra_expected_end(data, size, off));
	close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cfg_fresh = false;
	if (trace)
		fprintf(stderr, "frames:\n");
	struct stream_scan expect = parse_frames(data, size);
	if (trace)
		fprintf(stderr, "%zu whole frames, then %s\nthrough the reader:\n",
			expect.frames,
			expect.end == FRAME_READ_EOF ? "the end" : strerror(-expect.end));
	cfg_fresh = false;
	read_stream(data, size, expect);
	read_ahead_stream(data, size);
	return 0;
}

/* ───────────────────────── structure-aware mutation ─────────────────────────
 *
 * Byte-level mutations of a frame stream mostly break the frame's length
 * or the protobuf length prefixes, so few of them reach policy_check. This
 * mutator keeps the input a plain byte stream (the corpus stays what a
 * client sends) but often mutates it as frames and messages: it decodes a
 * frame's payload, changes one field through protobuf-c's descriptors,
 * packs it again and fixes the header. A third of the time it leaves the
 * work to libFuzzer's own byte mutations, which cover bad headers, cut
 * streams and undecodable payloads.
 */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

struct rnd {
	uint64_t s;
};

static uint64_t rnd_next(struct rnd *r)
{
	r->s = mix(r->s);
	return r->s;
}

static size_t rnd_below(struct rnd *r, size_t n)
{
	return n ? (size_t)(rnd_next(r) % n) : 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* Values at the edges of what policy_check accepts. */
static const int64_t interesting[] = {
	0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 19, 20, 31, 32, 63, 64, 65, 255, 256,
	0777, 01000, 1000, 1001, 1023, 1024, 1025, 1048575, 1048576, 0x7fffffff,
	-1, -2, -19, -20, -21, -1000, -1001, -0x7fffffff - 1,
};

static int64_t pick_number(struct rnd *r, int64_t old)
{
	switch (rnd_below(r, 4)) {
	case 0: return old + (int64_t)rnd_below(r, 5) - 2;
	case 1: return (int64_t)rnd_next(r);
	default: return interesting[rnd_below(r, ARRAY_SIZE(interesting))];
	}
}

/* Strings policy_check and policy_environment look at. */
static const char *const tokens[] = {
	"", "cat", "ls", "grep", "make", "env", "/usr/bin/cat", "/usr/bin/env",
	"/bin/env", "env-link", "./env-link", "../", "/", ".", "/proc/self/exe",
	"/usr/bin/", "LD_PRELOAD=", "LD_PRELOAD=libtoolrun.so",
	"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/toolrun/libtoolrun.so",
	"LD_PRELOAD=libfoo.so:libtoolrun.so libbar.so", "LD_PRELOAD=:: :",
	"LD_PRELOAD=/tmp/x/libtoolrun.so", "LD_AUDIT=/tmp/a.so",
	"TOOLRUN_", "TOOLRUN_NESTED=1", "TOOLRUN_SOCKET=/run/x.sock",
	"TOOLRUN_NESTED=0", "PATH=/usr/bin:/bin", "HOME=/root", "LANG=C",
	"LC_ALL=C", "LC_CTYPE=C.UTF-8", "TERM=xterm", "AWS_SECRET=x",
	"GITHUB_TOKEN=x", "MY_KEY", "A=", "B1=1", "=", "==", "NOEQUALS",
	"a\tb", "[", "*", "libtoolrun 0.1.0",
};

/* New contents for a bytes or string field, into buf (cap bytes). */
static size_t make_blob(struct rnd *r, const uint8_t *old, size_t len,
			uint8_t *buf, size_t cap)
{
	size_t n;

	switch (rnd_below(r, 8)) {
	case 0:
	case 1:
	case 2: {
		const char *t = tokens[rnd_below(r, ARRAY_SIZE(tokens))];
		n = strlen(t) < cap ? strlen(t) : cap;
		memcpy(buf, t, n);
		return n;
	}
	case 3: { /* a token, then the old bytes */
		const char *t = tokens[rnd_below(r, ARRAY_SIZE(tokens))];
		n = strlen(t) < cap ? strlen(t) : cap;
		memcpy(buf, t, n);
		size_t k = len < cap - n ? len : cap - n;
		if (k)
			memcpy(buf + n, old, k);
		return n + k;
	}
	case 4: { /* long: around the 256-byte and PATH_MAX edges */
		static const size_t sizes[] = {255, 256, 257, 1023, 1024, 1025,
					       4095, 4096, 4097};
		n = sizes[rnd_below(r, ARRAY_SIZE(sizes))];
		if (n > cap)
			n = cap;
		memset(buf, "A/=*x"[rnd_below(r, 5)], n);
		if (n > 2 && rnd_below(r, 2))
			buf[n / 2] = '=';
		return n;
	}
	default: /* libFuzzer's byte mutations of the old value */
		n = len < cap ? len : cap;
		if (n)
			memcpy(buf, old, n);
		return LLVMFuzzerMutate(buf, n, cap);
	}
}

static size_t elem_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
	default:
		return sizeof(ProtobufCMessage *);
	}
}

static ProtobufCMessage *new_message(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);
	CHECK(m != NULL);
	d->message_init(m);
	return m;
}

/* Free what one value (a field or an element) owns, as
 * protobuf_c_message_free_unpacked would. */
static void free_value(const ProtobufCFieldDescriptor *f, void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		char *s = *(char **)p;
		if (s && s != f->default_value)
			free(s);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES:
		free(((ProtobufCBinaryData *)p)->data);
		break;
	case PROTOBUF_C_TYPE_MESSAGE: {
		ProtobufCMessage *m = *(ProtobufCMessage **)p;
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
		break;
	}
	default:
		break;
	}
	memset(p, 0, elem_size(f));
}

static void mutate_message(struct rnd *r, ProtobufCMessage *m, int depth);

/* Change one value in place: a number, a bool, a blob, a submessage. */
static void mutate_value(struct rnd *r, const ProtobufCFieldDescriptor *f,
			 void *p, bool repeated, int depth)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		*(int32_t *)p = (int32_t)pick_number(r, *(int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*(uint32_t *)p = (uint32_t)pick_number(r, *(uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64: {
		int64_t v;
		memcpy(&v, p, sizeof(v));
		v = rnd_below(r, 3) ? pick_number(r, v)
				    : (int64_t)(UINT64_MAX - rnd_below(r, 3));
		memcpy(p, &v, sizeof(v));
		break;
	}
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)p = !*(protobuf_c_boolean *)p;
		break;
	case PROTOBUF_C_TYPE_STRING: {
		uint8_t buf[4200];
		const char *old = *(char **)p ? *(char **)p : "";
		size_t n = make_blob(r, (const uint8_t *)old, strlen(old), buf,
				     sizeof(buf) - 1);
		char *s = malloc(n + 1);
		CHECK(s != NULL);
		memcpy(s, buf, n);
		s[n] = '\0';
		free_value(f, p);
		*(char **)p = s;
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		uint8_t buf[4200];
		ProtobufCBinaryData *b = p;
		size_t n = make_blob(r, b->data, b->len, buf, sizeof(buf));
		uint8_t *d = n ? malloc(n) : NULL;
		CHECK(n == 0 || d != NULL);
		if (n)
			memcpy(d, buf, n);
		free_value(f, p);
		b->data = d;
		b->len = n;
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		ProtobufCMessage **mp = p;
		if (!*mp)
			*mp = new_message(f->descriptor);
		else if (!repeated && rnd_below(r, 6) == 0)
			free_value(f, p);
		else
			mutate_message(r, *mp, depth + 1);
		break;
	}
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
	default:
		break;
	}
}

/* Add, remove or change elements of a repeated field. */
static void mutate_repeated(struct rnd *r, const ProtobufCFieldDescriptor *f,
			    ProtobufCMessage *m, int depth)
{
	size_t *n = (size_t *)((char *)m + f->quantifier_offset);
	char **arr = (char **)((char *)m + f->offset);
	size_t es = elem_size(f);

	switch (rnd_below(r, 6)) {
	case 0:
	case 1: { /* insert 1, or now and then up to 64, elements */
		size_t add = rnd_below(r, 8) ? 1 : 1 + rnd_below(r, 64);
		size_t at = rnd_below(r, *n + 1);
		char *grown = realloc(*arr, (*n + add) * es);
		CHECK(grown != NULL);
		memmove(grown + (at + add) * es, grown + at * es, (*n - at) * es);
		memset(grown + at * es, 0, add * es);
		for (size_t i = 0; i < add; i++) {
			void *e = grown + (at + i) * es;
			if (i > 0 && f->type != PROTOBUF_C_TYPE_MESSAGE &&
			    f->type != PROTOBUF_C_TYPE_BYTES && f->type != PROTOBUF_C_TYPE_STRING)
				memcpy(e, grown + at * es, es); /* repeat a number */
			else
				mutate_value(r, f, e, true, depth);
		}
		*arr = grown;
		*n += add;
		break;
	}
	case 2: /* remove one */
		if (*n) {
			size_t at = rnd_below(r, *n);
			free_value(f, *arr + at * es);
			memmove(*arr + at * es, *arr + (at + 1) * es, (*n - at - 1) * es);
			if (--*n == 0) {
				free(*arr);
				*arr = NULL;
			}
		}
		break;
	default: /* change one */
		if (*n)
			mutate_value(r, f, *arr + rnd_below(r, *n) * es, true, depth);
		break;
	}
}

static void mutate_message(struct rnd *r, ProtobufCMessage *m, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (d->n_fields == 0 || depth > 8)
		return;
	const ProtobufCFieldDescriptor *f = &d->fields[rnd_below(r, d->n_fields)];

	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
		uint32_t *which = (uint32_t *)((char *)m + f->quantifier_offset);
		/* Mostly go into the member that is set; now and then set
		 * another one instead. */
		if (rnd_below(r, 8))
			for (unsigned i = 0; i < d->n_fields; i++)
				if ((d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
				    d->fields[i].quantifier_offset == f->quantifier_offset &&
				    d->fields[i].id == *which)
					f = &d->fields[i];
		if (*which != f->id) {
			for (unsigned i = 0; i < d->n_fields; i++)
				if ((d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
				    d->fields[i].quantifier_offset == f->quantifier_offset &&
				    d->fields[i].id == *which)
					free_value(&d->fields[i], (char *)m + d->fields[i].offset);
			*which = f->id;
			memset((char *)m + f->offset, 0, elem_size(f));
			if (f->type == PROTOBUF_C_TYPE_MESSAGE)
				*(ProtobufCMessage **)((char *)m + f->offset) =
					new_message(f->descriptor);
			else if (f->type == PROTOBUF_C_TYPE_STRING)
				*(const char **)((char *)m + f->offset) = f->default_value;
			return;
		}
		if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
			mutate_message(r, *(ProtobufCMessage **)((char *)m + f->offset),
				       depth + 1);
			return;
		}
	}
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		mutate_repeated(r, f, m, depth);
	else
		mutate_value(r, f, (char *)m + f->offset, false, depth);
}

/* A new message of one of the kinds a client may send. */
static Toolrun__ClientMessage *fresh_message(struct rnd *r)
{
	Toolrun__ClientMessage *m =
		(Toolrun__ClientMessage *)new_message(&toolrun__client_message__descriptor);
	const ProtobufCFieldDescriptor *f = &toolrun__client_message__descriptor.fields[
		rnd_below(r, toolrun__client_message__descriptor.n_fields)];
	m->msg_case = (Toolrun__ClientMessage__MsgCase)f->id;
	*(ProtobufCMessage **)((char *)m + f->offset) = new_message(f->descriptor);
	if (m->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST) {
		/* A request policy_check can get past: a listed tool. */
		static const char *const exe[] = {"cat", "/usr/bin/env", "env-link",
						  "grep", "/usr/bin/make"};
		const char *e = exe[rnd_below(r, ARRAY_SIZE(exe))];
		m->request->executable.len = strlen(e);
		m->request->executable.data = malloc(strlen(e));
		CHECK(m->request->executable.data != NULL);
		memcpy(m->request->executable.data, e, strlen(e));
	}
	return m;
}

/* One frame of the stream, leniently: any header, its length cut to the
 * bytes present; a short tail is a chunk of its own. */
struct chunk {
	size_t off, len;
	bool framed;
};

#define MUT_MAX_CHUNKS 256

static size_t split_stream(const uint8_t *d, size_t size, struct chunk *c)
{
	size_t n = 0, off = 0;

	while (off < size) {
		if (size - off < FRAME_HEADER_SIZE || n == MUT_MAX_CHUNKS - 1) {
			c[n++] = (struct chunk){off, size - off, false};
			break;
		}
		size_t avail = size - off - FRAME_HEADER_SIZE;
		size_t take = le32(d + off) < avail ? le32(d + off) : avail;
		c[n++] = (struct chunk){off, FRAME_HEADER_SIZE + take, true};
		off += FRAME_HEADER_SIZE + take;
	}
	return n;
}

/* Output being assembled. */
struct out {
	uint8_t *buf;
	size_t len, cap;
	bool full;
};

static void out_add(struct out *o, const void *p, size_t n)
{
	if (n > o->cap - o->len) {
		o->full = true;
		return;
	}
	if (n)
		memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* Pack m as a frame; a Request usually gets the fd count it needs. */
static void out_message(struct out *o, struct rnd *r, const uint8_t *old_header,
			const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t h[FRAME_HEADER_SIZE];

	if (old_header)
		memcpy(h, old_header, sizeof(h));
	else
		frame_header_pack(h, 0, 0);
	put_le32(h, (uint32_t)n);
	const Toolrun__ClientMessage *cm = (const Toolrun__ClientMessage *)m;
	if (cm->msg_case == TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST && rnd_below(r, 4))
		put_le16(h + 4, (uint16_t)(cm->request->n_fds + 1));
	out_add(o, h, sizeof(h));
	if (n > o->cap - o->len) {
		o->full = true;
		return;
	}
	protobuf_c_message_pack(m, o->buf + o->len);
	o->len += n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	struct rnd r = {mix(seed)};
	struct chunk c[MUT_MAX_CHUNKS];
	size_t nc = split_stream(data, size, c);
	unsigned op = (unsigned)rnd_below(&r, 12);

	if (op < 4 || nc == 0 || max_size < 64) {
		if (nc == 0 && op >= 4) { /* empty: start with a new frame */
			op = 11;
		} else {
			return LLVMFuzzerMutate(data, size, max_size);
		}
	}

	struct out o = {malloc(max_size), 0, max_size, false};
	CHECK(o.buf != NULL);
	size_t target = rnd_below(&r, nc ? nc : 1);
	const struct chunk *t = nc ? &c[target] : NULL;

	for (size_t i = 0; i <= nc; i++) {
		/* Insert a new frame before chunk `target`. */
		if (op == 11 && i == target) {
			Toolrun__ClientMessage *m = fresh_message(&r);
			for (size_t k = rnd_below(&r, 3); k > 0; k--)
				mutate_message(&r, &m->base, 0);
			out_message(&o, &r, NULL, &m->base);
			protobuf_c_message_free_unpacked(&m->base, NULL);
		}
		if (i == nc)
			break;
		const uint8_t *p = data + c[i].off;
		if (i != target || op == 11) {
			out_add(&o, p, c[i].len);
			continue;
		}
		switch (op) {
		case 4: /* drop the frame, or cut the stream inside it */
			if (rnd_below(&r, 2)) {
				out_add(&o, p, rnd_below(&r, t->len));
				i = nc - 1;
			}
			break;
		case 5: /* repeat it, or swap it with the next */
			out_add(&o, p, t->len);
			if (rnd_below(&r, 2) || i + 1 == nc) {
				out_add(&o, p, t->len);
			} else {
				out_add(&o, data + c[i + 1].off, c[i + 1].len);
				out_add(&o, p, t->len);
				i++;
			}
			break;
		case 6: { /* another fd count */
			uint8_t h[FRAME_HEADER_SIZE];
			memcpy(h, p, t->len < sizeof(h) ? t->len : sizeof(h));
			if (t->framed)
				put_le16(h + 4, (uint16_t)pick_number(&r, h[4] | h[5] << 8));
			out_add(&o, h, t->len < sizeof(h) ? t->len : sizeof(h));
			if (t->len > sizeof(h))
				out_add(&o, p + sizeof(h), t->len - sizeof(h));
			break;
		}
		case 7: { /* libFuzzer's mutations of the payload alone */
			if (!t->framed || o.cap - o.len < FRAME_HEADER_SIZE + 1) {
				out_add(&o, p, t->len);
				break;
			}
			size_t plen = t->len - FRAME_HEADER_SIZE;
			size_t room = o.cap - o.len - FRAME_HEADER_SIZE;
			if (plen > room) {
				o.full = true;
				break;
			}
			uint8_t *h = o.buf + o.len;
			memcpy(h, p, FRAME_HEADER_SIZE);
			memcpy(h + FRAME_HEADER_SIZE, p + FRAME_HEADER_SIZE, plen);
			plen = LLVMFuzzerMutate(h + FRAME_HEADER_SIZE, plen, room);
			put_le32(h, (uint32_t)plen);
			o.len += FRAME_HEADER_SIZE + plen;
			break;
		}
		default: { /* 8-10: change one field of the message */
			ProtobufCMessage *m = NULL;
			if (t->framed)
				m = protobuf_c_message_unpack(&toolrun__client_message__descriptor,
							      NULL, t->len - FRAME_HEADER_SIZE,
							      p + FRAME_HEADER_SIZE);
			if (!m) {
				out_add(&o, p, t->len);
				break;
			}
			for (size_t k = 1 + rnd_below(&r, 3); k > 0; k--)
				mutate_message(&r, m, 0);
			out_message(&o, &r, p, m);
			protobuf_c_message_free_unpacked(m, NULL);
			break;
		}
		}
	}

	size_t n = size;
	if (!o.full && o.len > 0) {
		memcpy(data, o.buf, o.len);
		n = o.len;
	} else {
		n = LLVMFuzzerMutate(data, size, max_size);
	}
	free(o.buf);
	return n;
}
