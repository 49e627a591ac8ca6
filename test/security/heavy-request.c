/*
 * heavy-request SOCKET CASE N PROGRAM [ARG]: send toolrund one Request
 * that is as heavy as the protocol allows, and print what came back.
 *
 *   fds N       PROGRAM ARG, with N descriptors besides the working
 *               directory (/dev/null at 3, 4, ...) and both streams
 *               shaped: the listener adds a pipe for each
 *   argv N      PROGRAM followed by N empty arguments: 2 bytes each on
 *               the wire, 9 as execve counts them (a NUL, a pointer)
 *   edge N      an agent command: PROGRAM followed by N empty arguments
 *               and one variable that make argv and envp exactly the most
 *               any execve takes (FRAME_MAX_EXEC_BYTES): the request is
 *               within it, the order the listener would send the launcher
 *               (with the variables it adds for a command) is not
 *
 * Prints one line per message ("hello", "started", "output N bytes",
 * "exit CODE: reason", "error CODE: text"), then "closed", or "open" if
 * the daemon says nothing for 60 s. Exits 0 if it could talk to it; gives
 * up (SIGALRM) after 180 s in all, whatever the daemon does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "rawclient.h"
#include "toolrun.pb-c.h"

static void die(const char *what)
{
	fprintf(stderr, "heavy-request: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die(path);
	return fd;
}

static void send_message(int sock, Toolrun__ClientMessage *m, const int *fds, unsigned nfds)
{
	size_t len = frame_size(&m->base);

	if (len - FRAME_HEADER_SIZE > FRAME_MAX_CLIENT_PAYLOAD) {
		fprintf(stderr, "heavy-request: a payload of %zu bytes is over the maximum\n",
			len - FRAME_HEADER_SIZE);
		exit(1);
	}
	if (rawclient_send(sock, m, fds, nfds, (uint16_t)nfds) < 0)
		die("send");
}

static void send_hello(int sock)
{
	if (rawclient_hello(sock, TOOLRUN__VERSION__VERSION_1, "heavy-request") < 0)
		die("send");
}

static ProtobufCBinaryData text(const char *s)
{
	return (ProtobufCBinaryData){.len = strlen(s), .data = (uint8_t *)s};
}

/* One line for a message. */
static void print_reply(const Toolrun__ServerMessage *m)
{
	const ProtobufCEnumValue *v;

	switch (m->msg_case) {
	case TOOLRUN__SERVER_MESSAGE__MSG_HELLO:
		printf("hello\n");
		return;
	case TOOLRUN__SERVER_MESSAGE__MSG_STARTED:
		printf("started\n");
		return;
	case TOOLRUN__SERVER_MESSAGE__MSG_OUTPUT:
		printf("output %zu bytes\n", m->output->data.len);
		return;
	case TOOLRUN__SERVER_MESSAGE__MSG_EXIT:
		if (m->exit->reason && m->exit->reason[0])
			printf("exit %d: %s\n", m->exit->code, m->exit->reason);
		else
			printf("exit %d\n", m->exit->code);
		return;
	case TOOLRUN__SERVER_MESSAGE__MSG_ERROR:
		v = protobuf_c_enum_descriptor_get_value(&toolrun__error_code__descriptor,
							 m->error->code);
		printf("error %s: %s\n", v ? v->name : "?", m->error->message);
		return;
	default:
		printf("message %d\n", (int)m->msg_case);
		return;
	}
}

static void print_replies(int sock)
{
	rawclient_print_replies(sock, print_reply);
}

/* The cwd, then n fds on /dev/null, to be received at 3, 4, ... */
static int *open_fds(unsigned n, uint32_t **targets)
{
	struct rlimit rl;
	int *fds = calloc(n + 1, sizeof(int));

	*targets = calloc(n + 1, sizeof(uint32_t));
	if (!fds || !*targets)
		die("calloc");
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((fds[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		die("open /");
	for (unsigned i = 0; i < n; i++) {
		if ((fds[i + 1] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			die("open /dev/null");
		(*targets)[i] = 3 + i;
	}
	return fds;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: heavy-request SOCKET fds|argv|edge N PROGRAM [ARG]\n");
		return 2;
	}
	const char *what = argv[2];
	unsigned long n = strtoul(argv[3], NULL, 10);
	const char *prog = argv[4], *base = strrchr(prog, '/');
	Toolrun__Request r = TOOLRUN__REQUEST__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	bool many_fds = strcmp(what, "fds") == 0;
	size_t nargv = many_fds ? (argc > 5 ? 2 : 1) : 1 + n;
	ProtobufCBinaryData *args = calloc(nargv, sizeof(*args));
	ProtobufCBinaryData env;
	char *var = NULL;
	uint32_t *targets;
	int *fds = open_fds(many_fds ? (unsigned)n : 0, &targets);

	if (!args)
		die("calloc");
	args[0] = text(base ? base + 1 : prog);
	if (many_fds && argc > 5)
		args[1] = text(argv[5]);
	r.executable = text(prog);
	r.n_argv = nargv;
	r.argv = args;
	r.cwd = text("/");
	r.n_fds = many_fds ? n : 0;
	r.fds = targets;
	r.shape_stdout = r.shape_stderr = true;
	if (strcmp(what, "edge") == 0) {
		/* What execve takes, less what argv takes of it. */
		size_t room = FRAME_MAX_EXEC_BYTES - FRAME_EXEC_COST(args[0].len) -
			      n * FRAME_EXEC_COST(0) - FRAME_EXEC_COST(0);
		var = malloc(room + 1);
		if (!var)
			die("malloc");
		memset(var, 'x', room);
		memcpy(var, "HEAVY=", 6);
		var[room] = '\0';
		env = text(var);
		r.n_envp = 1;
		r.envp = &env;
		r.command = true;
	} else if (!many_fds && strcmp(what, "argv") != 0) {
		fprintf(stderr, "heavy-request: no case %s\n", what);
		return 2;
	}
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
	m.request = &r;

	alarm(180);
	int sock = connect_to(argv[1]);
	send_hello(sock);
	send_message(sock, &m, fds, (unsigned)r.n_fds + 1);
	print_replies(sock);
	close(sock);
	for (size_t i = 0; i <= r.n_fds; i++)
		close(fds[i]);
	free(fds);
	free(targets);
	free(args);
	free(var);
	return 0;
}
