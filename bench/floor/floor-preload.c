/*
 * The floor's caller side (bench/README.md, "The floor"): preloaded like
 * libtoolrun.so, it hands an execve of a listed program to floord and
 * stands in for the program, as toolrun's client does, at the least cost
 * it can: one connect, one sendmsg with argv, envp and the fds 0, 1, 2
 * and the working directory, one recv of the status, then exit with the
 * program's status or die by its signal. Nothing else of toolrun's: no
 * policy, no shaping, no signal forwarding, and no fallback: a listed
 * program whose order cannot be handed over fails to exec (ECONNREFUSED),
 * as toolrun's with `fallback = fail`, so that a benchmark of the floor
 * can never measure a direct call instead.
 *
 * FLOOR_SOCKET (floord's socket) and FLOOR_TOOLS (basenames, separated by
 * ':') are read from the envp the caller passes, as the program would get
 * them: bash's own getenv sees its shell variables, not its environ.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "floor.h"

#define EXPORT __attribute__((visibility("default")))

static const char *env_value(char *const envp[], const char *name)
{
	size_t n = strlen(name);
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* Is PATH's basename one of the ':'-separated TOOLS? */
static bool is_listed(const char *path, const char *tools)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t len = strlen(base);
	for (const char *p = tools; *p;) {
		size_t n = strcspn(p, ":");
		if (n == len && strncmp(p, base, n) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

static int connect_floord(const char *socket_path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, socket_path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static size_t count(char *const v[], size_t *bytes)
{
	size_t n = 0;
	for (; v && v[n]; n++)
		*bytes += strlen(v[n]) + 1;
	return n;
}

static char *put(char *dst, const char *s)
{
	size_t n = strlen(s) + 1;
	memcpy(dst, s, n);
	return dst + n;
}

/* The order in one message, the fds attached; false if it did not go. */
static bool send_order(int sock, const char *path, char *const argv[], char *const envp[])
{
	size_t bytes = sizeof(struct floor_order) + strlen(path) + 1;
	struct floor_order o = {.argc = (uint32_t)count(argv, &bytes),
				.envc = (uint32_t)count(envp, &bytes)};
	if (bytes > FLOOR_ORDER_MAX)
		return false;
	char *buf = malloc(bytes), *p = buf;
	if (!buf)
		return false;
	memcpy(p, &o, sizeof(o));
	p = put(p + sizeof(o), path);
	for (uint32_t i = 0; i < o.argc; i++)
		p = put(p, argv[i]);
	for (uint32_t i = 0; i < o.envc; i++)
		p = put(p, envp[i]);

	int fds[FLOOR_FDS] = {0, 1, 2, open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} control;
	struct iovec iov = {.iov_base = buf, .iov_len = bytes};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	ssize_t sent = fds[3] < 0 ? -1 : sendmsg(sock, &msg, MSG_NOSIGNAL);
	if (fds[3] >= 0)
		close(fds[3]);
	free(buf);
	return sent == (ssize_t)bytes;
}

/* Die of SIG as the program did, so that the shell reports 128+SIG. */
static void die_by_signal(int sig)
{
	sigset_t one;
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	_exit(128 + sig); /* not a terminating signal after all */
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	const char *socket_path = env_value(envp, "FLOOR_SOCKET");
	const char *tools = env_value(envp, "FLOOR_TOOLS");
	if (!socket_path || !tools || !is_listed(path, tools))
		return (int)syscall(SYS_execve, path, argv, envp);
	int sock = connect_floord(socket_path);
	if (sock < 0 || !send_order(sock, path, argv, envp)) {
		static const char why[] = "floor: cannot hand the program to floord\n";
		(void)!write(2, why, sizeof(why) - 1);
		if (sock >= 0)
			close(sock);
		errno = ECONNREFUSED;
		return -1;
	}

	/* The exec hook replaces the process: from here on it is the
	 * program's stand-in, and ends as the program did. */
	struct floor_status st;
	ssize_t n;
	while ((n = recv(sock, &st, sizeof(st), 0)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(st)) {
		static const char why[] = "floor: floord did not say how the program ended\n";
		(void)!write(2, why, sizeof(why) - 1);
		_exit(1);
	}
	close(sock);
	if (st.exec_errno) {
		errno = st.exec_errno;
		return -1;
	}
	if (WIFSIGNALED(st.wait_status))
		die_by_signal(WTERMSIG(st.wait_status));
	_exit(WEXITSTATUS(st.wait_status));
}
