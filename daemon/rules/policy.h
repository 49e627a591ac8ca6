/*
 * Policy: what toolrund accepts from a client and how it runs it.
 *
 * Every byte of a request is untrusted. policy_check() validates a
 * decoded Request completely before anything is opened or spawned, finds
 * the tool it names in the config, and settles its limits and which
 * streams are shaped. policy_environment() computes the program's
 * environment.
 *
 * Process: the listener (pure functions: no loop, no fds).
 */
#ifndef TOOLRUN_POLICY_H
#define TOOLRUN_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "config.h"
#include "toolrun.pb-c.h"

/* Descriptor numbers a program may receive: below any sane RLIMIT_NOFILE. */
#define POLICY_FD_MAX (1u << 20)

enum policy_verdict {
	POLICY_RUN = 0,
	POLICY_NOT_LISTED, /* well-formed, but not a tool this daemon runs */
	POLICY_COMMANDS_OFF, /* an agent command, with agent_commands = off */
	POLICY_MALFORMED,  /* breaks a rule of toolrun.proto */
};

struct policy_decision {
	int tool;               /* -1 for an agent command */
	struct tool_file file;  /* a tool: the file it was matched as */
	struct limits limits;
	bool shape_stdout;
	bool shape_stderr;
	bool joined;
	/* The stream reaches the agent (Request.agent_streams; a client that
	 * does not say: every stream): only there is binary output
	 * summarised. */
	bool agent_stdout;
	bool agent_stderr;
	char error[256]; /* with POLICY_MALFORMED: what was wrong */
};

/*
 * Decode one client payload strictly: a ClientMessage with one message
 * set and no field this version does not know, within the memory its
 * size allows (arena.h). Returns the message, which lives in a (release
 * it with arena_release once done with the message) and whose argv and
 * envp entries point into payload (keep it until then), or NULL with a
 * one-line reason in err and nothing held.
 */
Toolrun__ClientMessage *policy_decode(const uint8_t *payload, size_t len,
				      struct arena *a, char *err, size_t errlen);

/* nfds: fds attached to the frame; cwd_fd: the first of them. */
enum policy_verdict policy_check(struct config *cfg, const Toolrun__Request *req,
				 unsigned nfds, int cwd_fd,
				 struct policy_decision *out);

/*
 * The environment the program is started with: the request's envp less
 * what the tool's env_allow / env_deny patterns remove. Loader and libc
 * variables (LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH, GCONV_PATH...) are
 * names like any other.
 *
 * A program is nested when the last LD_PRELOAD (the one ld.so reads)
 * has an entry equal to the config's `preload`, the path of toolrun's
 * own library; a file of the same name elsewhere does not count. A
 * nested program keeps toolrun's variables, plus TOOLRUN_NESTED=1: the
 * library stays loaded in it, hides them from it and hands them on to
 * what it executes (see preload/nested.h). When the filters drop
 * LD_PRELOAD, a nested program still gets LD_PRELOAD=<preload>, without
 * the other entries. A program that is not nested gets no TOOLRUN_*
 * variable.
 *
 * An agent command's environment is its envp less what the config's
 * global env_allow / env_deny remove (policy_shell_env_keeps), with
 * toolrun's LD_PRELOAD entry kept as for a nested program, and without
 * TOOLRUN_NESTED. `extra` ("NAME=value" entries the daemon sets, as for
 * an agent command) replace the request's variables of the same names
 * and are kept in any case. Entries point into req, extra, a static
 * marker and the block of *out itself. Free *out. Returns 0 or -ENOMEM.
 */
int policy_environment(const Toolrun__Request *req, const struct config *cfg,
		       const struct limits *lim, const ProtobufCBinaryData *extra,
		       size_t nextra, ProtobufCBinaryData **out, size_t *n);

/* A session call's limits (toolrun.proto, SessionCall). */
#define POLICY_SESSION_ID_MAX 64
#define POLICY_SESSION_COMMAND_MAX (1024 * 1024 - 1)
#define POLICY_SESSION_INPUT_MAX (1024 * 1024)
#define POLICY_SESSION_TIMEOUT_MAX_MS 3600000u

/*
 * Does a SessionCall, which came with nfds fds, keep the rules of
 * toolrun.proto? A known op; one fd with NEW and none otherwise; an id of
 * 1 to 64 letters, digits, '-' or '_' where the op names a session; a
 * timeout within an hour; RUN's command of 1 byte to 1 MiB without NUL;
 * WRITE's input of at most 1 MiB; NEW's environment entries NAME=value
 * without NUL. Returns true, or false with a line in why.
 */
/* A FrontRecord within its limits (toolrun.proto); false with why. */
#define POLICY_FRONT_TARGET_MAX 4096
bool policy_front_record(const Toolrun__FrontRecord *r, char *why, size_t len);

bool policy_session_call(const Toolrun__SessionCall *c, unsigned nfds, char *why,
			 size_t len);
/* The limits an agent command runs under: the budget (max_bytes,
 * max_lines, shape) and command_timeout; no resource limit, filter or
 * environment rule of its own, since it stands for the agent's shell
 * (its environment takes the global rule: policy_shell_env_keeps). */
struct limits policy_command_limits(const struct config *cfg);

/*
 * Does the shell of an agent command or of a session keep this variable
 * of its caller's (NAME=value, LD_PRELOAD aside: the caller keeps
 * toolrun's entry)? It stands for the agent's own shell, which has no
 * tool's section: the config's global env_allow and env_deny decide, as
 * for a tool without a section of its own, so that a secret-looking
 * variable that `docker exec -e` passed reaches no program. toolrun's own
 * variables (TOOLRUN_CONFIG and the others the library reads) pass
 * unasked, as they do for a nested program.
 */
bool policy_shell_env_keeps(const struct config *cfg, const ProtobufCBinaryData *e);

/* Does the variable's name match one of the patterns (fnmatch, separated
 * by spaces)? */
bool policy_env_matches(const char *patterns, const uint8_t *var, size_t len);

#endif
