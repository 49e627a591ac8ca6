/*
 * Which output streams reach the agent, for `truncate = sink`.
 *
 * TOOLRUN_AGENT_STDOUT / TOOLRUN_AGENT_STDERR declare the agent's streams as
 * "DEV:INO" (empty: that stream is not the agent's). A stream is
 * agent-facing when it is one of those files: output that flows into
 * another program, a file or a command substitution never is.
 *
 * Who declares: the first process of a tree that has the library, from
 * the library's constructor (sink_declare_own), which is how every
 * `docker exec BOX bash -c ...` in the image declares the streams the
 * agent reads; and the profile snippet, for a login shell started without
 * the library. A pipe, a socket or a terminal is declared; a regular
 * file, /dev/null or another device is not. Where nothing is declared
 * (the variables were removed), nothing is cut.
 *
 * A stream is shaped only where its limits could cut something: with no
 * byte and no line limit the program gets the caller's descriptor itself,
 * exactly as run directly (a terminal stays a terminal). Inside an agent
 * command (TOOLRUN_COMMAND is set), the command's budget shapes what
 * reaches the agent, whoever writes it: a listed tool's stream that is
 * one of the agent's is never shaped by the tool's own job, in either
 * truncate mode, so that the agent sees one marker, with the numbers of
 * what the program wrote, naming a file that holds all of it. The tool's
 * [tool.NAME] limits apply where its stream reaches the agent outside a
 * command and, with `truncate = always`, to its streams that do not.
 */
#ifndef TOOLRUN_SINK_H
#define TOOLRUN_SINK_H

#include <stdbool.h>

#include "config.h"

struct sink_decision {
	bool shape_stdout;
	bool shape_stderr;
	/* stdout and stderr are one file: shape them as one stream */
	bool joined;
	/* The stream reaches the agent (declared, or a command's), shaped or
	 * not: the Request's agent_streams. */
	bool agent_stdout;
	bool agent_stderr;
};

void sink_decide(const struct config *cfg, const struct limits *limits,
		 char *const envp[], struct sink_decision *out);

/* For an agent command: its stdout and stderr reach the agent when they
 * are pipes or sockets (what `docker exec` gives without -t). */
void sink_decide_command(struct sink_decision *out);

/* Could fd reach the agent? A pipe or a socket; a terminal too when
 * with_tty. */
bool sink_reaches_agent(int fd, bool with_tty);

/* Is this process the first of its tree: no declaration inherited (or
 * one made by this very pid before an exec, TOOLRUN_DIRECT), and toolrun
 * not off? A few environment lookups. */
bool sink_first_of_tree(void);

/* In the library's constructor of the first process of a tree that is not
 * below toolrund: declare its own stdout and stderr. */
void sink_declare_own(void);

/* The first process of a tree is a harness's plumbing (command.h):
 * declare that nothing below it reaches the agent (both variables empty),
 * and TOOLRUN_DIRECT=<its pid>, so that a program it execs in its place
 * decides again. */
void sink_declare_none(void);

/* Is envp's program below such a first process (TOOLRUN_DIRECT)? */
bool sink_below_harness(char *const envp[]);

#endif
