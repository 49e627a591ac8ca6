#include "sink.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "sbuf.h"
#include "util.h"

struct identity {
	bool set;
	dev_t dev;
	ino_t ino;
};

/* Parse "DEV:INO" (decimal, as `stat -c %d:%i` prints). */
static bool parse_identity(const char *s, struct identity *id)
{
	uint64_t v[2] = {0, 0};
	int part = 0;
	bool digits = false;

	for (; *s; s++) {
		if (*s == ':' && part == 0 && digits) {
			part = 1;
			digits = false;
		} else if (*s >= '0' && *s <= '9') {
			if (v[part] > (UINT64_MAX - 9) / 10)
				return false;
			v[part] = v[part] * 10 + (uint64_t)(*s - '0');
			digits = true;
		} else {
			return false;
		}
	}
	if (part != 1 || !digits)
		return false;
	id->set = true;
	id->dev = (dev_t)v[0];
	id->ino = (ino_t)v[1];
	return true;
}

static const char *env_value(char *const envp[], const char *key, size_t len)
{
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, key, len) == 0)
			return *e + len;
	return NULL;
}

static bool reaches_agent_by_kind(int fd, const struct stat *st, bool with_tty)
{
	struct termios t;

	if (S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode))
		return true;
	return with_tty && S_ISCHR(st->st_mode) && ioctl(fd, TCGETS, &t) == 0;
}

bool sink_reaches_agent(int fd, bool with_tty)
{
	struct stat st;
	return fstat(fd, &st) == 0 && reaches_agent_by_kind(fd, &st, with_tty);
}

/* Which of stdout and stderr are shaped and which reach the agent;
 * stdout and stderr that are one open file, both shaped, are one stream. */
static void set_decision(struct sink_decision *out, const bool shape[2],
			 const bool agent[2], const struct stat st[2])
{
	out->shape_stdout = shape[0];
	out->shape_stderr = shape[1];
	out->agent_stdout = agent[0];
	out->agent_stderr = agent[1];
	out->joined = shape[0] && shape[1] && st[0].st_dev == st[1].st_dev &&
		      st[0].st_ino == st[1].st_ino;
}

void sink_decide_command(struct sink_decision *out)
{
	struct stat st[2];
	bool shape[2];

	for (int i = 0; i < 2; i++)
		shape[i] = fstat(1 + i, &st[i]) == 0 &&
			   reaches_agent_by_kind(1 + i, &st[i], false);
	set_decision(out, shape, shape, st);
}

static bool is_declared(const struct identity declared[2], const struct stat *st)
{
	for (int d = 0; d < 2; d++)
		if (declared[d].set && declared[d].dev == st->st_dev &&
		    declared[d].ino == st->st_ino)
			return true;
	return false;
}

void sink_decide(const struct config *cfg, const struct limits *limits,
		 char *const envp[], struct sink_decision *out)
{
	static const char out_key[] = "TOOLRUN_AGENT_STDOUT=";
	static const char err_key[] = "TOOLRUN_AGENT_STDERR=";
	static const char command_key[] = "TOOLRUN_COMMAND=";
	struct stat st[2];
	struct identity declared[2] = {{0}, {0}};

	const char *d_out = env_value(envp, out_key, sizeof(out_key) - 1);
	const char *d_err = env_value(envp, err_key, sizeof(err_key) - 1);
	if (d_out)
		parse_identity(d_out, &declared[0]);
	if (d_err)
		parse_identity(d_err, &declared[1]);
	/* Inside an agent command, its shaper cuts what reaches the agent,
	 * once, whoever writes it. */
	bool in_command = env_value(envp, command_key, sizeof(command_key) - 1) != NULL;
	bool unlimited = limits->max_bytes == 0 && limits->max_lines == 0;

	bool shape[2], agent[2];
	for (int i = 0; i < 2; i++) {
		bool open_fd = fstat(1 + i, &st[i]) == 0;
		/* Nothing declared: nothing reaches the agent, nothing is cut. */
		agent[i] = open_fd && is_declared(declared, &st[i]);
		if (!open_fd || unlimited || (agent[i] && in_command))
			shape[i] = false;
		else
			shape[i] = agent[i] || cfg->truncate == TRUNCATE_ALWAYS;
	}
	set_decision(out, shape, agent, st);
}

/* "DEV:INO" of fd if it can reach the agent, else "" (declared: not). */
static void own_identity(int fd, char *buf, size_t len)
{
	struct stat st;
	struct sbuf sb = {.buf = buf, .cap = len};

	buf[0] = '\0';
	if (fstat(fd, &st) < 0 || !reaches_agent_by_kind(fd, &st, true))
		return;
	sbuf_add_u64(&sb, (uint64_t)st.st_dev);
	sbuf_addc(&sb, ':');
	sbuf_add_u64(&sb, (uint64_t)st.st_ino);
}

bool sink_below_harness(char *const envp[])
{
	static const char key[] = "TOOLRUN_DIRECT=";
	return env_value(envp, key, sizeof(key) - 1) != NULL;
}

/* TOOLRUN_DIRECT names the pid of a first process that declared nothing:
 * a program it execs in its place (`env X=1 bash -lc ...`, same pid) is
 * still the first of the tree and decides again; its children are not. */
static bool declared_by_this_pid(void)
{
	const char *v = getenv("TOOLRUN_DIRECT");
	char *end;

	if (!v || !*v)
		return false;
	long pid = strtol(v, &end, 10);
	return *end == '\0' && pid == (long)getpid();
}

bool sink_first_of_tree(void)
{
	const char *off = getenv("TOOLRUN");

	if (off && strcmp(off, "off") == 0)
		return false;
	return (!getenv("TOOLRUN_AGENT_STDOUT") && !getenv("TOOLRUN_AGENT_STDERR")) ||
	       declared_by_this_pid();
}

void sink_declare_own(void)
{
	char out[48], err[48];

	own_identity(STDOUT_FILENO, out, sizeof(out));
	own_identity(STDERR_FILENO, err, sizeof(err));
	/* An exec of a direct program's (TOOLRUN_DIRECT) decides anew. */
	int replace = declared_by_this_pid();
	unsetenv("TOOLRUN_DIRECT");
	setenv("TOOLRUN_AGENT_STDOUT", out, replace);
	setenv("TOOLRUN_AGENT_STDERR", err, replace);
}

void sink_declare_none(void)
{
	char pid[24];
	struct sbuf sb = SBUF_INIT(pid);

	sbuf_add_i64(&sb, (int64_t)getpid());
	setenv("TOOLRUN_AGENT_STDOUT", "", 1);
	setenv("TOOLRUN_AGENT_STDERR", "", 1);
	setenv("TOOLRUN_DIRECT", pid, 1);
}
