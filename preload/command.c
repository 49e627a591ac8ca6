#include "command.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "preload.h"
#include "procstr.h"
#include "sbuf.h"
#include "sink.h"
#include "util.h"

#ifndef TOOLRUN_VERSION
#define TOOLRUN_VERSION "0"
#endif

extern char **environ;

static bool is_toolrun_program(void)
{
	return dlsym(RTLD_DEFAULT, TOOLRUN_NOT_A_COMMAND_SYMBOL) != NULL;
}

/* The file this process runs, if it still has a name. */
static bool own_executable(char path[PATH_MAX])
{
	static const char deleted[] = " (deleted)";
	ssize_t n = readlink("/proc/self/exe", path, PATH_MAX - 1);

	if (n <= 0 || path[0] != '/')
		return false;
	path[n] = '\0';
	size_t dl = sizeof(deleted) - 1;
	return !((size_t)n > dl && strcmp(path + n - dl, deleted) == 0 &&
		 access(path, X_OK) != 0);
}

static void say(const char *a, const char *b)
{
	char msg[768];
	struct sbuf sb = SBUF_INIT(msg);

	sbuf_add(&sb, "toolrun: ");
	sbuf_add(&sb, a);
	sbuf_add(&sb, b);
	sbuf_addc(&sb, '\n');
	(void)write_all(STDERR_FILENO, msg, sb.len);
}

/* toolrund did not run the command. A daemon that is away fails it under
 * `fallback = fail`: its output would reach the agent unbounded. One that
 * refuses this uid, or cannot execute the file, leaves the process to
 * itself, as for any program toolrun does not take. */
static void not_taken(const struct config *cfg, const struct client_result *res)
{
	if (res->outcome == CLIENT_UNREACHABLE && res->err != EACCES) {
		if (cfg->fallback == FALLBACK_DIRECT) {
			say(res->reason, "; running the command without toolrun");
			return;
		}
		say(res->reason, "; the command did not run (TOOLRUN=off runs it without toolrun)");
		_exit(126);
	}
}

void command_take_over(void)
{
	if (getpid() == 1 || is_toolrun_program())
		return;
	if (!sink_reaches_agent(STDOUT_FILENO, false) &&
	    !sink_reaches_agent(STDERR_FILENO, false))
		return;
	struct config *cfg = cfgcache_get(
		&preload_ctx.cache, cfgcache_file(environ, preload_ctx.inherited_config));
	if (!cfg || !cfg->agent_commands)
		return;
	char path[PATH_MAX];
	char **argv = procstr_self("cmdline");
	if (!argv || !own_executable(path))
		return;

	struct client_call call = {
		.cfg = cfg,
		.tool = -1,
		.command = true,
		.path = path,
		.argv = argv,
		.envp = environ,
		.software = "libtoolrun " TOOLRUN_VERSION,
	};
	struct client_result res;
	client_run(&call, &res);
	not_taken(cfg, &res);
}
