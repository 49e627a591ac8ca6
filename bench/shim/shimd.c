/*
 * shimd: the daemon of the PATH-shim baseline (bench/shim/README.md).
 *
 *   shimd SOCKET_PATH
 *
 * The original design's daemon (seed 001, section 6) in C instead of
 * Elixir, so that the benchmark measures the shim's shape, not the BEAM:
 * a Unix stream socket, one process per client, one request line per
 * connection, the command run with its output captured, the seed's
 * truncation applied to stdout, one reply, then close.
 *
 * Peers:
 *   shim (socat)  sends  "cmd\targ1\targ2...\n"          (one line, <= 1 MiB)
 *                 gets   "SHIM1 <code> <out_len> <err_len>\n" <out> <err>
 *
 * <code> is the exit status, 128 + the signal's number for a death by
 * signal, 127 when the command is not found, 1 for any other failure (the
 * seed's "exceptions"), with a message in <err>. The tool runs in shimd's
 * working directory with shimd's environment and PATH, stdin /dev/null:
 * the request carries none of the caller's (the seed's shape, kept).
 *
 * Errors: every failed call is reported on stderr in one line,
 * "shimd: <call> <object>: <reason>". In the accept loop a failure for one
 * client is reported and the loop goes on; setting up the socket is fatal.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The seed's truncation (section 6.5): first to MAX_BYTES bytes, then to
 * MAX_LINES lines; if anything was cut, the marker goes on a line of its
 * own (a newline is added first if the kept part ends mid-line, as
 * toolrund's shaper does, so that the marker is always a whole line). */
#define MAX_BYTES 4000
#define MAX_LINES 200
#define MARKER "...[truncated]\n"

/* A request line, its '\n' included. Longer is a malformed request. */
#define REQ_MAX (1024 * 1024)

/* The reply's header: "SHIM1 " + 3 digits + 2 x (space + 20 digits) + '\n'. */
#define HDR_MAX 64

static volatile sig_atomic_t got_stop;

static void on_stop(int sig)
{
	(void)sig;
	got_stop = 1;
}

/* SIGCHLD only has to interrupt ppoll(); the loop reaps. */
static void on_chld(int sig)
{
	(void)sig;
}

static void warn_errno(const char *call, const char *obj)
{
	int e = errno;

	if (obj)
		fprintf(stderr, "shimd: %s %s: %s\n", call, obj, strerror(e));
	else
		fprintf(stderr, "shimd: %s: %s\n", call, strerror(e));
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);

	if (!q) {
		warn_errno("realloc", NULL);
		_exit(1);
	}
	return q;
}

/* ---- a client: one request, one run, one reply ---------------------- */

struct result {
	int code;
	/* stdout: only the first MAX_BYTES + 1 bytes decide the truncated
	 * result, so only they are kept; the rest is read and dropped. */
	char out[MAX_BYTES + 1 + sizeof(MARKER)];
	size_t out_len;   /* kept in out[] */
	bool out_more;    /* stdout went past MAX_BYTES */
	char *err;        /* stderr: all of it */
	size_t err_len, err_cap;
};

/* Write all of iov[0..n) with MSG_NOSIGNAL: a client that went away is an
 * EPIPE for this child, not a SIGPIPE. */
static int send_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		size_t left = (size_t)w;
		while (n > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

static void send_reply(int c, int code, const char *out, size_t out_len,
		       const char *err, size_t err_len)
{
	char hdr[HDR_MAX];
	int h = snprintf(hdr, sizeof(hdr), "SHIM1 %d %zu %zu\n", code, out_len,
			 err_len);
	struct iovec iov[3] = {
		{ hdr, (size_t)h },
		{ (void *)out, out_len },
		{ (void *)err, err_len },
	};

	if (send_all(c, iov, 3) < 0)
		warn_errno("send", "reply");
}

/* A request the daemon cannot run: the seed's "exceptions", exit 1. */
static void send_error(int c, const char *msg)
{
	char err[256];
	int n = snprintf(err, sizeof(err), "shimd: bad request: %s\n", msg);

	send_reply(c, 1, "", 0, err, (size_t)n);
}

/* Cut r->out to the seed's limits and add the marker if anything was cut. */
static void truncate_out(struct result *r)
{
	size_t n = r->out_len;
	bool cut = r->out_more;
	const char *p = r->out, *end = r->out + n;

	if (n > MAX_BYTES) {
		n = MAX_BYTES;
		end = r->out + n;
		cut = true;
	}
	for (int lines = 0; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		p = nl + 1;
		if (++lines == MAX_LINES) {
			if (p < end) {
				n = (size_t)(p - r->out);
				cut = true;
			}
			break;
		}
	}
	if (cut) {
		if (n > 0 && r->out[n - 1] != '\n')
			r->out[n++] = '\n';
		memcpy(r->out + n, MARKER, sizeof(MARKER) - 1);
		n += sizeof(MARKER) - 1;
	}
	r->out_len = n;
}

/* The tool's side of the fork: never returns. */
static void exec_tool(char **argv, int out_w, int err_w)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (null < 0 || dup2(null, 0) < 0 || dup2(out_w, 1) < 0 ||
	    dup2(err_w, 2) < 0) {
		dprintf(err_w, "shimd: cannot set up %s's fds: %s\n", argv[0],
			strerror(errno));
		_exit(1);
	}
	execvp(argv[0], argv);
	int e = errno;
	dprintf(2, "shimd: cannot run %s: %s\n", argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 1);
}

/* Read what a pipe has into r; false at EOF or error. */
static bool drain(int fd, bool is_out, struct result *r)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n < 0) {
		warn_errno("read", is_out ? "tool stdout" : "tool stderr");
		return false;
	}
	if (n == 0)
		return false;
	if (is_out) {
		size_t room = MAX_BYTES + 1 - r->out_len;
		size_t take = (size_t)n < room ? (size_t)n : room;
		memcpy(r->out + r->out_len, buf, take);
		r->out_len += take;
		if ((size_t)n > take)
			r->out_more = true;
	} else {
		if (r->err_cap - r->err_len < (size_t)n) {
			size_t cap = r->err_cap ? r->err_cap : 4096;
			while (cap - r->err_len < (size_t)n)
				cap *= 2;
			r->err = xrealloc(r->err, cap);
			r->err_cap = cap;
		}
		memcpy(r->err + r->err_len, buf, (size_t)n);
		r->err_len += (size_t)n;
	}
	return true;
}

/* Run argv with stdout and stderr captured until both reach EOF, then wait
 * for it. 0, or -1 when it could not be started (a message is in r->err). */
static int run(char **argv, struct result *r)
{
	int out[2], err[2];

	if (pipe2(out, O_CLOEXEC) < 0) {
		warn_errno("pipe2", "tool stdout");
		return -1;
	}
	if (pipe2(err, O_CLOEXEC) < 0) {
		warn_errno("pipe2", "tool stderr");
		close(out[0]);
		close(out[1]);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		warn_errno("fork", argv[0]);
		close(out[0]);
		close(out[1]);
		close(err[0]);
		close(err[1]);
		return -1;
	}
	if (pid == 0)
		exec_tool(argv, out[1], err[1]);
	close(out[1]);
	close(err[1]);

	struct pollfd pf[2] = {
		{ .fd = out[0], .events = POLLIN },
		{ .fd = err[0], .events = POLLIN },
	};
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			warn_errno("poll", "tool output");
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			if (!drain(pf[i].fd, i == 0, r)) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);

	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			warn_errno("waitpid", argv[0]);
			r->code = 1;
			return 0;
		}
	}
	if (WIFEXITED(st))
		r->code = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		r->code = 128 + WTERMSIG(st);
	else
		r->code = 1;
	return 0;
}

static void serve(int c)
{
	char *req = xrealloc(NULL, REQ_MAX);
	size_t len = 0;
	char *nl = NULL;

	while (!nl) {
		if (len == REQ_MAX) {
			send_error(c, "request line longer than 1 MiB");
			return;
		}
		ssize_t n = read(c, req + len, REQ_MAX - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			warn_errno("read", "request");
			return;
		}
		if (n == 0) {
			/* Nothing at all: a connect to see if shimd listens. */
			if (len > 0)
				send_error(c, "request line has no newline");
			return;
		}
		nl = memchr(req + len, '\n', (size_t)n);
		len += (size_t)n;
	}
	*nl = '\0';
	size_t line = (size_t)(nl - req);
	if (memchr(req, '\0', line)) {
		send_error(c, "request line has a NUL byte");
		return;
	}

	/* The seed's split: fields separated by tabs, the first the command. */
	size_t argc = 1;
	for (const char *p = req; (p = strchr(p, '\t')); p++)
		argc++;
	char **argv = xrealloc(NULL, (argc + 1) * sizeof(*argv));
	char *p = req;
	for (size_t i = 0; i < argc; i++) {
		argv[i] = p;
		p = strchrnul(p, '\t');
		if (*p)
			*p++ = '\0';
	}
	argv[argc] = NULL;

	static struct result r;
	if (run(argv, &r) < 0) {
		send_error(c, "cannot start the command (see shimd's log)");
		return;
	}
	truncate_out(&r);
	send_reply(c, r.code, r.out, r.out_len, r.err, r.err_len);
}

/* ---- the accept loop ------------------------------------------------ */

static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* The tool's fds 0-2 are dup2()ed from fresh fds; if shimd itself started
 * with one of them closed, a pipe could land on it and keep O_CLOEXEC. */
static void open_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int n = open("/dev/null", O_RDWR);
		if (n < 0) {
			warn_errno("open", "/dev/null");
			exit(1);
		}
	}
}

static int set_signal(int sig, void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn };

	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '\0') {
		fprintf(stderr, "usage: shimd SOCKET_PATH\n");
		return 2;
	}
	const char *path = argv[1];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "shimd: socket path longer than %zu bytes: %s\n",
			sizeof(sa.sun_path) - 1, path);
		return 1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	open_std_fds();

	/* SIGTERM, SIGINT and SIGCHLD stay blocked except inside ppoll(), so
	 * none is lost between a check of got_stop and the wait. */
	sigset_t block, oldmask, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &block, &oldmask) < 0) {
		warn_errno("sigprocmask", NULL);
		return 1;
	}
	waitmask = oldmask;
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGCHLD);
	if (set_signal(SIGTERM, on_stop) < 0 || set_signal(SIGINT, on_stop) < 0 ||
	    set_signal(SIGCHLD, on_chld) < 0) {
		warn_errno("sigaction", NULL);
		return 1;
	}

	/* Non-blocking: a client gone between poll and accept is EAGAIN. */
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0) {
		warn_errno("socket", path);
		return 1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		warn_errno("unlink", path);
		return 1;
	}
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		warn_errno("bind", path);
		return 1;
	}
	if (listen(lfd, SOMAXCONN) < 0) {
		warn_errno("listen", path);
		unlink(path);
		return 1;
	}

	for (;;) {
		reap();
		if (got_stop)
			break;
		struct pollfd pf = { .fd = lfd, .events = POLLIN };
		if (ppoll(&pf, 1, NULL, &waitmask) < 0) {
			if (errno == EINTR)
				continue;
			warn_errno("ppoll", path);
			break;
		}
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EAGAIN || errno == EINTR ||
			    errno == ECONNABORTED)
				continue;
			warn_errno("accept", path);
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Out of fds or memory: let children finish. */
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
				continue;
			}
			break;
		}
		pid_t pid = fork();
		if (pid < 0) {
			warn_errno("fork", "client");
			close(c);
			continue;
		}
		if (pid == 0) {
			/* The client's process: default signals, nothing blocked,
			 * as the tool it starts expects. */
			close(lfd);
			set_signal(SIGTERM, SIG_DFL);
			set_signal(SIGINT, SIG_DFL);
			set_signal(SIGCHLD, SIG_DFL);
			sigprocmask(SIG_SETMASK, &oldmask, NULL);
			serve(c);
			close(c);
			_exit(0);
		}
		close(c);
	}

	close(lfd);
	if (unlink(path) < 0 && errno != ENOENT) {
		warn_errno("unlink", path);
		return 1;
	}
	return got_stop ? 0 : 1;
}
