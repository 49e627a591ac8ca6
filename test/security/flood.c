/*
 * flood SOCKET CASE ...: clients that misuse toolrund's socket on
 * purpose, many connections at a time, and report what the daemon did.
 *
 *   idle N SECONDS     open N connections, send nothing, hold them for
 *                      SECONDS; then say how many the daemon closed, and
 *                      why (its Error messages, counted by text)
 *   partial N SECONDS  the same, each sending half a frame header
 *   garbage N SEED     N connections, each sending 1 byte to 64 KiB of
 *                      random bytes (from SEED), then closing its side
 *   big N BYTES        N connections: Hello, then a frame that announces
 *                      the largest Request and delivers BYTES of it; wait
 *                      3 s and count the replies as above
 *   fds N K            N connections: Hello, then a Request that
 *                      announces K fds and delivers them with its first
 *                      byte, then nothing; count the replies
 *   stall-after PROG ARG
 *                      Hello, a Request that runs PROG ARG, then the first
 *                      bytes of a frame and nothing more; print every
 *                      reply until the daemon closes (at most 30 s)
 *
 * Each reply line is "error CODE: text", "closed" or "open"; counts are
 * "N× <line>", most frequent first.
 *
 * The cases that count replies take one more, optional, argument: WANT,
 * how many connections must have ended (an Error or a close) before they
 * are counted. After its own wait, flood waits for those, up to 60 s:
 * on a loaded machine the daemon may take longer than usual to answer a
 * flood, and a late answer must not read as "open". Without WANT, the
 * connections are counted as they are after the case's own wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "rawclient.h"
#include "toolrun.pb-c.h"

#define MAX_LINES 64

struct tally {
	char *line[MAX_LINES];
	unsigned count[MAX_LINES];
	unsigned n;
};

static void tally_add(struct tally *t, const char *line)
{
	for (unsigned i = 0; i < t->n; i++)
		if (strcmp(t->line[i], line) == 0) {
			t->count[i]++;
			return;
		}
	if (t->n < MAX_LINES) {
		t->line[t->n] = strdup(line);
		t->count[t->n++] = 1;
	}
}

static void tally_print(struct tally *t)
{
	for (;;) {
		unsigned best = 0, at = 0;
		for (unsigned i = 0; i < t->n; i++)
			if (t->count[i] > best)
				best = t->count[i], at = i;
		if (!best)
			return;
		printf("%u× %s\n", best, t->line[at]);
		t->count[at] = 0;
		free(t->line[at]);
		t->line[at] = NULL;
	}
}

static void close_all(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
}

static void die(const char *what)
{
	fprintf(stderr, "flood: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	return fd;
}

static void send_message(int fd, Toolrun__ClientMessage *m, const int *fds, unsigned nfds)
{
	if (rawclient_send(fd, m, fds, nfds, (uint16_t)nfds) < 0)
		die("send");
}

static void send_hello(int fd)
{
	if (rawclient_hello(fd, TOOLRUN__VERSION__VERSION_1, "flood") < 0)
		die("send");
}

/*
 * Read one reply, waiting up to ms. Returns false when the connection is
 * still open with nothing more to say. Fills line with what came.
 */
static bool next_reply(int fd, int ms, char *line, size_t len)
{
	static uint8_t payload[FRAME_MAX_SERVER_PAYLOAD];
	struct frame_reader rd = {
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.payload = payload,
		.payload_cap = sizeof(payload),
	};
	for (;;) {
		int r = frame_reader_read(&rd, fd);
		if (r == FRAME_READ_AGAIN) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			if (poll(&p, 1, ms) <= 0) {
				snprintf(line, len, "open");
				return false;
			}
			continue;
		}
		if (r == FRAME_READ_EOF || r == -ECONNRESET) {
			snprintf(line, len, "closed");
			return true;
		}
		if (r < 0) {
			snprintf(line, len, "bad reply: %s", strerror(-r));
			return true;
		}
		Toolrun__ServerMessage *m =
			toolrun__server_message__unpack(NULL, rd.h.length, rd.payload);
		frame_reader_next(&rd);
		if (!m)
			snprintf(line, len, "undecodable reply");
		else if (m->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_ERROR) {
			const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
				&toolrun__error_code__descriptor, m->error->code);
			snprintf(line, len, "error %s: %s", v ? v->name : "?", m->error->message);
		}
		else if (m->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_HELLO)
			snprintf(line, len, "hello");
		else if (m->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_STARTED)
			snprintf(line, len, "started");
		else if (m->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_EXIT)
			snprintf(line, len, "exit %d", m->exit->code);
		else
			snprintf(line, len, "message %d", (int)m->msg_case);
		if (m)
			toolrun__server_message__free_unpacked(m, NULL);
		return true;
	}
}

/* The longest collect() waits for the connections it was told to expect
 * to end. */
#define COLLECT_WAIT_S 60

/* What each connection ended with: its last reply other than hello, an
 * Error taking precedence over the close that follows it. Waits until at
 * least WANT connections have ended (an Error or a close), at most
 * COLLECT_WAIT_S; with WANT 0, takes what is there. */
static void collect(int *fds, unsigned n, unsigned want)
{
	struct tally t = {0};
	char line[600];
	char (*last)[600] = calloc(n, sizeof(*last));
	bool *ended = calloc(n, sizeof(bool));
	unsigned nended = 0;
	time_t start = time(NULL);

	if (!last || !ended)
		die("calloc");
	for (unsigned i = 0; i < n; i++)
		snprintf(last[i], sizeof(last[i]), "open");
	for (;;) {
		for (unsigned i = 0; i < n; i++) {
			if (ended[i])
				continue;
			while (next_reply(fds[i], 0, line, sizeof(line))) {
				if (strcmp(line, "closed") == 0) {
					if (strncmp(last[i], "error ", 6) != 0)
						snprintf(last[i], sizeof(last[i]), "%s", line);
					break;
				}
				if (strcmp(line, "hello") != 0)
					snprintf(last[i], sizeof(last[i]), "%s", line);
			}
			if (strcmp(last[i], "open") != 0) {
				ended[i] = true;
				nended++;
			}
		}
		if (nended >= want || time(NULL) - start >= COLLECT_WAIT_S)
			break;
		struct timespec ts = {.tv_nsec = 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < n; i++)
		tally_add(&t, last[i]);
	tally_print(&t);
	free(last);
	free(ended);
}

static void set_nonblocking(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int case_idle(const char *path, unsigned n, unsigned seconds, bool partial,
		     unsigned want)
{
	int *fds = calloc(n, sizeof(int));
	for (unsigned i = 0; i < n; i++) {
		fds[i] = connect_to(path);
		if (partial) {
			uint8_t h[FRAME_HEADER_SIZE];
			frame_header_pack(h, 16, 0);
			if (write(fds[i], h, 4) != 4)
				die("write");
		}
	}
	printf("opened %u\n", n);
	fflush(stdout);
	sleep(seconds);
	for (unsigned i = 0; i < n; i++)
		set_nonblocking(fds[i]);
	collect(fds, n, want);
	close_all(fds, n);
	return 0;
}

static int case_big(const char *path, unsigned n, size_t bytes, unsigned want)
{
	int *fds = calloc(n, sizeof(int));
	uint8_t *junk = calloc(1, bytes);
	for (unsigned i = 0; i < n; i++) {
		fds[i] = connect_to(path);
		send_hello(fds[i]);
		uint8_t h[FRAME_HEADER_SIZE];
		frame_header_pack(h, FRAME_MAX_CLIENT_PAYLOAD, 0);
		set_nonblocking(fds[i]);
		if (write(fds[i], h, sizeof(h)) != (ssize_t)sizeof(h))
			die("write header");
		size_t off = 0;
		/* As much as the socket takes now; the rest is dropped. */
		while (off < bytes) {
			ssize_t w = write(fds[i], junk + off, bytes - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
	}
	printf("sent %u\n", n);
	fflush(stdout);
	sleep(3);
	collect(fds, n, want);
	close_all(fds, n);
	free(junk);
	return 0;
}

static int case_fds(const char *path, unsigned n, unsigned k, unsigned want)
{
	int *conns = calloc(n, sizeof(int));
	int *payload_fds = calloc(k, sizeof(int));
	for (unsigned i = 0; i < k; i++)
		if ((payload_fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			die("open /dev/null");
	for (unsigned i = 0; i < n; i++) {
		conns[i] = connect_to(path);
		send_hello(conns[i]);
		/* The header and one byte carry the first fds; the rest of the
		 * frame never comes. */
		uint8_t buf[FRAME_HEADER_SIZE + 1] = {0};
		frame_header_pack(buf, 1000, (uint16_t)k);
		unsigned first = k < FRAME_FDS_PER_SENDMSG ? k : FRAME_FDS_PER_SENDMSG;
		char cbuf[CMSG_SPACE(FRAME_FDS_PER_SENDMSG * sizeof(int))] = {0};
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf, .msg_controllen = CMSG_SPACE(first * sizeof(int)),
		};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(first * sizeof(int));
		memcpy(CMSG_DATA(cm), payload_fds, first * sizeof(int));
		if (sendmsg(conns[i], &mh, MSG_NOSIGNAL) < 0)
			die("sendmsg");
		set_nonblocking(conns[i]);
	}
	printf("sent %u\n", n);
	fflush(stdout);
	sleep(2);
	collect(conns, n, want);
	close_all(conns, n);
	close_all(payload_fds, k);
	return 0;
}

static int case_garbage(const char *path, unsigned n, unsigned seed, unsigned want)
{
	int *fds = calloc(n, sizeof(int));
	static uint8_t junk[64 * 1024];
	srandom(seed);
	for (unsigned i = 0; i < n; i++) {
		size_t len = 1 + (size_t)random() % sizeof(junk);
		for (size_t j = 0; j < len; j++)
			junk[j] = (uint8_t)random();
		fds[i] = connect_to(path);
		set_nonblocking(fds[i]);
		/* What the socket takes; the daemon may refuse before the end. */
		if (write(fds[i], junk, len) < 0 && errno != EAGAIN && errno != EPIPE &&
		    errno != ECONNRESET)
			die("write");
		shutdown(fds[i], SHUT_WR);
	}
	printf("sent %u\n", n);
	fflush(stdout);
	sleep(2);
	collect(fds, n, want);
	close_all(fds, n);
	return 0;
}

static int case_stall_after(const char *path, const char *prog, const char *arg)
{
	int fd = connect_to(path);
	int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		die("open /");
	send_hello(fd);

	ProtobufCBinaryData argv[2] = {
		{.len = strlen(prog), .data = (uint8_t *)prog},
		{.len = strlen(arg), .data = (uint8_t *)arg},
	};
	Toolrun__Request r = TOOLRUN__REQUEST__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	r.executable = argv[0];
	r.n_argv = 2;
	r.argv = argv;
	r.cwd = (ProtobufCBinaryData){.len = 1, .data = (uint8_t *)"/"};
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
	m.request = &r;
	send_message(fd, &m, &dir, 1);

	char line[600];
	time_t start = time(NULL);
	bool stalled = false;
	while (time(NULL) - start < 30) {
		if (!next_reply(fd, 1000, line, sizeof(line)))
			continue;
		printf("%s\n", line);
		fflush(stdout);
		if (strcmp(line, "started") == 0 && !stalled) {
			/* Half a header, then silence. */
			uint8_t h[FRAME_HEADER_SIZE];
			frame_header_pack(h, 16, 0);
			if (write(fd, h, 4) != 4)
				die("write");
			stalled = true;
		}
		if (strcmp(line, "closed") == 0)
			return 0;
	}
	printf("open\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: flood SOCKET CASE ARGS... (see the source)\n");
		return 2;
	}
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	const char *path = argv[1], *c = argv[2];
	/* The counting cases: CASE N X [WANT]. */
	unsigned want = argc == 6 ? (unsigned)atoi(argv[5]) : 0;
	bool counting = argc == 5 || argc == 6;
	if (!strcmp(c, "idle") && counting)
		return case_idle(path, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]), false, want);
	if (!strcmp(c, "partial") && counting)
		return case_idle(path, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]), true, want);
	if (!strcmp(c, "garbage") && counting)
		return case_garbage(path, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]), want);
	if (!strcmp(c, "big") && counting)
		return case_big(path, (unsigned)atoi(argv[3]), (size_t)atol(argv[4]), want);
	if (!strcmp(c, "fds") && counting)
		return case_fds(path, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]), want);
	if (!strcmp(c, "stall-after") && argc == 5)
		return case_stall_after(path, argv[3], argv[4]);
	fprintf(stderr, "flood: unknown case or wrong arguments: %s\n", c);
	return 2;
}
