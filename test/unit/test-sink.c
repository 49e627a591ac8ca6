/*
 * Unit tests for preload/sink.c: which of stdout and stderr reach the
 * agent and are shaped, decided from what they are (real pipes, sockets,
 * files) and what the environment declares.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sink.h"

static struct config cfg;
static struct limits limits;
static int saved[2] = {-1, -1}; /* the test runner's own stdout, stderr */
static int pipe_fds[2] = {-1, -1};
static char file_path[64];
static int file_fd = -1;
static char declared_pipe[64], declared_file[64];

static void identity_of(int fd, char *buf, size_t len)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(buf, len, "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
}

static int setup(void **state)
{
	(void)state;
	config_init(&cfg, "test.conf");
	limits = (struct limits){.max_bytes = 4000, .max_lines = 200};
	fflush(stdout);
	fflush(stderr);
	saved[0] = dup(STDOUT_FILENO);
	saved[1] = dup(STDERR_FILENO);
	snprintf(file_path, sizeof(file_path), "/tmp/test-sink.XXXXXX");
	file_fd = mkstemp(file_path);
	if (saved[0] < 0 || saved[1] < 0 || file_fd < 0 || pipe(pipe_fds) < 0)
		return -1;
	identity_of(pipe_fds[1], declared_pipe, sizeof(declared_pipe));
	identity_of(file_fd, declared_file, sizeof(declared_file));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dup2(saved[0], STDOUT_FILENO);
	dup2(saved[1], STDERR_FILENO);
	for (int i = 0; i < 2; i++) {
		close(saved[i]);
		close(pipe_fds[i]);
	}
	close(file_fd);
	unlink(file_path);
	unsetenv("TOOLRUN_AGENT_STDOUT");
	unsetenv("TOOLRUN_AGENT_STDERR");
	unsetenv("TOOLRUN_DIRECT");
	unsetenv("TOOLRUN");
	return 0;
}

/* stdout and stderr become out_fd and err_fd for one decision. */
static void decide(int out_fd, int err_fd, char *const envp[], struct sink_decision *d)
{
	dup2(out_fd, STDOUT_FILENO);
	dup2(err_fd, STDERR_FILENO);
	sink_decide(&cfg, &limits, envp, d);
	dup2(saved[0], STDOUT_FILENO);
	dup2(saved[1], STDERR_FILENO);
}

/* A declared pipe reaches the agent and is shaped; an undeclared file is
 * left alone under truncate = sink, shaped (not the agent's) under
 * always. */
static void test_declared_stream_is_shaped(void **state)
{
	(void)state;
	struct sink_decision d;
	char out_env[96], err_env[96];
	snprintf(out_env, sizeof(out_env), "TOOLRUN_AGENT_STDOUT=%s", declared_pipe);
	snprintf(err_env, sizeof(err_env), "TOOLRUN_AGENT_STDERR=");
	char *envp[] = {out_env, err_env, NULL};

	decide(pipe_fds[1], file_fd, envp, &d);
	assert_true(d.agent_stdout);
	assert_true(d.shape_stdout);
	assert_false(d.agent_stderr);
	assert_false(d.shape_stderr);
	assert_false(d.joined);

	cfg.truncate = TRUNCATE_ALWAYS;
	decide(pipe_fds[1], file_fd, envp, &d);
	assert_true(d.shape_stdout);
	assert_true(d.shape_stderr);
	assert_false(d.agent_stderr);
}

/* Nothing declared: nothing reaches the agent, nothing is cut, even on a
 * pipe. Either variable may name either stream. */
static void test_undeclared_pipe_is_not_shaped(void **state)
{
	(void)state;
	struct sink_decision d;
	char *none[] = {NULL};
	char err_env[96];
	snprintf(err_env, sizeof(err_env), "TOOLRUN_AGENT_STDERR=%s", declared_pipe);
	char *crossed[] = {err_env, NULL};

	decide(pipe_fds[1], pipe_fds[1], none, &d);
	assert_false(d.agent_stdout || d.agent_stderr || d.shape_stdout || d.shape_stderr);
	assert_false(d.joined); /* one file, but no stream is shaped */

	decide(pipe_fds[1], pipe_fds[1], crossed, &d);
	assert_true(d.agent_stdout && d.agent_stderr && d.shape_stdout && d.shape_stderr);
	assert_true(d.joined); /* one pipe for both: one stream */
}

/* Declarations that are not DEV:INO in decimal declare nothing, even
 * around the pipe's own numbers. */
static void test_malformed_declaration(void **state)
{
	(void)state;
	struct sink_decision d;
	char dev[32], ino[32], values[7][128];
	assert_int_equal(sscanf(declared_pipe, "%31[^:]:%31s", dev, ino), 2);

	snprintf(values[0], sizeof(values[0]), "TOOLRUN_AGENT_STDOUT=%s:", dev);
	snprintf(values[1], sizeof(values[1]), "TOOLRUN_AGENT_STDOUT=:%s", ino);
	snprintf(values[2], sizeof(values[2]), "TOOLRUN_AGENT_STDOUT=%s:%s:1", dev, ino);
	snprintf(values[3], sizeof(values[3]), "TOOLRUN_AGENT_STDOUT=x%s:%s", dev, ino);
	snprintf(values[4], sizeof(values[4]), "TOOLRUN_AGENT_STDOUT=%s:%s ", dev, ino);
	snprintf(values[5], sizeof(values[5]), "TOOLRUN_AGENT_STDOUT=99999999999999999999%s:%s",
		 dev, ino);
	snprintf(values[6], sizeof(values[6]), "TOOLRUN_AGENT_STDOUT=%s;%s", dev, ino);
	for (size_t i = 0; i < 7; i++) {
		char *envp[] = {values[i], NULL};
		decide(pipe_fds[1], file_fd, envp, &d);
		if (d.agent_stdout)
			print_error("declared by \"%s\"\n", values[i]);
		assert_false(d.agent_stdout);
	}
	/* The same numbers, well formed, do declare it. */
	snprintf(values[0], sizeof(values[0]), "TOOLRUN_AGENT_STDOUT=%s:%s", dev, ino);
	char *envp[] = {values[0], NULL};
	decide(pipe_fds[1], file_fd, envp, &d);
	assert_true(d.agent_stdout);
}

/* Inside an agent command its own shaper cuts: a declared stream reaches
 * the agent but is not shaped by the tool's job. No limit: no shaping. */
static void test_command_and_unlimited(void **state)
{
	(void)state;
	struct sink_decision d;
	char out_env[96];
	snprintf(out_env, sizeof(out_env), "TOOLRUN_AGENT_STDOUT=%s", declared_pipe);
	char command[] = "TOOLRUN_COMMAND=7";
	char *in_command[] = {out_env, command, NULL};
	char *outside[] = {out_env, NULL};

	decide(pipe_fds[1], file_fd, in_command, &d);
	assert_true(d.agent_stdout);
	assert_false(d.shape_stdout);

	limits.max_bytes = 0;
	limits.max_lines = 0;
	decide(pipe_fds[1], file_fd, outside, &d);
	assert_true(d.agent_stdout);
	assert_false(d.shape_stdout);
}

/* What may reach the agent by its kind: a pipe or a socket; a terminal
 * only when asked; never a file or /dev/null. An agent command's streams
 * are shaped when they are such. */
static void test_reaches_agent_by_kind(void **state)
{
	(void)state;
	int sv[2];
	struct sink_decision d;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(null >= 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);

	assert_true(sink_reaches_agent(pipe_fds[1], false));
	assert_true(sink_reaches_agent(sv[0], false));
	assert_false(sink_reaches_agent(file_fd, true));
	assert_false(sink_reaches_agent(null, true));
	assert_false(sink_reaches_agent(-1, true));

	dup2(sv[0], STDOUT_FILENO);
	dup2(null, STDERR_FILENO);
	sink_decide_command(&d);
	dup2(saved[0], STDOUT_FILENO);
	dup2(saved[1], STDERR_FILENO);
	assert_true(d.shape_stdout && d.agent_stdout);
	assert_false(d.shape_stderr || d.agent_stderr);
	close(sv[0]);
	close(sv[1]);
	close(null);
}

/* The first process of a tree declares its own pipe and leaves a file
 * undeclared; its children inherit that and are not first; a harness's
 * first process declares nothing and names its pid, so that it, not a
 * child, decides again. */
static void test_declarations_in_the_environment(void **state)
{
	(void)state;
	char pid[24];

	assert_true(sink_first_of_tree());
	dup2(pipe_fds[1], STDOUT_FILENO);
	dup2(file_fd, STDERR_FILENO);
	sink_declare_own();
	dup2(saved[0], STDOUT_FILENO);
	dup2(saved[1], STDERR_FILENO);
	assert_string_equal(getenv("TOOLRUN_AGENT_STDOUT"), declared_pipe);
	assert_string_equal(getenv("TOOLRUN_AGENT_STDERR"), "");
	assert_false(sink_first_of_tree());

	sink_declare_none();
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	assert_string_equal(getenv("TOOLRUN_AGENT_STDOUT"), "");
	assert_string_equal(getenv("TOOLRUN_DIRECT"), pid);
	assert_true(sink_first_of_tree());
	char direct[40];
	snprintf(direct, sizeof(direct), "TOOLRUN_DIRECT=%s", pid);
	char *below[] = {direct, NULL}, *not_below[] = {NULL};
	assert_true(sink_below_harness(below));
	assert_false(sink_below_harness(not_below));

	setenv("TOOLRUN_DIRECT", "1", 1); /* another process's */
	assert_false(sink_first_of_tree());
	unsetenv("TOOLRUN_AGENT_STDOUT");
	unsetenv("TOOLRUN_AGENT_STDERR");
	setenv("TOOLRUN", "off", 1);
	assert_false(sink_first_of_tree());
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_declared_stream_is_shaped),
		T(test_undeclared_pipe_is_not_shaped),
		T(test_malformed_declaration),
		T(test_command_and_unlimited),
		T(test_reaches_agent_by_kind),
		T(test_declarations_in_the_environment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
