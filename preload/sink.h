/*
 * Which output streams reach the agent, for `truncate = sink`.
 *
 * The profile snippet declares the login shell's stdout and stderr in
 * TOOLRUN_AGENT_STDOUT / TOOLRUN_AGENT_STDERR as "DEV:INO". A stream is
 * agent-facing when it is one of those files. Without a declaration, a
 * pipe, a socket or a terminal counts. Regular files, /dev/null and other
 * devices never do.
 *
 * A stream is shaped only where its limits could cut something: with no
 * byte and no line limit the program gets the caller's descriptor itself,
 * exactly as run directly (a terminal stays a terminal).
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
};

void sink_decide(const struct config *cfg, const struct limits *limits,
		 char *const envp[], struct sink_decision *out);

#endif
