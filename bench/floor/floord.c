/*
 * floord: the floor of "a daemon that runs the program" (bench/README.md,
 * "The floor"), the driver's reference line. Not part of the product.
 *
 *   floord --hops 1 SOCKET   one process: it accepts a caller's order
 *                            (floor.h), vforks, execs the program with
 *                            the caller's fds, working directory, argv
 *                            and envp, and writes the wait status back
 *   floord --hops 2 SOCKET   a relay in front of that runner, as the
 *                            listener is in front of the launcher: the
 *                            relay accepts and checks the order, passes
 *                            it with its fds to the runner over a
 *                            socketpair, and the status back
 *
 * Peers: the callers (floor-preload.c) and, with two hops, the relay and
 * the runner each other. One epoll loop per process; SIGCHLD through a
 * signalfd. Every fd is close-on-exec; the program gets only 0, 1, 2.
 * Errors of set-up are fatal; a caller's bad order is dropped with its
 * connection.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "floor.h"

/* Callers at once: far above the driver's 8 loops. */
#define SLOTS 1024
#define MAX_STRINGS 65536

enum tag { TAG_LISTEN, TAG_SIGNAL, TAG_PEER, TAG_CALLER };

/* One caller waiting: its connection, and while its program runs, the
 * program's pid (runner) or 0 (relay: the runner has the pid). */
struct slot {
	int conn; /* -1: free */
	pid_t pid;
	uint32_t id; /* the relay's id, replied to the peer (runner) */
	bool via_peer;
};

static struct slot slots[SLOTS];
static int epfd;
static char order_buf[sizeof(uint32_t) + FLOOR_ORDER_MAX];
/* Set by a vfork child whose exec failed (it shares our memory). */
static int child_errno;

static void die(const char *what)
{
	fprintf(stderr, "floord: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void watch(int fd, enum tag tag, int slot)
{
	struct epoll_event ev = {.events = EPOLLIN,
				 .data.u64 = (uint64_t)tag << 32 | (uint32_t)slot};
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl");
}

static int free_slot(void)
{
	for (int i = 0; i < SLOTS; i++)
		if (slots[i].conn < 0)
			return i;
	return -1;
}

static void release(int i)
{
	close(slots[i].conn);
	slots[i] = (struct slot){.conn = -1};
}

/* Receive one message with up to FLOOR_FDS fds into BUF. Returns its
 * length, or -1 (closed, truncated, or not exactly FLOOR_FDS fds). */
static ssize_t recv_with_fds(int fd, char *buf, size_t size, int fds[FLOOR_FDS])
{
	union {
		char buf[CMSG_SPACE(FLOOR_FDS * sizeof(int))];
		struct cmsghdr align;
	} control;
	struct iovec iov = {.iov_base = buf, .iov_len = size};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	int got = 0;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (n > 0 && c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		got = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), (size_t)got * sizeof(int));
	}
	if (n <= 0 || got != FLOOR_FDS || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < got; i++)
			close(fds[i]);
		return -1;
	}
	return n;
}

static bool send_with_fds(int fd, const void *buf, size_t len, const int fds[FLOOR_FDS])
{
	union {
		char buf[CMSG_SPACE(FLOOR_FDS * sizeof(int))];
		struct cmsghdr align;
	} control;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(FLOOR_FDS * sizeof(int));
	memcpy(CMSG_DATA(c), fds, FLOOR_FDS * sizeof(int));
	return sendmsg(fd, &msg, MSG_NOSIGNAL) == (ssize_t)len;
}

/* Decode strictly: the header, then exactly argc + envc + 1 strings.
 * Fills ARGV and ENVP (NULL-terminated) when given; false if malformed. */
static bool decode_order(char *buf, size_t len, const char **path, char **argv, char **envp)
{
	struct floor_order o;
	if (len < sizeof(o))
		return false;
	memcpy(&o, buf, sizeof(o));
	if (o.argc < 1 || (uint64_t)o.argc + o.envc + 1 > MAX_STRINGS)
		return false;
	char *p = buf + sizeof(o), *end = buf + len;
	for (uint32_t i = 0; i < o.argc + o.envc + 1; i++) {
		char *nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			return false;
		if (i == 0 && path)
			*path = p;
		else if (i <= o.argc && argv)
			argv[i - 1] = p;
		else if (i > o.argc && envp)
			envp[i - 1 - o.argc] = p;
		p = nul + 1;
	}
	if (argv)
		argv[o.argc] = NULL;
	if (envp)
		envp[o.envc] = NULL;
	return p == end;
}

/* The program: vfork, the caller's fds and directory, exec. Returns its
 * pid, or -1 with *err set (the order's arrays are free again either
 * way: a vfork parent resumes once the child has exec'd or exited). */
static pid_t spawn(const char *path, char **argv, char **envp, const int fds[FLOOR_FDS], int *err)
{
	static sigset_t none;
	child_errno = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0 ||
		    fchdir(fds[3]) < 0) {
			child_errno = errno;
			_exit(127);
		}
		execve(path, argv, envp);
		child_errno = errno;
		_exit(127);
	}
	*err = pid < 0 ? errno : child_errno;
	if (pid > 0 && *err)
		waitpid(pid, NULL, 0);
	return *err ? -1 : pid;
}

/* Run the order in BUF for slot I; false if it never ran (*err). */
static bool run_order(int i, char *buf, size_t len, const int fds[FLOOR_FDS], int *err)
{
	struct floor_order o;
	const char *path = NULL;
	*err = EINVAL;
	if (len < sizeof(o))
		return false;
	memcpy(&o, buf, sizeof(o));
	char **argv = malloc(((size_t)o.argc + o.envc + 2) * sizeof(char *));
	if (argv && decode_order(buf, len, &path, argv, argv + o.argc + 1))
		slots[i].pid = spawn(path, argv, argv + o.argc + 1, fds, err);
	free(argv);
	return slots[i].pid > 0;
}

static void reply(int i, int wait_status, int err)
{
	struct floor_relayed_status r = {.id = slots[i].id,
					 .status = {.wait_status = wait_status, .exec_errno = err}};
	if (slots[i].via_peer) {
		send(slots[i].conn, &r, sizeof(r), MSG_NOSIGNAL);
		slots[i] = (struct slot){.conn = -1};
	} else {
		send(slots[i].conn, &r.status, sizeof(r.status), MSG_NOSIGNAL);
		release(i);
	}
}

static void close_fds(const int fds[FLOOR_FDS])
{
	for (int k = 0; k < FLOOR_FDS; k++)
		close(fds[k]);
}

/* Runner: an order from a caller (one hop), or from the relay prefixed
 * with its id (two hops, CONN the relay's socket). */
static void runner_dispatch_order(int conn, bool via_peer)
{
	int fds[FLOOR_FDS], err, i = free_slot();
	size_t skip = via_peer ? sizeof(uint32_t) : 0;
	ssize_t n = recv_with_fds(conn, order_buf, sizeof(order_buf), fds);
	if (n < 0 || (size_t)n < skip || i < 0) {
		if (n >= 0)
			close_fds(fds);
		if (!via_peer) {
			epoll_ctl(epfd, EPOLL_CTL_DEL, conn, NULL);
			close(conn);
		} else if (n < 0) {
			exit(0); /* the relay is gone */
		}
		return;
	}
	slots[i] = (struct slot){.conn = conn, .via_peer = via_peer};
	memcpy(&slots[i].id, order_buf, skip);
	if (!via_peer)
		epoll_ctl(epfd, EPOLL_CTL_DEL, conn, NULL);
	if (!run_order(i, order_buf + skip, (size_t)n - skip, fds, &err))
		reply(i, 0, err);
	close_fds(fds);
}

static void runner_dispatch_exits(int sigfd)
{
	struct signalfd_siginfo si;
	int status;
	pid_t pid;
	while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (int i = 0; i < SLOTS; i++)
			if (slots[i].conn >= 0 && slots[i].pid == pid) {
				reply(i, status, 0);
				break;
			}
}

/* Relay: a caller's order, checked and passed on with its fds. */
static void relay_dispatch_caller(int i, int runner)
{
	int fds[FLOOR_FDS];
	char *order = order_buf + sizeof(uint32_t);
	ssize_t n = recv_with_fds(slots[i].conn, order, FLOOR_ORDER_MAX, fds);
	epoll_ctl(epfd, EPOLL_CTL_DEL, slots[i].conn, NULL);
	if (n < 0) {
		release(i);
		return;
	}
	uint32_t id = (uint32_t)i;
	memcpy(order_buf, &id, sizeof(id));
	if (!decode_order(order, (size_t)n, NULL, NULL, NULL) ||
	    !send_with_fds(runner, order_buf, sizeof(id) + (size_t)n, fds))
		release(i);
	close_fds(fds);
}

static void relay_dispatch_runner(int runner)
{
	struct floor_relayed_status r;
	ssize_t n = recv(runner, &r, sizeof(r), 0);
	if (n == 0)
		exit(1);
	if (n != (ssize_t)sizeof(r) || r.id >= SLOTS || slots[r.id].conn < 0)
		return;
	send(slots[r.id].conn, &r.status, sizeof(r.status), MSG_NOSIGNAL);
	release((int)r.id);
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		die(path);
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 256) < 0)
		die(path);
	return fd;
}

static void accept_caller(int lfd, bool relay)
{
	int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return;
	if (!relay) {
		/* The runner reads the order, then takes a slot. */
		watch(conn, TAG_CALLER, conn);
		return;
	}
	int i = free_slot();
	if (i < 0) {
		close(conn);
		return;
	}
	slots[i] = (struct slot){.conn = conn};
	watch(conn, TAG_CALLER, i);
}

/* One loop for the three roles: LFD the callers' socket (-1: none),
 * PEER the other process (-1: none), SIGFD the exits (-1: none). */
static void serve(int lfd, int peer, int sigfd, bool relay)
{
	struct epoll_event ev[64];
	for (;;) {
		int n = epoll_wait(epfd, ev, 64, -1);
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int k = 0; k < n; k++) {
			enum tag tag = (enum tag)(ev[k].data.u64 >> 32);
			int i = (int)(uint32_t)ev[k].data.u64;
			if (tag == TAG_LISTEN)
				accept_caller(lfd, relay);
			else if (tag == TAG_SIGNAL)
				runner_dispatch_exits(sigfd);
			else if (tag == TAG_PEER && relay)
				relay_dispatch_runner(peer);
			else if (tag == TAG_PEER)
				runner_dispatch_order(peer, true);
			else if (relay)
				relay_dispatch_caller(i, peer);
			else
				runner_dispatch_order(i, false); /* i: the connection */
		}
	}
}

static int exits_fd(void)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0)
		die("sigprocmask");
	int fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		die("signalfd");
	return fd;
}

int main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "--hops") != 0 ||
	    (strcmp(argv[2], "1") != 0 && strcmp(argv[2], "2") != 0)) {
		fprintf(stderr, "usage: floord --hops 1|2 SOCKET\n");
		return 2;
	}
	for (int i = 0; i < SLOTS; i++)
		slots[i].conn = -1;
	int lfd = listen_on(argv[3]);
	int pair[2] = {-1, -1};
	bool two = argv[2][0] == '2';
	if (two && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
		die("socketpair");
	if (two) {
		pid_t runner = fork();
		if (runner < 0)
			die("fork");
		if (runner == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			close(lfd);
			close(pair[0]);
			lfd = -1;
		} else {
			close(pair[1]);
		}
		two = runner > 0; /* from here: am I the relay? */
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1");
	int peer = pair[0] >= 0 ? (two ? pair[0] : pair[1]) : -1;
	int sigfd = two ? -1 : exits_fd();
	if (lfd >= 0)
		watch(lfd, TAG_LISTEN, 0);
	if (peer >= 0)
		watch(peer, TAG_PEER, 0);
	if (sigfd >= 0)
		watch(sigfd, TAG_SIGNAL, 0);
	serve(lfd, peer, sigfd, two);
}
