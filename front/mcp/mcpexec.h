/*
 * exec_command and write_stdin for `toolrun mcp` (docs/mcp.md): the shell
 * tools of OpenAI's Codex, which other agent runtimes copy, over toolrund's
 * sessions. Each exec_command runs in a session of its own, made for it
 * in its workdir (under the root); a command that ends within
 * yield_time_ms returns its exit code and its session is closed; one that
 * runs on gets a session_id, a small integer, for write_stdin, until a
 * reply reports its end. The server closes those still open when it ends.
 */
#ifndef TOOLRUN_FRONT_MCPEXEC_H
#define TOOLRUN_FRONT_MCPEXEC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct mcp_tools;

/* A command exec_command started that has not reported its end. */
struct mcp_exec_session {
	int id;           /* the session_id the model sees: 1, 2, ... */
	char session[65]; /* toolrund's id of its session */
	bool tty;
};

struct mcp_exec_sessions {
	struct mcp_exec_session *s;
	size_t n, cap;
	int last_id; /* ids are never reused while the server runs */
	/* Where max_output_tokens keeps what it left out that toolrund kept
	 * nowhere: ${TMPDIR:-/tmp}/toolrun-mcp-XXXXXX, made on the first
	 * such cut; "" until then. */
	char spill_dir[PATH_MAX];
	unsigned spills; /* files made in it, for their names */
};

/* The server ends: close the sessions still open and remove spill_dir
 * (unless keep), free the table. */
void mcp_exec_end(struct mcp_tools *T, bool keep);

#endif
