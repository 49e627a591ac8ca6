/*
 * Agent commands: the first process of a tree hands itself to toolrund.
 *
 * An agent runs `docker exec BOX bash -lc "..."`: the bash that starts is
 * the first process of its tree to have the library, and its stdout and
 * stderr are the pipes the agent reads. Its constructor asks toolrund to
 * run the same executable, argv and environment in its place (Request
 * with `command` set) and stands in for it like the client of any listed
 * tool. Everything the tree writes to the agent's streams then passes
 * through the daemon and is shaped against one budget, whatever wrote it:
 * listed tools, other programs, builtins, loops. The command ends whole
 * on `command_timeout`, and the audit log records it with its status.
 *
 * Not taken over: a process whose stdout and stderr are neither pipes nor
 * sockets (a terminal is a person, a file is not the agent), PID 1, the
 * toolrun programs themselves (they export TOOLRUN_NOT_A_COMMAND_SYMBOL),
 * `agent_commands = off`, TOOLRUN=off, a tree that already declared its
 * streams (TOOLRUN_AGENT_*), and everything below toolrund.
 */
#ifndef TOOLRUN_COMMAND_H
#define TOOLRUN_COMMAND_H

/* In the constructor. Returns when the process stays itself (not an
 * agent command, or toolrund would not run it and the policy says to go
 * on); otherwise it exits as the command did. */
void command_take_over(void);

#endif
