/*
 * A NUL-separated list from /proc (cmdline, environ) as a NULL-terminated
 * vector, in memory from mmap: the callers run before main or in place of
 * an exec, where the program's malloc is not ours to use.
 */
#ifndef TOOLRUN_PROCSTR_H
#define TOOLRUN_PROCSTR_H

/* The strings of /proc/self/<name>, or NULL when it cannot be read or is
 * empty. The memory is never given back: the process ends or execs soon. */
char **procstr_self(const char *name);

#endif
