/*
 * rawframe: send hand-made, mostly malformed, frames to toolrund and say
 * what came back.
 *
 *   rawframe SOCKET CASE
 *
 * Prints one line per message received ("hello", "error CODE: text",
 * "exit CODE: reason", ...) and finally "closed" when the daemon closes
 * the connection, or "open" if it is still open after 60 s without a
 * word (a bound for a daemon that hangs, not a deadline: on a loaded
 * machine an answer may take seconds). Exits 0 if it could talk to the
 * daemon at all.
 *
 * Cases: garbage, huge-length, too-large, bad-version, bad-flags,
 * undecodable, empty-message, ping-first, wrong-version, fds-missing,
 * fds-on-hello, cut-short, big-request, idle (print "connected", then
 * send nothing until stdin ends), reload, reader-gone-first,
 * hello-held (a Hello with request_follows, then a second of silence:
 * print "held" if nothing came meanwhile, "early" if something did; then
 * a Ping), hello-alone (a Hello without it: print "answered" once
 * something comes, then a Ping).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "rawclient.h"
#include "toolrun.pb-c.h"

static int sock;

static void send_raw(const void *p, size_t n)
{
	if (write(sock, p, n) != (ssize_t)n)
		fprintf(stderr, "rawframe: write: %s\n", strerror(errno));
}

static void send_msg(Toolrun__ClientMessage *m, const int *fds, unsigned nfds,
		     int claimed_fds)
{
	uint16_t claimed = (uint16_t)(claimed_fds >= 0 ? claimed_fds : (int)nfds);
	if (rawclient_send(sock, m, fds, nfds, claimed) < 0)
		fprintf(stderr, "rawframe: send failed\n");
}

static void send_hello(uint32_t version)
{
	if (rawclient_hello(sock, version, "rawframe") < 0)
		fprintf(stderr, "rawframe: send failed\n");
}

/* Whether the daemon has written anything within ms milliseconds. */
static bool answered_within(int ms)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	return poll(&p, 1, ms) > 0;
}

static void send_ping(void)
{
	Toolrun__Ping p = TOOLRUN__PING__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
	m.ping = &p;
	send_msg(&m, NULL, 0, -1);
}

static void header(uint32_t len, uint16_t nfds, uint8_t version, uint8_t flags)
{
	uint8_t h[8];
	frame_header_pack(h, len, nfds);
	h[6] = version;
	h[7] = flags;
	send_raw(h, 8);
}

static void print_reply(const Toolrun__ServerMessage *m)
{
	switch (m->msg_case) {
	case TOOLRUN__SERVER_MESSAGE__MSG_HELLO:
		printf("hello %u\n", m->hello->protocol_version);
		break;
	case TOOLRUN__SERVER_MESSAGE__MSG_ERROR:
		printf("error %s: %s\n",
		       protobuf_c_enum_descriptor_get_value(&toolrun__error_code__descriptor,
							   m->error->code)->name,
		       m->error->message);
		break;
	case TOOLRUN__SERVER_MESSAGE__MSG_EXIT:
		printf("exit %d: %s\n", m->exit->code, m->exit->reason);
		break;
	case TOOLRUN__SERVER_MESSAGE__MSG_STARTED:
		printf("started\n");
		break;
	case TOOLRUN__SERVER_MESSAGE__MSG_OUTPUT:
		printf("output %zu bytes\n", m->output->data.len);
		break;
	case TOOLRUN__SERVER_MESSAGE__MSG_PONG:
		printf("pong\n");
		break;
	case TOOLRUN__SERVER_MESSAGE__MSG_RELOADED:
		printf("reloaded %s: %s\n", m->reloaded->ok ? "ok" : "refused",
		       m->reloaded->message);
		break;
	case TOOLRUN__SERVER_MESSAGE__MSG__NOT_SET:
	default:
		printf("unknown\n");
	}
}

static void read_replies(void)
{
	rawclient_print_replies(sock, print_reply);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: rawframe SOCKET CASE\n");
		return 2;
	}
	const char *c = argv[2];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "rawframe: connect %s: %s\n", argv[1], strerror(errno));
		return 1;
	}

	if (!strcmp(c, "garbage")) {
		uint8_t junk[4096];
		srand(42);
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)rand();
		send_raw(junk, sizeof(junk));
	} else if (!strcmp(c, "huge-length")) {
		header(0xFFFFFFFFu, 0, FRAME_VERSION, 0);
	} else if (!strcmp(c, "too-large")) {
		send_hello(1);
		header(FRAME_MAX_CLIENT_PAYLOAD + 1, 0, FRAME_VERSION, 0);
	} else if (!strcmp(c, "bad-version")) {
		header(4, 0, 2, 0);
	} else if (!strcmp(c, "bad-flags")) {
		header(4, 0, FRAME_VERSION, 0x80);
	} else if (!strcmp(c, "undecodable")) {
		uint8_t ff[10];
		memset(ff, 0xff, sizeof(ff));
		header(sizeof(ff), 0, FRAME_VERSION, 0);
		send_raw(ff, sizeof(ff));
	} else if (!strcmp(c, "empty-message")) {
		header(0, 0, FRAME_VERSION, 0);
	} else if (!strcmp(c, "ping-first")) {
		Toolrun__Ping p = TOOLRUN__PING__INIT;
		Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
		m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
		m.ping = &p;
		send_msg(&m, NULL, 0, -1);
	} else if (!strcmp(c, "wrong-version")) {
		send_hello(99);
	} else if (!strcmp(c, "fds-missing")) {
		/* A Request whose header announces two fds; one is sent. */
		send_hello(1);
		Toolrun__Request r = TOOLRUN__REQUEST__INIT;
		Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
		r.executable.data = (uint8_t *)"/bin/cat";
		r.executable.len = 8;
		m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
		m.request = &r;
		int dir = open(".", O_PATH | O_DIRECTORY);
		send_msg(&m, &dir, 1, 2);
	} else if (!strcmp(c, "fds-on-hello")) {
		Toolrun__Hello h = TOOLRUN__HELLO__INIT;
		Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
		h.protocol_version = 1;
		m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
		m.hello = &h;
		int dir = open(".", O_PATH | O_DIRECTORY);
		send_msg(&m, &dir, 1, -1);
	} else if (!strcmp(c, "cut-short")) {
		header(100, 0, FRAME_VERSION, 0);
		send_raw("abc", 3);
		shutdown(sock, SHUT_WR);
	} else if (!strcmp(c, "reload")) {
		send_hello(1);
		Toolrun__Reload rl = TOOLRUN__RELOAD__INIT;
		Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
		m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_RELOAD;
		m.reload = &rl;
		send_msg(&m, NULL, 0, -1);
	} else if (!strcmp(c, "reader-gone-first")) {
		/* ReaderGone belongs to a running request, not before one. */
		send_hello(1);
		Toolrun__ReaderGone g = TOOLRUN__READER_GONE__INIT;
		Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
		g.stream = TOOLRUN__STREAM__STREAM_STDOUT;
		m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_READER_GONE;
		m.reader_gone = &g;
		send_msg(&m, NULL, 0, -1);
	} else if (!strcmp(c, "hello-held")) {
		/* The daemon holds its Hello for the message that follows;
		 * a second of silence is no proof, but an answer is a fault. */
		Toolrun__Hello h = TOOLRUN__HELLO__INIT;
		Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
		h.protocol_version = 1;
		h.request_follows = true;
		m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
		m.hello = &h;
		send_msg(&m, NULL, 0, -1);
		printf("%s\n", answered_within(1000) ? "early" : "held");
		fflush(stdout);
		send_ping();
	} else if (!strcmp(c, "hello-alone")) {
		/* A client that waits for the daemon's Hello gets it. */
		send_hello(1);
		printf("%s\n", answered_within(60 * 1000) ? "answered" : "unanswered");
		fflush(stdout);
		send_ping();
	} else if (!strcmp(c, "idle")) {
		printf("connected\n");
		fflush(stdout);
		char buf[256];
		while (read(0, buf, sizeof(buf)) > 0)
			;
		printf("idle done\n");
		return 0;
	} else if (!strcmp(c, "big-request")) {
		/* ARG_MAX's worth of arguments, for a program that is not
		 * listed: the daemon must decode it and say so. */
		send_hello(1);
		enum { N = 2 * 1024, LEN = 1024 };
		static ProtobufCBinaryData args[N];
		static uint8_t text[LEN];
		memset(text, 'a', sizeof(text));
		for (int i = 0; i < N; i++)
			args[i] = (ProtobufCBinaryData){.len = LEN, .data = text};
		Toolrun__Request r = TOOLRUN__REQUEST__INIT;
		Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
		r.executable.data = (uint8_t *)"/bin/not-a-listed-tool";
		r.executable.len = strlen("/bin/not-a-listed-tool");
		r.n_argv = N;
		r.argv = args;
		m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
		m.request = &r;
		int dir = open(".", O_PATH | O_DIRECTORY);
		send_msg(&m, &dir, 1, -1);
	} else {
		fprintf(stderr, "rawframe: unknown case %s\n", c);
		return 2;
	}
	read_replies();
	return 0;
}
