/*
 * toolrun-exec: the hook's stand-in where the client cannot run in place.
 *
 *   toolrun-exec -e|-p CONFIG PATH ARGV0 ARGS...   (environment: the program's)
 *
 * The exec hook execs this from a vfork child, from a process with other
 * threads, or through posix_spawn, so that the client runs in a fresh
 * process that owns nothing else. The hook chose CONFIG and resolved PATH
 * (the program's environment may not name the config: `env -i`); -p says
 * the original call searched PATH like execvp, which runs a file without
 * #! through /bin/sh.
 *
 * It is not meant to be run by hand.
 */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cfgcache.h"
#include "client.h"
#include "config.h"
#include "procstr.h"
#include "sbuf.h"
#include "util.h"

#ifndef TOOLRUN_VERSION
#define TOOLRUN_VERSION "0"
#endif

extern char **environ;

/* The program's environment: what the hook gave us, see exec_environment. */
static char **program_env;

/*
 * The environment this process was executed with. Below a program that
 * toolrund runs, the library is preloaded into us too, and its
 * constructor took toolrun's variables out of environ (preload/nested.h);
 * but they are what keeps the program, and everything below it, under
 * toolrun. The kernel's copy in /proc/self/environ still has them: the
 * constructor moved pointers, it changed no string. Without /proc, environ
 * is all there is.
 */
static char **exec_environment(void)
{
	char **env = procstr_self("environ");
	return env ? env : environ;
}

/* Run the program here, without going through the preloaded hooks. */
static int exec_direct(const char *path, char **argv, bool search_mode)
{
	syscall(SYS_execve, path, argv, program_env);
	if (errno == ENOEXEC && search_mode) {
		size_t argc = 0;
		while (argv[argc])
			argc++;
		char *shv[argc + 3];
		shv[0] = (char *)"/bin/sh";
		shv[1] = (char *)path;
		for (size_t i = 1; i <= argc; i++)
			shv[i + 1] = argv[i];
		syscall(SYS_execve, "/bin/sh", shv, program_env);
	}
	return errno;
}

static NORETURN void die(const char *path, const char *what, int code)
{
	char msg[1024];
	struct sbuf sb = SBUF_INIT(msg);
	const char *slash = strrchr(path, '/');

	sbuf_add(&sb, "toolrun: ");
	sbuf_add(&sb, slash ? slash + 1 : path);
	sbuf_add(&sb, ": ");
	sbuf_add(&sb, what);
	sbuf_addc(&sb, '\n');
	(void)write_all(STDERR_FILENO, msg, sb.len);
	_exit(code);
}

static NORETURN void run_direct(const char *path, char **argv, bool search_mode)
{
	int err = exec_direct(path, argv, search_mode);
	die(path, err == ENOENT ? "command not found" : errno_text(err),
	    err == ENOENT ? 127 : 126);
}

TOOLRUN_NOT_A_COMMAND;

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "-e") != 0 && strcmp(argv[1], "-p") != 0)) {
		static const char usage[] =
			"toolrun-exec: internal helper of libtoolrun.so; not for direct use\n";
		(void)write_all(STDERR_FILENO, usage, sizeof(usage) - 1);
		return 2;
	}
	bool search_mode = argv[1][1] == 'p';
	program_env = exec_environment();
	const char *path = argv[3];
	char **prog_argv = argv + 4;

	struct cfgcache cache = {0};
	struct config *cfg = cfgcache_get(&cache, argv[2]);
	int tool = cfg ? config_find_tool(cfg, path) : -1;
	if (tool < 0)
		run_direct(path, prog_argv, search_mode); /* no longer listed */

	struct client_call call = {
		.cfg = cfg,
		.tool = tool,
		.path = path,
		.argv = prog_argv,
		.envp = program_env,
		.software = "toolrun-exec " TOOLRUN_VERSION,
	};
	struct client_result res;
	client_run(&call, &res);

	if (res.outcome == CLIENT_UNREACHABLE) {
		if (cfg->fallback == FALLBACK_DIRECT) {
			char msg[600];
			struct sbuf sb = SBUF_INIT(msg);
			sbuf_add(&sb, "toolrun: ");
			sbuf_add(&sb, res.reason);
			sbuf_add(&sb, "; running it directly\n");
			(void)write_all(STDERR_FILENO, msg, sb.len);
			run_direct(path, prog_argv, search_mode);
		}
		/* The exec that brought us here already succeeded: report the
		 * failure the way a shell reports a program it cannot run. */
		die(path, res.reason, 126);
	}
	if (res.err == ENOEXEC)
		run_direct(path, prog_argv, search_mode);
	client_exit_failure(path, &res);
}
