/*
 * The first process of a tree: the agent's command, the harness's
 * plumbing, or a person.
 *
 * An agent runs `docker exec BOX bash -lc "..."`: models send shell
 * command strings. The bash that starts is the first process of its tree
 * to have the library, and its stdout and stderr are the pipes the agent
 * reads. Its constructor asks toolrund to run the same executable, argv
 * and environment in its place (Request with `command` set) and stands in
 * for it like the client of any listed tool. Everything the tree writes
 * to the agent's streams then passes through the daemon and is shaped
 * against one budget, whatever wrote it: listed tools, other programs,
 * builtins, loops. The command ends whole on `command_timeout`, and the
 * audit log records it with its status.
 *
 * A harness's plumbing runs programs directly: `docker exec BOX tar -cf
 * - DIR`, `cat FILE`, `git diff`, `python3 server.py`. Such a first
 * process, whose stdout or stderr is a pipe or a socket and which is not
 * a shell given a command string, declares nothing (sink_declare_none):
 * its bytes, and those of everything below it, pass exactly.
 *
 *   agent's command  a shell with -c (bash -c, -lc, sh -c, ...), or any
 *                    program under TOOLRUN=agent
 *   plumbing         any other program run directly; TOOLRUN=off turns
 *                    even a shell command string into plumbing
 *   a person         stdout and stderr neither pipes nor sockets (a
 *                    terminal: docker exec -t), PID 1, the toolrun
 *                    programs themselves: they declare their own streams
 *                    (sink_declare_own), as before, and only listed tools
 *                    are shaped
 *
 * Not taken over either: `agent_commands = off` (the command declares its
 * own streams instead), a tree that already declared its streams
 * (TOOLRUN_AGENT_*), and everything below toolrund.
 */
#ifndef TOOLRUN_COMMAND_H
#define TOOLRUN_COMMAND_H

/* In the constructor of the first process of a tree (sink_first_of_tree).
 * Returns when the process stays itself (plumbing, a person, or a command
 * toolrund would not run while the policy says to go on), having declared
 * what of its streams reaches the agent; a command taken over exits as
 * the command did. */
void command_first_of_tree(void);

#endif
