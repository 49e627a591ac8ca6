/*
 * Unit tests for daemon/rules/policy.c: validation of a decoded Request
 * (policy_check) and the program's environment (policy_environment).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "policy.h"
#include "toolrun.pb-c.h"

/* ───────────────────────── helpers ───────────────────────── */

#define BIN(s) ((ProtobufCBinaryData){sizeof(s) - 1, (uint8_t *)(s)})

/* toolrun's library where it is installed: the default of `preload`. */
#define OURS TOOLRUN_PKGLIBDIR "/libtoolrun.so"

static struct config cfg;
static int root_fd = -1;

/* A valid request: /usr/bin/cat -n file.txt, stdin attached, stdout and
 * stderr shaped. Attached fds: the cwd and stdin, so nfds = 2. */
struct fixture {
	Toolrun__Request req;
	ProtobufCBinaryData argv[3];
	ProtobufCBinaryData envp[3];
	uint32_t fds[4];
	unsigned nfds;
};

static void fixture_init(struct fixture *f)
{
	Toolrun__Request init = TOOLRUN__REQUEST__INIT;

	memset(f, 0, sizeof(*f));
	f->req = init;
	f->argv[0] = BIN("cat");
	f->argv[1] = BIN("-n");
	f->argv[2] = BIN("file.txt");
	f->envp[0] = BIN("PATH=/usr/bin:/bin");
	f->envp[1] = BIN("HOME=/root");
	f->envp[2] = BIN("LANG=C.UTF-8");
	f->fds[0] = 0;
	f->req.executable = BIN("/usr/bin/cat");
	f->req.n_argv = 3;
	f->req.argv = f->argv;
	f->req.n_envp = 3;
	f->req.envp = f->envp;
	f->req.cwd = BIN("/home/user");
	f->req.n_fds = 1;
	f->req.fds = f->fds;
	f->req.shape_stdout = true;
	f->req.shape_stderr = true;
	f->nfds = 2;
}

static void use_config(const char *text)
{
	config_init(&cfg, "test.conf");
	int r = config_parse_text(&cfg, text);
	if (r != 0)
		print_error("%s\n", cfg.error);
	assert_int_equal(r, 0);
}

/* The group's fixtures: "/" as the usual cwd fd, and a directory holding
 * an empty file "prog" for lookups relative to another cwd. */
static char tmpdir[] = "/tmp/toolrun-unit-policy-XXXXXX";
static char tmpprog[sizeof(tmpdir) + 8];

static int setup(void **state)
{
	(void)state;
	root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 || !mkdtemp(tmpdir))
		return -1;
	snprintf(tmpprog, sizeof(tmpprog), "%s/prog", tmpdir);
	int fd = open(tmpprog, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(root_fd);
	unlink(tmpprog);
	return rmdir(tmpdir);
}

/* Each test starts from the same config. */
static int use_default_config(void **state)
{
	(void)state;
	/* Names match anywhere (trusted_dirs empty): executables here
	 * need not exist. test-config.c tests trusted_dirs. */
	use_config("tools = cat grep\nmax_bytes = 100\nmax_lines = 10\ntimeout = 7\n"
		   "trusted_dirs =\n[tool.grep]\nmax_lines = 5\n");
	return 0;
}

static enum policy_verdict check(const struct fixture *f, struct policy_decision *d)
{
	return policy_check(&cfg, &f->req, f->nfds, root_fd, d);
}

static void expect_run(const struct fixture *f, struct policy_decision *d)
{
	enum policy_verdict v = check(f, d);
	if (v != POLICY_RUN)
		print_error("verdict %d, error \"%s\"\n", (int)v, d->error);
	assert_int_equal(v, POLICY_RUN);
}

/* MALFORMED, with an error that mentions `phrase`. */
static void expect_malformed(const struct fixture *f, const char *phrase)
{
	struct policy_decision d;
	enum policy_verdict v = check(f, &d);

	if (v != POLICY_MALFORMED || strstr(d.error, phrase) == NULL)
		print_error("verdict %d, error \"%s\"; want MALFORMED mentioning \"%s\"\n",
			    (int)v, d.error, phrase);
	assert_int_equal(v, POLICY_MALFORMED);
	assert_true(d.error[0] != '\0');
	assert_non_null(memchr(d.error, '\0', sizeof(d.error)));
	assert_non_null(strstr(d.error, phrase));
}

/* The result of policy_environment(). The last one is freed by the next
 * call or by the test's teardown, so that a failed assertion (which
 * leaves the test at once) leaks nothing. */
struct env_result {
	ProtobufCBinaryData *env;
	size_t n;
};

static struct env_result held;

static void env_free(void)
{
	free(held.env);
	memset(&held, 0, sizeof(held));
}

static int free_environment(void **state)
{
	(void)state;
	env_free();
	return 0;
}

static const struct env_result *environment(const ProtobufCBinaryData *envp, size_t n)
{
	Toolrun__Request req = TOOLRUN__REQUEST__INIT;
	req.executable = BIN("/usr/bin/cat");
	req.envp = (ProtobufCBinaryData *)envp;
	req.n_envp = n;
	env_free();
	held.n = (size_t)-1;
	int r = policy_environment(&req, &cfg, &cfg.defaults, NULL, 0, &held.env, &held.n);
	assert_int_equal(r, 0);
	assert_non_null(held.env);
	assert_true(held.n <= n + 1);
	return &held;
}

static bool bin_equal(const ProtobufCBinaryData *b, const char *s, size_t len)
{
	return b->len == len && (len == 0 || memcmp(b->data, s, len) == 0);
}

/* ───────────────────────── policy_check: accepted ───────────────────────── */

static void test_valid_request_runs(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;

	fixture_init(&f);
	expect_run(&f, &d);
	assert_int_equal(d.tool, 0);
	assert_int_equal(d.limits.max_bytes, 100);
	assert_int_equal(d.limits.max_lines, 10);
	assert_int_equal(d.limits.timeout_s, 7);
	assert_true(d.shape_stdout);
	assert_true(d.shape_stderr);
	assert_false(d.joined);
}

static void test_minimal_request_runs(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;

	/* No argv, no environment, no cwd name, only the cwd fd attached,
	 * nothing shaped. */
	fixture_init(&f);
	f.req.executable = BIN("grep");
	f.req.n_argv = 0;
	f.req.argv = NULL;
	f.req.n_envp = 0;
	f.req.envp = NULL;
	f.req.cwd = (ProtobufCBinaryData){0, NULL};
	f.req.n_fds = 0;
	f.req.fds = NULL;
	f.req.shape_stdout = false;
	f.req.shape_stderr = false;
	f.nfds = 1;
	expect_run(&f, &d);
	assert_int_equal(d.tool, 1);
	assert_false(d.shape_stdout);
	assert_false(d.shape_stderr);
}

static void test_decision_carries_tool_limits(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;

	fixture_init(&f);
	f.req.executable = BIN("/bin/grep");
	expect_run(&f, &d);
	assert_int_equal(d.tool, 1);
	assert_int_equal(d.limits.max_bytes, 100);
	assert_int_equal(d.limits.max_lines, 5);
	assert_int_equal(d.limits.timeout_s, 7);
}

static void test_unshaped_streams_may_be_attached_as_fds(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;

	fixture_init(&f);
	f.fds[0] = 2;
	f.fds[1] = 1;
	f.fds[2] = 0;
	f.fds[3] = POLICY_FD_MAX - 1;
	f.req.n_fds = 4;
	f.nfds = 5;
	f.req.shape_stdout = false;
	f.req.shape_stderr = false;
	expect_run(&f, &d);
	assert_false(d.shape_stdout);
	assert_false(d.shape_stderr);
}

static void test_stderr_joins_stdout_with_both_shaped_runs_joined(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;

	fixture_init(&f);
	f.req.stderr_joins_stdout = true;
	expect_run(&f, &d);
	assert_true(d.joined);
	assert_true(d.shape_stdout && d.shape_stderr);
}

static void test_truncate_sink_shapes_only_what_is_asked(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;

	fixture_init(&f);
	f.req.shape_stderr = false;
	expect_run(&f, &d);
	assert_true(d.shape_stdout);
	assert_false(d.shape_stderr);
}

static void test_truncate_always_forces_shaping(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;

	use_config("tools = cat\ntruncate = always\n");
	fixture_init(&f);
	f.req.shape_stdout = false;
	f.req.shape_stderr = false;
	expect_run(&f, &d);
	assert_true(d.shape_stdout);
	assert_true(d.shape_stderr);
	assert_false(d.joined);
}

/* Request.agent_streams: `always` adds only the streams that do not reach
 * the agent, and only those that do are summarised when binary; a client
 * that does not say (older) gets both streams added and summarised. */
static void test_agent_streams_bound_always_and_the_binary_summary(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;
	Toolrun__AgentStreams agent = TOOLRUN__AGENT_STREAMS__INIT;

	use_config("tools = cat\ntruncate = always\n");
	fixture_init(&f);
	f.req.shape_stdout = false;
	f.req.shape_stderr = false;
	expect_run(&f, &d);
	assert_true(d.shape_stdout && d.shape_stderr);
	assert_true(d.agent_stdout && d.agent_stderr);

	agent.stdout_reaches_agent = true;
	f.req.agent_streams = &agent;
	expect_run(&f, &d);
	assert_false(d.shape_stdout);
	assert_true(d.shape_stderr);
	assert_true(d.agent_stdout);
	assert_false(d.agent_stderr);

	use_config("tools = cat\n");
	fixture_init(&f);
	agent.stdout_reaches_agent = false;
	f.req.agent_streams = &agent;
	expect_run(&f, &d);
	assert_true(d.shape_stdout && d.shape_stderr);
	assert_false(d.agent_stdout || d.agent_stderr);
}

/* Decoding is strict inside agent_streams too: a field it does not know
 * there is refused, as anywhere in a Request. */
static void test_agent_streams_with_an_unknown_field_is_refused(void **state)
{
	(void)state;
	/* ClientMessage{request{executable "x", agent_streams{stdout_reaches_agent
	 * true, field 3 = 1}}}, then the same without field 3. */
	static const uint8_t unknown[] = {0x12, 0x09, 0x0a, 0x01, 'x', 0x5a, 0x04,
					  0x08, 0x01, 0x18, 0x01};
	static const uint8_t known[] = {0x12, 0x07, 0x0a, 0x01, 'x', 0x5a, 0x02, 0x08, 0x01};
	struct arena a;
	char err[256];

	assert_null(policy_decode(unknown, sizeof(unknown), &a, err, sizeof(err)));
	assert_string_equal(err, "message of an unknown type or with unknown fields");
	Toolrun__ClientMessage *m = policy_decode(known, sizeof(known), &a, err, sizeof(err));
	assert_non_null(m);
	assert_true(m->request->agent_streams->stdout_reaches_agent);
	assert_false(m->request->agent_streams->stderr_reaches_agent);
	arena_release(&a);
}

static void test_executable_just_below_path_max_is_accepted(void **state)
{
	(void)state;
	struct fixture f;
	struct policy_decision d;
	static uint8_t exe[PATH_MAX];

	/* PATH_MAX - 1 bytes, ending in /cat. */
	memset(exe, 'd', sizeof(exe));
	exe[0] = '/';
	memcpy(exe + PATH_MAX - 1 - 4, "/cat", 4);
	fixture_init(&f);
	f.req.executable = (ProtobufCBinaryData){PATH_MAX - 1, exe};
	expect_run(&f, &d);
	assert_int_equal(d.tool, 0);
}

static void test_relative_executable_is_looked_up_from_cwd_fd(void **state)
{
	(void)state;
	char text[128];
	struct fixture f;
	struct policy_decision d;

	int dirfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	snprintf(text, sizeof(text), "tools = %s\n", tmpprog);
	use_config(text);

	fixture_init(&f);
	f.req.executable = BIN("./prog");
	enum policy_verdict in_tmpdir = policy_check(&cfg, &f.req, f.nfds, dirfd, &d);
	int tool = d.tool;
	/* From another directory, ./prog is another file. */
	enum policy_verdict in_root = policy_check(&cfg, &f.req, f.nfds, root_fd, &d);
	close(dirfd);
	assert_int_equal(in_tmpdir, POLICY_RUN);
	assert_int_equal(tool, 0);
	assert_int_equal(in_root, POLICY_NOT_LISTED);
}

/* ───────────────────────── policy_check: refused ───────────────────────── */

static void test_unlisted_program_is_not_listed(void **state)
{
	(void)state;
	static const char *const exes[] = {"/usr/bin/sed", "catx", "/usr/bin/cat/x", "ca"};
	struct fixture f;
	struct policy_decision d;

	for (size_t i = 0; i < sizeof(exes) / sizeof(exes[0]); i++) {
		fixture_init(&f);
		f.req.executable = (ProtobufCBinaryData){strlen(exes[i]), (uint8_t *)exes[i]};
		assert_int_equal(check(&f, &d), POLICY_NOT_LISTED);
		assert_true(d.tool < 0);
	}
}

static void test_empty_executable_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.req.executable = (ProtobufCBinaryData){0, NULL};
	expect_malformed(&f, "executable");
}

static void test_executable_of_path_max_bytes_is_malformed(void **state)
{
	(void)state;
	struct fixture f;
	static uint8_t exe[PATH_MAX + 10];

	memset(exe, 'd', sizeof(exe));
	exe[0] = '/';
	memcpy(exe + PATH_MAX - 4, "/cat", 4);
	fixture_init(&f);
	f.req.executable = (ProtobufCBinaryData){PATH_MAX, exe};
	expect_malformed(&f, "executable");
	f.req.executable = (ProtobufCBinaryData){sizeof(exe), exe};
	expect_malformed(&f, "executable");
}

static void test_nul_in_executable_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.req.executable = BIN("/usr/bin/cat\0");
	expect_malformed(&f, "executable");
	f.req.executable = BIN("/usr/bin\0/cat");
	expect_malformed(&f, "executable");
	f.req.executable = BIN("\0/usr/bin/cat");
	expect_malformed(&f, "executable");
}

static void test_nul_in_argv_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.argv[2] = BIN("file\0.txt");
	expect_malformed(&f, "argv");
	fixture_init(&f);
	f.argv[0] = BIN("\0");
	expect_malformed(&f, "argv");
}

static void test_nul_in_envp_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.envp[1] = BIN("HOME=/ro\0ot");
	expect_malformed(&f, "envp");
	fixture_init(&f);
	f.envp[0] = BIN("\0PATH=/bin");
	expect_malformed(&f, "envp");
}

static void test_nul_in_cwd_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.req.cwd = BIN("/home\0/user");
	expect_malformed(&f, "cwd");
}

static void test_missing_cwd_fd_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.req.n_fds = 0;
	f.nfds = 0;
	expect_malformed(&f, "fd");
}

static void test_fd_count_mismatch_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	/* fds lists one, only the cwd is attached. */
	fixture_init(&f);
	f.nfds = 1;
	expect_malformed(&f, "fds");
	/* fds lists one, three are attached. */
	fixture_init(&f);
	f.nfds = 3;
	expect_malformed(&f, "fds");
	/* fds lists none, two are attached. */
	fixture_init(&f);
	f.req.n_fds = 0;
	expect_malformed(&f, "fds");
}

static void test_duplicate_fd_targets_are_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.fds[0] = 5;
	f.fds[1] = 3;
	f.fds[2] = 5;
	f.req.n_fds = 3;
	f.nfds = 4;
	expect_malformed(&f, "twice");

	fixture_init(&f);
	f.fds[0] = 0;
	f.fds[1] = 0;
	f.req.n_fds = 2;
	f.nfds = 3;
	expect_malformed(&f, "twice");
}

static void test_fd_target_at_or_above_limit_is_malformed(void **state)
{
	(void)state;
	static const uint32_t bad[] = {POLICY_FD_MAX, POLICY_FD_MAX + 1, UINT32_MAX};
	struct fixture f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fixture_init(&f);
		f.fds[0] = 0;
		f.fds[1] = bad[i];
		f.req.n_fds = 2;
		f.nfds = 3;
		expect_malformed(&f, "fds");
	}
}

static void test_shaped_stdout_also_attached_as_fd_1_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.req.shape_stderr = false;
	f.fds[0] = 0;
	f.fds[1] = 1;
	f.req.n_fds = 2;
	f.nfds = 3;
	expect_malformed(&f, "shaped");
}

static void test_shaped_stderr_also_attached_as_fd_2_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	f.req.shape_stdout = false;
	f.fds[0] = 2;
	f.req.n_fds = 1;
	f.nfds = 2;
	expect_malformed(&f, "shaped");
}

static void test_stderr_joins_stdout_without_both_shaped_is_malformed(void **state)
{
	(void)state;
	static const bool shaped[][2] = {{true, false}, {false, true}, {false, false}};
	struct fixture f;

	for (size_t i = 0; i < 3; i++) {
		fixture_init(&f);
		f.req.stderr_joins_stdout = true;
		f.req.shape_stdout = shaped[i][0];
		f.req.shape_stderr = shaped[i][1];
		expect_malformed(&f, "stderr_joins_stdout");
	}
}

static void test_malformed_request_for_unlisted_program_is_malformed(void **state)
{
	(void)state;
	struct fixture f;

	/* The request is checked in full before the program is looked up. */
	fixture_init(&f);
	f.req.executable = BIN("/usr/bin/sed");
	f.envp[2] = BIN("X=\0");
	expect_malformed(&f, "envp");
}

/* ───────────────────────── policy_environment ───────────────────────── */

static void test_environment_keeps_ordinary_entries_in_order(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("PATH=/usr/bin"), BIN("HOME=/root"), BIN("TERM=xterm"),
	};
	const struct env_result *r;

	r = environment(envp, 3);
	assert_int_equal(r->n, 3);
	for (size_t i = 0; i < 3; i++) {
		/* Not copied: the same bytes of the request. */
		assert_ptr_equal(r->env[i].data, envp[i].data);
		assert_int_equal(r->env[i].len, envp[i].len);
	}
}

static void test_environment_of_empty_envp_is_empty(void **state)
{
	(void)state;
	const struct env_result *r;

	r = environment(NULL, 0);
	assert_int_equal(r->n, 0);
}

static void test_environment_drops_toolrun_variables(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("TOOLRUN_CONFIG=/etc/x.conf"), BIN("A=1"), BIN("TOOLRUN_SOCKET=/run/s"),
		BIN("TOOLRUN_="), BIN("B=2"), BIN("TOOLRUN_DEPTH=3"),
	};
	const struct env_result *r;

	r = environment(envp, 6);
	assert_int_equal(r->n, 2);
	assert_true(bin_equal(&r->env[0], "A=1", 3));
	assert_true(bin_equal(&r->env[1], "B=2", 3));
}

static void test_environment_keeps_variables_that_only_look_like_toolrun(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("TOOLRUN=off"), BIN("TOOLRUNX_A=1"), BIN("MY_TOOLRUN_A=1"),
		BIN("toolrun_config=x"), BIN("XTOOLRUN_=1"),
	};
	const struct env_result *r;

	r = environment(envp, 5);
	assert_int_equal(r->n, 5);
	for (size_t i = 0; i < 5; i++)
		assert_ptr_equal(r->env[i].data, envp[i].data);
}

/* The index of "TOOLRUN_NESTED=1" in the result, or -1. */
static int marker_at(const struct env_result *r)
{
	int at = -1;
	for (size_t i = 0; i < r->n; i++)
		if (bin_equal(&r->env[i], "TOOLRUN_NESTED=1", 16)) {
			assert_int_equal(at, -1); /* at most once */
			at = (int)i;
		}
	return at;
}

/* With the library in LD_PRELOAD (its installed path, among entries
 * in any of ld.so's spellings), the program keeps it: the environment
 * passes as it is, toolrun's variables included, and the marker that
 * tells the library to hide them follows. */
static void test_environment_with_library_keeps_everything_and_marks_it(void **state)
{
	(void)state;
	static const ProtobufCBinaryData preloads[] = {
		BIN("LD_PRELOAD=" OURS),
		BIN("LD_PRELOAD=/opt/liba.so:" OURS ":libb.so"),
		BIN("LD_PRELOAD=liba.so " OURS "  /x/libb.so"),
		BIN("LD_PRELOAD= " OURS ": "),
	};
	for (size_t i = 0; i < sizeof(preloads) / sizeof(preloads[0]); i++) {
		const ProtobufCBinaryData envp[] = {
			BIN("TOOLRUN_CONFIG=/etc/x.conf"), BIN("A=1"), preloads[i],
			BIN("TOOLRUN_AGENT_STDOUT=1:2"),
		};
		const struct env_result *r = environment(envp, 4);
		assert_int_equal(r->n, 5);
		for (size_t j = 0; j < 4; j++)
			assert_ptr_equal(r->env[j].data, envp[j].data);
		assert_int_equal(marker_at(r), 4);
	}
}

static void test_environment_with_library_adds_the_marker_once(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("LD_PRELOAD=" OURS), BIN("TOOLRUN_NESTED=1"), BIN("B=2"),
	};
	const struct env_result *r = environment(envp, 3);
	assert_int_equal(r->n, 3);
	assert_int_equal(marker_at(r), 1);
}

/* Without the library nothing would hide toolrun's variables from the
 * program: they are dropped, and LD_PRELOAD is left as it was. */
static void test_environment_without_library_drops_toolrun_variables_only(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("TOOLRUN_CONFIG=/x"), BIN("LD_PRELOAD=/opt/liba.so"), BIN("TOOLRUN_NESTED=1"),
		BIN("A=1"),
	};
	const struct env_result *r = environment(envp, 4);
	assert_int_equal(r->n, 2);
	assert_ptr_equal(r->env[0].data, envp[1].data);
	assert_ptr_equal(r->env[1].data, envp[3].data);
	assert_int_equal(marker_at(r), -1);
}

static void test_environment_libraries_with_similar_names_are_not_ours(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("LD_PRELOAD=libtoolrun.so.1:libtoolrun.sox:/x/notlibtoolrun.so:"
		    "libtoolrun.so/:libtoolrun"),
		BIN("TOOLRUN_CONFIG=/x"),
	};
	const struct env_result *r = environment(envp, 2);
	assert_int_equal(r->n, 1);
	assert_ptr_equal(r->env[0].data, envp[0].data);
	assert_int_equal(marker_at(r), -1);
}

/* With LD_PRELOAD=preload beside toolrun's variables, a secret-looking
 * TOOLRUN_ one and A=1: nested (the entry, TOOLRUN_CONFIG, the marker and
 * A) or not (the entry and A). */
static void check_nested_by(const ProtobufCBinaryData *preload, bool nested)
{
	const ProtobufCBinaryData envp[] = {
		*preload, BIN("TOOLRUN_CONFIG=/c"), BIN("TOOLRUN_API_KEY=s"),
		BIN("TOOLRUN_NESTED=1"), BIN("A=1"),
	};
	const struct env_result *r = environment(envp, 5);
	static const size_t kept_nested[] = {0, 1, 3, 4}, kept_plain[] = {0, 4};
	const size_t *kept = nested ? kept_nested : kept_plain;
	size_t n = nested ? 4 : 2;

	assert_int_equal(r->n, n);
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(r->env[i].data, envp[kept[i]].data);
}

/* Any file named libtoolrun.so is ours, whatever the path (an image may
 * preload it by a symlink or /lib for /usr/lib): the program is nested
 * and keeps toolrun's own variables, but not a secret-looking TOOLRUN_*
 * one the filters drop. Names that only end like ours are not ours. */
static void test_environment_library_of_our_name_elsewhere_is_ours(void **state)
{
	(void)state;
	static const ProtobufCBinaryData ours[] = {
		BIN("LD_PRELOAD=/tmp/x/libtoolrun.so"),
		BIN("LD_PRELOAD=libtoolrun.so"),
		BIN("LD_PRELOAD=/" OURS),
		BIN("LD_PRELOAD=x" OURS),
		BIN("LD_PRELOAD=" TOOLRUN_PKGLIBDIR "/./libtoolrun.so"),
	};
	static const ProtobufCBinaryData not_ours[] = {
		BIN("LD_PRELOAD=" OURS "/"),
		BIN("LD_PRELOAD=" OURS ".1"),
		BIN("LD_PRELOAD=" TOOLRUN_PKGLIBDIR "/libtoolrun.s"),
		BIN("LD_PRELOAD=/tmp/xlibtoolrun.so"),
	};
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		check_nested_by(&ours[i], true);
	for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++)
		check_nested_by(&not_ours[i], false);
}

/* `preload` names the library toolrund counts as its own, under any file
 * name; another library beside it in the same directory is not ours. */
static void test_environment_preload_key_names_our_library(void **state)
{
	(void)state;
	use_config("tools = cat\npreload = /opt/t/libtr.so\n");
	assert_string_equal(cfg.preload, "/opt/t/libtr.so");
	const ProtobufCBinaryData mine[] = {
		BIN("LD_PRELOAD=/opt/t/libtr.so"), BIN("TOOLRUN_CONFIG=/c"),
	};
	const struct env_result *r = environment(mine, 2);
	assert_int_equal(r->n, 3);
	assert_int_equal(marker_at(r), 2);

	const ProtobufCBinaryData other[] = {
		BIN("LD_PRELOAD=/opt/t/libtr2.so"), BIN("TOOLRUN_CONFIG=/c"),
	};
	r = environment(other, 2);
	assert_int_equal(r->n, 1);
	assert_ptr_equal(r->env[0].data, other[0].data);
}

static void test_preload_key_default_and_refused_values(void **state)
{
	(void)state;
	static const char *const refused[] = {
		"preload = libtoolrun.so\n", "preload = ./libtoolrun.so\n",
		"preload = /a:b/libtoolrun.so\n", "preload = /a b/libtoolrun.so\n",
		"preload =\n",
	};
	config_init(&cfg, "test.conf");
	assert_string_equal(cfg.preload, OURS);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		config_init(&cfg, "test.conf");
		assert_int_equal(config_parse_text(&cfg, refused[i]), -EINVAL);
		assert_non_null(strstr(cfg.error, "preload must be an absolute path"));
	}
}

static void test_environment_keeps_unusual_entries_byte_for_byte(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("NO_EQUALS_SIGN"),
		BIN("BAD_UTF8=\xff\xfe\xc3(\xe2\x82"),
		BIN(""),
		BIN("MULTI=line one\nline\ttwo\r"),
		BIN("=value-without-name"),
		BIN("LD_PRELOAD"),
		BIN("LD_PRELOADX=libtoolrun.so"),
		BIN("ld_preload=libtoolrun.so"),
		BIN("\xe9\x80=\x80"),
	};
	const size_t n = sizeof(envp) / sizeof(envp[0]);
	const struct env_result *r;

	r = environment(envp, n);
	assert_int_equal(r->n, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(r->env[i].len, envp[i].len);
		if (envp[i].len)
			assert_memory_equal(r->env[i].data, envp[i].data, envp[i].len);
	}
}

/* ld.so reads the last LD_PRELOAD of an environment: it decides. Every
 * one is kept as it is. */
static void test_environment_last_ld_preload_decides(void **state)
{
	(void)state;
	const ProtobufCBinaryData ours_then_other[] = {
		BIN("LD_PRELOAD=" OURS), BIN("TOOLRUN_X=1"), BIN("LD_PRELOAD=/opt/libb.so"),
	};
	const struct env_result *r = environment(ours_then_other, 3);
	assert_int_equal(r->n, 2);
	assert_ptr_equal(r->env[0].data, ours_then_other[0].data);
	assert_ptr_equal(r->env[1].data, ours_then_other[2].data);
	assert_int_equal(marker_at(r), -1);

	const ProtobufCBinaryData other_then_ours[] = {
		BIN("LD_PRELOAD=/opt/libb.so"), BIN("TOOLRUN_X=1"), BIN("LD_PRELOAD=" OURS),
	};
	r = environment(other_then_ours, 3);
	assert_int_equal(r->n, 4);
	assert_int_equal(marker_at(r), 3);
}

/* The tool's env_deny drops matching names; by default *TOKEN*, *SECRET*
 * and *KEY*. */
static void test_environment_drops_secrets_by_default(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("GITHUB_TOKEN=x"), BIN("A=1"), BIN("AWS_SECRET_ACCESS_KEY=y"),
		BIN("SSH_KEY_PATH=z"), BIN("B=2"), BIN("token=lower-case passes"),
	};
	const struct env_result *r = environment(envp, 6);
	assert_int_equal(r->n, 3);
	assert_true(bin_equal(&r->env[0], "A=1", 3));
	assert_true(bin_equal(&r->env[1], "B=2", 3));
	assert_true(bin_equal(&r->env[2], "token=lower-case passes", 23));
}

static void test_environment_allow_list_keeps_only_matching_names(void **state)
{
	(void)state;
	use_config("tools = cat\nenv_allow = PATH HOME LC_*\nenv_deny =\n");
	const ProtobufCBinaryData envp[] = {
		BIN("PATH=/bin"), BIN("SHELL=/bin/sh"), BIN("LC_ALL=C"), BIN("HOME=/h"),
		BIN("X_TOKEN=1"), BIN("NOEQUALS"),
	};
	const struct env_result *r = environment(envp, 6);
	assert_int_equal(r->n, 3);
	assert_true(bin_equal(&r->env[0], "PATH=/bin", 9));
	assert_true(bin_equal(&r->env[1], "LC_ALL=C", 8));
	assert_true(bin_equal(&r->env[2], "HOME=/h", 7));
}

/* The filters leave toolrun's variables to the library. LD_PRELOAD is
 * theirs like any other name, but our own entry stays: alone. */
static void test_environment_filters_leave_toolrun_variables_to_the_library(void **state)
{
	(void)state;
	use_config("tools = cat\nenv_allow = PATH\n");
	const ProtobufCBinaryData envp[] = {
		BIN("LD_PRELOAD=" OURS), BIN("TOOLRUN_CONFIG=/c"), BIN("OTHER=1"),
		BIN("TOOLRUN_DIRECT=7"),
	};
	const struct env_result *r = environment(envp, 4);
	assert_int_equal(r->n, 4); /* ours kept, OTHER dropped, the marker added */
	assert_true(bin_equal(&r->env[0], "LD_PRELOAD=" OURS, sizeof("LD_PRELOAD=" OURS) - 1));
	assert_true(bin_equal(&r->env[1], "TOOLRUN_CONFIG=/c", 17));
	assert_true(bin_equal(&r->env[2], "TOOLRUN_DIRECT=7", 16));
	assert_true(bin_equal(&r->env[3], "TOOLRUN_NESTED=1", 16));
}

/* The attack: a library of the caller's beside ours, with env_allow set.
 * The program gets our library only. */
static void test_environment_allow_list_drops_other_preloaded_libraries(void **state)
{
	(void)state;
	static const char want[] = "LD_PRELOAD=" OURS;
	use_config("tools = cat\nenv_allow = PATH HOME\n");
	const ProtobufCBinaryData envp[] = {
		BIN("PATH=/bin"), BIN("LD_PRELOAD=/tmp/evil.so:" OURS " /tmp/evil2.so"),
		BIN("TOOLRUN_CONFIG=/c"),
	};
	const struct env_result *r = environment(envp, 3);
	assert_int_equal(r->n, 4);
	assert_ptr_equal(r->env[0].data, envp[0].data);
	assert_true(bin_equal(&r->env[1], want, sizeof(want) - 1));
	assert_ptr_equal(r->env[2].data, envp[2].data);
	assert_int_equal(marker_at(r), 3);
}

/* Without our library, nothing of LD_PRELOAD is left. */
static void test_environment_allow_list_drops_ld_preload_of_a_plain_program(void **state)
{
	(void)state;
	use_config("tools = cat\nenv_allow = PATH HOME\n");
	const ProtobufCBinaryData envp[] = {
		BIN("LD_PRELOAD=/tmp/evil.so"), BIN("HOME=/h"), BIN("LD_PRELOAD=/tmp/x/libtool.so"),
	};
	const struct env_result *r = environment(envp, 3);
	assert_int_equal(r->n, 1);
	assert_ptr_equal(r->env[0].data, envp[1].data);
}

/* env_deny drops LD_PRELOAD the same way; every LD_PRELOAD goes, and the
 * one ld.so reads becomes ours alone, where it was. */
static void test_environment_deny_list_drops_ld_preload_ours_stays_once(void **state)
{
	(void)state;
	static const char want[] = "LD_PRELOAD=" OURS;
	use_config("tools = cat\nenv_deny = LD_PRELOAD\n");
	const ProtobufCBinaryData envp[] = {
		BIN("LD_PRELOAD=/tmp/a.so"), BIN("A=1"), BIN("LD_PRELOAD=" OURS ":/tmp/b.so"), BIN("B=2"),
	};
	const struct env_result *r = environment(envp, 4);
	assert_int_equal(r->n, 4);
	assert_ptr_equal(r->env[0].data, envp[1].data);
	assert_true(bin_equal(&r->env[1], want, sizeof(want) - 1));
	assert_ptr_equal(r->env[2].data, envp[3].data);
	assert_int_equal(marker_at(r), 3);
}

/* A policy that allows LD_PRELOAD passes it whole, other libraries too. */
static void test_environment_allowed_ld_preload_passes_whole(void **state)
{
	(void)state;
	use_config("tools = cat\nenv_allow = PATH LD_PRELOAD\n");
	const ProtobufCBinaryData envp[] = {
		BIN("LD_PRELOAD=/tmp/a.so:" OURS), BIN("LD_AUDIT=/tmp/b.so"),
	};
	const struct env_result *r = environment(envp, 2);
	assert_int_equal(r->n, 2);
	assert_ptr_equal(r->env[0].data, envp[0].data);
	assert_int_equal(marker_at(r), 1);
}

/* Loader and libc variables are names like any other: the default
 * policy passes them (the caller's own, for a program of its uid), the
 * filters drop them. */
static const ProtobufCBinaryData loader_vars[] = {
	BIN("LD_PRELOAD=/tmp/evil.so"), BIN("LD_AUDIT=/tmp/evil.so"),
	BIN("LD_LIBRARY_PATH=/tmp"), BIN("GCONV_PATH=/tmp"), BIN("GLIBC_TUNABLES=x=1"),
	BIN("MALLOC_ARENA_MAX=1"), BIN("LOCPATH=/tmp"), BIN("NLSPATH=/tmp/%N"),
	BIN("HOSTALIASES=/tmp/h"), BIN("TMPDIR=/tmp"),
};
#define NLOADER_VARS (sizeof(loader_vars) / sizeof(loader_vars[0]))

static void test_environment_loader_variables_pass_by_default(void **state)
{
	(void)state;
	const struct env_result *r = environment(loader_vars, NLOADER_VARS);
	assert_int_equal(r->n, NLOADER_VARS);
	for (size_t i = 0; i < NLOADER_VARS; i++)
		assert_ptr_equal(r->env[i].data, loader_vars[i].data);
}

static void test_environment_loader_variables_follow_the_filters(void **state)
{
	(void)state;
	use_config("tools = cat\nenv_allow = PATH HOME\n");
	assert_int_equal(environment(loader_vars, NLOADER_VARS)->n, 0);

	use_config("tools = cat\n"
		   "env_deny = LD_* GCONV_PATH GLIBC_TUNABLES MALLOC_* LOCPATH NLSPATH\n");
	const struct env_result *r = environment(loader_vars, NLOADER_VARS);
	assert_int_equal(r->n, 2);
	assert_ptr_equal(r->env[0].data, loader_vars[8].data);
	assert_ptr_equal(r->env[1].data, loader_vars[9].data);
}

/* policy_environment() for an agent command, with the limits its job
 * has (policy_command_limits: no filter of its own). */
static const struct env_result *command_environment(const ProtobufCBinaryData *envp, size_t n)
{
	Toolrun__Request req = TOOLRUN__REQUEST__INIT;
	struct limits lim = policy_command_limits(&cfg);
	req.command = true;
	req.envp = (ProtobufCBinaryData *)envp;
	req.n_envp = n;
	env_free();
	assert_int_equal(policy_environment(&req, &cfg, &lim, NULL, 0, &held.env, &held.n), 0);
	assert_true(held.n <= n);
	return &held;
}

/* An agent command stands for the agent's own shell: the global env_deny
 * drops what looks like a secret, as for a tool; toolrun's variables stay,
 * and it is not marked nested. */
static void test_environment_of_a_command_drops_secrets(void **state)
{
	(void)state;
	const ProtobufCBinaryData envp[] = {
		BIN("API_TOKEN=a"), BIN("PLAIN=c"), BIN("MY_SECRET=b"),
		BIN("LD_PRELOAD=" OURS), BIN("TOOLRUN_AGENT_STDOUT=1:2"), BIN("TOOLRUN_API_KEY=k"),
	};
	const struct env_result *r = command_environment(envp, 6);
	assert_int_equal(r->n, 3);
	assert_ptr_equal(r->env[0].data, envp[1].data);
	assert_ptr_equal(r->env[1].data, envp[3].data);
	assert_ptr_equal(r->env[2].data, envp[4].data);
}

/* With env_allow, a command keeps toolrun's variables, and of LD_PRELOAD
 * toolrun's library alone, so that what it runs is still intercepted. */
static void test_environment_of_a_command_keeps_toolrun_under_env_allow(void **state)
{
	(void)state;
	static const char want[] = "LD_PRELOAD=" OURS;
	use_config("tools = cat\nenv_allow = PATH\n");
	const ProtobufCBinaryData envp[] = {
		BIN("LD_PRELOAD=/tmp/evil.so:" OURS), BIN("TOOLRUN_CONFIG=/c"), BIN("LD_AUDIT=/a"),
		BIN("PATH=/bin"), BIN("HOME=/h"),
	};
	const struct env_result *r = command_environment(envp, 5);
	assert_int_equal(r->n, 3);
	assert_true(bin_equal(&r->env[0], want, sizeof(want) - 1));
	assert_ptr_equal(r->env[1].data, envp[1].data);
	assert_ptr_equal(r->env[2].data, envp[3].data);
}

/* A tool's section is not the command's rule: the global one is. */
static void test_environment_of_a_command_ignores_tool_sections(void **state)
{
	(void)state;
	use_config("tools = cat\nenv_deny = *PASSWORD*\n[tool.cat]\nenv_deny = *\n");
	const ProtobufCBinaryData envp[] = {
		BIN("MY_SECRET=b"), BIN("DB_PASSWORD=p"), BIN("API_TOKEN=a"),
	};
	const struct env_result *r = command_environment(envp, 3);
	assert_int_equal(r->n, 2);
	assert_ptr_equal(r->env[0].data, envp[0].data);
	assert_ptr_equal(r->env[1].data, envp[2].data);
}

/* What a session's shell keeps of its client's variables: the same rule. */
static void test_shell_env_keeps_follows_the_global_filters(void **state)
{
	(void)state;
	const ProtobufCBinaryData token = BIN("API_TOKEN=a"), plain = BIN("PLAIN=c"),
				  session = BIN("TOOLRUN_SESSION=x"), theirs = BIN("TOOLRUN_KEY=k");
	assert_false(policy_shell_env_keeps(&cfg, &token));
	assert_true(policy_shell_env_keeps(&cfg, &plain));
	assert_true(policy_shell_env_keeps(&cfg, &session));
	assert_false(policy_shell_env_keeps(&cfg, &theirs));
	use_config("tools = cat\nenv_deny = *PASSWORD*\n");
	assert_true(policy_shell_env_keeps(&cfg, &token));
	use_config("tools = cat\nenv_allow = HOME\n");
	assert_false(policy_shell_env_keeps(&cfg, &plain));
	assert_true(policy_shell_env_keeps(&cfg, &session));
}

static void test_env_matches_names_only_never_values(void **state)
{
	(void)state;
	assert_true(policy_env_matches("*KEY*", (const uint8_t *)"MYKEY=1", 7));
	assert_false(policy_env_matches("*KEY*", (const uint8_t *)"A=KEY", 5));
	assert_true(policy_env_matches("A B C", (const uint8_t *)"B", 1));
	assert_false(policy_env_matches("", (const uint8_t *)"B=1", 3));
}

/* A front end's audit record: the strings that reach the log are words. */
static void test_front_record_limits(void **state)
{
	Toolrun__FrontRecord r = TOOLRUN__FRONT_RECORD__INIT;
	static uint8_t big[POLICY_FRONT_TARGET_MAX + 1];
	char why[256] = "";

	(void)state;
	r.front = (char *)"mcp";
	r.tool = (char *)"read_file";
	r.target = (ProtobufCBinaryData){3, (uint8_t *)"a.c"};
	r.ok = true;
	r.error_code = (char *)"";
	assert_true(policy_front_record(&r, why, sizeof(why)));
	r.front = (char *)"tags";
	assert_true(policy_front_record(&r, why, sizeof(why)));
	r.front = (char *)"shell";
	assert_false(policy_front_record(&r, why, sizeof(why)));
	assert_non_null(strstr(why, "expected mcp or tags"));
	r.front = (char *)"mcp";
	r.tool = (char *)"read_file\n{\"kind\":\"command\"}";
	assert_false(policy_front_record(&r, why, sizeof(why)));
	r.tool = (char *)"";
	assert_false(policy_front_record(&r, why, sizeof(why)));
	r.tool = (char *)"read_file";
	r.target = (ProtobufCBinaryData){sizeof(big), big};
	assert_false(policy_front_record(&r, why, sizeof(why)));
	assert_non_null(strstr(why, "at most 4096"));
	r.target = (ProtobufCBinaryData){sizeof(big) - 1, big};
	assert_true(policy_front_record(&r, why, sizeof(why)));
	/* ok and an error code contradict each other, both ways. */
	r.error_code = (char *)"OUTSIDE_ROOT";
	assert_false(policy_front_record(&r, why, sizeof(why)));
	r.ok = false;
	assert_true(policy_front_record(&r, why, sizeof(why)));
	r.error_code = (char *)"";
	assert_false(policy_front_record(&r, why, sizeof(why)));
	r.error_code = (char *)"outside root";
	assert_false(policy_front_record(&r, why, sizeof(why)));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, use_default_config, free_environment)
	const struct CMUnitTest tests[] = {
		T(test_valid_request_runs),
		T(test_minimal_request_runs),
		T(test_decision_carries_tool_limits),
		T(test_unshaped_streams_may_be_attached_as_fds),
		T(test_stderr_joins_stdout_with_both_shaped_runs_joined),
		T(test_truncate_sink_shapes_only_what_is_asked),
		T(test_truncate_always_forces_shaping),
		T(test_agent_streams_bound_always_and_the_binary_summary),
		T(test_agent_streams_with_an_unknown_field_is_refused),
		T(test_executable_just_below_path_max_is_accepted),
		T(test_relative_executable_is_looked_up_from_cwd_fd),
		T(test_unlisted_program_is_not_listed),
		T(test_empty_executable_is_malformed),
		T(test_executable_of_path_max_bytes_is_malformed),
		T(test_nul_in_executable_is_malformed),
		T(test_nul_in_argv_is_malformed),
		T(test_nul_in_envp_is_malformed),
		T(test_nul_in_cwd_is_malformed),
		T(test_missing_cwd_fd_is_malformed),
		T(test_fd_count_mismatch_is_malformed),
		T(test_duplicate_fd_targets_are_malformed),
		T(test_fd_target_at_or_above_limit_is_malformed),
		T(test_shaped_stdout_also_attached_as_fd_1_is_malformed),
		T(test_shaped_stderr_also_attached_as_fd_2_is_malformed),
		T(test_stderr_joins_stdout_without_both_shaped_is_malformed),
		T(test_malformed_request_for_unlisted_program_is_malformed),
		T(test_environment_keeps_ordinary_entries_in_order),
		T(test_environment_of_empty_envp_is_empty),
		T(test_environment_drops_toolrun_variables),
		T(test_environment_keeps_variables_that_only_look_like_toolrun),
		T(test_environment_with_library_keeps_everything_and_marks_it),
		T(test_environment_with_library_adds_the_marker_once),
		T(test_environment_without_library_drops_toolrun_variables_only),
		T(test_environment_libraries_with_similar_names_are_not_ours),
		T(test_environment_library_of_our_name_elsewhere_is_ours),
		T(test_environment_preload_key_names_our_library),
		T(test_preload_key_default_and_refused_values),
		T(test_environment_last_ld_preload_decides),
		T(test_environment_keeps_unusual_entries_byte_for_byte),
		T(test_environment_drops_secrets_by_default),
		T(test_environment_allow_list_keeps_only_matching_names),
		T(test_environment_filters_leave_toolrun_variables_to_the_library),
		T(test_environment_allow_list_drops_other_preloaded_libraries),
		T(test_environment_allow_list_drops_ld_preload_of_a_plain_program),
		T(test_environment_deny_list_drops_ld_preload_ours_stays_once),
		T(test_environment_allowed_ld_preload_passes_whole),
		T(test_environment_loader_variables_pass_by_default),
		T(test_environment_loader_variables_follow_the_filters),
		T(test_environment_of_a_command_drops_secrets),
		T(test_environment_of_a_command_keeps_toolrun_under_env_allow),
		T(test_environment_of_a_command_ignores_tool_sections),
		T(test_shell_env_keeps_follows_the_global_filters),
		T(test_env_matches_names_only_never_values),
		T(test_front_record_limits),
	};
#undef T
	return cmocka_run_group_tests_name("policy", tests, setup, teardown);
}
