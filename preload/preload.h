/*
 * libtoolrun.so: the exec hooks and the one context they share.
 *
 * Request flow inside the library:
 *   hook.c     the exec-family interposers: decide, then hand off
 *   resolve.c  PATH search with glibc's rules, to learn which file runs
 *   cfgcache.c the parsed config, published once per process
 *   safety.c   may the client run here, or must the helper be exec'd?
 *   sink.c     which output streams reach the agent (truncate = sink)
 *   client.c   the client: request out, output in, the program's status
 *   nested.c   interception below a program that toolrund runs
 *
 * Everything reachable from a hook is async-signal-safe: hooks run in
 * vfork children and in the fork child of multithreaded programs.
 */
#ifndef TOOLRUN_PRELOAD_H
#define TOOLRUN_PRELOAD_H

#include <limits.h>
#include <spawn.h>
#include <stdbool.h>

#include "cfgcache.h"
#include "config.h"
#include "nested.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

/* The real functions, looked up on first use (dlsym(RTLD_NEXT)). */
enum real_fn {
	REAL_EXECVE,
	REAL_EXECV,
	REAL_EXECVP,
	REAL_EXECVPE,
	REAL_EXECVEAT,
	REAL_FEXECVE,
	REAL_POSIX_SPAWN,
	REAL_POSIX_SPAWNP,
	/* Not exec calls, see hook.c: they start /bin/sh out of our sight. */
	REAL_POPEN,
	REAL_SYSTEM,
	REAL_COUNT,
};

/* The library's state: the only mutable global of its own code (the
 * inih linked into it has its settings too, set once: common/config.c). */
struct preload {
	void *real[REAL_COUNT];
	struct cfgcache cache;
	/* TOOLRUN_CONFIG as the process started with it ("" if unset). */
	char inherited_config[CONFIG_PATH_MAX];
	/* Set in programs that toolrund runs (see nested.h). */
	struct nested nested;
	/* toolrun-exec, beside this library; found on first use. */
	char helper[PATH_MAX];
	bool helper_known;
};

extern struct preload preload_ctx;

void *preload_real(enum real_fn which);

#endif
