/*
 * The exec-family interposers.
 *
 * For each call: find the file that would run; if it is a listed tool,
 * hand it to toolrund, else call the real function with the same
 * arguments. A program that is not listed sees no difference: same
 * result, same errno.
 *
 * Handing off happens in this process when it is safe to block it (see
 * safety.h); otherwise the hook execs toolrun-exec, the helper beside
 * this library, which does the same from a fresh process.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfgcache.h"
#include "client.h"
#include "command.h"
#include "preload.h"
#include "resolve.h"
#include "safety.h"
#include "sbuf.h"
#include "sink.h"
#include "util.h"

#ifndef TOOLRUN_VERSION
#define TOOLRUN_VERSION "0"
#endif
#define HELPER_NAME "toolrun-exec"
/* Helper modes: how the original call treats an ENOEXEC file. */
#define HELPER_MODE_EXEC "-e"   /* as execve: fail */
#define HELPER_MODE_SEARCH "-p" /* as execvp: run it with /bin/sh */

extern char **environ;

struct preload preload_ctx;

/* Names as arrays, not pointers: a table of pointers would be eight
 * relocations for the dynamic loader in every program, listed or not. */
static const char real_names[REAL_COUNT][sizeof("posix_spawnp")] = {
	[REAL_EXECVE] = "execve",
	[REAL_EXECV] = "execv",
	[REAL_EXECVP] = "execvp",
	[REAL_EXECVPE] = "execvpe",
	[REAL_EXECVEAT] = "execveat",
	[REAL_FEXECVE] = "fexecve",
	[REAL_POSIX_SPAWN] = "posix_spawn",
	[REAL_POSIX_SPAWNP] = "posix_spawnp",
	[REAL_POPEN] = "popen",
	[REAL_SYSTEM] = "system",
};

void *preload_real(enum real_fn which)
{
	void *fn = __atomic_load_n(&preload_ctx.real[which], __ATOMIC_RELAXED);

	if (!fn) {
		fn = dlsym(RTLD_NEXT, real_names[which]);
		__atomic_store_n(&preload_ctx.real[which], fn, __ATOMIC_RELAXED);
	}
	return fn;
}

/* A shell parses the config before it forks, so that its children start
 * with it in memory. */
static void before_fork(void)
{
	cfgcache_refresh(&preload_ctx.cache,
			 cfgcache_file(environ, preload_ctx.inherited_config));
}

/* Loading the library costs one atfork registration and a few getenv,
 * and nothing else: no file is read until the process forks or execs.
 * Only the first process of a tree does more: it hands itself to toolrund
 * as an agent command, or declares which of its streams reach the agent
 * (command.h). */
__attribute__((constructor)) static void preload_init(void)
{
	const char *cfg = getenv("TOOLRUN_CONFIG");
	size_t len = cfg ? strlen(cfg) : 0;

	if (len < sizeof(preload_ctx.inherited_config))
		memcpy(preload_ctx.inherited_config, cfg ? cfg : "", len + 1);
	nested_hide(&preload_ctx.nested);
	if (!preload_ctx.nested.active && sink_first_of_tree())
		command_first_of_tree();
	pthread_atfork(before_fork, NULL, NULL);
}

/* One intercepted call, whatever function it came through. */
struct exec_call {
	enum real_fn kind;
	const char *file;    /* as given (execveat: the path after dirfd) */
	int dirfd;           /* execveat */
	int fd;              /* fexecve */
	int flags;           /* execveat */
	char *const *argv;
	char *const *envp;   /* the environment the program would get */
	bool search;         /* execvp-style PATH search */
	/* posix_spawn */
	pid_t *pid;
	const posix_spawn_file_actions_t *actions;
	const posix_spawnattr_t *attr;
};

static int call_real(const struct exec_call *c)
{
	void *fn = preload_real(c->kind);

	if (!fn) {
		errno = ENOSYS;
		return c->kind >= REAL_POSIX_SPAWN ? ENOSYS : -1;
	}
	switch (c->kind) {
	case REAL_EXECVE:
	case REAL_EXECVPE:
		return ((execve_fn)fn)(c->file, c->argv, c->envp);
	case REAL_EXECV:
	case REAL_EXECVP:
		return ((execv_fn)fn)(c->file, c->argv);
	case REAL_EXECVEAT:
		return ((execveat_fn)fn)(c->dirfd, c->file, c->argv, c->envp, c->flags);
	case REAL_FEXECVE:
		return ((fexecve_fn)fn)(c->fd, c->argv, c->envp);
	case REAL_POSIX_SPAWN:
	case REAL_POSIX_SPAWNP:
		return ((spawn_fn)fn)(c->pid, c->file, c->actions, c->attr, c->argv,
				      c->envp);
	case REAL_COUNT:
	default:
		errno = ENOSYS;
		return -1;
	}
}

static void say(const char *a, const char *b, const char *c, const char *d)
{
	char msg[1024];
	struct sbuf sb = SBUF_INIT(msg);

	sbuf_add(&sb, "toolrun: ");
	sbuf_add(&sb, a);
	if (b)
		sbuf_add(&sb, b);
	if (c)
		sbuf_add(&sb, c);
	if (d)
		sbuf_add(&sb, d);
	sbuf_addc(&sb, '\n');
	(void)write_all(STDERR_FILENO, msg, sb.len);
}

/* The path of an open fd, if it still names the same file. */
static bool path_of_fd(int fd, const char *rest, char out[PATH_MAX])
{
	char link[32] = "/proc/self/fd/";
	struct sbuf sb = {link, sizeof(link), strlen(link)};
	sbuf_add_i64(&sb, fd);

	ssize_t n = readlink(link, out, PATH_MAX - 1);
	if (n <= 0 || out[0] != '/')
		return false;
	out[n] = '\0';
	if (rest && rest[0]) {
		size_t rl = strlen(rest);
		if ((size_t)n + 1 + rl >= PATH_MAX)
			return false;
		out[n] = '/';
		memcpy(out + n + 1, rest, rl + 1);
	}
	return true;
}

/* A path given as it is: it runs if it is an executable file. */
static bool plain_path(const char *file, char path[PATH_MAX])
{
	size_t len = strlen(file);

	if (len == 0 || len >= PATH_MAX)
		return false;
	memcpy(path, file, len + 1);
	return resolve_is_executable(path);
}

/* The path of dirfd (plus rest), when it still names the same file. */
static bool path_at(int dirfd, const char *rest, char path[PATH_MAX])
{
	struct stat want, got;
	int r = rest ? fstatat(dirfd, rest, &want, 0) : fstat(dirfd, &want);

	return r == 0 && path_of_fd(dirfd, rest, path) && stat(path, &got) == 0 &&
	       got.st_dev == want.st_dev && got.st_ino == want.st_ino &&
	       resolve_is_executable(path);
}

/* Which file would run? Fills path; false when we cannot tell cheaply
 * (an anonymous or deleted file): such a call is not intercepted. */
static bool executable_path(const struct exec_call *c, char path[PATH_MAX])
{
	switch (c->kind) {
	case REAL_FEXECVE:
		return path_at(c->fd, NULL, path);
	case REAL_EXECVEAT:
		if (c->flags & AT_SYMLINK_NOFOLLOW)
			return false;
		if ((c->flags & AT_EMPTY_PATH) && c->file[0] == '\0')
			return path_at(c->dirfd, NULL, path);
		if (c->file[0] == '/' || c->dirfd == AT_FDCWD)
			return plain_path(c->file, path);
		return path_at(c->dirfd, c->file, path);
	default:
		if (c->search)
			return resolve_program(c->file, getenv("PATH"), path);
		return plain_path(c->file, path);
	}
}

/* Is this call for a listed tool? Fills path, cfg and tool when it is. */
/* TOOLRUN=off in the environment the program would get: toolrun stays
 * out of the way, for one command (`TOOLRUN=off cat f`) or for everything
 * below (`docker exec -e TOOLRUN=off`), whoever preloaded the library. */
static bool switched_off(char *const *envp)
{
	static const char off[] = "TOOLRUN=off";

	for (size_t i = 0; envp && envp[i]; i++)
		if (strcmp(envp[i], off) == 0)
			return true;
	return false;
}

static bool is_listed(const struct exec_call *c, char path[PATH_MAX],
		      struct config **cfg, int *tool)
{
	if (!c->file || switched_off(c->envp))
		return false;
	*cfg = cfgcache_get(&preload_ctx.cache,
			    cfgcache_file(c->envp, preload_ctx.inherited_config));
	if (!*cfg || (*cfg)->ntools == 0)
		return false;
	/* Most execs are of programs that are not listed: when only names
	 * are listed, the name settles it before any file system lookup. */
	if (c->file[0] && !(*cfg)->has_path_tools &&
	    config_find_tool(*cfg, c->file) < 0)
		return false;
	if (!executable_path(c, path))
		return false;
	*tool = config_find_tool(*cfg, path);
	return *tool >= 0;
}

static const char *helper_path(void)
{
	if (__atomic_load_n(&preload_ctx.helper_known, __ATOMIC_ACQUIRE))
		return preload_ctx.helper;

	Dl_info info;
	char buf[PATH_MAX];
	if (!dladdr((void *)helper_path, &info) || !info.dli_fname)
		return NULL;
	const char *slash = strrchr(info.dli_fname, '/');
	size_t dir = slash ? (size_t)(slash - info.dli_fname + 1) : 0;
	if (dir + sizeof(HELPER_NAME) > sizeof(buf))
		return NULL;
	memcpy(buf, info.dli_fname, dir);
	memcpy(buf + dir, HELPER_NAME, sizeof(HELPER_NAME));
	memcpy(preload_ctx.helper, buf, sizeof(buf));
	__atomic_store_n(&preload_ctx.helper_known, true, __ATOMIC_RELEASE);
	return preload_ctx.helper;
}

/* Arguments up to this many go on the stack: a vfork child shares its
 * parent's memory, so a mapping made there would outlive the exec. */
#define HELPER_STACK_ARGS 2048

static size_t count_args(char *const *argv)
{
	size_t n = 0;
	while (argv && argv[n])
		n++;
	return n;
}

/* Fill v with the helper's argv: HELPER MODE CONFIG PATH ARGV... */
static void fill_helper_argv(char **v, const struct exec_call *c,
			     const char *helper, const char *config,
			     const char *path, size_t argc)
{
	v[0] = (char *)helper;
	v[1] = (char *)(c->search ? HELPER_MODE_SEARCH : HELPER_MODE_EXEC);
	v[2] = (char *)config;
	v[3] = (char *)path;
	for (size_t i = 0; i < argc; i++)
		v[4 + i] = c->argv[i];
	v[4 + argc] = NULL;
}

/* The daemon cannot be reached: apply the config's fallback. With
 * `fallback = fail` the exec fails with err (ECONNREFUSED: no daemon
 * answers; EPERM: its socket is not to be trusted), after one line that
 * says why; a shell then adds its own line and reports 126. */
static int fall_back(const struct exec_call *c, const struct config *cfg,
		     const char *path, const char *reason, int err)
{
	if (cfg->fallback == FALLBACK_DIRECT) {
		say(reason, "; running ", path, " directly");
		return call_real(c);
	}
	say(reason, NULL, NULL, NULL);
	if (c->kind >= REAL_POSIX_SPAWN)
		return err;
	errno = err;
	return -1;
}

/* The errno an exec fails with when the daemon cannot be reached: the
 * client's, unless a caller would read it as something else (ENOENT is
 * "command not found" to a shell, ENOEXEC a script to run with sh). */
static int unreachable_errno(int err)
{
	switch (err) {
	case 0:
	case ENOENT:
	case ENOEXEC:
	case E2BIG:
	case ENOTDIR:
		return EACCES;
	default:
		return err;
	}
}

/* Exec the helper, which runs the client from a fresh process. */
static int via_helper(const struct exec_call *c, const struct config *cfg,
		      const char *path)
{
	const char *helper = helper_path();
	size_t argc = count_args(c->argv);
	size_t map_len = 0;
	char **hargv;
	int r;

	if (!helper)
		return fall_back(c, cfg, path, "cannot locate " HELPER_NAME, EACCES);
	if (argc <= HELPER_STACK_ARGS) {
		hargv = __builtin_alloca((argc + 5) * sizeof(char *));
	} else {
		/* Rare: in a vfork child this mapping stays in the parent. */
		map_len = (argc + 5) * sizeof(char *);
		hargv = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (hargv == MAP_FAILED)
			return fall_back(c, cfg, path, "out of memory for the helper's arguments", EACCES);
	}
	fill_helper_argv(hargv, c, helper, cfg->file, path, argc);

	if (c->kind >= REAL_POSIX_SPAWN) {
		spawn_fn spawn = (spawn_fn)preload_real(REAL_POSIX_SPAWN);
		r = spawn ? spawn(c->pid, helper, c->actions, c->attr, hargv, c->envp)
			  : ENOSYS;
		if (map_len)
			munmap(hargv, map_len);
		if (r == 0)
			return 0;
		errno = r;
	} else {
		execve_fn exec = (execve_fn)preload_real(REAL_EXECVE);
		if (exec)
			exec(helper, hargv, (char *const *)c->envp);
		if (map_len)
			munmap(hargv, map_len);
	}
	char why[PATH_MAX + 64];
	struct sbuf sb = SBUF_INIT(why);
	sbuf_add(&sb, "cannot run ");
	sbuf_add(&sb, helper);
	sbuf_add(&sb, ": ");
	sbuf_add(&sb, errno_text(errno));
	return fall_back(c, cfg, path, why, EACCES);
}

/* Beyond this, a program's children lose the hidden variables (and so
 * interception) rather than risk the stack of a vfork child. */
#define NESTED_STACK_MAX (256 * 1024)

static int hook(struct exec_call *c)
{
	int saved_errno = errno;
	char path[PATH_MAX];
	struct config *cfg = NULL;
	int tool = -1;

	/* Below a program that toolrund runs: give every child the variables
	 * the constructor hid, so that interception goes on. */
	if (preload_ctx.nested.active && c->envp) {
		size_t need = nested_space(&preload_ctx.nested, c->envp);
		if (need <= NESTED_STACK_MAX) {
			c->envp = nested_envp(&preload_ctx.nested, c->envp,
					      __builtin_alloca(need));
			if (c->kind == REAL_EXECV)
				c->kind = REAL_EXECVE;
			else if (c->kind == REAL_EXECVP)
				c->kind = REAL_EXECVPE;
		}
	}

	if (!is_listed(c, path, &cfg, &tool)) {
		errno = saved_errno;
		return call_real(c);
	}
	if (c->kind >= REAL_POSIX_SPAWN || !safety_client_allowed())
		return via_helper(c, cfg, path);

	struct client_call call = {
		.cfg = cfg,
		.tool = tool,
		.path = path,
		.argv = c->argv,
		.envp = c->envp,
		.software = "libtoolrun " TOOLRUN_VERSION,
	};
	struct client_result res;
	client_run(&call, &res);

	/* Nothing ran. */
	if (res.outcome == CLIENT_UNREACHABLE)
		return fall_back(c, cfg, path, res.reason, unreachable_errno(res.err));
	if (res.err == ENOEXEC) {
		/* A script without #!: the real call runs it with /bin/sh (the
		 * p variants) or fails for the caller to handle, as it would. */
		errno = saved_errno;
		return call_real(c);
	}
	if (res.err == E2BIG) {
		errno = E2BIG;
		return -1;
	}
	client_exit_failure(path, &res);
}

/* ------------------------------------------------------------------ */
/* The interposed functions.                                           */

#define EXPORT __attribute__((visibility("default")))

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_call c = {.kind = REAL_EXECVE, .file = path, .argv = argv, .envp = envp};
	return hook(&c);
}

EXPORT int execv(const char *path, char *const argv[])
{
	struct exec_call c = {.kind = REAL_EXECV, .file = path, .argv = argv, .envp = environ};
	return hook(&c);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	struct exec_call c = {.kind = REAL_EXECVP, .file = file, .argv = argv,
			      .envp = environ, .search = true};
	return hook(&c);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_call c = {.kind = REAL_EXECVPE, .file = file, .argv = argv,
			      .envp = envp, .search = true};
	return hook(&c);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[],
		    char *const envp[], int flags)
{
	struct exec_call c = {.kind = REAL_EXECVEAT, .file = path, .dirfd = dirfd,
			      .flags = flags, .argv = argv, .envp = envp};
	return hook(&c);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_call c = {.kind = REAL_FEXECVE, .file = "", .fd = fd,
			      .argv = argv, .envp = envp};
	return hook(&c);
}

EXPORT int posix_spawn(pid_t *pid, const char *path,
		       const posix_spawn_file_actions_t *actions,
		       const posix_spawnattr_t *attr, char *const argv[],
		       char *const envp[])
{
	struct exec_call c = {.kind = REAL_POSIX_SPAWN, .file = path, .argv = argv,
			      .envp = envp ? envp : environ, .pid = pid,
			      .actions = actions, .attr = attr};
	return hook(&c);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file,
			const posix_spawn_file_actions_t *actions,
			const posix_spawnattr_t *attr, char *const argv[],
			char *const envp[])
{
	struct exec_call c = {.kind = REAL_POSIX_SPAWNP, .file = file, .argv = argv,
			      .envp = envp ? envp : environ, .search = true,
			      .pid = pid, .actions = actions, .attr = attr};
	return hook(&c);
}

/*
 * glibc's popen and system start /bin/sh through its own posix_spawn,
 * which no hook sees; the shell gets environ. Below a program toolrund
 * runs, environ lacks the variables the constructor hid, so the shell
 * would run without the library and the listed tools it starts would
 * escape toolrun (gawk's `print | "cmd"` and system() do this; mawk
 * forks and calls execl, which is hooked). For the length of the call,
 * environ is the program's environment with them back, as an exec hook
 * would give it; the program's own variables are untouched. Other
 * threads could see the variables in that window: a program that starts
 * a shell and reads its environment at the same time is rare, and
 * nothing but toolrun's own variables is visible more.
 */
struct shell_environ {
	char **saved; /* the program's environ; NULL: nothing changed */
	char **ours;  /* the one in place for the call (malloc'd) */
};

static void environ_for_shell(struct shell_environ *se)
{
	se->saved = se->ours = NULL;
	if (!preload_ctx.nested.active)
		return;
	void *space = malloc(nested_space(&preload_ctx.nested, environ));
	if (!space)
		return; /* the shell escapes, the call still runs */
	se->ours = nested_envp(&preload_ctx.nested, environ, space);
	se->saved = environ;
	environ = se->ours;
}

/* Back to the program's own environ, errno as the call left it. If
 * another thread's setenv replaced ours during the call, the new array
 * may point into ours: both stay (a few hundred bytes, once). */
static void environ_restore(struct shell_environ *se)
{
	if (!se->saved)
		return;
	int err = errno;
	if (environ == se->ours) {
		environ = se->saved;
		free(se->ours);
	}
	errno = err;
}

typedef FILE *(*popen_fn)(const char *, const char *);
typedef int (*system_fn)(const char *);

EXPORT FILE *popen(const char *command, const char *mode)
{
	popen_fn real = (popen_fn)preload_real(REAL_POPEN);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	struct shell_environ se;
	environ_for_shell(&se);
	FILE *f = real(command, mode);
	environ_restore(&se);
	return f;
}

EXPORT int system(const char *command)
{
	system_fn real = (system_fn)preload_real(REAL_SYSTEM);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	struct shell_environ se;
	environ_for_shell(&se);
	int status = real(command);
	environ_restore(&se);
	return status;
}

/* execl and friends collect their arguments the way glibc does (on the
 * stack) and go through the array forms, which is what glibc does too. */
#define COLLECT_ARGS(first, ap, argv)                                          \
	size_t argc_ = 1;                                                      \
	va_start(ap, first);                                                   \
	while (va_arg(ap, char *))                                             \
		argc_++;                                                       \
	va_end(ap);                                                            \
	char **argv = __builtin_alloca((argc_ + 1) * sizeof(char *));          \
	va_start(ap, first);                                                   \
	argv[0] = (char *)(first);                                             \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                 \
		argv[i_] = va_arg(ap, char *);

EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	struct exec_call c = {.kind = REAL_EXECV, .file = path, .argv = argv, .envp = environ};
	return hook(&c);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	struct exec_call c = {.kind = REAL_EXECVP, .file = file, .argv = argv,
			      .envp = environ, .search = true};
	return hook(&c);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	struct exec_call c = {.kind = REAL_EXECVE, .file = path, .argv = argv, .envp = envp};
	return hook(&c);
}
