/*
 * rawexec: ask toolrund to run a program as a client that skips the
 * library's own checks would. The Request names EXECUTABLE as given,
 * with this process's working directory and every descriptor it would
 * pass across exec, each at its own number (so /proc/self/fd/N in the
 * program is this process's fd N).
 *
 *   rawexec SOCKET COUNT EXECUTABLE [ARGS...]
 *
 * Sends the request COUNT times, one connection after the other. The
 * program writes straight to this process's stdout and stderr (nothing
 * is shaped). For each request that did not run, prints "not run:
 * REASON"; at the end, "N run, M not run". Exits 0 if every request got
 * an answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "rawclient.h"
#include "toolrun.pb-c.h"

#define MAX_FDS 256

extern char **environ;

static void send_msg(int sock, Toolrun__ClientMessage *m, const int *fds, unsigned nfds)
{
	if (rawclient_send(sock, m, fds, nfds, (uint16_t)nfds) < 0)
		fprintf(stderr, "rawexec: send failed\n");
}

/* The directory, then each fd that survives exec; numbers[] says which. */
static unsigned passed_fds(int *fds, uint32_t *numbers)
{
	unsigned n = 0;
	fds[n++] = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int fd = 0; fd < 1024 && n < MAX_FDS; fd++) {
		int flags = fcntl(fd, F_GETFD);
		if (flags < 0 || (flags & FD_CLOEXEC))
			continue;
		numbers[n - 1] = (uint32_t)fd;
		fds[n++] = fd;
	}
	return n;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "rawexec: connect %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return sock;
}

static void send_request(int sock, int argc, char **argv)
{
	static ProtobufCBinaryData args[64], env[4096];
	int fds[MAX_FDS];
	uint32_t numbers[MAX_FDS];
	size_t nenv = 0;

	Toolrun__Hello h = TOOLRUN__HELLO__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	h.protocol_version = 1;
	h.software = (char *)"rawexec";
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	m.hello = &h;
	send_msg(sock, &m, NULL, 0);

	Toolrun__Request r = TOOLRUN__REQUEST__INIT;
	r.executable = (ProtobufCBinaryData){strlen(argv[0]), (uint8_t *)argv[0]};
	for (int i = 0; i < argc && i < 64; i++)
		args[i] = (ProtobufCBinaryData){strlen(argv[i]), (uint8_t *)argv[i]};
	r.n_argv = (size_t)(argc < 64 ? argc : 64);
	r.argv = args;
	for (char **e = environ; *e && nenv < 4096; e++)
		env[nenv++] = (ProtobufCBinaryData){strlen(*e), (uint8_t *)*e};
	r.n_envp = nenv;
	r.envp = env;
	unsigned n = passed_fds(fds, numbers);
	r.n_fds = n - 1;
	r.fds = numbers;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
	m.request = &r;
	send_msg(sock, &m, fds, n);
	close(fds[0]);
}

/* 1: it ran; 0: it did not (the reason printed); -1: no answer. */
static int await_exit(int sock)
{
	static uint8_t payload[FRAME_MAX_SERVER_PAYLOAD];
	struct frame_reader rd = {
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.payload = payload,
		.payload_cap = sizeof(payload),
	};
	int started = 0;

	for (;;) {
		int r = frame_reader_read(&rd, sock);
		if (r == FRAME_READ_AGAIN) {
			struct pollfd p = {.fd = sock, .events = POLLIN};
			if (poll(&p, 1, 60000) == 0)
				return -1;
			continue;
		}
		if (r < 0 || r == FRAME_READ_EOF)
			return -1;
		Toolrun__ServerMessage *m =
			toolrun__server_message__unpack(NULL, rd.h.length, rd.payload);
		frame_reader_next(&rd);
		if (!m)
			return -1;
		int done = -2;
		if (m->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_STARTED) {
			started = 1;
		} else if (m->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_EXIT) {
			if (!started)
				printf("not run: %s\n", m->exit->reason);
			done = started;
		} else if (m->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_ERROR) {
			printf("error: %s\n", m->error->message);
			done = -1;
		}
		toolrun__server_message__free_unpacked(m, NULL);
		fflush(stdout);
		if (done != -2)
			return done;
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: rawexec SOCKET COUNT EXECUTABLE [ARGS...]\n");
		return 2;
	}
	long count = strtol(argv[2], NULL, 10);
	long ran = 0, refused = 0;

	for (long i = 0; i < count; i++) {
		int sock = connect_to(argv[1]);
		send_request(sock, argc - 3, argv + 3);
		int r = await_exit(sock);
		close(sock);
		if (r < 0) {
			fprintf(stderr, "rawexec: no answer to request %ld\n", i + 1);
			return 1;
		}
		if (r)
			ran++;
		else
			refused++;
	}
	printf("%ld run, %ld not run\n", ran, refused);
	return 0;
}
