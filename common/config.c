/*
 * toolrun.conf parser. Async-signal-safe: no malloc, no stdio. inih runs
 * over a string, with its line buffer on the stack.
 */
#include "config.h"

#include <fcntl.h>
#include <ini.h>
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
#define BYTES_MAX (UINT64_C(1) << 40)
#define LINES_MAX (UINT64_C(1) << 40)

/* What the handler needs besides the config. */
struct parse_state {
	struct config *cfg;
	bool failed;
	bool seen[40]; /* scalar keys of the global section already set */
};

/* The resource-limit keys, by enum policy_rlimit. */
static const char *const rlimit_keys[POLICY_RLIMIT_COUNT] = {
	[POLICY_RLIMIT_AS] = "rlimit_as",
	[POLICY_RLIMIT_NPROC] = "rlimit_nproc",
	[POLICY_RLIMIT_FSIZE] = "rlimit_fsize",
	[POLICY_RLIMIT_NOFILE] = "rlimit_nofile",
	[POLICY_RLIMIT_CPU] = "rlimit_cpu",
};

/* Safe defaults: enough for the tools an agent runs on big inputs, not
 * enough for a bomb to take the machine down. */
static const uint64_t rlimit_defaults[POLICY_RLIMIT_COUNT] = {
	[POLICY_RLIMIT_AS] = UINT64_C(8) << 30,
	[POLICY_RLIMIT_NPROC] = 1024,
	[POLICY_RLIMIT_FSIZE] = UINT64_C(8) << 30,
	[POLICY_RLIMIT_NOFILE] = 4096,
	[POLICY_RLIMIT_CPU] = 600,
};

/* Where toolrund listens when the directory of `socket` is read-only or
 * not its own: /dev/shm is a writable tmpfs in every Docker container and
 * Kubernetes pod, even with a read-only root; /tmp often is too. */
static const char *const socket_fallback_defaults[] = {
	"/dev/shm/toolrun/toolrun.sock",
	"/tmp/toolrun/toolrun.sock",
};
#define WAIT_DAEMON_MAX 600

/* Variables no tool sees unless the config says otherwise. */
static const char env_deny_default[] = "*TOKEN* *SECRET* *KEY*";

/* Where a program listed by name counts as that tool: where packages
 * install programs, which only root may write. */
static const char trusted_dirs_default[] =
	"/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin";
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

void config_init(struct config *cfg, const char *file)
{
	memset(cfg, 0, sizeof(*cfg));
	copy_str(cfg->file, sizeof(cfg->file), file);
	copy_str(cfg->socket, sizeof(cfg->socket), "/run/toolrun/toolrun.sock");
	for (unsigned i = 0; i < ARRAY_SIZE(socket_fallback_defaults); i++)
		copy_str(cfg->socket_fallback[i], CONFIG_SOCKET_MAX,
			 socket_fallback_defaults[i]);
	cfg->nsocket_fallback = ARRAY_SIZE(socket_fallback_defaults);
	cfg->wait_daemon_s = 5;
	cfg->defaults.max_bytes = 4000;
	cfg->defaults.max_lines = 200;
	cfg->defaults.timeout_s = 30;
	cfg->defaults.shape = SHAPE_HEAD_TAIL;
	for (int r = 0; r < POLICY_RLIMIT_COUNT; r++)
		cfg->defaults.rlimit[r] = rlimit_defaults[r];
	cfg->defaults.network = NETWORK_DENY;
	cfg->defaults.env_deny_len = sizeof(env_deny_default) - 1;
	pool_add(cfg, env_deny_default, sizeof(env_deny_default) - 1,
		 &cfg->defaults.env_deny);
	cfg->trusted_dirs_len = sizeof(trusted_dirs_default) - 1;
	pool_add(cfg, trusted_dirs_default, sizeof(trusted_dirs_default) - 1,
		 &cfg->trusted_dirs);
	cfg->truncate = TRUNCATE_SINK;
	cfg->fallback = FALLBACK_FAIL;
	cfg->agent_commands = true;
	cfg->command_timeout_s = 300;
	cfg->binary = BINARY_SUMMARY;
	copy_str(cfg->spill_dir, sizeof(cfg->spill_dir), "/tmp/toolrun-output");
	cfg->spill_max_bytes = UINT64_C(64) << 20;
	cfg->spill_total_bytes = UINT64_C(1) << 30;
	cfg->spill_expire_s = 24 * 3600;
	copy_str(cfg->audit_log, sizeof(cfg->audit_log), "/var/log/toolrun/audit.jsonl");
	cfg->audit_max_bytes = UINT64_C(16) << 20;
	cfg->audit_keep = 4;
	copy_str(cfg->preload, sizeof(cfg->preload), TOOLRUN_PKGLIBDIR "/libtoolrun.so");
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

/* on | off */
static bool parse_switch(const char *s, bool *out)
{
	if (strcmp(s, "on") == 0)
		*out = true;
	else if (strcmp(s, "off") == 0)
		*out = false;
	else
		return false;
	return true;
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

/* An environment pattern list: fnmatch patterns separated by spaces. */
static int parse_patterns(struct parse_state *st, const char *name,
			  const char *value, uint32_t *off, uint32_t *len)
{
	for (const char *p = value; *p; p++)
		if (*p == '=')
			return fail(st, name, " takes variable name patterns, not '=': ", value);
	*len = (uint32_t)strlen(value);
	if (!pool_add(st->cfg, value, *len, off))
		return fail(st, "text too long in total (", name, ")");
	return 1;
}

/* A limit key valid both globally and in [tool.NAME]. */
static int parse_limit(struct parse_state *st, const char *name,
		       const char *value, struct limits *lim, uint16_t *set)
{
	uint64_t v;

	for (int r = 0; r < POLICY_RLIMIT_COUNT; r++) {
		if (strcmp(name, rlimit_keys[r]) != 0)
			continue;
		if (!parse_amount(value, &v))
			return fail(st, name,
				    " must be a number (with K, M, G or T) or 'unlimited', not '",
				    value);
		lim->rlimit[r] = v;
		*set |= (uint16_t)(LIMIT_SET_RLIMIT << r);
		return 1;
	}
	if (strcmp(name, "network") == 0) {
		if (strcmp(value, "deny") == 0)
			lim->network = NETWORK_DENY;
		else if (strcmp(value, "allow") == 0)
			lim->network = NETWORK_ALLOW;
		else
			return fail(st, "network must be 'deny' or 'allow', not '", value, "'");
		*set |= LIMIT_SET_NETWORK;
		return 1;
	}
	if (strcmp(name, "env_allow") == 0) {
		*set |= LIMIT_SET_ENV_ALLOW;
		return parse_patterns(st, name, value, &lim->env_allow, &lim->env_allow_len);
	}
	if (strcmp(name, "env_deny") == 0) {
		*set |= LIMIT_SET_ENV_DENY;
		return parse_patterns(st, name, value, &lim->env_deny, &lim->env_deny_len);
	}

	if (strcmp(name, "max_bytes") == 0) {
		if (!parse_uint(value, BYTES_MAX, &v))
			return fail(st, "max_bytes must be a number of bytes (0 for no limit), not '",
				    value, "'");
		lim->max_bytes = v;
		*set |= LIMIT_SET_MAX_BYTES;
	} else if (strcmp(name, "max_lines") == 0) {
		if (!parse_uint(value, LINES_MAX, &v))
			return fail(st, "max_lines must be a number of lines (0 for no limit), not '",
				    value, "'");
		lim->max_lines = v;
		*set |= LIMIT_SET_MAX_LINES;
	} else if (strcmp(name, "shape") == 0) {
		if (strcmp(value, "head+tail") == 0)
			lim->shape = SHAPE_HEAD_TAIL;
		else if (strcmp(value, "head") == 0)
			lim->shape = SHAPE_HEAD;
		else if (strcmp(value, "tail") == 0)
			lim->shape = SHAPE_TAIL;
		else
			return fail(st, "shape must be 'head+tail', 'head' or 'tail', not '",
				    value, "'");
		*set |= LIMIT_SET_SHAPE;
	} else if (strcmp(name, "timeout") == 0) {
		if (!parse_uint(value, TIMEOUT_MAX, &v))
			return fail(st, "timeout must be a number of seconds up to 604800 (0 for none), not '",
				    value, "'");
		lim->timeout_s = (uint32_t)v;
		*set |= LIMIT_SET_TIMEOUT;
	} else {
		return -1; /* not a limit key */
	}
	return 1;
}

/* Keys that may appear once in the global section. */
static const char *const scalar_keys[] = {
	"socket", "max_bytes", "max_lines", "timeout", "truncate", "fallback",
	"user", "allow_uids", "network", "env_allow", "env_deny",
	"rlimit_as", "rlimit_nproc", "rlimit_fsize", "rlimit_nofile", "rlimit_cpu",
	"socket_fallback", "wait_daemon", "shape", "agent_commands",
	"command_timeout", "binary", "spill_dir", "spill_max", "spill_total",
	"spill_expire", "audit_log", "audit_max", "audit_keep", "preload", "trusted_dirs",
};
_Static_assert(ARRAY_SIZE(scalar_keys) <= sizeof(((struct parse_state *)0)->seen),
	       "parse_state.seen has a flag for each scalar key");

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

/* socket_fallback: paths separated by spaces; empty: none. */
static int parse_socket_fallback(struct parse_state *st, const char *value)
{
	struct config *cfg = st->cfg;

	cfg->nsocket_fallback = 0;
	for (const char *p = value + strspn(value, " \t"); *p;) {
		size_t n = strcspn(p, " \t");
		char path[CONFIG_SOCKET_MAX + 1];
		/* A longer word is refused as too long: keep one byte more. */
		size_t keep = n < sizeof(path) - 1 ? n : sizeof(path) - 1;
		memcpy(path, p, keep);
		path[keep] = '\0';
		if (!check_socket_path(st, "socket_fallback", path, n))
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
static int parse_trusted_dirs(struct parse_state *st, const char *value)
{
	struct config *cfg = st->cfg;

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
	cfg->trusted_dirs_len = (uint32_t)strlen(value);
	if (!pool_add(cfg, value, cfg->trusted_dirs_len, &cfg->trusted_dirs))
		return fail(st, "text too long in total (trusted_dirs)", NULL, NULL);
	return 1;
}

static int handle_global(struct parse_state *st, const char *name,
			 const char *value)
{
	struct config *cfg = st->cfg;

	if (strcmp(name, "tools") == 0)
		return parse_tools(st, value);

	for (unsigned i = 0; i < ARRAY_SIZE(scalar_keys); i++) {
		if (strcmp(name, scalar_keys[i]) != 0)
			continue;
		if (st->seen[i])
			return fail(st, "'", name, "' is set twice");
		st->seen[i] = true;
	}

	uint16_t set = 0;
	int r = parse_limit(st, name, value, &cfg->defaults, &set);
	if (r >= 0)
		return r;

	if (strcmp(name, "socket") == 0) {
		if (!check_socket_path(st, "socket", value, strlen(value)))
			return 0;
		copy_str(cfg->socket, sizeof(cfg->socket), value);
	} else if (strcmp(name, "socket_fallback") == 0) {
		return parse_socket_fallback(st, value);
	} else if (strcmp(name, "trusted_dirs") == 0) {
		return parse_trusted_dirs(st, value);
	} else if (strcmp(name, "wait_daemon") == 0) {
		uint64_t v;
		if (!parse_uint(value, WAIT_DAEMON_MAX, &v))
			return fail(st, "wait_daemon must be a number of seconds up to 600 (0: do not wait), not '",
				    value, "'");
		cfg->wait_daemon_s = (uint32_t)v;
	} else if (strcmp(name, "agent_commands") == 0) {
		if (!parse_switch(value, &cfg->agent_commands))
			return fail(st, "agent_commands must be 'on' or 'off', not '", value, "'");
	} else if (strcmp(name, "command_timeout") == 0) {
		uint64_t v;
		if (!parse_uint(value, TIMEOUT_MAX, &v))
			return fail(st, "command_timeout must be a number of seconds up to 604800 (0 for none), not '",
				    value, "'");
		cfg->command_timeout_s = (uint32_t)v;
	} else if (strcmp(name, "binary") == 0) {
		if (strcmp(value, "summary") == 0)
			cfg->binary = BINARY_SUMMARY;
		else if (strcmp(value, "pass") == 0)
			cfg->binary = BINARY_PASS;
		else
			return fail(st, "binary must be 'summary' or 'pass', not '", value, "'");
	} else if (strcmp(name, "spill_dir") == 0 || strcmp(name, "audit_log") == 0) {
		char *dst = name[0] == 's' ? cfg->spill_dir : cfg->audit_log;
		if (value[0] != '\0' && value[0] != '/')
			return fail(st, name, " must be an absolute path or empty: ", value);
		if (strlen(value) >= CONFIG_PATH_MAX)
			return fail(st, name, " is too long: ", value);
		copy_str(dst, CONFIG_PATH_MAX, value);
	} else if (strcmp(name, "preload") == 0) {
		/* ld.so splits LD_PRELOAD at colons and spaces: such a path
		 * could never be one entry. */
		if (value[0] != '/' || strpbrk(value, ": "))
			return fail(st, "preload must be an absolute path without ':' or ' ': ", value, NULL);
		if (strlen(value) >= CONFIG_PATH_MAX)
			return fail(st, "preload is too long: ", value, NULL);
		copy_str(cfg->preload, sizeof(cfg->preload), value);
	} else if (strcmp(name, "spill_max") == 0 || strcmp(name, "spill_total") == 0 ||
		   strcmp(name, "audit_max") == 0) {
		uint64_t v;
		if (!parse_amount(value, &v) || v == POLICY_UNLIMITED || v < 4096)
			return fail(st, name, " must be a size of at least 4096 bytes (with K, M, G or T): ",
				    value);
		*(name[0] == 'a' ? &cfg->audit_max_bytes
		  : name[6] == 'm' ? &cfg->spill_max_bytes : &cfg->spill_total_bytes) = v;
	} else if (strcmp(name, "spill_expire") == 0) {
		uint64_t v;
		if (!parse_uint(value, TIMEOUT_MAX * 4, &v) || v == 0)
			return fail(st, "spill_expire must be a number of seconds from 1 to 2419200, not '",
				    value, "'");
		cfg->spill_expire_s = (uint32_t)v;
	} else if (strcmp(name, "audit_keep") == 0) {
		uint64_t v;
		if (!parse_uint(value, 100, &v))
			return fail(st, "audit_keep must be a number of rotated files up to 100, not '",
				    value, "'");
		cfg->audit_keep = (uint32_t)v;
	} else if (strcmp(name, "truncate") == 0) {
		if (strcmp(value, "sink") == 0)
			cfg->truncate = TRUNCATE_SINK;
		else if (strcmp(value, "always") == 0)
			cfg->truncate = TRUNCATE_ALWAYS;
		else
			return fail(st, "truncate must be 'sink' or 'always', not '",
				    value, "'");
	} else if (strcmp(name, "user") == 0) {
		if (value[0] == '\0' || strlen(value) >= sizeof(cfg->user) ||
		    strpbrk(value, " \t:/"))
			return fail(st, "user must be a user name or number, not '", value, "'");
		copy_str(cfg->user, sizeof(cfg->user), value);
	} else if (strcmp(name, "allow_uids") == 0) {
		cfg->allow_uids_len = (uint32_t)strlen(value);
		if (!pool_add(cfg, value, cfg->allow_uids_len, &cfg->allow_uids))
			return fail(st, "text too long in total (allow_uids)", NULL, NULL);
	} else if (strcmp(name, "fallback") == 0) {
		if (strcmp(value, "fail") == 0)
			cfg->fallback = FALLBACK_FAIL;
		else if (strcmp(value, "direct") == 0)
			cfg->fallback = FALLBACK_DIRECT;
		else
			return fail(st, "fallback must be 'fail' or 'direct', not '",
				    value, "'");
	} else {
		return fail(st, "unknown key '", name, "'");
	}
	return 1;
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
	uint16_t before = t->set, set = 0;
	int r = parse_limit(st, name, value, &t->own, &set);
	if (r < 0) {
		char where[CONFIG_PATH_MAX + 8];
		struct sbuf sb = SBUF_INIT(where);
		sbuf_add(&sb, "' in [");
		sbuf_add(&sb, section);
		sbuf_add(&sb, "]");
		return fail(st, "unknown key '", name, where);
	}
	if (r > 0 && (before & set))
		return fail(st, "'", name, "' is set twice for this tool");
	t->set |= set;
	return r;
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

int config_parse_text(struct config *cfg, const char *text)
{
	struct parse_state st = {.cfg = cfg};

	if (check_lines(cfg, text) < 0)
		return -EINVAL;

	/* inih's settings are process-wide variables; set them each time,
	 * since nothing else in the process may use inih. */
	ini_max_line = CONFIG_MAX_LINE;
	ini_use_stack = true;
	ini_stop_on_first_error = true;
	ini_allow_multiline = true;
	ini_allow_inline_comments = true;
	ini_inline_comment_prefixes = ";#";
	ini_start_comment_prefixes = ";#";

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
