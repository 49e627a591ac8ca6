/*
 * The launcher driven over its socketpair, as the listener drives it:
 * Spawn, CheckInput, Kill of a command's whole tree (what left its
 * session included), Release of an agent command whose leader is gone,
 * OpenSpill with its fd, and a Spawn whose client the launcher answers
 * (Spawn.answer): what that client reads, in order.
 *
 * The program it runs is this test itself in helper mode: it starts a
 * child in a process group of its own (a shell's background job), prints
 * that child's pid, and waits or exits. The helper's stdout is a pipe to
 * the test: end of file on it means every process holding it is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "frame.h"
#include "toolrun.pb-c.h"
#include "launcher.h"
#include "launcher.pb-c.h"
#include "outq.h"
#include "util.h"

/* ───────────────────────── helper mode ───────────────────────── */

/* "escape": a double fork into a session of its own, as `setsid -f`
 * does; the grandchild prints its pid, its parent is gone. */
static NORETURN void escape(void)
{
	pid_t mid = fork();
	if (mid < 0)
		_exit(1);
	if (mid == 0) {
		pid_t parent = getpid();
		pid_t g = fork();
		if (g == 0) {
			setsid();
			/* Say so once orphaned: adopted by the subreaper. */
			while (getppid() == parent)
				usleep(1000);
			printf("%d\n", (int)getpid());
			fflush(stdout);
			for (;;)
				pause();
		}
		_exit(g < 0);
	}
	waitpid(mid, NULL, 0);
	for (;;)
		pause();
}

static NORETURN void helper(const char *then)
{
	/* A tool on its own: ends at once with 7, or waits to be killed. */
	if (strcmp(then, "code7") == 0)
		_exit(7);
	if (strcmp(then, "pause") == 0)
		for (;;)
			pause();
	if (strcmp(then, "escape") == 0)
		escape();
	pid_t pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(pid, pid); /* done by the time the pid is printed */
	printf("%d\n", (int)pid);
	fflush(stdout);
	if (strcmp(then, "exit") == 0)
		_exit(0);
	for (;;)
		pause();
}

/* ───────────────────────── the channel ───────────────────────── */

struct env {
	struct config cfg;
	struct launcher_link link;
	struct frame_reader reader;
	int fds[FRAME_MAX_FDS];
	char self[PATH_MAX];
	char base[64];
};

static void send_order(struct env *e, Toolrun__Launcher__ToLauncher *m, const int *fds,
		       unsigned nfds)
{
	size_t len = frame_size(&m->base);
	uint8_t *buf = malloc(len);
	assert_non_null(buf);
	frame_pack(&m->base, (uint16_t)nfds, buf);
	assert_int_equal(frame_send(e->link.fd, buf, len, fds, nfds), 0);
	free(buf);
}

/* The next message but AuditLogAt (the audit log's whereabouts, which
 * unit/audit checks); *fd gets its one attached fd, or -1. */
static Toolrun__Launcher__FromLauncher *receive(struct env *e, int *fd)
{
	int r;
again:
	while ((r = frame_reader_read(&e->reader, e->link.fd)) == FRAME_READ_AGAIN)
		;
	assert_int_equal(r, FRAME_READ_READY);
	Toolrun__Launcher__FromLauncher *m = toolrun__launcher__from_launcher__unpack(
		NULL, e->reader.h.length, e->reader.payload);
	assert_non_null(m);
	assert_true(e->reader.nfds <= 1);
	*fd = e->reader.nfds ? e->reader.fds[0] : -1;
	e->reader.nfds = 0;
	frame_reader_next(&e->reader);
	if (m->msg_case == TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_AUDIT_LOG_AT) {
		toolrun__launcher__from_launcher__free_unpacked(m, NULL);
		goto again;
	}
	return m;
}

static Toolrun__Launcher__FromLauncher *expect(struct env *e,
					       Toolrun__Launcher__FromLauncher__MsgCase c)
{
	int fd;
	Toolrun__Launcher__FromLauncher *m = receive(e, &fd);
	assert_int_equal(m->msg_case, c);
	assert_int_equal(fd, -1);
	return m;
}

#define BIN(s) ((ProtobufCBinaryData){strlen(s), (uint8_t *)(s)})

/* Run the helper as job `job`; *out is the read end of its stdout,
 * *in the write end of its stdin. Returns its pid. */
static pid_t spawn_helper(struct env *e, uint64_t job, const char *then, bool command,
			  int *in, int *out)
{
	Toolrun__Launcher__Spawn s = TOOLRUN__LAUNCHER__SPAWN__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;
	ProtobufCBinaryData argv[3] = {BIN(e->self), BIN("helper"), BIN((char *)then)};
	uint32_t targets[2] = {0, 1};
	int inp[2], outp[2];

	assert_int_equal(pipe2(inp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	int cwd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cwd >= 0);
	int fds[3] = {cwd, inp[0], outp[1]};

	s.job = job;
	s.executable = BIN(e->self);
	s.n_argv = 3;
	s.argv = argv;
	s.n_fds = 2;
	s.fds = targets;
	s.tool = "helper";
	s.command = command;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_SPAWN;
	m.spawn = &s;
	send_order(e, &m, fds, 3);
	for (int i = 0; i < 3; i++)
		close(fds[i]);

	Toolrun__Launcher__FromLauncher *r = expect(e, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPAWNED);
	assert_int_equal(r->spawned->job, job);
	assert_int_equal(r->spawned->error, 0);
	pid_t pid = r->spawned->pid;
	assert_true(pid > 0);
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);
	*in = inp[1];
	*out = outp[0];
	return pid;
}

static pid_t read_pid(int fd)
{
	char line[32];
	size_t have = 0;
	while (have < sizeof(line) - 1) {
		ssize_t n = read(fd, line + have, 1);
		assert_true(n == 1);
		if (line[have++] == '\n')
			break;
	}
	line[have] = '\0';
	return (pid_t)atoi(line);
}

static void wait_for_eof(int fd)
{
	char buf[64];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) != 0)
		assert_true(n > 0 || errno == EINTR);
}

static bool check_input(struct env *e, uint64_t job)
{
	Toolrun__Launcher__CheckInput c = TOOLRUN__LAUNCHER__CHECK_INPUT__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	c.job = job;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_CHECK_INPUT;
	m.check_input = &c;
	send_order(e, &m, NULL, 0);
	Toolrun__Launcher__FromLauncher *r = expect(e, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_INPUT_STATE);
	assert_int_equal(r->input_state->job, job);
	bool running = r->input_state->producer_running;
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);
	return running;
}

/* A Kill of the job's whole tree; returns how many processes below its
 * program the launcher says it signalled (Killed). */
static unsigned kill_tree(struct env *e, uint64_t job, int signo)
{
	Toolrun__Launcher__Kill k = TOOLRUN__LAUNCHER__KILL__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	k.job = job;
	k.signo = signo;
	k.whole_tree = true;
	k.report = true;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_KILL;
	m.kill = &k;
	send_order(e, &m, NULL, 0);
	Toolrun__Launcher__FromLauncher *r = expect(e, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_KILLED);
	assert_int_equal(r->killed->job, job);
	unsigned n = r->killed->processes;
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);
	return n;
}

/* The parent pid /proc says pid has. */
static pid_t parent_of(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	char state;
	int ppid = 0;
	assert_int_equal(sscanf(strrchr(line, ')') + 1, " %c %d", &state, &ppid), 2);
	return (pid_t)ppid;
}

/* End of file on fd within a generous bound: every holder is gone. */
static void expect_eof_soon(int fd)
{
	char buf[64];
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int r = poll(&p, 1, 60 * 1000);
		assert_true(r == 1); /* a holder left behind: no end of file */
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0)
			return;
		assert_true(n > 0 || errno == EINTR);
	}
}

static void release(struct env *e, uint64_t job)
{
	Toolrun__Launcher__Release rl = TOOLRUN__LAUNCHER__RELEASE__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	rl.job = job;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_RELEASE;
	m.release = &rl;
	send_order(e, &m, NULL, 0);
}

static int expect_exited(struct env *e, uint64_t job)
{
	Toolrun__Launcher__FromLauncher *r = expect(e, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_EXITED);
	assert_int_equal(r->exited->job, job);
	int status = r->exited->wait_status;
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);
	return status;
}

/* ───────────────────────── an answered client ───────────────────────── */

/* Run the helper (then: code7, pause) as job `job`, or, with no `then`,
 * a path that does not exist; the launcher answers the client, whose end
 * of the connection *client gets. Returns the Spawned report. */
static Toolrun__Launcher__FromLauncher *spawn_answered(struct env *e, uint64_t job,
						       const char *then, int *client)
{
	Toolrun__Launcher__Spawn s = TOOLRUN__LAUNCHER__SPAWN__INIT;
	Toolrun__Launcher__Answer a = TOOLRUN__LAUNCHER__ANSWER__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;
	const char *path = then ? e->self : "/nonexistent/toolrun-test";
	ProtobufCBinaryData argv[3] = {BIN((char *)path), BIN("helper"),
				       BIN((char *)(then ? then : "-"))};
	int conn[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, conn), 0);
	int cwd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cwd >= 0);
	int fds[2] = {cwd, conn[1]};

	a.hello = true;
	a.version = TOOLRUN__VERSION__VERSION_1;
	a.timeout_s = 30;
	a.timeout_below_command_s = 0;
	s.job = job;
	s.executable = BIN((char *)path);
	s.n_argv = 3;
	s.argv = argv;
	s.tool = "helper";
	s.answer = &a;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_SPAWN;
	m.spawn = &s;
	send_order(e, &m, fds, 2);
	close(cwd);
	close(conn[1]);
	*client = conn[0];
	Toolrun__Launcher__FromLauncher *r = expect(e, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPAWNED);
	assert_int_equal(r->spawned->job, job);
	return r;
}

/* Kill the job with SIGKILL, saying it timed out (notice) or refusing its
 * client (refusal). */
static void kill_with(struct env *e, uint64_t job, const char *notice,
		      Toolrun__Error *refusal)
{
	Toolrun__Launcher__Kill k = TOOLRUN__LAUNCHER__KILL__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	k.job = job;
	k.signo = SIGKILL;
	if (notice)
		k.timeout_notice = (char *)notice;
	k.refusal = refusal;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_KILL;
	m.kill = &k;
	send_order(e, &m, NULL, 0);
}

/* The client whose frames client_expect reads, or -1. */
static int reading = -1;

/* The next message the client reads, of the kind given. */
static Toolrun__ServerMessage *client_expect(int fd, Toolrun__ServerMessage__MsgCase c)
{
	static uint8_t ra[FRAME_HEADER_SIZE + 64 * 1024];
	static struct frame_reader r;
	int res;

	/* A new client, a new reader (what it read ahead is its own). */
	if (fd != reading) {
		r = (struct frame_reader){.max_payload = 64 * 1024, .ra = ra,
					  .ra_cap = sizeof(ra)};
		reading = fd;
	}
	for (;;) {
		res = frame_reader_read(&r, fd);
		if (res != FRAME_READ_AGAIN)
			break;
		struct pollfd p = {fd, POLLIN, 0};
		assert_int_equal(poll(&p, 1, 60 * 1000), 1);
	}
	assert_int_equal(res, FRAME_READ_READY);
	Toolrun__ServerMessage *m = toolrun__server_message__unpack(NULL, r.h.length, r.payload);
	frame_reader_next(&r);
	assert_non_null(m);
	assert_int_equal(m->msg_case, c);
	return m;
}

static void client_expect_hello(int fd)
{
	Toolrun__ServerMessage *m = client_expect(fd, TOOLRUN__SERVER_MESSAGE__MSG_HELLO);
	assert_int_equal(m->hello->protocol_version, TOOLRUN__VERSION__VERSION_1);
	assert_string_equal(m->hello->software, "toolrund " TOOLRUN_VERSION);
	toolrun__server_message__free_unpacked(m, NULL);
}

static void client_expect_started(int fd, pid_t pid)
{
	Toolrun__ServerMessage *m = client_expect(fd, TOOLRUN__SERVER_MESSAGE__MSG_STARTED);
	assert_int_equal(m->started->pid, pid);
	assert_int_equal(m->started->timeout_ms, 30000);
	toolrun__server_message__free_unpacked(m, NULL);
}

/* Nothing after what was read: the launcher let the connection go. */
static void client_expect_end(int fd)
{
	expect_eof_soon(fd);
	close(fd);
	reading = -1;
}

/* Exit with this code (not a signal), errno, reason and timeout flag;
 * then nothing: the launcher let the connection go. */
static void client_expect_exit(int fd, int code, int exec_errno, const char *reason,
			       bool timed_out)
{
	Toolrun__ServerMessage *m = client_expect(fd, TOOLRUN__SERVER_MESSAGE__MSG_EXIT);
	assert_int_equal(m->exit->status_case, TOOLRUN__EXIT__STATUS_CODE);
	assert_int_equal(m->exit->code, code);
	assert_int_equal(m->exit->exec_errno, exec_errno);
	assert_string_equal(m->exit->reason, reason);
	assert_int_equal(m->exit->timed_out, timed_out);
	toolrun__server_message__free_unpacked(m, NULL);
	client_expect_end(fd);
}


static void test_answered_client_reads_hello_started_exit(void **state)
{
	struct env *e = *state;
	int client;
	Toolrun__Launcher__FromLauncher *r = spawn_answered(e, 21, "code7", &client);
	pid_t pid = r->spawned->pid;
	assert_int_equal(r->spawned->error, 0);
	assert_true(pid > 0);
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);

	client_expect_hello(client);
	client_expect_started(client, pid);
	/* The listener hears of the end before the client does. */
	int status = expect_exited(e, 21);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	client_expect_exit(client, 7, 0, "", false);
}

static void test_answered_client_of_a_failed_start_reads_why(void **state)
{
	struct env *e = *state;
	int client;
	Toolrun__Launcher__FromLauncher *r = spawn_answered(e, 22, NULL, &client);
	assert_int_equal(r->spawned->pid, 0);
	assert_int_equal(r->spawned->error, ENOENT);
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);

	client_expect_hello(client);
	client_expect_exit(client, 127, ENOENT, "command not found", false);
}

static void test_answered_client_reads_the_time_limit(void **state)
{
	struct env *e = *state;
	int client;
	const char *notice = "toolrun: helper: timed out after 30 s\n";
	Toolrun__Launcher__FromLauncher *r = spawn_answered(e, 23, "pause", &client);
	pid_t pid = r->spawned->pid;
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);

	client_expect_hello(client);
	client_expect_started(client, pid);
	kill_with(e, 23, notice, NULL);
	r = expect(e, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_EXITED);
	assert_true(WIFSIGNALED(r->exited->wait_status));
	assert_true(r->exited->timed_out);
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);
	Toolrun__ServerMessage *m = client_expect(client, TOOLRUN__SERVER_MESSAGE__MSG_OUTPUT);
	assert_int_equal(m->output->stream, TOOLRUN__STREAM__STREAM_STDERR);
	assert_int_equal(m->output->data.len, strlen(notice));
	assert_memory_equal(m->output->data.data, notice, strlen(notice));
	toolrun__server_message__free_unpacked(m, NULL);
	client_expect_exit(client, 124, 0, "", true);
}

static void test_answered_client_refused_reads_the_error(void **state)
{
	struct env *e = *state;
	int client;
	Toolrun__Error refusal = TOOLRUN__ERROR__INIT;
	Toolrun__Launcher__FromLauncher *r = spawn_answered(e, 24, "pause", &client);
	pid_t pid = r->spawned->pid;
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);

	client_expect_hello(client);
	client_expect_started(client, pid);
	refusal.code = TOOLRUN__ERROR_CODE__ERROR_TIMEOUT;
	refusal.message = "a frame begun 10 s ago is still incomplete";
	kill_with(e, 24, NULL, &refusal);
	Toolrun__ServerMessage *m = client_expect(client, TOOLRUN__SERVER_MESSAGE__MSG_ERROR);
	assert_int_equal(m->error->code, TOOLRUN__ERROR_CODE__ERROR_TIMEOUT);
	assert_string_equal(m->error->message, refusal.message);
	toolrun__server_message__free_unpacked(m, NULL);
	/* No Exit follows: the connection is let go at once. */
	client_expect_end(client);
	int status = expect_exited(e, 24);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static char self_path[PATH_MAX];

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	snprintf(e->self, sizeof(e->self), "%s", self_path);
	config_init(&e->cfg, "test");
	snprintf(e->base, sizeof(e->base), "/tmp/test-launcher-XXXXXX");
	if (!mkdtemp(e->base))
		return -1;
	snprintf(e->cfg.spill_dir, sizeof(e->cfg.spill_dir), "%s/spill", e->base);
	snprintf(e->cfg.audit_log, sizeof(e->cfg.audit_log), "%s/audit.jsonl", e->base);
	if (launcher_start(&e->link, &e->cfg, NULL, NULL) < 0)
		return -1;
	e->reader = (struct frame_reader){
		.max_payload = 64 * 1024,
		.grow = frame_grow_heap,
		.fds = e->fds,
	};
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[128];
	int status;

	/* End of file: the launcher kills what is left and exits. */
	close(e->link.fd);
	if (waitpid(e->link.pid, &status, 0) != e->link.pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	frame_reader_drop_fds(&e->reader);
	free(e->reader.payload);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->base);
	int r = system(cmd);
	free(e);
	return r == 0 ? 0 : -1;
}

/* ───────────────────────── tests ───────────────────────── */

static void test_check_input_sees_the_writer_of_stdin(void **state)
{
	struct env *e = *state;
	int in, out;

	pid_t pid = spawn_helper(e, 1, "wait", false, &in, &out);
	read_pid(out);
	/* We hold the write end of its stdin and are outside its session. */
	assert_true(check_input(e, 1));
	close(in);
	assert_false(check_input(e, 1));
	/* A job the launcher does not know has no producer. */
	assert_false(check_input(e, 77));

	/* Its background child too, or the launcher would wait for it. */
	kill_tree(e, 1, SIGKILL);
	wait_for_eof(out);
	int status = expect_exited(e, 1);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	release(e, 1);
	close(out);
	(void)pid;
}

static void test_kill_whole_session_reaches_other_process_groups(void **state)
{
	struct env *e = *state;
	int in, out;

	pid_t pid = spawn_helper(e, 2, "wait", true, &in, &out);
	pid_t bg = read_pid(out);
	assert_int_equal(getsid(bg), pid);
	assert_int_equal(getpgid(bg), bg);

	assert_int_equal(kill_tree(e, 2, SIGKILL), 1);
	/* Both held the pipe: end of file once both are gone. */
	wait_for_eof(out);
	int status = expect_exited(e, 2);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	release(e, 2);
	close(in);
	close(out);
}

static void test_a_command_that_ended_leaves_its_background_running(void **state)
{
	struct env *e = *state;
	int in, out;

	pid_t pid = spawn_helper(e, 3, "exit", true, &in, &out);
	pid_t bg = read_pid(out);
	assert_int_equal(getsid(bg), pid);
	int status = expect_exited(e, 3);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The background job outlived its leader; the launcher remembers
	 * the command until it is released. */
	assert_true(check_input(e, 3));
	release(e, 3);
	/* Forgotten now, and its background job still runs, as after
	 * `docker exec`: it may be a server the agent started. */
	assert_false(check_input(e, 3));
	assert_int_equal(kill(bg, 0), 0);
	kill(bg, SIGKILL);
	wait_for_eof(out);
	close(in);
	close(out);
}

/* `setsid -f` in a command: the process leaves its session and its
 * parent; the command's first process adopts it (a subreaper), and the
 * whole-tree kill finds it there. */
static void test_kill_tree_reaches_what_left_the_session(void **state)
{
	struct env *e = *state;
	int in, out;

	pid_t pid = spawn_helper(e, 4, "escape", true, &in, &out);
	pid_t escaped = read_pid(out);
	assert_int_equal(getsid(escaped), escaped);
	assert_int_equal(parent_of(escaped), pid);

	assert_int_equal(kill_tree(e, 4, SIGKILL), 1);
	expect_eof_soon(out);
	int status = expect_exited(e, 4);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	release(e, 4);
	close(in);
	close(out);
}

static void test_open_spill_hands_over_the_file(void **state)
{
	struct env *e = *state;
	Toolrun__Launcher__OpenSpill o = TOOLRUN__LAUNCHER__OPEN_SPILL__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;
	struct stat by_fd, by_path;
	int fd;

	o.job = 9;
	o.stream = TOOLRUN__STREAM__STREAM_STDERR;
	o.uid = (uint32_t)geteuid();
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_OPEN_SPILL;
	m.open_spill = &o;
	send_order(e, &m, NULL, 0);
	Toolrun__Launcher__FromLauncher *r = receive(e, &fd);
	assert_int_equal(r->msg_case, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPILL_OPENED);
	assert_int_equal(r->spill_opened->job, 9);
	assert_int_equal(r->spill_opened->stream, TOOLRUN__STREAM__STREAM_STDERR);
	assert_int_equal(r->spill_opened->error, 0);
	assert_string_equal(r->spill_opened->reason, "");
	assert_true(fd >= 0);
	assert_non_null(strstr(r->spill_opened->path, "-9-stderr.log"));
	assert_int_equal(fstat(fd, &by_fd), 0);
	assert_int_equal(stat(r->spill_opened->path, &by_path), 0);
	assert_int_equal(by_fd.st_ino, by_path.st_ino);
	assert_int_equal(write(fd, "spilled\n", 8), 8);
	close(fd);
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);

	/* spill_dir replaced by a link: not followed; the file is made in a
	 * directory of the launcher's own beside it (spill.h). */
	char moved[128], beside[CONFIG_PATH_MAX + 1];
	snprintf(moved, sizeof(moved), "%s/moved", e->base);
	snprintf(beside, sizeof(beside), "%s.", e->cfg.spill_dir);
	assert_int_equal(rename(e->cfg.spill_dir, moved), 0);
	assert_int_equal(symlink(moved, e->cfg.spill_dir), 0);
	send_order(e, &m, NULL, 0);
	r = receive(e, &fd);
	assert_int_equal(r->msg_case, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPILL_OPENED);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(r->spill_opened->error, 0);
	assert_int_equal(strncmp(r->spill_opened->path, beside, strlen(beside)), 0);
	assert_null(strstr(r->spill_opened->path, "/moved/"));
	toolrun__launcher__from_launcher__free_unpacked(r, NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "helper") == 0)
		helper(argv[2]);

	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (n <= 0)
		return 1;
	self_path[n] = '\0';
	/* A write to a closed channel is an error, not a signal. */
	signal(SIGPIPE, SIG_IGN);

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_check_input_sees_the_writer_of_stdin),
		T(test_kill_whole_session_reaches_other_process_groups),
		T(test_a_command_that_ended_leaves_its_background_running),
		T(test_kill_tree_reaches_what_left_the_session),
		T(test_open_spill_hands_over_the_file),
		T(test_answered_client_reads_hello_started_exit),
		T(test_answered_client_of_a_failed_start_reads_why),
		T(test_answered_client_reads_the_time_limit),
		T(test_answered_client_refused_reads_the_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
