/*
 * The config as this process sees it, parsed at most once.
 *
 * A shell parses it before its first fork (the atfork hook below), so
 * every child it forks starts with the parsed config in memory and its
 * exec hook does no file I/O. A process that execs without forking parses
 * on its first exec.
 */
#ifndef TOOLRUN_CFGCACHE_H
#define TOOLRUN_CFGCACHE_H

#include <stdbool.h>

#include "config.h"

/* One process's cache. */
struct cfgcache {
	/* The parsed config, or NULL. Replaced by publishing a new mapping;
	 * a mapping is never freed while another thread may read it. */
	struct config *config;
	/* Set once the process has said that the config is unusable. */
	bool warned;
};

/* The config at `file`, or NULL when toolrun is off because it cannot be
 * read or is invalid (said once on stderr). Async-signal-safe. */
struct config *cfgcache_get(struct cfgcache *cc, const char *file);

/* The config file for an exec: TOOLRUN_CONFIG in its envp, else
 * `inherited` (the one the process started with; may be NULL), else the
 * default path. `env -i cat` thus keeps the config of the shell that ran
 * env. */
const char *cfgcache_file(char *const envp[], const char *inherited);

/* For an atfork prepare handler: parse `file` (or re-parse it if it
 * changed) in the parent, checking at most once a second. */
void cfgcache_refresh(struct cfgcache *cc, const char *file);

#endif
