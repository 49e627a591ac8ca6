/*
 * The tools of `toolrun mcp` (docs/mcp.md): bash, bash_output, bash_input,
 * bash_interrupt, bash_kill over a toolrund session; exec_command and
 * write_stdin, Codex's shell tools, over a session per command
 * (mcpexec.c); and read_file, write_file, edit_file and search over the
 * front ends' module (front/). Each tool has an input and an output
 * schema; a result carries structuredContent and one text block written
 * for the model, or isError with one line. --tools chooses which set of
 * them the server offers.
 *
 * The JSON-RPC side (mcp.c) lends the tools its way of waiting for a
 * session's answer, so that it can answer pings, interrupt a cancelled
 * command and send progress while a command runs.
 */
#ifndef TOOLRUN_FRONT_MCPTOOLS_H
#define TOOLRUN_FRONT_MCPTOOLS_H

#include <stdbool.h>

#include <json-c/json.h>

#include "config.h"
#include "files.h"
#include "mcpexec.h"
#include "path.h"
#include "search.h"
#include "sessclient.h"

/* The sets of tools `--tools` offers, as bits of mcp_tool.sets. */
enum {
	MCP_SET_TOOLRUN = 1, /* bash, bash_output, ...: one persistent session */
	MCP_SET_CODEX = 2,   /* exec_command, write_stdin: a session per command */
	MCP_SET_ALL = MCP_SET_TOOLRUN | MCP_SET_CODEX,
};

struct mcp_options {
	unsigned tool_sets;        /* MCP_SET_*; 0: MCP_SET_TOOLRUN */
	const char *root;          /* NULL: the working directory */
	const char *session;       /* NULL: a new one on the first bash call */
	const char *extensions;    /* NULL: any */
	const char *index_path;    /* NULL: search.h's default */
	const char *embed_command; /* NULL: none */
	bool keep_sessions;        /* the session made stays after the server */
};

struct mcp_tools;

/* Send sc on T->conn and wait for its answer (sess_client_call's
 * contract), doing the server's work meanwhile. */
typedef int (*mcp_wait_call_fn)(void *server, struct mcp_tools *T, Toolrun__SessionCall *sc,
				int attach, struct sess_answer *a, char *why, size_t len);

struct mcp_tools {
	const struct config *cfg;
	unsigned tool_sets;     /* the tools offered: MCP_SET_* */
	struct path_policy paths;
	struct search_options search;
	struct read_budget budget;
	char session[65];       /* the default session; "" until the first bash */
	bool own_session;       /* session was made by this server */
	bool keep_sessions;
	struct sess_client conn; /* fd -1 until the first use */
	bool audit_warned;      /* said once that records cannot reach toolrund */
	int64_t audit_retry_ms; /* no new connection for records before this */
	struct mcp_exec_sessions exec; /* exec_command's, still running */
	mcp_wait_call_fn wait_call;
	void *server;
};

/* A tool of the table: its name, schemas and handler, and the sets that
 * offer it (MCP_SET_*). */
struct mcp_tool {
	const char *name, *title, *description, *input, *output;
	struct json_object *(*run)(struct mcp_tools *T, struct json_object *args);
	unsigned sets;
};

/* exec_command and write_stdin (mcpexec.c), for the table. */
extern const struct mcp_tool mcp_exec_tools[];
extern const size_t mcp_exec_ntools;

/* 0, or -1 with e (a root that is not a directory, ...). */
int mcp_tools_init(struct mcp_tools *T, const struct config *cfg, const struct mcp_options *o,
		   struct front_error *e);
void mcp_tools_free(struct mcp_tools *T);

/* The array of tools/list: the tools of T's sets. */
struct json_object *mcp_tools_list(const struct mcp_tools *T);
/* initialize's instructions, for the tools offered. */
const char *mcp_tools_instructions(const struct mcp_tools *T);
/* The result of tools/call, or NULL for a tool that does not exist or
 * that this server does not offer. */
struct json_object *mcp_tools_call(struct mcp_tools *T, const char *name,
				   struct json_object *args);
/* Interrupt the command of session on a connection of its own (the main
 * one is waiting): for a cancelled call. */
void mcp_tools_interrupt(struct mcp_tools *T, const char *session);
/* The server ends: close the sessions it made, unless keep_sessions
 * (their bash and what runs in them would otherwise wait out
 * session_idle). */
void mcp_tools_end(struct mcp_tools *T);

/* ------------------------------------------------------------------ */
/* For the tools' own files (mcpexec.c): results, arguments, sessions.  */

/* A schema's type "t or null", as a JSON string literal. */
#define MCP_NULLABLE(t) "{\"type\":[\"" t "\",\"null\"]}"

/* The output schema's properties every shell tool's result has: its
 * state, streams, end, and what shaping cut (bash*, exec_command,
 * write_stdin). */
#define MCP_COMMAND_PROPERTIES                                                               \
	"\"state\":{\"type\":\"string\",\"enum\":[\"done\",\"running\",\"waiting_input\","   \
	"\"idle\",\"closed\"]},"                                                             \
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                 \
	"\"exit_code\":" MCP_NULLABLE("integer") ",\"signal\":" MCP_NULLABLE("string") ","   \
	"\"duration_ms\":" MCP_NULLABLE("integer") ","                                       \
	"\"stdout_dropped_bytes\":{\"type\":\"integer\"},"                                   \
	"\"stdout_dropped_lines\":{\"type\":\"integer\"},"                                   \
	"\"stdout_spill\":" MCP_NULLABLE("string") ","                                       \
	"\"stderr_dropped_bytes\":{\"type\":\"integer\"},"                                   \
	"\"stderr_dropped_lines\":{\"type\":\"integer\"},"                                   \
	"\"stderr_spill\":" MCP_NULLABLE("string") ",\"message\":" MCP_NULLABLE("string")

/* A result: structuredContent and one text block. */
struct json_object *mcp_tool_result(struct json_object *structured, const char *text);
/* isError with one line: "CATEGORY CODE: message". */
struct json_object *mcp_tool_error(const struct front_error *e);
__attribute__((format(printf, 3, 4))) struct json_object *
mcp_fail(enum front_category c, const char *code, const char *fmt, ...);
/* SYNTAX BAD_ARGUMENT: "TOOL: what (tools/list gives the input schema)". */
struct json_object *mcp_bad_arguments(const char *tool, const char *what);

/* args[key] as a string: NULL when absent or null; *bad when of another
 * type. */
const char *mcp_arg_string(struct json_object *args, const char *key, bool *bad);
/* args[key], a string, holds a NUL byte (JSON's \u0000). */
bool mcp_holds_nul(struct json_object *args, const char *key);
/* args[key] as a path: a string without NUL; NULL and *e filled when bad. */
const char *mcp_arg_path(struct json_object *args, const char *key, bool *bad,
			 struct front_error *e);
bool mcp_arg_bool(struct json_object *args, const char *key, bool dflt, bool *bad);
/* A number in [0, max], or dflt when absent. */
double mcp_arg_number(struct json_object *args, const char *key, double dflt, double max,
		      bool *bad);

/* T->conn open (connect and Hello once). 0, or -1 with why. */
int mcp_connect(struct mcp_tools *T, char *why, size_t len);
/* A new session on T->conn, in the directory dir_fd (path: dir, for
 * display), with the server's environment; its id into id (65 bytes).
 * 0, or -1 with why. */
int mcp_new_session(struct mcp_tools *T, int dir_fd, const char *dir, bool tty, char *id,
		    char *why, size_t len);
/* op on session, on a connection of its own (the main one may be
 * waiting for an answer). Best effort. */
void mcp_side_call(struct mcp_tools *T, const char *session, Toolrun__SessionOp op);

/* "exit 0 after 12 ms", "exit 130 (128+SIGINT) after 3002 ms", "killed
 * by signal KILL after 5 ms". */
void mcp_exit_summary(const Toolrun__Exit *e, char *s, size_t len);
/* The model's text for a command's reply: stdout, stderr after a
 * "[stderr]" line, then status, and last the cut line (sess_cut_line)
 * with more (a clause of the caller's, "" for none) after it. */
char *mcp_command_text(const Toolrun__SessionReply *r, const char *status, const char *more);

#endif
