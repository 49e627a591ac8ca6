/*
 * Unit tests for daemon/launcher/proctree.c, with real processes: killing a
 * session wherever its process groups are, finding who still holds a
 * pipe or FIFO open for writing, and seeing a session's process blocked
 * reading its input.
 *
 * The test process is a subreaper, so that grandchildren left behind by
 * a killed child come back to it and can be waited for. Every child
 * says when it is ready through a pipe and ends when its hold pipe
 * closes: the tests wait for events, never for time.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proctree.h"

/* ───────────────────────── helpers ───────────────────────── */

/* A child process: it reports pids through `ready` and lives until
 * `hold` is closed (or it is killed). */
struct child {
	pid_t pid;
	int ready; /* read end */
	int hold;  /* write end: close it to end the child */
};

/* What a child does before it says it is ready. It may close or open
 * fds; it returns the pid it reports (its own, or a grandchild's). */
typedef pid_t (*child_setup)(void *arg);

/* Our ends of every live child's pipes: a child started later must not
 * keep them, or an earlier child would never see its hold pipe close. */
static int parent_fds[64];
static unsigned nparent_fds;

static void forget_parent_fd(int fd)
{
	for (unsigned i = 0; i < nparent_fds; i++)
		if (parent_fds[i] == fd)
			parent_fds[i] = parent_fds[--nparent_fds];
	close(fd);
}

static void wait_for_eof(int fd)
{
	char c;
	while (read(fd, &c, 1) > 0 || errno == EINTR)
		;
}

static struct child start_child(child_setup setup, void *arg, const int *close_fds)
{
	int ready[2], hold[2];
	struct child c;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		close(ready[0]);
		close(hold[1]);
		for (unsigned i = 0; i < nparent_fds; i++)
			close(parent_fds[i]);
		for (const int *fd = close_fds; fd && *fd >= 0; fd++)
			close(*fd);
		pid_t report = setup ? setup(arg) : getpid();
		if (write(ready[1], &report, sizeof(report)) != sizeof(report))
			_exit(1);
		wait_for_eof(hold[0]);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	c.ready = ready[0];
	c.hold = hold[1];
	assert_true(nparent_fds + 2 <= sizeof(parent_fds) / sizeof(parent_fds[0]));
	parent_fds[nparent_fds++] = c.ready;
	parent_fds[nparent_fds++] = c.hold;
	return c;
}

/* The pid the child reported once ready. */
static pid_t child_ready(struct child *c)
{
	pid_t pid;
	assert_int_equal(read(c->ready, &pid, sizeof(pid)), sizeof(pid));
	return pid;
}

/* Let the child end and reap it; returns its wait status. */
static int end_child(struct child *c)
{
	int status;
	forget_parent_fd(c->hold);
	forget_parent_fd(c->ready);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	return status;
}

/* Whether pid is alive and not a zombie. */
static bool alive(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	const char *p = ok ? strrchr(line, ')') : NULL;
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* ───────────────────────── tree kill ───────────────────────── */

static pid_t new_session(void *arg)
{
	(void)arg;
	setsid();
	return getpid();
}

/* In a new session: a child that leaves the session's process group,
 * for a group of its own (as a shell's background job does) or, with
 * leave_session, for a session of its own (as `setsid -f` or a daemon
 * does); reports that child's pid once it has moved. */
static pid_t session_with_mover(bool leave_session)
{
	int ready[2];

	setsid();
	if (pipe(ready) < 0)
		_exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		if (leave_session)
			setsid();
		else
			setpgid(0, 0);
		close(ready[0]);
		close(ready[1]); /* ready: it has moved */
		for (;;)
			pause();
	}
	close(ready[1]);
	wait_for_eof(ready[0]);
	return pid;
}

static pid_t session_with_other_group(void *arg)
{
	(void)arg;
	return session_with_mover(false);
}

static pid_t session_with_escapee(void *arg)
{
	(void)arg;
	return session_with_mover(true);
}

static void test_tree_kill_reaches_other_process_groups(void **state)
{
	(void)state;
	struct child leader = start_child(session_with_other_group, NULL, NULL);
	pid_t member = child_ready(&leader);
	/* A process in a session of its own, started from ours. */
	struct child other = start_child(new_session, NULL, NULL);
	pid_t outsider = child_ready(&other);

	assert_int_equal(getsid(member), leader.pid);
	assert_int_not_equal(getpgid(member), leader.pid);

	assert_int_equal(proctree_kill_tree(leader.pid, SIGTERM, true), 1);

	int status = end_child(&leader);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	/* The member came back to us (subreaper) when its parent died. */
	assert_int_equal(waitpid(member, &status, 0), member);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);

	assert_true(alive(outsider));
	status = end_child(&other);
	assert_true(WIFEXITED(status));
}

static void test_tree_kill_with_sigkill_ends_the_whole_tree(void **state)
{
	(void)state;
	struct child leader = start_child(session_with_other_group, NULL, NULL);
	pid_t member = child_ready(&leader);
	int status;

	assert_int_equal(proctree_kill_tree(leader.pid, SIGKILL, true), 1);
	status = end_child(&leader);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(waitpid(member, &status, 0), member);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* Nothing is left of it. */
	assert_int_equal(proctree_kill_tree(leader.pid, SIGKILL, false), 0);
}

/* A child that left the session is still below its parent: found by
 * its parent, not by its session, and the spared root lives on. */
static void test_tree_kill_reaches_what_left_the_session(void **state)
{
	(void)state;
	struct child leader = start_child(session_with_escapee, NULL, NULL);
	pid_t escapee = child_ready(&leader);
	int status;

	assert_int_equal(getsid(escapee), escapee);
	assert_int_equal(proctree_kill_tree(leader.pid, SIGKILL, false), 1);
	assert_true(alive(leader.pid));
	status = end_child(&leader);
	assert_true(WIFEXITED(status));
	assert_int_equal(waitpid(escapee, &status, 0), escapee);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_tree_kill_never_signals_the_caller(void **state)
{
	(void)state;
	/* Below our own parent: we would be signalled, so ask with signal
	 * 0, which only checks. */
	assert_true(proctree_kill_tree(getppid(), 0, false) >= 0);
	assert_int_equal(proctree_kill_tree(0, SIGKILL, false), -EINVAL);
	assert_int_equal(proctree_kill_tree(-1, SIGKILL, false), -EINVAL);
}

/* ───────────────────────── pipe writers ───────────────────────── */

struct pipe_setup {
	int keep;     /* the end this child keeps open, or -1 */
	int drop;     /* the end it closes, or -1 */
	bool setsid;
	const char *fifo; /* instead: open this FIFO with fifo_flags */
	int fifo_flags;
};

static pid_t pipe_child(void *arg)
{
	const struct pipe_setup *s = arg;
	if (s->setsid)
		setsid();
	if (s->drop >= 0)
		close(s->drop);
	if (s->fifo && open(s->fifo, s->fifo_flags) < 0)
		_exit(1);
	return getpid();
}

static void fd_identity(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	*dev = st.st_dev;
	*ino = st.st_ino;
}

static void test_pipe_with_a_live_writer_has_a_writer(void **state)
{
	(void)state;
	int p[2];
	dev_t dev;
	ino_t ino;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct pipe_setup s = {.keep = p[1], .drop = p[0], .setsid = true};
	struct child w = start_child(pipe_child, &s, NULL);
	pid_t wpid = child_ready(&w);
	close(p[1]);
	fd_identity(p[0], &dev, &ino);

	assert_true(proctree_pipe_has_writer(dev, ino, getsid(0)));
	assert_true(proctree_pipe_has_writer(dev, ino, 0));
	/* The writer's own session is excluded: it is the job. */
	assert_false(proctree_pipe_has_writer(dev, ino, wpid));

	end_child(&w);
	/* The writer is gone. */
	assert_false(proctree_pipe_has_writer(dev, ino, 0));
	close(p[0]);
}

static void test_pipe_with_only_readers_has_no_writer(void **state)
{
	(void)state;
	int p[2];
	dev_t dev;
	ino_t ino;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct pipe_setup s = {.keep = p[0], .drop = p[1], .setsid = true};
	struct child r = start_child(pipe_child, &s, NULL);
	child_ready(&r);
	fd_identity(p[0], &dev, &ino);
	/* We hold the write end ourselves: the caller does not count. */
	assert_false(proctree_pipe_has_writer(dev, ino, 0));
	end_child(&r);
	close(p[0]);
	close(p[1]);
}

static void test_fifo_opened_for_reading_and_writing_is_a_writer(void **state)
{
	(void)state;
	char dir[] = "/tmp/test-proctree-XXXXXX";
	char fifo[64];
	struct stat st;

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(stat(fifo, &st), 0);

	struct pipe_setup rd = {.keep = -1, .drop = -1, .setsid = true, .fifo = fifo,
				.fifo_flags = O_RDONLY | O_NONBLOCK};
	struct child r = start_child(pipe_child, &rd, NULL);
	child_ready(&r);
	assert_false(proctree_pipe_has_writer(st.st_dev, st.st_ino, 0));

	struct pipe_setup rw = {.keep = -1, .drop = -1, .setsid = true, .fifo = fifo,
				.fifo_flags = O_RDWR};
	struct child w = start_child(pipe_child, &rw, NULL);
	pid_t wpid = child_ready(&w);
	assert_true(proctree_pipe_has_writer(st.st_dev, st.st_ino, 0));
	assert_false(proctree_pipe_has_writer(st.st_dev, st.st_ino, wpid));
	end_child(&w);
	assert_false(proctree_pipe_has_writer(st.st_dev, st.st_ino, 0));

	end_child(&r);
	unlink(fifo);
	rmdir(dir);
}

static void test_another_pipe_is_not_confused_with_ours(void **state)
{
	(void)state;
	int ours[2], theirs[2];
	dev_t dev;
	ino_t ino;

	assert_int_equal(pipe2(ours, O_CLOEXEC), 0);
	assert_int_equal(pipe2(theirs, O_CLOEXEC), 0);
	/* The child writes to another pipe and holds none of ours. */
	int close_ours[] = {ours[0], ours[1], -1};
	struct pipe_setup s = {.keep = theirs[1], .drop = theirs[0], .setsid = true};
	struct child w = start_child(pipe_child, &s, close_ours);
	child_ready(&w);
	close(ours[1]);
	fd_identity(ours[0], &dev, &ino);
	assert_false(proctree_pipe_has_writer(dev, ino, 0));
	end_child(&w);
	close(ours[0]);
	close(theirs[0]);
	close(theirs[1]);
}


/* ───────────────────────── waiting for input ───────────────────────── */

enum wait_kind { WAIT_READ, WAIT_POLL, WAIT_SELECT };

/* A child in a session of its own, blocked until fd is readable. */
static pid_t blocked_reader(int fd, enum wait_kind kind, bool own_session)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		if (own_session)
			setsid();
		if (kind == WAIT_POLL) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			poll(&p, 1, -1);
		} else if (kind == WAIT_SELECT) {
			fd_set set;
			FD_ZERO(&set);
			FD_SET(fd, &set);
			select(fd + 1, &set, NULL, NULL, NULL);
		}
		_exit(read(fd, &c, 1) == 1 ? 0 : 1);
	}
	return pid;
}

/* Wait (for an event, bounded only against a hang) until the kernel
 * shows pid blocked in a system call. */
static void wait_blocked(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 20000; i++) {
		FILE *f = fopen(path, "r");
		assert_non_null(f);
		bool got = fgets(line, sizeof(line), f) != NULL;
		fclose(f);
		if (got && strncmp(line, "running", 7) != 0) {
			char stat[64], buf[512];
			snprintf(stat, sizeof(stat), "/proc/%d/stat", (int)pid);
			f = fopen(stat, "r");
			assert_non_null(f);
			got = fgets(buf, sizeof(buf), f) != NULL;
			fclose(f);
			const char *p = got ? strrchr(buf, ')') : NULL;
			if (p && p[2] == 'S')
				return;
		}
		usleep(500);
	}
	fail_msg("pid %d never blocked", (int)pid);
}

static void identity_of(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	*dev = st.st_dev;
	*ino = st.st_ino;
}

static void check_waiting_kind(enum wait_kind kind)
{
	int in[2];
	dev_t dev;
	ino_t ino;
	int status;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	identity_of(in[0], &dev, &ino);
	pid_t pid = blocked_reader(in[0], kind, true);
	wait_blocked(pid);
	assert_int_equal(proctree_session_waiting(&pid, 1, dev, ino), 1);
	assert_int_equal(write(in[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(in[0]);
	close(in[1]);
}

static void test_session_blocked_in_read_on_its_input_is_waiting(void **state)
{
	(void)state;
	check_waiting_kind(WAIT_READ);
}

static void test_session_blocked_in_poll_on_its_input_is_waiting(void **state)
{
	(void)state;
	check_waiting_kind(WAIT_POLL);
}

static void test_session_blocked_in_select_on_its_input_is_waiting(void **state)
{
	(void)state;
	check_waiting_kind(WAIT_SELECT);
}

/* Blocked reading another pipe (its own producer's): not waiting for
 * the session's input. */
static void test_session_reading_another_pipe_is_not_waiting(void **state)
{
	int in[2], other[2];
	dev_t dev;
	ino_t ino;
	int status;
	(void)state;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(other, O_CLOEXEC), 0);
	identity_of(in[0], &dev, &ino);
	pid_t pid = blocked_reader(other[0], WAIT_READ, true);
	wait_blocked(pid);
	assert_int_equal(proctree_session_waiting(&pid, 1, dev, ino), 0);
	assert_int_equal(write(other[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(in[0]);
	close(in[1]);
	close(other[0]);
	close(other[1]);
}

/* A reader of the input in another session does not count. */
static void test_reader_outside_the_session_is_not_waiting(void **state)
{
	int in[2];
	dev_t dev;
	ino_t ino;
	int status;
	(void)state;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	identity_of(in[0], &dev, &ino);
	struct child quiet = start_child(new_session, NULL, NULL);
	pid_t sid = child_ready(&quiet);
	pid_t pid = blocked_reader(in[0], WAIT_READ, true);
	wait_blocked(pid);
	assert_int_equal(proctree_session_waiting(&sid, 1, dev, ino), 0);
	assert_int_equal(write(in[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	end_child(&quiet);
	close(in[0]);
	close(in[1]);
}

/* A listed tool run for a session's command reads its input in a session
 * of its own: given with the session's, it counts. */
static void test_reader_in_a_session_given_along_is_waiting(void **state)
{
	int in[2];
	dev_t dev;
	ino_t ino;
	int status;
	(void)state;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	identity_of(in[0], &dev, &ino);
	struct child quiet = start_child(new_session, NULL, NULL);
	pid_t sids[2] = {child_ready(&quiet), 0};
	pid_t pid = blocked_reader(in[0], WAIT_READ, true);
	wait_blocked(pid);
	sids[1] = getsid(pid);
	assert_int_equal(proctree_session_waiting(sids, 1, dev, ino), 0);
	assert_int_equal(proctree_session_waiting(sids, 2, dev, ino), 1);
	assert_int_equal(write(in[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	end_child(&quiet);
	close(in[0]);
	close(in[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_kill_reaches_other_process_groups),
		cmocka_unit_test(test_tree_kill_with_sigkill_ends_the_whole_tree),
		cmocka_unit_test(test_tree_kill_reaches_what_left_the_session),
		cmocka_unit_test(test_tree_kill_never_signals_the_caller),
		cmocka_unit_test(test_pipe_with_a_live_writer_has_a_writer),
		cmocka_unit_test(test_pipe_with_only_readers_has_no_writer),
		cmocka_unit_test(test_fifo_opened_for_reading_and_writing_is_a_writer),
		cmocka_unit_test(test_another_pipe_is_not_confused_with_ours),
		cmocka_unit_test(test_session_blocked_in_read_on_its_input_is_waiting),
		cmocka_unit_test(test_session_blocked_in_poll_on_its_input_is_waiting),
		cmocka_unit_test(test_session_blocked_in_select_on_its_input_is_waiting),
		cmocka_unit_test(test_session_reading_another_pipe_is_not_waiting),
		cmocka_unit_test(test_reader_outside_the_session_is_not_waiting),
		cmocka_unit_test(test_reader_in_a_session_given_along_is_waiting),
	};

	/* Orphans of killed children come back to us, to be waited for. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
