/*
 * toolrun.conf parser. Async-signal-safe: no malloc, no stdio. inih runs
 * over a string, with its line buffer on the stack.
 */
#include "config.h"

#include <fcntl.h>
#include <ini.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sbuf.h"
#include "util.h"

#ifndef TOOLRUN_SYSCONFDIR
#define TOOLRUN_SYSCONFDIR "/etc"
#endif
#ifndef TOOLRUN_PKGLIBDIR
#define TOOLRUN_PKGLIBDIR "/usr/lib/toolrun"
#endif

const char config_default_path[] = TOOLRUN_SYSCONFDIR "/toolrun/toolrun.conf";

/* Longest accepted line. inih keeps its line buffer on the stack and
 * would split a longer line into two, so longer ones are refused. */
#define CONFIG_MAX_LINE 4096
/* inih cuts section names to 49 bytes (its MAX_SECTION is 50, fixed when
 * it was built), so longer ones are refused rather than misread. */
#define SECTION_NAME_MAX 49
#define TIMEOUT_MAX (7 * 24 * 3600)
#define LINES_MAX (UINT64_C(1) << 40)

/* What the handler needs besides the config. */
struct parse_state {
	struct config *cfg;
	bool failed;
	bool seen[40]; /* keys of the global section already set, by row */
};

#define WAIT_DAEMON_MAX 600

/* The longest directory of trusted_dirs: DIR/NAME, with a name of up to
 * 255 bytes, must fit CONFIG_PATH_MAX. */
#define TRUSTED_DIR_MAX (CONFIG_PATH_MAX - 1 - 1 - 255)

static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Record the first error; the line number is added by the caller. */
static int fail(struct parse_state *st, const char *a, const char *b,
		const char *c)
{
	if (!st->failed) {
		struct sbuf sb = SBUF_INIT(st->cfg->error);
		sbuf_add(&sb, a);
		if (b)
			sbuf_add(&sb, b);
		if (c)
			sbuf_add(&sb, c);
		st->failed = true;
	}
	return 0;
}

/* Keep text in the pool; returns its offset, or false when full. */
static bool pool_add(struct config *cfg, const char *text, size_t len,
		     uint32_t *off)
{
	if (cfg->pool_len + len + 1 > sizeof(cfg->pool))
		return false;
	*off = (uint32_t)cfg->pool_len;
	memcpy(cfg->pool + cfg->pool_len, text, len);
	cfg->pool[cfg->pool_len + len] = '\0';
	cfg->pool_len += len + 1;
	return true;
}

unsigned config_socket_count(const struct config *cfg)
{
	return 1 + cfg->nsocket_fallback;
}

const char *config_socket_at(const struct config *cfg, unsigned i)
{
	return i == 0 ? cfg->socket : cfg->socket_fallback[i - 1];
}

const char *config_text(const struct config *cfg, uint32_t off)
{
	return cfg->pool + off;
}

/* Parse a decimal number in [0, max]. */
static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		unsigned d = (unsigned)(*s - '0');
		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static const char *pool_str(const struct config *cfg, uint32_t off)
{
	return config_text(cfg, off);
}

/* A size or count: digits with an optional K, M, G or T (powers of 1024),
 * or "unlimited". */
static bool parse_amount(const char *s, uint64_t *out)
{
	if (strcmp(s, "unlimited") == 0) {
		*out = POLICY_UNLIMITED;
		return true;
	}
	size_t len = strlen(s);
	unsigned shift = 0;
	char digits[24];
	if (len > 0 && len < sizeof(digits)) {
		switch (s[len - 1]) {
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		case 'T': case 't': shift = 40; break;
		default: break;
		}
	}
	if (len == 0 || len >= sizeof(digits))
		return false;
	memcpy(digits, s, len + 1);
	if (shift)
		digits[len - 1] = '\0';
	uint64_t v;
	if (!parse_uint(digits, UINT64_C(1) << 50, &v))
		return false;
	*out = v << shift;
	return true;
}

static int find_by_name(const struct config *cfg, const char *name, size_t len)
{
	for (unsigned i = 0; i < cfg->ntools; i++) {
		const struct tool *t = &cfg->tools[i];
		if (t->name_len == len &&
		    memcmp(pool_str(cfg, t->name), name, len) == 0)
			return (int)i;
	}
	return -1;
}

static int add_tool(struct parse_state *st, const char *name, size_t len)
{
	struct config *cfg = st->cfg;
	uint32_t off;
	char shown[300];
	struct sbuf sb = SBUF_INIT(shown);
	sbuf_addn(&sb, name, len);

	bool is_path = name[0] == '/';
	if (!is_path && memchr(name, '/', len))
		return fail(st, "tool '", shown,
			    "' must be a program name or an absolute path");
	if (len > (is_path ? CONFIG_PATH_MAX - 1 : 255))
		return fail(st, "tool name too long: ", shown, NULL);
	if (find_by_name(cfg, name, len) >= 0)
		return fail(st, "tool '", shown, "' is listed twice");
	if (cfg->ntools == CONFIG_MAX_TOOLS)
		return fail(st, "too many tools (the limit is 128)", NULL, NULL);
	if (!pool_add(cfg, name, len, &off))
		return fail(st, "tool names too long in total", NULL, NULL);

	struct tool *t = &cfg->tools[cfg->ntools++];
	memset(t, 0, sizeof(*t));
	t->name = off;
	t->name_len = (uint16_t)len;
	t->is_path = is_path;
	if (is_path)
		cfg->has_path_tools = true;
	return 1;
}

static int parse_tools(struct parse_state *st, const char *value)
{
	const char *p = value;

	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		/* inih strips inline comments from `key = value` lines but not
		 * from continuation lines: a word starting one ends the list. */
		if (*p == '#' || *p == ';')
			break;
		const char *start = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (p > start && !add_tool(st, start, (size_t)(p - start)))
			return 0;
	}
	return 1;
}

/* A socket path: absolute, and short enough for PATH.new in sun_path. */
static bool check_socket_path(struct parse_state *st, const char *key,
			      const char *value, size_t len)
{
	char what[64];
	struct sbuf sb = SBUF_INIT(what);

	sbuf_add(&sb, key);
	if (len == 0 || value[0] != '/') {
		sbuf_add(&sb, " must be an absolute path, not '");
		fail(st, what, value, "'");
		return false;
	}
	/* toolrund binds PATH.new and renames it over PATH. */
	if (len > CONFIG_SOCKET_MAX - 1 - 4) {
		sbuf_add(&sb, " path is longer than 103 bytes: ");
		fail(st, what, value, NULL);
		return false;
	}
	return true;
}

/*
 * The keys: one row each, for the defaults (config_init), the parser
 * (handle_global, handle_tool) and what a reload may change
 * (config_reload_fixed). A row's parser gets the field its offset names,
 * in struct config, or for a limit key in struct limits (the global
 * defaults, or a tool's own); it returns 1, or 0 after fail().
 */
struct config_key;
typedef int key_parser(struct parse_state *st, const struct config_key *k,
		       void *field, const char *value);

/* What the field holds, which says how two configs compare on it. */
enum key_type {
	KEY_NUMBER,    /* an unsigned integer, enum or bool of `size` bytes */
	KEY_STRING,    /* a NUL-terminated char array */
	KEY_TEXT,      /* pool text: uint32_t offset, then uint32_t length */
	KEY_FALLBACKS, /* socket_fallback: the array and its count */
	KEY_TOOLS,     /* the tools list */
};

struct key_choice {
	const char *word;
	unsigned value;
};

struct config_key {
	const char *name;
	enum key_type type;
	size_t offset, size;
	/* Also a key of [tool.NAME]: offset is into struct limits, and
	 * set_bit (LIMIT_SET_*) records that a section gave it. */
	bool in_limits;
	uint16_t set_bit;
	/* May be given again (and appends); every other key only once. */
	bool repeats;
	key_parser *parse;
	/* The built-in value, as the file would say it; NULL: none. */
	const char *def;
	uint64_t min, max;                /* numbers and sizes */
	const struct key_choice *choices; /* words, ended by {NULL} */
	const char *msg;                  /* the error, for a value refused */
	/* A reload keeps the running value until a restart: the name that
	 * says so (several keys may share one). NULL: a reload applies it. */
	const char *restart;
};

static void store_uint(void *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t)) {
		uint64_t x = v;
		memcpy(field, &x, size);
	} else if (size == sizeof(uint32_t)) {
		uint32_t x = (uint32_t)v;
		memcpy(field, &x, size);
	} else {
		uint8_t x = (uint8_t)v;
		memcpy(field, &x, 1);
	}
}

/* A decimal number in [min, max]. */
static int parse_number(struct parse_state *st, const struct config_key *k,
			void *field, const char *value)
{
	uint64_t v;

	if (!parse_uint(value, k->max, &v) || v < k->min)
		return fail(st, k->msg, value, "'");
	store_uint(field, k->size, v);
	return 1;
}

/* max_bytes: a number of bytes that toolrund can hold (config.h). */
_Static_assert(CONFIG_MAX_BYTES_HELD == 1048576, "CONFIG_MAX_BYTES_HELD_TEXT says so");
static int parse_max_bytes(struct parse_state *st, const struct config_key *k,
			   void *field, const char *value)
{
	uint64_t v;

	if (!parse_uint(value, UINT64_MAX, &v))
		return fail(st, k->msg, value, "'");
	if (v > CONFIG_MAX_BYTES_HELD)
		return fail(st, "max_bytes = ", value,
			    " is more than toolrund holds of a stream: 1 to "
			    CONFIG_MAX_BYTES_HELD_TEXT ", or 0 for no byte limit of its own (a "
			    "stream shaped for max_lines is still held to "
			    CONFIG_MAX_BYTES_HELD_TEXT " bytes)");
	store_uint(field, k->size, v);
	return 1;
}

/* One of the row's words. */
static int parse_choice(struct parse_state *st, const struct config_key *k,
			void *field, const char *value)
{
	for (const struct key_choice *c = k->choices; c->word; c++) {
		if (strcmp(value, c->word) == 0) {
			store_uint(field, k->size, c->value);
			return 1;
		}
	}
	return fail(st, k->msg, value, "'");
}

/* A size with K, M, G or T, of at least min bytes; not "unlimited". */
static int parse_size(struct parse_state *st, const struct config_key *k,
		      void *field, const char *value)
{
	uint64_t v;

	if (!parse_amount(value, &v) || v == POLICY_UNLIMITED || v < k->min)
		return fail(st, k->name, k->msg, value);
	store_uint(field, k->size, v);
	return 1;
}

/* A resource limit: an amount, or "unlimited". */
static int parse_rlimit(struct parse_state *st, const struct config_key *k,
			void *field, const char *value)
{
	uint64_t v;

	if (!parse_amount(value, &v))
		return fail(st, k->name, k->msg, value);
	store_uint(field, k->size, v);
	return 1;
}

/* Text kept in the pool (allow_uids). */
static int parse_text(struct parse_state *st, const struct config_key *k,
		      void *field, const char *value)
{
	uint32_t *off = field, *len = off + 1;

	*len = (uint32_t)strlen(value);
	if (!pool_add(st->cfg, value, *len, off))
		return fail(st, "text too long in total (", k->name, ")");
	return 1;
}

/* An environment pattern list: fnmatch patterns separated by spaces. */
static int parse_patterns(struct parse_state *st, const struct config_key *k,
			  void *field, const char *value)
{
	for (const char *p = value; *p; p++)
		if (*p == '=')
			return fail(st, k->name, " takes variable name patterns, not '=': ", value);
	return parse_text(st, k, field, value);
}

/* An absolute path, or empty (spill_dir, audit_log). */
static int parse_path_or_empty(struct parse_state *st, const struct config_key *k,
			       void *field, const char *value)
{
	if (value[0] != '\0' && value[0] != '/')
		return fail(st, k->name, " must be an absolute path or empty: ", value);
	if (strlen(value) >= k->size)
		return fail(st, k->name, " is too long: ", value);
	copy_str(field, k->size, value);
	return 1;
}

static int parse_preload(struct parse_state *st, const struct config_key *k,
			 void *field, const char *value)
{
	/* ld.so splits LD_PRELOAD at colons and spaces: such a path could
	 * never be one entry. */
	if (value[0] != '/' || strpbrk(value, ": "))
		return fail(st, "preload must be an absolute path without ':' or ' ': ", value, NULL);
	if (strlen(value) >= k->size)
		return fail(st, "preload is too long: ", value, NULL);
	copy_str(field, k->size, value);
	return 1;
}

static int parse_socket(struct parse_state *st, const struct config_key *k,
			void *field, const char *value)
{
	if (!check_socket_path(st, k->name, value, strlen(value)))
		return 0;
	copy_str(field, k->size, value);
	return 1;
}

static int parse_user(struct parse_state *st, const struct config_key *k,
		      void *field, const char *value)
{
	if (value[0] == '\0' || strlen(value) >= k->size || strpbrk(value, " \t:/"))
		return fail(st, "user must be a user name or number, not '", value, "'");
	copy_str(field, k->size, value);
	return 1;
}

static int parse_tools_key(struct parse_state *st, const struct config_key *k,
			   void *field, const char *value)
{
	(void)k;
	(void)field;
	return parse_tools(st, value);
}

/* socket_fallback: paths separated by spaces; empty: none. */
static int parse_socket_fallback(struct parse_state *st, const struct config_key *k,
				 void *field, const char *value)
{
	struct config *cfg = st->cfg;

	(void)field;
	cfg->nsocket_fallback = 0;
	for (const char *p = value + strspn(value, " \t"); *p;) {
		size_t n = strcspn(p, " \t");
		char path[CONFIG_SOCKET_MAX + 1];
		/* A longer word is refused as too long: keep one byte more. */
		size_t keep = n < sizeof(path) - 1 ? n : sizeof(path) - 1;
		memcpy(path, p, keep);
		path[keep] = '\0';
		if (!check_socket_path(st, k->name, path, n))
			return 0;
		if (cfg->nsocket_fallback == CONFIG_MAX_FALLBACKS)
			return fail(st, "socket_fallback lists more than 4 paths", NULL, NULL);
		copy_str(cfg->socket_fallback[cfg->nsocket_fallback++], CONFIG_SOCKET_MAX, path);
		p += n;
		p += strspn(p, " \t");
	}
	return 1;
}

/* trusted_dirs: absolute directories separated by spaces; empty: any. */
static int parse_trusted_dirs(struct parse_state *st, const struct config_key *k,
			      void *field, const char *value)
{
	for (const char *p = value + strspn(value, " \t"); *p;) {
		size_t n = strcspn(p, " \t");
		char dir[TRUSTED_DIR_MAX + 2];
		size_t keep = MIN(n, sizeof(dir) - 1);
		memcpy(dir, p, keep);
		dir[keep] = '\0';
		if (dir[0] != '/')
			return fail(st, "trusted_dirs takes absolute directories, not '", dir, "'");
		if (n > TRUSTED_DIR_MAX)
			return fail(st, "trusted_dirs: directory longer than 767 bytes: ", dir, NULL);
		p += n;
		p += strspn(p, " \t");
	}
	return parse_text(st, k, field, value);
}

static const struct key_choice switch_words[] = {{"on", true}, {"off", false}, {NULL, 0}};
static const struct key_choice shape_words[] = {
	{"head+tail", SHAPE_HEAD_TAIL}, {"head", SHAPE_HEAD}, {"tail", SHAPE_TAIL}, {NULL, 0}};
static const struct key_choice network_words[] = {
	{"deny", NETWORK_DENY}, {"allow", NETWORK_ALLOW}, {NULL, 0}};
static const struct key_choice binary_words[] = {
	{"summary", BINARY_SUMMARY}, {"pass", BINARY_PASS}, {NULL, 0}};
static const struct key_choice truncate_words[] = {
	{"sink", TRUNCATE_SINK}, {"always", TRUNCATE_ALWAYS}, {NULL, 0}};
static const struct key_choice fallback_words[] = {
	{"fail", FALLBACK_FAIL}, {"direct", FALLBACK_DIRECT}, {NULL, 0}};

/* A field of struct config, or of struct limits. */
#define CFG(f) .offset = offsetof(struct config, f), .size = sizeof(((struct config *)0)->f)
#define LIM(f, bit)                                                           \
	.offset = offsetof(struct limits, f),                                  \
	.size = sizeof(((struct limits *)0)->f), .in_limits = true, .set_bit = (bit)
/* Pool text: the offset, with its length right after it. */
#define TEXT_AT(type, f) (offsetof(type, f##_len) == offsetof(type, f) + sizeof(uint32_t))
_Static_assert(TEXT_AT(struct config, allow_uids) && TEXT_AT(struct config, trusted_dirs) &&
		       TEXT_AT(struct limits, env_allow) && TEXT_AT(struct limits, env_deny),
	       "pool text: its length follows its offset");
#define RLIMIT_KEY(key, r, dflt)                                               \
	{.name = key, .type = KEY_NUMBER, LIM(rlimit[r], LIMIT_SET_RLIMIT << (r)), \
	 .parse = parse_rlimit, .def = dflt,                                   \
	 .msg = " must be a number (with K, M, G or T) or 'unlimited', not '"}
#define SIZE_MSG " must be a size of at least 4096 bytes (with K, M, G or T): "

/*
 * In this order: the pool holds env_deny's default before trusted_dirs',
 * and a reload names what it cannot apply as socket, user, allow_uids,
 * audit_*, spill_*.
 */
static const struct config_key config_keys[] = {
	{.name = "tools", .type = KEY_TOOLS, .repeats = true, .parse = parse_tools_key},
	{.name = "socket", .type = KEY_STRING, CFG(socket), .parse = parse_socket,
	 .def = "/run/toolrun/toolrun.sock", .restart = "socket"},
	/* Where toolrund listens when the directory of `socket` is read-only
	 * or not its own: /dev/shm is a writable tmpfs in every Docker
	 * container and Kubernetes pod, even with a read-only root; /tmp
	 * often is too. */
	{.name = "socket_fallback", .type = KEY_FALLBACKS, CFG(socket_fallback),
	 .parse = parse_socket_fallback,
	 .def = "/dev/shm/toolrun/toolrun.sock /tmp/toolrun/toolrun.sock", .restart = "socket"},
	{.name = "user", .type = KEY_STRING, CFG(user), .parse = parse_user, .restart = "user"},
	{.name = "allow_uids", .type = KEY_TEXT, CFG(allow_uids), .parse = parse_text,
	 .restart = "allow_uids"},
	{.name = "wait_daemon", .type = KEY_NUMBER, CFG(wait_daemon_s), .parse = parse_number,
	 .def = "5", .max = WAIT_DAEMON_MAX,
	 .msg = "wait_daemon must be a number of seconds up to 600 (0: do not wait), not '"},
	{.name = "max_bytes", .type = KEY_NUMBER, LIM(max_bytes, LIMIT_SET_MAX_BYTES),
	 .parse = parse_max_bytes, .def = "4000",
	 .msg = "max_bytes must be a number of bytes (0 for no limit), not '"},
	{.name = "max_lines", .type = KEY_NUMBER, LIM(max_lines, LIMIT_SET_MAX_LINES),
	 .parse = parse_number, .def = "200", .max = LINES_MAX,
	 .msg = "max_lines must be a number of lines (0 for no limit), not '"},
	{.name = "timeout", .type = KEY_NUMBER, LIM(timeout_s, LIMIT_SET_TIMEOUT),
	 .parse = parse_number, .def = "30", .max = TIMEOUT_MAX,
	 .msg = "timeout must be a number of seconds up to 604800 (0 for none), not '"},
	{.name = "shape", .type = KEY_NUMBER, LIM(shape, LIMIT_SET_SHAPE), .parse = parse_choice,
	 .def = "head+tail", .choices = shape_words,
	 .msg = "shape must be 'head+tail', 'head' or 'tail', not '"},
	/* Safe defaults: enough for the tools an agent runs on big inputs,
	 * not enough for a bomb to take the machine down. */
	RLIMIT_KEY("rlimit_as", POLICY_RLIMIT_AS, "8G"),
	RLIMIT_KEY("rlimit_nproc", POLICY_RLIMIT_NPROC, "1024"),
	RLIMIT_KEY("rlimit_fsize", POLICY_RLIMIT_FSIZE, "8G"),
	RLIMIT_KEY("rlimit_nofile", POLICY_RLIMIT_NOFILE, "4096"),
	RLIMIT_KEY("rlimit_cpu", POLICY_RLIMIT_CPU, "600"),
	{.name = "network", .type = KEY_NUMBER, LIM(network, LIMIT_SET_NETWORK),
	 .parse = parse_choice, .def = "deny", .choices = network_words,
	 .msg = "network must be 'deny' or 'allow', not '"},
	{.name = "env_allow", .type = KEY_TEXT, LIM(env_allow, LIMIT_SET_ENV_ALLOW),
	 .parse = parse_patterns},
	/* Variables no tool sees unless the config says otherwise. */
	{.name = "env_deny", .type = KEY_TEXT, LIM(env_deny, LIMIT_SET_ENV_DENY),
	 .parse = parse_patterns, .def = "*TOKEN* *SECRET* *KEY*"},
	/* Where a program listed by name counts as that tool: where packages
	 * install programs, which only root may write. */
	{.name = "trusted_dirs", .type = KEY_TEXT, CFG(trusted_dirs), .parse = parse_trusted_dirs,
	 .def = "/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin"},
	{.name = "truncate", .type = KEY_NUMBER, CFG(truncate), .parse = parse_choice,
	 .def = "sink", .choices = truncate_words,
	 .msg = "truncate must be 'sink' or 'always', not '"},
	{.name = "fallback", .type = KEY_NUMBER, CFG(fallback), .parse = parse_choice,
	 .def = "fail", .choices = fallback_words,
	 .msg = "fallback must be 'fail' or 'direct', not '"},
	{.name = "agent_commands", .type = KEY_NUMBER, CFG(agent_commands), .parse = parse_choice,
	 .def = "on", .choices = switch_words,
	 .msg = "agent_commands must be 'on' or 'off', not '"},
	{.name = "command_timeout", .type = KEY_NUMBER, CFG(command_timeout_s),
	 .parse = parse_number, .def = "300", .max = TIMEOUT_MAX,
	 .msg = "command_timeout must be a number of seconds up to 604800 (0 for none), not '"},
	/* Sessions (docs/sessions.md). */
	{.name = "session_idle", .type = KEY_NUMBER, CFG(session_idle_s), .parse = parse_number,
	 .def = "3600", .max = TIMEOUT_MAX,
	 .msg = "session_idle must be a number of seconds up to 604800 (0 for never), not '"},
	{.name = "session_max", .type = KEY_NUMBER, CFG(session_max), .parse = parse_number,
	 .def = "256", .min = 1, .max = 4096,
	 .msg = "session_max must be a number of sessions from 1 to 4096, not '"},
	{.name = "session_max_per_uid", .type = KEY_NUMBER, CFG(session_max_per_uid),
	 .parse = parse_number, .def = "128", .min = 1, .max = 4096,
	 .msg = "session_max_per_uid must be a number of sessions from 1 to 4096, not '"},
	{.name = "binary", .type = KEY_NUMBER, CFG(binary), .parse = parse_choice,
	 .def = "summary", .choices = binary_words,
	 .msg = "binary must be 'summary' or 'pass', not '"},
	{.name = "preload", .type = KEY_STRING, CFG(preload), .parse = parse_preload,
	 .def = TOOLRUN_PKGLIBDIR "/libtoolrun.so"},
	/* The launcher keeps the config it was started with. */
	{.name = "audit_log", .type = KEY_STRING, CFG(audit_log), .parse = parse_path_or_empty,
	 .def = "/var/log/toolrun/audit.jsonl", .restart = "audit_*"},
	{.name = "audit_max", .type = KEY_NUMBER, CFG(audit_max_bytes), .parse = parse_size,
	 .def = "16M", .min = 4096, .msg = SIZE_MSG, .restart = "audit_*"},
	{.name = "audit_keep", .type = KEY_NUMBER, CFG(audit_keep), .parse = parse_number,
	 .def = "4", .max = 100,
	 .msg = "audit_keep must be a number of rotated files up to 100, not '",
	 .restart = "audit_*"},
	{.name = "spill_dir", .type = KEY_STRING, CFG(spill_dir), .parse = parse_path_or_empty,
	 .def = "/tmp/toolrun-output", .restart = "spill_*"},
	{.name = "spill_max", .type = KEY_NUMBER, CFG(spill_max_bytes), .parse = parse_size,
	 .def = "64M", .min = 4096, .msg = SIZE_MSG, .restart = "spill_*"},
	{.name = "spill_total", .type = KEY_NUMBER, CFG(spill_total_bytes), .parse = parse_size,
	 .def = "1G", .min = 4096, .msg = SIZE_MSG, .restart = "spill_*"},
	{.name = "spill_expire", .type = KEY_NUMBER, CFG(spill_expire_s), .parse = parse_number,
	 .def = "86400", .min = 1, .max = TIMEOUT_MAX * 4,
	 .msg = "spill_expire must be a number of seconds from 1 to 2419200, not '",
	 .restart = "spill_*"},
};

_Static_assert(ARRAY_SIZE(config_keys) <= sizeof(((struct parse_state *)0)->seen),
	       "parse_state.seen has a flag for each key");

static const struct config_key *find_key(const char *name, unsigned *index)
{
	for (unsigned i = 0; i < ARRAY_SIZE(config_keys); i++) {
		if (strcmp(name, config_keys[i].name) == 0) {
			*index = i;
			return &config_keys[i];
		}
	}
	return NULL;
}

/* The field a row names: in cfg, or in lim for a limit key. */
static void *key_field(const struct config_key *k, void *cfg, void *lim)
{
	return (char *)(k->in_limits ? lim : cfg) + k->offset;
}

static int handle_global(struct parse_state *st, const char *name,
			 const char *value)
{
	struct config *cfg = st->cfg;
	unsigned i;
	const struct config_key *k = find_key(name, &i);

	if (!k)
		return fail(st, "unknown key '", name, "'");
	if (!k->repeats) {
		if (st->seen[i])
			return fail(st, "'", name, "' is set twice");
		st->seen[i] = true;
	}
	return k->parse(st, k, key_field(k, cfg, &cfg->defaults), value);
}

static int handle_tool(struct parse_state *st, const char *section,
		       const char *name, const char *value)
{
	const char *tool_name = section + 5; /* after "tool." */
	int idx = find_by_name(st->cfg, tool_name, strlen(tool_name));
	if (idx < 0)
		return fail(st, "[", section,
			    "] names a tool that the 'tools' key does not list");

	struct tool *t = &st->cfg->tools[idx];
	unsigned i;
	const struct config_key *k = find_key(name, &i);
	if (!k || !k->in_limits) {
		char where[CONFIG_PATH_MAX + 8];
		struct sbuf sb = SBUF_INIT(where);
		sbuf_add(&sb, "' in [");
		sbuf_add(&sb, section);
		sbuf_add(&sb, "]");
		return fail(st, "unknown key '", name, where);
	}
	uint16_t before = t->set;
	int r = k->parse(st, k, key_field(k, NULL, &t->own), value);
	if (r > 0 && (before & k->set_bit))
		return fail(st, "'", name, "' is set twice for this tool");
	t->set |= k->set_bit;
	return r;
}

void config_init(struct config *cfg, const char *file)
{
	struct parse_state st = {.cfg = cfg};

	memset(cfg, 0, sizeof(*cfg));
	copy_str(cfg->file, sizeof(cfg->file), file);
	for (unsigned i = 0; i < ARRAY_SIZE(config_keys); i++) {
		const struct config_key *k = &config_keys[i];
		if (k->def)
			k->parse(&st, k, key_field(k, cfg, &cfg->defaults), k->def);
	}
}

/* Has the value of k the same in a and b? */
static bool key_equal(const struct config_key *k, const struct config *a,
		      const struct config *b)
{
	const char *fa = (const char *)(k->in_limits ? (const void *)&a->defaults
						       : (const void *)a) + k->offset;
	const char *fb = (const char *)(k->in_limits ? (const void *)&b->defaults
						       : (const void *)b) + k->offset;
	uint32_t la, lb, oa, ob;

	switch (k->type) {
	case KEY_STRING:
		return strcmp(fa, fb) == 0;
	case KEY_TEXT:
		memcpy(&oa, fa, sizeof(oa));
		memcpy(&ob, fb, sizeof(ob));
		memcpy(&la, fa + sizeof(uint32_t), sizeof(la));
		memcpy(&lb, fb + sizeof(uint32_t), sizeof(lb));
		return la == lb && (la == 0 || strcmp(config_text(a, oa), config_text(b, ob)) == 0);
	case KEY_FALLBACKS:
		return a->nsocket_fallback == b->nsocket_fallback && memcmp(fa, fb, k->size) == 0;
	case KEY_TOOLS:
		return false; /* not compared: a reload applies it */
	case KEY_NUMBER:
	default:
		return memcmp(fa, fb, k->size) == 0;
	}
}

unsigned config_reload_fixed(const struct config *old, const struct config *cfg,
			     const char **names, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ARRAY_SIZE(config_keys); i++) {
		const struct config_key *k = &config_keys[i];
		if (!k->restart || key_equal(k, old, cfg))
			continue;
		bool listed = false;
		for (unsigned j = 0; j < n; j++)
			listed |= strcmp(names[j], k->restart) == 0;
		if (!listed && n < max)
			names[n++] = k->restart;
	}
	return n;
}

static int handler(void *user, const char *section, const char *name,
		   const char *value)
{
	struct parse_state *st = user;

	/* An indented continuation line reaches here as the same key again:
	 * `tools` appends, any other key is then "set twice". */
	if (st->failed)
		return 0;
	if (section[0] == '\0')
		return handle_global(st, name, value);
	if (strncmp(section, "tool.", 5) == 0 && section[5] != '\0')
		return handle_tool(st, section, name, value);
	return fail(st, "unknown section [", section, "]");
}

/* Set cfg->error to "FILE:LINE: a b c". */
static int fail_at(struct config *cfg, unsigned line, const char *a,
		   const char *b, const char *c)
{
	struct sbuf sb = SBUF_INIT(cfg->error);
	cfg->error[0] = '\0';
	sbuf_add(&sb, cfg->file);
	sbuf_addc(&sb, ':');
	sbuf_add_u64(&sb, line);
	sbuf_add(&sb, ": ");
	sbuf_add(&sb, a);
	if (b)
		sbuf_add(&sb, b);
	if (c)
		sbuf_add(&sb, c);
	return -EINVAL;
}

/* Refuse what inih would silently misread: over-long lines and section
 * names. */
static int check_lines(struct config *cfg, const char *text)
{
	unsigned line = 1;

	for (const char *p = text; *p; line++) {
		const char *end = strchrnul(p, '\n');
		size_t len = (size_t)(end - p);
		if (len > CONFIG_MAX_LINE - 3)
			return fail_at(cfg, line, "line longer than 4093 bytes", NULL, NULL);
		const char *q = p;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q < end && *q == '[') {
			const char *close = memchr(q, ']', (size_t)(end - q));
			size_t name_len = close ? (size_t)(close - q - 1) : 0;
			if (name_len > SECTION_NAME_MAX) {
				char name[256];
				size_t n = MIN(name_len, sizeof(name) - 1);
				memcpy(name, q + 1, n);
				name[n] = '\0';
				return fail_at(cfg, line, "section name longer than 49 bytes: [",
					       name, "]");
			}
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* inih's settings are process-wide variables of the copy linked into
 * us (statically: libtoolrun.so keeps it private), which nothing else
 * sets: set once, before the first parse, whichever thread makes it. */
static pthread_once_t inih_once = PTHREAD_ONCE_INIT;

static void set_inih_options(void)
{
	ini_max_line = CONFIG_MAX_LINE;
	ini_use_stack = true;
	ini_stop_on_first_error = true;
	ini_allow_multiline = true;
	ini_allow_inline_comments = true;
	ini_inline_comment_prefixes = ";#";
	ini_start_comment_prefixes = ";#";
}

int config_parse_text(struct config *cfg, const char *text)
{
	struct parse_state st = {.cfg = cfg};

	if (check_lines(cfg, text) < 0)
		return -EINVAL;

	pthread_once(&inih_once, set_inih_options);
	cfg->error[0] = '\0';
	int line = ini_parse_string(text, handler, &st);
	if (line == 0 && !st.failed)
		return 0;

	/* Prefix "FILE:LINE: " to the message. */
	char msg[CONFIG_ERROR_MAX];
	copy_str(msg, sizeof(msg), cfg->error);
	struct sbuf sb = SBUF_INIT(cfg->error);
	cfg->error[0] = '\0';
	sbuf_add(&sb, cfg->file);
	sbuf_addc(&sb, ':');
	sbuf_add_i64(&sb, line > 0 ? line : 0);
	sbuf_add(&sb, ": ");
	sbuf_add(&sb, st.failed ? msg
				: "syntax error: expected 'key = value' or '[section]'");
	return -EINVAL;
}

int config_load(struct config *cfg, const char *file, char *scratch)
{
	config_init(cfg, file);

	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int err = errno;
		struct sbuf sb = SBUF_INIT(cfg->error);
		sbuf_add(&sb, "cannot read ");
		sbuf_add(&sb, file);
		sbuf_add(&sb, ": ");
		sbuf_add(&sb, errno_text(err));
		return -err;
	}

	size_t len = 0;
	int err = 0;
	for (;;) {
		ssize_t n = read(fd, scratch + len, CONFIG_MAX_FILE + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_MAX_FILE) {
			err = EFBIG;
			break;
		}
	}
	close(fd);

	if (err) {
		struct sbuf sb = SBUF_INIT(cfg->error);
		sbuf_add(&sb, "cannot read ");
		sbuf_add(&sb, file);
		sbuf_add(&sb, ": ");
		sbuf_add(&sb, err == EFBIG ? "larger than 65536 bytes"
					   : errno_text(err));
		return -err;
	}
	if (memchr(scratch, '\0', len)) {
		struct sbuf sb = SBUF_INIT(cfg->error);
		sbuf_add(&sb, file);
		sbuf_add(&sb, ": contains a NUL byte; not a text file");
		return -EINVAL;
	}
	scratch[len] = '\0';
	return config_parse_text(cfg, scratch);
}

bool config_writable_by_self(int dirfd, const char *path, const struct stat *st)
{
	uid_t uid = geteuid();

	if (uid == 0)
		return false;
	if (st->st_uid == uid)
		return true;
	int flags = AT_EACCESS | (path[0] ? 0 : AT_EMPTY_PATH);
	if (syscall(SYS_faccessat2, dirfd, path, W_OK, flags) == 0)
		return true;
	if (errno != ENOSYS && errno != EPERM)
		return false;
	/* No faccessat2 (Linux before 5.8, or a seccomp profile that
	 * refuses it): the mode bits, without ACLs. */
	if (st->st_mode & S_IWOTH)
		return true;
	if (!(st->st_mode & S_IWGRP))
		return false;
	if (st->st_gid == getegid())
		return true;
	gid_t groups[256];
	int n = getgroups(ARRAY_SIZE(groups), groups);
	if (n < 0)
		return true; /* more groups than fit: cannot tell, so assume it */
	for (int i = 0; i < n; i++)
		if (groups[i] == st->st_gid)
			return true;
	return false;
}

/* DIR/NAME into out (CONFIG_PATH_MAX bytes); false if it does not fit. */
static bool join_dir(char *out, const char *dir, size_t dlen, const char *name)
{
	size_t nlen = strlen(name);
	bool slash = dlen > 0 && dir[dlen - 1] == '/';

	if (dlen + !slash + nlen >= CONFIG_PATH_MAX)
		return false;
	memcpy(out, dir, dlen);
	if (!slash)
		out[dlen++] = '/';
	memcpy(out + dlen, name, nlen + 1);
	return true;
}

/*
 * Is st, found as path, the program NAME of a trusted directory, that
 * is, the same file as DIR/NAME? That DIR/NAME goes to out. The path
 * itself first, if it is one of them (the usual case, after PATH
 * search): then no further lookup, and out is the path as asked for.
 */
static bool in_trusted_dir(const struct config *cfg, const char *name,
			   const char *path, const struct stat *st, char *out)
{
	const char *dirs = config_text(cfg, cfg->trusted_dirs);
	char cand[CONFIG_PATH_MAX];

	for (int pass = 0; pass < 2; pass++) {
		for (const char *p = dirs + strspn(dirs, " \t"); *p;) {
			size_t n = strcspn(p, " \t");
			struct stat ds;
			if (join_dir(cand, p, n, name) &&
			    (pass == 0 ? strcmp(cand, path) == 0
				       : stat(cand, &ds) == 0 && ds.st_dev == st->st_dev &&
						 ds.st_ino == st->st_ino)) {
				copy_str(out, CONFIG_PATH_MAX, cand);
				return true;
			}
			p += n;
			p += strspn(p, " \t");
		}
	}
	return false;
}

/* Does the name entry NAME match the file at path (its base name is
 * NAME)? See config.h. */
static bool name_matches(const struct config *cfg, const char *name, int dirfd,
			 const char *path, bool as_caller, struct tool_file *file)
{
	struct tool_file scratch;
	struct stat st;

	if (!file)
		file = &scratch;
	*file = (struct tool_file){.by_name = true};
	if (cfg->trusted_dirs_len == 0 || (as_caller && !strchr(path, '/')))
		return true;
	if (fstatat(dirfd, path, &st, 0) < 0 ||
	    !in_trusted_dir(cfg, name, path, &st, file->path))
		return false;
	if (as_caller && config_writable_by_self(dirfd, path, &st))
		return false;
	file->dev = st.st_dev;
	file->ino = st.st_ino;
	return true;
}

/* A path entry matched: the file it names now, for the launcher. */
static void path_file(const char *listed, struct tool_file *file)
{
	struct stat st;

	if (!file)
		return;
	*file = (struct tool_file){0};
	copy_str(file->path, sizeof(file->path), listed);
	if (stat(listed, &st) == 0) {
		file->dev = st.st_dev;
		file->ino = st.st_ino;
	}
}

static int find_tool(struct config *cfg, int dirfd, const char *path,
		     bool as_caller, struct tool_file *file)
{
	const char *base = path_base_name(path);
	size_t blen = strlen(base);

	for (unsigned i = 0; i < cfg->ntools; i++) {
		const struct tool *t = &cfg->tools[i];
		const char *name = pool_str(cfg, t->name);
		if (t->is_path && strcmp(name, path) == 0) {
			path_file(name, file);
			return (int)i;
		}
		if (!t->is_path && t->name_len == blen && memcmp(name, base, blen) == 0 &&
		    name_matches(cfg, name, dirfd, path, as_caller, file))
			return (int)i;
	}
	if (!cfg->has_path_tools)
		return -1;

	/* Path entries also match any other name of the same file. */
	struct stat st;
	if (fstatat(dirfd, path, &st, 0) < 0)
		return -1;
	for (unsigned i = 0; i < cfg->ntools; i++) {
		struct tool *t = &cfg->tools[i];
		if (!t->is_path)
			continue;
		if (t->id_state == 0) {
			struct stat ts;
			if (stat(pool_str(cfg, t->name), &ts) == 0) {
				t->dev = ts.st_dev;
				t->ino = ts.st_ino;
				t->id_state = 1;
			} else {
				t->id_state = -1;
			}
		}
		if (t->id_state == 1 && t->dev == st.st_dev &&
		    t->ino == st.st_ino) {
			path_file(pool_str(cfg, t->name), file);
			return (int)i;
		}
	}
	return -1;
}

int config_find_tool(struct config *cfg, const char *path)
{
	return find_tool(cfg, AT_FDCWD, path, true, NULL);
}

int config_find_tool_at(struct config *cfg, int dirfd, const char *path,
			struct tool_file *file)
{
	return find_tool(cfg, dirfd, path, false, file);
}

const char *config_tool_name(const struct config *cfg, int tool)
{
	return pool_str(cfg, cfg->tools[tool].name);
}

struct limits config_tool_limits(const struct config *cfg, int tool)
{
	struct limits lim = cfg->defaults;
	const struct tool *t = &cfg->tools[tool];

	if (t->set & LIMIT_SET_MAX_BYTES)
		lim.max_bytes = t->own.max_bytes;
	if (t->set & LIMIT_SET_MAX_LINES)
		lim.max_lines = t->own.max_lines;
	if (t->set & LIMIT_SET_TIMEOUT)
		lim.timeout_s = t->own.timeout_s;
	if (t->set & LIMIT_SET_SHAPE)
		lim.shape = t->own.shape;
	for (int r = 0; r < POLICY_RLIMIT_COUNT; r++)
		if (t->set & (LIMIT_SET_RLIMIT << r))
			lim.rlimit[r] = t->own.rlimit[r];
	if (t->set & LIMIT_SET_NETWORK)
		lim.network = t->own.network;
	if (t->set & LIMIT_SET_ENV_ALLOW) {
		lim.env_allow = t->own.env_allow;
		lim.env_allow_len = t->own.env_allow_len;
	}
	if (t->set & LIMIT_SET_ENV_DENY) {
		lim.env_deny = t->own.env_deny;
		lim.env_deny_len = t->own.env_deny_len;
	}
	lim.from_section = t->set;
	return lim;
}
