/*
 * toolrun-session.so: the bash builtin `toolrun_session`, the only part of
 * a session's loop that speaks to toolrund (daemon/listener/sessions/start.c has the
 * loop, and loads this with `enable -f`).
 *
 *   toolrun_session ready        "ready\0" to fd 4: the loop runs
 *   toolrun_session read VAR     the next command from fd 3: toolrund's
 *                                key for it, then the command, then NUL;
 *                                the command into VAR, the key kept here
 *   toolrun_session anon         first word of each command: its errors
 *                                read "bash: line N: ...", as under bash -c
 *   toolrun_session report ST    "KEY ST CWD\0" to fd 4, in one write
 *
 * A command runs in the shell itself, with the shell's powers: it may
 * write to any descriptor (bash keeps copies of fds 3 and 4 while it
 * runs), and define functions named like the builtins the loop calls. So
 * a status counts only with the key toolrund sent with the command, which
 * never passes through a shell variable or the environment; and `read`
 * and `report` answer only the loop itself: at the top level of the
 * shell (not in a function, a sourced file or a trap) and in the
 * session's own process, never in a subshell. What a command can still
 * do is break its own session's loop (a function named toolrun_session,
 * `exec 4>&-`): then its end is never reported, and `toolrun session
 * kill` or `close` ends it. The working directory in the report is the
 * kernel's (getcwd), not $PWD, which a command may set to anything.
 *
 * Bash's internals are looked up when the builtin is loaded (they are
 * exported for loadable builtins); a bash without them cannot load it,
 * and its session does not start.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sbuf.h"
#include "util.h"

/* Bash's loadable-builtin interface (builtins.h, command.h), stable since
 * bash 2. */
struct word_desc {
	char *word;
	int flags;
};
struct word_list {
	struct word_list *next;
	struct word_desc *word;
};
struct bash_builtin {
	char *name;
	int (*function)(struct word_list *);
	int flags;
	char *const *long_doc;
	const char *short_doc;
	char *handle;
};
/* The head of bash's SHELL_VAR (variables.h). */
struct bash_variable {
	char *name;
	char *value;
	char *exportstr;
	void *dynamic_value;
	void *assign_func;
	int attributes;
	int context;
};

#define BUILTIN_ENABLED 0x1
#define BASH_SUCCESS 0
#define BASH_FAILURE 1
#define BASH_USAGE 258
#define ATT_ARRAY 0x4

/* The key toolrund sends with each command: 32 hex digits. */
#define KEY_LEN 32
#define COMMAND_FD 3
#define STATUS_FD 4
/* A status record is written whole (a pipe's atomic size, PIPE_BUF). */
#define RECORD_MAX 4096

/* The builtin's one context: what bash lends it, and the current key. */
static struct session_builtin {
	int *variable_context; /* > 0 inside a function */
	int *sourcelevel;      /* > 0 inside `.` */
	int *running_trap;     /* > 0 inside a trap's action (see called_by_the_loop) */
	int *parse_level;      /* parse_and_execute_level: one more in eval and traps */
	int loop_level;        /* parse_level where the loop runs, from `ready` */
	void *(*bind_variable)(const char *, char *, int);
	void *(*find_variable)(const char *);
	void *(*array_insert)(void *, intmax_t, char *);
	pid_t shell;           /* the session's bash, from `ready` */
	char key[KEY_LEN + 1]; /* the running command's; "" between commands */
	char *command;
	size_t command_cap;
} B;

static void say(const char *what)
{
	char line[256];
	struct sbuf sb = SBUF_INIT(line);

	sbuf_add(&sb, "toolrun_session: ");
	sbuf_add(&sb, what);
	sbuf_addc(&sb, '\n');
	(void)write_all(STDERR_FILENO, line, sb.len);
}

/*
 * Only the loop, at the shell's top level, in the session's process: not
 * in a function, a sourced file, an eval, a trap's action (a DEBUG, ERR,
 * RETURN or EXIT trap a command set), a subshell. Each of those but the
 * EXIT trap's action runs one parse level deeper than the loop; the EXIT
 * trap, and every other, runs with running_trap set. Bash up to 5.2
 * leaves running_trap at SIGINT+1 after an INT trap's action ends in
 * `return` (the loop's own, which ends an interrupted command), so that
 * one value also counts as none: a real INT trap's action runs a parse
 * level deeper.
 */
static bool called_by_the_loop(void)
{
	int trap = *B.running_trap;

	return *B.variable_context == 0 && *B.sourcelevel == 0 &&
	       *B.parse_level == B.loop_level && (trap == 0 || trap == 2 + 1) &&
	       B.shell == getpid();
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Read exactly n bytes (the key). 0, or -errno (-ENODATA at end of file). */
static int read_exact_fd(int fd, char *buf, size_t n)
{
	size_t have = 0;

	while (have < n) {
		ssize_t r = read(fd, buf + have, n - have);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		have += (size_t)r;
	}
	return 0;
}

/* The command, up to its NUL, into B.command. 0, or -errno. */
static int read_command(int fd)
{
	size_t len = 0;

	for (;;) {
		if (len + 1 >= B.command_cap) {
			size_t cap = B.command_cap ? 2 * B.command_cap : 4096;
			char *p = realloc(B.command, cap);
			if (!p)
				return -ENOMEM;
			B.command = p;
			B.command_cap = cap;
		}
		/* One byte at a time past the key would be slow; the pipe
		 * holds this command alone (toolrund sends the next one only
		 * once this one has ended), so a read never takes the next. */
		ssize_t r = read(fd, B.command + len, B.command_cap - 1 - len);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		char *nul = memchr(B.command + len, '\0', (size_t)r);
		len += (size_t)r;
		if (nul)
			return nul == B.command + len - 1 ? 0 : -EPROTO;
	}
}

static int session_read(struct word_list *args)
{
	if (!args || args->next)
		return BASH_USAGE;
	if (!called_by_the_loop())
		return BASH_FAILURE;
	char key[KEY_LEN + 1];
	int r = read_exact_fd(COMMAND_FD, key, KEY_LEN);
	if (r == 0)
		r = read_command(COMMAND_FD);
	if (r == -EINTR)
		return 128 + 2; /* as bash's read on SIGINT: the loop goes on */
	if (r < 0) {
		if (r != -ENODATA)
			say(r == -EPROTO ? "a malformed command from toolrund" : strerror(-r));
		return BASH_FAILURE; /* end of file: toolrund closed the session */
	}
	key[KEY_LEN] = '\0';
	if (!is_hex(key, KEY_LEN)) {
		say("a command without its key from toolrund");
		return BASH_FAILURE;
	}
	memcpy(B.key, key, sizeof(key));
	B.bind_variable(args->word->word, B.command, 0);
	return BASH_SUCCESS;
}

/* "KEY STATUS CWD" and its NUL, in one write: whatever else a command
 * wrote to the pipe, this record arrives whole. */
static int session_report(struct word_list *args)
{
	if (!args || args->next)
		return BASH_USAGE;
	if (!called_by_the_loop() || !B.key[0])
		return BASH_FAILURE;
	char record[RECORD_MAX], cwd[RECORD_MAX - KEY_LEN - 16];
	struct sbuf sb = SBUF_INIT(record);
	char *end;
	long status = strtol(args->word->word, &end, 10);

	if (*end || status < 0 || status > 255)
		return BASH_USAGE;
	sbuf_add(&sb, B.key);
	sbuf_addc(&sb, ' ');
	sbuf_add_i64(&sb, status);
	/* A directory whose path is too long for one record is left out:
	 * toolrund keeps the one it knew. */
	if (getcwd(cwd, sizeof(cwd))) {
		sbuf_addc(&sb, ' ');
		sbuf_add(&sb, cwd);
	}
	sbuf_addc(&sb, '\0');
	B.key[0] = '\0';
	ssize_t w;
	do
		w = write(STATUS_FD, record, sb.len);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)sb.len ? BASH_SUCCESS : BASH_FAILURE;
}

/* The sourced command's errors name the shell, with the command's own
 * line numbers, as under bash -c: bash names the file a `.` reads
 * (BASH_SOURCE[0]) unless that name is empty, and then $0. */
static int session_anon(void)
{
	struct bash_variable *v = B.find_variable("BASH_SOURCE");

	if (v && (v->attributes & ATT_ARRAY) && v->value)
		B.array_insert(v->value, 0, (char *)"");
	return BASH_SUCCESS;
}

/* The loop runs: toolrund answers the call that made the session. */
static int session_ready(void)
{
	static const char ready[] = "ready";

	if (B.shell)
		return BASH_FAILURE; /* once, before any command */
	B.loop_level = *B.parse_level;
	B.shell = getpid();
	if (!called_by_the_loop()) {
		B.shell = 0;
		return BASH_FAILURE;
	}
	return write(STATUS_FD, ready, sizeof(ready)) == (ssize_t)sizeof(ready) ? BASH_SUCCESS
										   : BASH_FAILURE;
}

static int toolrun_session_builtin(struct word_list *args)
{
	const char *op = args && args->word ? args->word->word : "";

	if (strcmp(op, "read") == 0)
		return session_read(args->next);
	if (strcmp(op, "report") == 0)
		return session_report(args->next);
	if (strcmp(op, "anon") == 0 && !args->next)
		return session_anon();
	if (strcmp(op, "ready") == 0 && !args->next)
		return session_ready();
	return BASH_USAGE;
}

/* Called by `enable -f`: bash's internals, or no builtin. */
int toolrun_session_builtin_load(char *name);
int toolrun_session_builtin_load(char *name)
{
	(void)name;
	B.variable_context = dlsym(RTLD_DEFAULT, "variable_context");
	B.sourcelevel = dlsym(RTLD_DEFAULT, "sourcelevel");
	B.running_trap = dlsym(RTLD_DEFAULT, "running_trap");
	B.parse_level = dlsym(RTLD_DEFAULT, "parse_and_execute_level");
	*(void **)&B.bind_variable = dlsym(RTLD_DEFAULT, "bind_variable");
	*(void **)&B.find_variable = dlsym(RTLD_DEFAULT, "find_variable");
	*(void **)&B.array_insert = dlsym(RTLD_DEFAULT, "array_insert");
	if (B.variable_context && B.sourcelevel && B.running_trap && B.parse_level &&
	    B.bind_variable && B.find_variable && B.array_insert)
		return 1;
	say("this bash does not export what loadable builtins use (variable_context, "
	    "sourcelevel, running_trap, parse_and_execute_level, bind_variable, "
	    "find_variable, array_insert)");
	return 0;
}

static char *const toolrun_session_doc[] = {
	"toolrun's session loop: read a command, report its end (internal).",
	NULL,
};

extern struct bash_builtin toolrun_session_struct;
struct bash_builtin toolrun_session_struct = {
	.name = (char *)"toolrun_session",
	.function = toolrun_session_builtin,
	.flags = BUILTIN_ENABLED,
	.long_doc = toolrun_session_doc,
	.short_doc = "toolrun_session ready | read VAR | report STATUS | anon",
};
