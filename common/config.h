/*
 * toolrun.conf: one INI file read by both toolrund and libtoolrun.so.
 *
 * The parser is inih, fed from memory, and the result is a fixed-size
 * struct: the library parses the file inside exec hooks, where neither
 * malloc nor stdio may be used. README.md has the reference.
 */
#ifndef TOOLRUN_CONFIG_H
#define TOOLRUN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Larger files are refused: a config is a page or two of text. */
#define CONFIG_MAX_FILE (64 * 1024)
#define CONFIG_MAX_TOOLS 128
/* Tool names and paths are stored back to back in one pool. */
#define CONFIG_POOL_SIZE (16 * 1024)
#define CONFIG_SOCKET_MAX 108 /* sizeof(sun_path) */
/* Places to listen when `socket` cannot be used (socket_fallback). */
#define CONFIG_MAX_FALLBACKS 4
#define CONFIG_PATH_MAX 1024
#define CONFIG_ERROR_MAX 1280

enum truncate_mode {
	TRUNCATE_SINK,   /* shape only what reaches the agent */
	TRUNCATE_ALWAYS, /* shape every output stream */
};

enum fallback_mode {
	FALLBACK_FAIL,   /* daemon unreachable: the exec fails (ECONNREFUSED, EPERM) */
	FALLBACK_DIRECT, /* daemon unreachable: run the program locally */
};

/* Resource limits a tool runs under (setrlimit), by key. */
enum policy_rlimit {
	POLICY_RLIMIT_AS,     /* rlimit_as: bytes of address space */
	POLICY_RLIMIT_NPROC,  /* rlimit_nproc: processes of the user */
	POLICY_RLIMIT_FSIZE,  /* rlimit_fsize: bytes of a file written */
	POLICY_RLIMIT_NOFILE, /* rlimit_nofile: open descriptors */
	POLICY_RLIMIT_CPU,    /* rlimit_cpu: seconds of CPU */
	POLICY_RLIMIT_COUNT,
};

/* "unlimited" */
#define POLICY_UNLIMITED UINT64_MAX

/* Which part of a stream is kept when it is over its limits (`shape`). */
enum shape_mode {
	SHAPE_HEAD_TAIL, /* the first half of the budget and the last half */
	SHAPE_HEAD,      /* the first part */
	SHAPE_TAIL,      /* the last part */
};

/* What reaches the agent of output that is not text (`binary`). */
enum binary_mode {
	BINARY_SUMMARY, /* one line: size, type guess, SHA-256, spill path */
	BINARY_PASS,    /* shaped like text */
};

enum network_policy {
	NETWORK_DENY,  /* socket() for anything but AF_UNIX fails with EACCES */
	NETWORK_ALLOW,
};

/* The most of a stream toolrund holds in memory, and so the largest
 * max_bytes it accepts: until a stream is known to be cut it keeps the
 * head part for the spill file, and the tail part until the stream ends.
 * Written out, for the message that refuses more. */
#define CONFIG_MAX_BYTES_HELD 1048576
#define CONFIG_MAX_BYTES_HELD_TEXT "1048576"

/* What a tool runs under: output and time limits (zero: none), resource
 * limits, network access and which environment variables it sees. */
struct limits {
	uint64_t max_bytes;
	uint64_t max_lines;
	uint32_t timeout_s;
	enum shape_mode shape;
	uint64_t rlimit[POLICY_RLIMIT_COUNT];
	enum network_policy network;
	/* Name patterns (fnmatch, separated by spaces), in the pool. With an
	 * allow list, only matching variables pass; the deny list drops
	 * matching ones. len 0: no list. */
	uint32_t env_allow, env_allow_len;
	uint32_t env_deny, env_deny_len;
	/* The LIMIT_SET_* bits of these that a [tool.NAME] section gave. */
	uint16_t from_section;
};

enum {
	LIMIT_SET_MAX_BYTES = 1 << 0,
	LIMIT_SET_MAX_LINES = 1 << 1,
	LIMIT_SET_TIMEOUT = 1 << 2,
	LIMIT_SET_RLIMIT = 1 << 3, /* << POLICY_RLIMIT_*: one bit each */
	LIMIT_SET_NETWORK = 1 << 8,
	LIMIT_SET_ENV_ALLOW = 1 << 9,
	LIMIT_SET_ENV_DENY = 1 << 10,
	LIMIT_SET_SHAPE = 1 << 11,
};

struct tool {
	uint32_t name;     /* offset of the NUL-terminated name in the pool */
	uint16_t name_len;
	bool is_path;      /* an absolute path rather than a program name */
	uint16_t set;      /* LIMIT_SET_* given in [tool.NAME] */
	struct limits own; /* the overrides named by `set` */
	/* For a path entry: the file's identity, looked up on first use, so
	 * that /bin/cat and /usr/bin/cat are one tool. */
	int8_t id_state; /* 0 not looked up, 1 known, -1 no such file */
	dev_t dev;
	ino_t ino;
};

struct config {
	char file[CONFIG_PATH_MAX]; /* where it was read from, for messages */
	char socket[CONFIG_SOCKET_MAX];
	/* Where toolrund listens when the directory of `socket` cannot be
	 * made or used (a read-only root, a directory of another user); the
	 * library tries `socket`, then these, in order. */
	char socket_fallback[CONFIG_MAX_FALLBACKS][CONFIG_SOCKET_MAX];
	unsigned nsocket_fallback;
	/* Seconds the library waits for a daemon that is restarting (its
	 * socket or lock file is there, but nobody answers) before it gives
	 * up; 0: at once. */
	uint32_t wait_daemon_s;
	/* The user toolrund runs as when started as root ("" : stay). */
	char user[64];
	/* The peers served, as names or numbers ("": the daemon's own uid). */
	uint32_t allow_uids, allow_uids_len; /* in the pool */
	struct limits defaults;
	/* Take over each agent command: the first process of a tree that has
	 * the library, when its stdout or stderr is a pipe or a socket, runs
	 * under toolrund with the command budget (`agent_commands`). */
	bool agent_commands;
	/* Seconds before an agent command's whole tree is killed; 0: none. */
	uint32_t command_timeout_s;
	/* Sessions: seconds without a call before one is closed (0: never),
	 * and how many toolrund hosts, in all and per uid. */
	uint32_t session_idle_s;
	uint32_t session_max;
	uint32_t session_max_per_uid;
	enum binary_mode binary;
	/* Where the whole of a cut stream is kept ("": nowhere), the most
	 * kept of one stream, of all of them, and for how long. */
	char spill_dir[CONFIG_PATH_MAX];
	uint64_t spill_max_bytes;
	uint64_t spill_total_bytes;
	uint32_t spill_expire_s;
	/* The audit log ("": none), its size before rotation, and how many
	 * rotated files are kept. */
	char audit_log[CONFIG_PATH_MAX];
	uint64_t audit_max_bytes;
	uint32_t audit_keep;
	/* libtoolrun.so as LD_PRELOAD names it (absolute). Only an entry
	 * equal to it is toolrun's own: toolrund keeps a program that has it
	 * nested (see daemon/rules/policy.h). */
	char preload[CONFIG_PATH_MAX];
	enum truncate_mode truncate;
	enum fallback_mode fallback;
	unsigned ntools;
	bool has_path_tools;
	struct tool tools[CONFIG_MAX_TOOLS];
	/* Where a program listed by name must be to be that tool: absolute
	 * directories separated by spaces, in the pool (`trusted_dirs`).
	 * len 0: anywhere. */
	uint32_t trusted_dirs, trusted_dirs_len;
	size_t pool_len;
	char pool[CONFIG_POOL_SIZE];
	/* The first error, as "FILE:LINE: what is wrong". */
	char error[CONFIG_ERROR_MAX];
	/* The SHA-256 (64 hex digits) of the bytes parsed, when toolrund
	 * read the file (control_load_config); "" where nobody hashed them
	 * (the library, the CLI). */
	char sha256[65];
};

/* Where the config lives unless TOOLRUN_CONFIG or --config says otherwise. */
extern const char config_default_path[];

/* Fill cfg with the built-in defaults. */
void config_init(struct config *cfg, const char *file);

/* Parse text (NUL-terminated). Returns 0, or -EINVAL with cfg->error set. */
int config_parse_text(struct config *cfg, const char *text);

/*
 * Read and parse a file. scratch must hold CONFIG_MAX_FILE + 1 bytes.
 * Returns 0, or a negative errno with cfg->error set (-EINVAL: bad
 * content; anything else: the file could not be read).
 */
int config_load(struct config *cfg, const char *file, char *scratch);

/*
 * Which tool the executable at path is, or -1.
 *
 * A path entry matches that file under any name: the path itself, or
 * the same file (dev/ino). A name entry matches a file of that name (the
 * path's last component) that is the same file as DIR/NAME for a DIR of
 * trusted_dirs; with trusted_dirs empty, any file of that name.
 *
 * config_find_tool is the caller's own question (the library, the CLI),
 * asked before and after PATH search: a path without a slash is a name
 * still to be found, and matches by name alone; and since the calling
 * process would run the file, a name entry does not match a file it
 * could rewrite (config_writable_by_self). config_find_tool_at is
 * toolrund's, from dirfd (the caller's working directory): toolrund is
 * not the caller, and leaves that to the launcher's child, which is.
 */
int config_find_tool(struct config *cfg, const char *path);

/* The file a tool's request must run, as config_find_tool_at found it. */
struct tool_file {
	/* The path it is known by, which only whoever may write there can
	 * change: the listed path, or DIR/NAME. Empty for a name found with
	 * trusted_dirs empty: then there is nothing to check. */
	char path[CONFIG_PATH_MAX];
	/* Its identity when matched; 0 0: a listed path with no file. */
	dev_t dev;
	ino_t ino;
	/* Listed by name: the caller must not be able to rewrite it. */
	bool by_name;
};

/* file, if not NULL, is filled when a tool matches. */
int config_find_tool_at(struct config *cfg, int dirfd, const char *path,
			struct tool_file *file);

/*
 * Could the calling process rewrite the file (st, found at dirfd/path;
 * path "" for dirfd itself)? Its owner could, by chmod; so could whoever
 * the kernel grants write access (mode, groups, ACLs; not on a read-only
 * mount). Root could rewrite any file, so for root this says no: its
 * tools are whatever root installed.
 */
bool config_writable_by_self(int dirfd, const char *path, const struct stat *st);

const char *config_tool_name(const struct config *cfg, int tool);

/* The limits in force for a tool: its overrides over the defaults. */
struct limits config_tool_limits(const struct config *cfg, int tool);

/* The places toolrund may listen, in the order they are tried: `socket`,
 * then each socket_fallback. */
unsigned config_socket_count(const struct config *cfg);
const char *config_socket_at(const struct config *cfg, unsigned i);

/*
 * The keys a reload leaves at their running values until a restart, named
 * as toolrund reports them ("socket", "user", "allow_uids", "audit_*",
 * "spill_*"): each name whose keys differ between old and cfg, once, up
 * to max of them into names. Returns how many.
 */
unsigned config_reload_fixed(const struct config *old, const struct config *cfg,
			     const char **names, unsigned max);

/* The text of a pool string (offset, length) as a NUL-terminated string. */
const char *config_text(const struct config *cfg, uint32_t off);

#endif
