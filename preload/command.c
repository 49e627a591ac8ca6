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

/* Does arg, an option word of a shell, hold `c` (bash -lc, sh -ec)? And
 * does it take the next word as its value (-o pipefail, +O extglob)? */
static bool option_has(const char *arg, char c)
{
	return arg[0] == '-' && strchr(arg + 1, c) != NULL;
}

/*
 * Is this a shell given a command string: `bash -c`, `bash -lc`, `sh -c`,
 * `bash --login -c`, `bash -o pipefail -c`? The shell is known by its
 * executable's name or by argv[0] (a login shell's "-bash"); options end
 * at "--" or at the first word that is not one.
 */
static bool shell_command_string(const char *exe, char **argv)
{
	static const char *const shells[] = {"sh", "bash", "dash", "ash", "zsh", "ksh",
					     "mksh", "yash", "posh", "rbash"};
	const char *name0 = argv[0] ? path_base_name(argv[0]) : "";
	const char *name = path_base_name(exe);
	bool shell = false;

	if (name0[0] == '-')
		name0++;
	for (size_t i = 0; i < ARRAY_SIZE(shells) && !shell; i++)
		shell = strcmp(name, shells[i]) == 0 || strcmp(name0, shells[i]) == 0;
	if (!shell || !argv[0])
		return false;
	for (char **a = argv + 1; *a; a++) {
		if (strcmp(*a, "--") == 0 || ((*a)[0] != '-' && (*a)[0] != '+') || !(*a)[1])
			return false;
		if ((*a)[1] == '-') { /* --login, --norc; --rcfile FILE */
			if ((strcmp(*a, "--rcfile") == 0 || strcmp(*a, "--init-file") == 0) && a[1])
				a++;
			continue;
		}
		if (option_has(*a, 'c'))
			return true;
		if (strpbrk(*a + 1, "oO") && a[1])
			a++;
	}
	return false;
}

/* TOOLRUN=agent: whatever it runs, this exec is the agent's command. */
static bool agent_asked(void)
{
	const char *v = getenv("TOOLRUN");
	return v && strcmp(v, "agent") == 0;
}

/* Hand the process to toolrund as the agent's command. Returns when
 * toolrund did not take it and the policy lets it run as itself. */
static void take_over(const char *path, char **argv)
{
	struct config *cfg = cfgcache_get(
		&preload_ctx.cache, cfgcache_file(environ, preload_ctx.inherited_config));
	if (!cfg || !cfg->agent_commands)
		return;
	/* Not the command's: it is below a command now (sink.h). */
	unsetenv("TOOLRUN_DIRECT");

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

void command_first_of_tree(void)
{
	if (getpid() == 1 || is_toolrun_program() ||
	    (!sink_reaches_agent(STDOUT_FILENO, false) &&
	     !sink_reaches_agent(STDERR_FILENO, false))) {
		sink_declare_own();
		return;
	}
	char path[PATH_MAX];
	char **argv = procstr_self("cmdline");
	if (!argv || !own_executable(path)) {
		sink_declare_own();
		return;
	}
	if (!agent_asked() && !shell_command_string(path, argv)) {
		sink_declare_none();
		return;
	}
	take_over(path, argv);
	sink_declare_own();
}
