/*
 * Unit tests for proto/frame.c: the frame header, and frame_send /
 * frame_reader_read over a real Unix socketpair, fds included.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "toolrun.pb-c.h"

/* ───────────────────────── helpers ───────────────────────── */

/* A frame reader whose grow callback reallocs and records what it is
 * asked for. */
struct test_reader {
	struct frame_reader r;
	int fds[FRAME_MAX_FDS];
	unsigned grow_calls;
	size_t max_need;  /* largest `need` passed to grow */
	size_t max_ahead; /* largest need - payload_have at a grow call */
	bool refuse;      /* grow fails */
};

static bool test_grow(struct frame_reader *r, size_t need)
{
	struct test_reader *t = r->owner;

	t->grow_calls++;
	if (need > t->max_need)
		t->max_need = need;
	if (need - r->payload_have > t->max_ahead)
		t->max_ahead = need - r->payload_have;
	if (t->refuse)
		return false;
	uint8_t *p = realloc(r->payload, need);
	if (!p)
		return false;
	r->payload = p;
	r->payload_cap = need;
	return true;
}

static void reader_init(struct test_reader *t, uint32_t max_payload)
{
	memset(t, 0, sizeof(*t));
	t->r.max_payload = max_payload;
	t->r.grow = test_grow;
	t->r.owner = t;
	t->r.fds = t->fds;
}

/* Teardown as an owner does it: close fds still held, free the buffer. */
static void reader_free(struct test_reader *t)
{
	frame_reader_drop_fds(&t->r);
	free(t->r.payload);
	t->r.payload = NULL;
}

static void make_socketpair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void close_pair(int sv[2])
{
	close(sv[0]);
	close(sv[1]);
}

/* Open descriptors of this process. */
static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

/* header + payload into buf; returns the frame size. */
static size_t make_frame(uint8_t *buf, const void *payload, uint32_t len,
			 uint16_t nfds)
{
	frame_header_pack(buf, len, nfds);
	if (len)
		memcpy(buf + FRAME_HEADER_SIZE, payload, len);
	return FRAME_HEADER_SIZE + len;
}

static void write_all_or_fail(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		assert_true(w > 0);
		b += w;
		n -= (size_t)w;
	}
}

static void assert_same_file(int a, int b)
{
	struct stat sa, sb;
	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	assert_int_equal(sa.st_dev, sb.st_dev);
	assert_int_equal(sa.st_ino, sb.st_ino);
	assert_int_equal(fcntl(a, F_GETFL) & O_ACCMODE, fcntl(b, F_GETFL) & O_ACCMODE);
}

static bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Send a frame carrying n fds (n/2 pipes, both ends), read it, and check
 * every fd arrived in order and refers to the same open file. */
static void send_and_check_many_fds(unsigned n)
{
	int sv[2];
	int *sent = calloc(n, sizeof(int));
	struct test_reader *t = malloc(sizeof(*t));
	uint8_t buf[64];
	int before = count_open_fds();

	assert_non_null(sent);
	assert_non_null(t);
	assert_true(n % 2 == 0);
	make_socketpair(sv);
	for (unsigned i = 0; i < n; i += 2)
		assert_int_equal(pipe2(sent + i, O_CLOEXEC), 0);
	size_t len = make_frame(buf, "payload", 7, (uint16_t)n);
	assert_int_equal(frame_send(sv[0], buf, len, sent, n), 0);

	reader_init(t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t->r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t->r.h.nfds, n);
	assert_int_equal(t->r.nfds, n);
	assert_int_equal(t->r.payload_have, 7);
	assert_memory_equal(t->r.payload, "payload", 7);
	for (unsigned i = 0; i < n; i++)
		assert_same_file(t->r.fds[i], sent[i]);
	/* The last pair still works across the socket. */
	assert_int_equal(write(t->r.fds[n - 1], "z", 1), 1);
	char c = 0;
	assert_int_equal(read(sent[n - 2], &c, 1), 1);
	assert_int_equal(c, 'z');

	reader_free(t);
	for (unsigned i = 0; i < n; i++)
		close(sent[i]);
	close_pair(sv);
	assert_int_equal(count_open_fds(), before);
	free(t);
	free(sent);
}

/* Send a frame whose header announces `announced` fds while `actual` are
 * attached; the reader must fail with -EPROTO and, after the owner's
 * teardown, no fd may be left open. */
static void check_fd_count_mismatch(uint16_t announced, unsigned actual)
{
	int before = count_open_fds();
	int sv[2];
	int *sent = calloc(actual + 1, sizeof(int));
	struct test_reader *t = malloc(sizeof(*t));
	uint8_t buf[64];

	assert_non_null(sent);
	assert_non_null(t);
	make_socketpair(sv);
	for (unsigned i = 0; i < actual; i++) {
		sent[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		assert_true(sent[i] >= 0);
	}
	size_t len = make_frame(buf, "0123456789", 10, announced);
	assert_int_equal(frame_send(sv[0], buf, len, sent, actual), 0);
	for (unsigned i = 0; i < actual; i++)
		close(sent[i]);

	reader_init(t, FRAME_MAX_CLIENT_PAYLOAD);
	int r = frame_reader_read(&t->r, sv[1]);
	if (r != -EPROTO)
		print_error("header announces %u fds, %u attached: got %d\n",
			    announced, actual, r);
	assert_int_equal(r, -EPROTO);
	reader_free(t);
	close_pair(sv);
	assert_int_equal(count_open_fds(), before);
	free(t);
	free(sent);
}

/* ───────────────────────── header ───────────────────────── */

static void test_header_pack_writes_little_endian_layout(void **state)
{
	(void)state;
	uint8_t h[FRAME_HEADER_SIZE];
	static const uint8_t want[FRAME_HEADER_SIZE] = {0x04, 0x03, 0x02, 0x01,
							0x06, 0x05, 1, 0};

	frame_header_pack(h, 0x01020304u, 0x0506u);
	assert_memory_equal(h, want, sizeof(want));
}

static void test_header_pack_parse_round_trip(void **state)
{
	(void)state;
	static const uint32_t lengths[] = {0, 1, 255, 256, 0x10203, FRAME_MAX_CLIENT_PAYLOAD};
	static const uint16_t counts[] = {0, 1, 255, 256, 1000, FRAME_MAX_FDS};

	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++) {
			uint8_t h[FRAME_HEADER_SIZE];
			struct frame_header fh = {0};
			frame_header_pack(h, lengths[i], counts[j]);
			assert_int_equal(frame_header_parse(h, FRAME_MAX_CLIENT_PAYLOAD, &fh), 0);
			assert_int_equal(fh.length, lengths[i]);
			assert_int_equal(fh.nfds, counts[j]);
		}
	}
}

static void test_header_with_bad_version_is_rejected(void **state)
{
	(void)state;
	static const uint8_t versions[] = {0, 2, 0x81, 0xff};

	for (size_t i = 0; i < sizeof(versions); i++) {
		uint8_t h[FRAME_HEADER_SIZE];
		struct frame_header fh;
		frame_header_pack(h, 10, 0);
		h[6] = versions[i];
		assert_int_equal(frame_header_parse(h, 1000, &fh), -EPROTO);
	}
}

static void test_header_with_nonzero_flags_is_rejected(void **state)
{
	(void)state;
	for (unsigned bit = 0; bit < 8; bit++) {
		uint8_t h[FRAME_HEADER_SIZE];
		struct frame_header fh;
		frame_header_pack(h, 10, 0);
		h[7] = (uint8_t)(1u << bit);
		assert_int_equal(frame_header_parse(h, 1000, &fh), -EPROTO);
	}
}

static void test_header_with_fd_count_above_max_is_rejected(void **state)
{
	(void)state;
	uint8_t h[FRAME_HEADER_SIZE];
	struct frame_header fh;

	frame_header_pack(h, 10, FRAME_MAX_FDS + 1);
	assert_int_equal(frame_header_parse(h, 1000, &fh), -EPROTO);
	frame_header_pack(h, 10, UINT16_MAX);
	assert_int_equal(frame_header_parse(h, 1000, &fh), -EPROTO);
	frame_header_pack(h, 10, FRAME_MAX_FDS);
	assert_int_equal(frame_header_parse(h, 1000, &fh), 0);
}

static void test_header_with_length_above_max_is_rejected(void **state)
{
	(void)state;
	uint8_t h[FRAME_HEADER_SIZE];
	struct frame_header fh;

	frame_header_pack(h, 1001, 0);
	assert_int_equal(frame_header_parse(h, 1000, &fh), -EMSGSIZE);
	frame_header_pack(h, UINT32_MAX, 0);
	assert_int_equal(frame_header_parse(h, FRAME_MAX_CLIENT_PAYLOAD, &fh), -EMSGSIZE);
	frame_header_pack(h, 1000, 0);
	assert_int_equal(frame_header_parse(h, 1000, &fh), 0);
	assert_int_equal(fh.length, 1000);
}

static void test_frame_pack_writes_header_and_message(void **state)
{
	(void)state;
	Toolrun__Hello hello = TOOLRUN__HELLO__INIT;
	Toolrun__ClientMessage msg = TOOLRUN__CLIENT_MESSAGE__INIT;
	hello.protocol_version = TOOLRUN__VERSION__VERSION_1;
	hello.software = "test-frame";
	msg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	msg.hello = &hello;

	size_t size = frame_size(&msg.base);
	uint8_t *buf = malloc(size);
	assert_non_null(buf);
	assert_int_equal(frame_pack(&msg.base, 3, buf), size);

	struct frame_header fh;
	assert_int_equal(frame_header_parse(buf, FRAME_MAX_CLIENT_PAYLOAD, &fh), 0);
	assert_int_equal(fh.length, size - FRAME_HEADER_SIZE);
	assert_int_equal(fh.nfds, 3);
	Toolrun__ClientMessage *back = toolrun__client_message__unpack(
		NULL, fh.length, buf + FRAME_HEADER_SIZE);
	assert_non_null(back);
	assert_int_equal(back->msg_case, TOOLRUN__CLIENT_MESSAGE__MSG_HELLO);
	assert_int_equal(back->hello->protocol_version, 1);
	assert_string_equal(back->hello->software, "test-frame");
	toolrun__client_message__free_unpacked(back, NULL);
	free(buf);
}

/* ───────────────────────── reading ───────────────────────── */

static void test_frame_in_one_piece_is_read(void **state)
{
	(void)state;
	Toolrun__Ping ping = TOOLRUN__PING__INIT;
	Toolrun__ClientMessage msg = TOOLRUN__CLIENT_MESSAGE__INIT;
	msg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
	msg.ping = &ping;
	uint8_t buf[64];
	size_t len = frame_pack(&msg.base, 0, buf);
	int sv[2];
	struct test_reader t;

	make_socketpair(sv);
	assert_int_equal(frame_send(sv[0], buf, len, NULL, 0), 0);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.nfds, 0);
	assert_int_equal(t.r.payload_have, len - FRAME_HEADER_SIZE);
	Toolrun__ClientMessage *back = toolrun__client_message__unpack(
		NULL, t.r.payload_have, t.r.payload);
	assert_non_null(back);
	assert_int_equal(back->msg_case, TOOLRUN__CLIENT_MESSAGE__MSG_PING);
	toolrun__client_message__free_unpacked(back, NULL);
	reader_free(&t);
	close_pair(sv);
}

static void test_frame_delivered_one_byte_at_a_time_is_read(void **state)
{
	(void)state;
	uint8_t buf[64];
	size_t len = make_frame(buf, "hello, frame", 12, 0);
	int sv[2];
	struct test_reader t;

	make_socketpair(sv);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	/* Nothing sent yet. */
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	for (size_t i = 0; i < len; i++) {
		write_all_or_fail(sv[0], buf + i, 1);
		int r = frame_reader_read(&t.r, sv[1]);
		assert_int_equal(r, i + 1 < len ? FRAME_READ_AGAIN : FRAME_READ_READY);
	}
	assert_int_equal(t.r.payload_have, 12);
	assert_memory_equal(t.r.payload, "hello, frame", 12);
	reader_free(&t);
	close_pair(sv);
}

static void test_fd_on_first_byte_of_bytewise_frame_is_received(void **state)
{
	(void)state;
	uint8_t buf[64];
	size_t len = make_frame(buf, "abc", 3, 1);
	int sv[2], p[2];
	struct test_reader t;

	make_socketpair(sv);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	/* The first byte carries the fd (as a sendmsg of one byte would). */
	assert_int_equal(frame_send(sv[0], buf, 1, &p[1], 1), 0);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	for (size_t i = 1; i < len; i++) {
		write_all_or_fail(sv[0], buf + i, 1);
		assert_int_equal(frame_reader_read(&t.r, sv[1]),
				 i + 1 < len ? FRAME_READ_AGAIN : FRAME_READ_READY);
	}
	assert_int_equal(t.r.nfds, 1);
	assert_same_file(t.r.fds[0], p[1]);
	reader_free(&t);
	close(p[0]);
	close(p[1]);
	close_pair(sv);
}

static void test_two_frames_back_to_back_are_read_separately(void **state)
{
	(void)state;
	uint8_t buf[64];
	size_t len = make_frame(buf, "first", 5, 0);
	len += make_frame(buf + len, "the second", 10, 0);
	int sv[2];
	struct test_reader t;

	make_socketpair(sv);
	write_all_or_fail(sv[0], buf, len);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.payload_have, 5);
	assert_memory_equal(t.r.payload, "first", 5);
	frame_reader_next(&t.r);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.payload_have, 10);
	assert_memory_equal(t.r.payload, "the second", 10);
	frame_reader_next(&t.r);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	reader_free(&t);
	close_pair(sv);
}

static void test_zero_length_frame_is_read(void **state)
{
	(void)state;
	uint8_t buf[16];
	size_t len = make_frame(buf, NULL, 0, 0);
	int sv[2];
	struct test_reader t;

	make_socketpair(sv);
	write_all_or_fail(sv[0], buf, len);
	write_all_or_fail(sv[0], buf, len);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.payload_have, 0);
	frame_reader_next(&t.r);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	frame_reader_next(&t.r);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	reader_free(&t);
	close_pair(sv);
}

static void test_frame_with_fds_delivers_usable_fds(void **state)
{
	(void)state;
	uint8_t buf[64];
	size_t len = make_frame(buf, "fds", 3, 2);
	int sv[2], p[2];
	struct test_reader t;

	make_socketpair(sv);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(frame_send(sv[0], buf, len, p, 2), 0);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.nfds, 2);
	assert_same_file(t.r.fds[0], p[0]);
	assert_same_file(t.r.fds[1], p[1]);
	assert_true(t.r.fds[0] != p[0] && t.r.fds[1] != p[1]);

	/* The received write end feeds the original read end ... */
	char c = 0;
	assert_int_equal(write(t.r.fds[1], "x", 1), 1);
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(c, 'x');
	/* ... and the original write end feeds the received read end. */
	assert_int_equal(write(p[1], "y", 1), 1);
	assert_int_equal(read(t.r.fds[0], &c, 1), 1);
	assert_int_equal(c, 'y');

	reader_free(&t);
	close(p[0]);
	close(p[1]);
	close_pair(sv);
}

static void test_received_fds_are_close_on_exec(void **state)
{
	(void)state;
	uint8_t buf[64];
	size_t len = make_frame(buf, "x", 1, 1);
	int sv[2];
	int fd = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
	struct test_reader t;

	assert_true(fd >= 0);
	make_socketpair(sv);
	assert_int_equal(frame_send(sv[0], buf, len, &fd, 1), 0);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.nfds, 1);
	assert_true(fcntl(t.r.fds[0], F_GETFD) & FD_CLOEXEC);
	reader_free(&t);
	close(fd);
	close_pair(sv);
}

static void test_frame_with_300_fds_uses_several_sendmsg_calls(void **state)
{
	(void)state;
	/* More than FRAME_FDS_PER_SENDMSG: the kernel refuses them in one
	 * sendmsg(), so this only passes if they are spread over several. */
	send_and_check_many_fds(300);
}

static void test_frame_with_max_fds_is_read(void **state)
{
	(void)state;
	send_and_check_many_fds(FRAME_MAX_FDS);
}

static void test_fds_of_next_frame_are_not_taken_by_current(void **state)
{
	(void)state;
	uint8_t a[32], b[32];
	size_t alen = make_frame(a, "no fds", 6, 0);
	size_t blen = make_frame(b, "one fd", 6, 1);
	int sv[2], p[2];
	struct test_reader t;

	make_socketpair(sv);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(frame_send(sv[0], a, alen, NULL, 0), 0);
	assert_int_equal(frame_send(sv[0], b, blen, &p[1], 1), 0);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.nfds, 0);
	assert_memory_equal(t.r.payload, "no fds", 6);
	frame_reader_next(&t.r);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	assert_int_equal(t.r.nfds, 1);
	assert_same_file(t.r.fds[0], p[1]);
	reader_free(&t);
	close(p[0]);
	close(p[1]);
	close_pair(sv);
}

static void test_more_fds_than_header_announces_is_rejected_without_leak(void **state)
{
	(void)state;
	check_fd_count_mismatch(0, 1);
	check_fd_count_mismatch(1, 2);
	check_fd_count_mismatch(2, 3);
	check_fd_count_mismatch(1, 300);
}

static void test_fewer_fds_than_header_announces_is_rejected_without_leak(void **state)
{
	(void)state;
	check_fd_count_mismatch(1, 0);
	check_fd_count_mismatch(2, 1);
	check_fd_count_mismatch(300, 299);
}

static void test_fds_beyond_frame_max_are_closed(void **state)
{
	(void)state;
	/* The header allows FRAME_MAX_FDS; one more arrives. */
	check_fd_count_mismatch(FRAME_MAX_FDS, FRAME_MAX_FDS + 1);
}

static void test_frame_reader_next_closes_fds_not_taken(void **state)
{
	(void)state;
	uint8_t buf[32];
	size_t len = make_frame(buf, "x", 1, 2);
	int sv[2], p[2];
	struct test_reader t;

	make_socketpair(sv);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(frame_send(sv[0], buf, len, p, 2), 0);
	assert_int_equal(frame_send(sv[0], buf, len, p, 2), 0);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);

	/* Not taken: next() closes both. */
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	int got0 = t.r.fds[0], got1 = t.r.fds[1];
	assert_true(fd_is_open(got0) && fd_is_open(got1));
	frame_reader_next(&t.r);
	assert_false(fd_is_open(got0));
	assert_false(fd_is_open(got1));

	/* Taken (nfds set to 0, as an owner does): next() leaves them. */
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	got0 = t.r.fds[0];
	got1 = t.r.fds[1];
	t.r.nfds = 0;
	frame_reader_next(&t.r);
	assert_true(fd_is_open(got0) && fd_is_open(got1));
	close(got0);
	close(got1);

	reader_free(&t);
	close(p[0]);
	close(p[1]);
	close_pair(sv);
}

static void test_eof_between_frames_is_clean(void **state)
{
	(void)state;
	uint8_t buf[32];
	size_t len = make_frame(buf, "last", 4, 0);
	int sv[2];
	struct test_reader t;

	/* Before any frame. */
	make_socketpair(sv);
	close(sv[0]);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_EOF);
	reader_free(&t);
	close(sv[1]);

	/* After a whole frame. */
	make_socketpair(sv);
	write_all_or_fail(sv[0], buf, len);
	close(sv[0]);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_READY);
	frame_reader_next(&t.r);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_EOF);
	reader_free(&t);
	close(sv[1]);
}

static void test_eof_inside_header_is_protocol_error(void **state)
{
	(void)state;
	uint8_t buf[32];
	make_frame(buf, "abc", 3, 0);

	for (size_t cut = 1; cut < FRAME_HEADER_SIZE; cut++) {
		int sv[2];
		struct test_reader t;
		make_socketpair(sv);
		write_all_or_fail(sv[0], buf, cut);
		close(sv[0]);
		reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
		assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
		reader_free(&t);
		close(sv[1]);
	}
}

static void test_eof_inside_payload_is_protocol_error(void **state)
{
	(void)state;
	uint8_t buf[32];
	size_t len = make_frame(buf, "abcdef", 6, 0);

	for (size_t cut = FRAME_HEADER_SIZE; cut < len; cut++) {
		int sv[2];
		struct test_reader t;
		make_socketpair(sv);
		write_all_or_fail(sv[0], buf, cut);
		reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
		assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
		close(sv[0]);
		assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
		reader_free(&t);
		close(sv[1]);
	}
}

static void test_reader_rejects_bad_header(void **state)
{
	(void)state;
	uint8_t buf[32];
	int sv[2];
	struct test_reader t;

	make_frame(buf, "abc", 3, 0);
	buf[6] = 2; /* version */
	make_socketpair(sv);
	write_all_or_fail(sv[0], buf, 11);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
	reader_free(&t);
	close_pair(sv);

	make_frame(buf, "abc", 3, 0);
	frame_header_pack(buf, 101, 0);
	make_socketpair(sv);
	write_all_or_fail(sv[0], buf, 11);
	reader_init(&t, 100);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EMSGSIZE);
	assert_int_equal(t.grow_calls, 0);
	reader_free(&t);
	close_pair(sv);
}

static void test_reader_grows_only_with_arriving_bytes(void **state)
{
	(void)state;
	uint8_t buf[32];
	int sv[2];
	struct test_reader t;

	/* A header claiming 8 MiB, then 10 bytes, then nothing. */
	frame_header_pack(buf, FRAME_MAX_CLIENT_PAYLOAD, 0);
	memcpy(buf + FRAME_HEADER_SIZE, "0123456789", 10);
	make_socketpair(sv);
	write_all_or_fail(sv[0], buf, FRAME_HEADER_SIZE + 10);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	assert_int_equal(t.r.payload_have, 10);
	/* Room for what arrived plus one read (64 KiB) at most, never what
	 * the header claims. */
	assert_true(t.grow_calls >= 1);
	assert_true(t.max_need <= 10 + 64 * 1024);
	/* Waking up again with nothing new does not grow it further than
	 * the bytes received plus one read. */
	for (int i = 0; i < 100; i++)
		assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	assert_int_equal(t.r.payload_have, 10);
	assert_true(t.max_need <= 10 + 64 * 1024);
	assert_true(t.max_ahead <= 64 * 1024);
	close(sv[0]);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
	reader_free(&t);
	close(sv[1]);
}

static void test_refused_growth_gives_enomem(void **state)
{
	(void)state;
	uint8_t buf[32];
	size_t len = make_frame(buf, "abc", 3, 0);
	int sv[2];
	struct test_reader t;

	make_socketpair(sv);
	write_all_or_fail(sv[0], buf, len);
	reader_init(&t, FRAME_MAX_CLIENT_PAYLOAD);
	t.refuse = true;
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -ENOMEM);
	reader_free(&t);
	close_pair(sv);
}

/* ───────────────────────── sending ───────────────────────── */

/* A 1 MiB frame, then one with 300 fds, through a socket that fills up:
 * frame_send_partial() returns -EAGAIN and resumes where it stopped. */
static void test_partial_sends_resume_after_eagain(void **state)
{
	(void)state;
	const size_t big = 1u << 20;
	uint8_t *a = malloc(FRAME_HEADER_SIZE + big);
	uint8_t b[32];
	int sv[2], fds[300];
	struct test_reader *t = malloc(sizeof(*t));
	int before = count_open_fds();

	assert_non_null(a);
	assert_non_null(t);
	for (size_t i = 0; i < big; i++)
		a[FRAME_HEADER_SIZE + i] = (uint8_t)(i * 7 + i / 251);
	frame_header_pack(a, (uint32_t)big, 0);
	size_t blen = make_frame(b, "after the big one", 17, 300);
	for (int i = 0; i < 300; i += 2)
		assert_int_equal(pipe2(fds + i, O_CLOEXEC), 0);
	make_socketpair(sv);
	reader_init(t, FRAME_MAX_CLIENT_PAYLOAD);

	size_t aoff = 0, boff = 0;
	unsigned afds = 0, bfds = 0;
	int frames_read = 0, eagains = 0;
	while (frames_read < 2) {
		int r = 0;
		if (aoff < FRAME_HEADER_SIZE + big)
			r = frame_send_partial(sv[0], a, FRAME_HEADER_SIZE + big, &aoff,
					       NULL, 0, &afds);
		else if (boff < blen || bfds < 300)
			r = frame_send_partial(sv[0], b, blen, &boff, fds, 300, &bfds);
		assert_true(r == 0 || r == -EAGAIN);
		if (r == -EAGAIN)
			eagains++;
		int rr = frame_reader_read(&t->r, sv[1]);
		assert_true(rr == FRAME_READ_AGAIN || rr == FRAME_READ_READY);
		if (rr != FRAME_READ_READY)
			continue;
		if (frames_read == 0) {
			assert_int_equal(t->r.payload_have, big);
			assert_memory_equal(t->r.payload, a + FRAME_HEADER_SIZE, big);
			assert_int_equal(t->r.nfds, 0);
		} else {
			assert_int_equal(t->r.payload_have, 17);
			assert_memory_equal(t->r.payload, "after the big one", 17);
			assert_int_equal(t->r.nfds, 300);
			for (int i = 0; i < 300; i++)
				assert_same_file(t->r.fds[i], fds[i]);
		}
		frames_read++;
		frame_reader_next(&t->r);
	}
	/* The socket did fill up, so the resumption path ran. */
	assert_true(eagains > 0);
	assert_int_equal(bfds, 300);
	/* The payload grew in steps that follow what had arrived. */
	assert_true(t->grow_calls > 1);
	assert_true(t->max_ahead <= 64 * 1024);

	reader_free(t);
	for (int i = 0; i < 300; i++)
		close(fds[i]);
	close_pair(sv);
	assert_int_equal(count_open_fds(), before);
	free(t);
	free(a);
}

static int sigpipe_count;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipe_count++;
}

static void test_send_to_closed_peer_fails_without_sigpipe(void **state)
{
	(void)state;
	struct sigaction sa = {.sa_handler = on_sigpipe}, old;
	uint8_t buf[32];
	size_t len = make_frame(buf, "abc", 3, 0);
	int sv[2];

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	sigpipe_count = 0;
	make_socketpair(sv);
	close(sv[1]);
	assert_int_equal(frame_send(sv[0], buf, len, NULL, 0), -EPIPE);
	assert_int_equal(sigpipe_count, 0);
	close(sv[0]);
	assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
}

/* ───────────────────── read-ahead (no descriptors) ───────────────────── */

#define RA_MAX 64

/* A read-ahead reader: payloads of up to RA_MAX bytes, read in place. */
struct ra_reader {
	struct frame_reader r;
	uint8_t buf[FRAME_HEADER_SIZE + RA_MAX];
};

static void ra_init(struct ra_reader *t)
{
	memset(t, 0, sizeof(*t));
	t->r.max_payload = RA_MAX;
	t->r.ra = t->buf;
	t->r.ra_cap = sizeof(t->buf);
}

static void ra_expect(struct ra_reader *t, int sock, const char *payload)
{
	size_t len = strlen(payload);

	assert_int_equal(frame_reader_read(&t->r, sock), FRAME_READ_READY);
	assert_int_equal(t->r.h.length, len);
	assert_memory_equal(t->r.payload, payload, len);
	frame_reader_next(&t->r);
}

/* Three frames queued: one read takes them all, and each comes out whole.
 * The read found the socket empty, so the next call says AGAIN without
 * asking it (the test sees the same answer either way); a frame that
 * comes later is read once asked again. */
static void test_readahead_takes_queued_frames_in_one_read(void **state)
{
	(void)state;
	struct ra_reader t;
	uint8_t buf[3 * (FRAME_HEADER_SIZE + 8)];
	size_t len = 0;
	int sv[2];

	make_socketpair(sv);
	ra_init(&t);
	len += make_frame(buf + len, "one", 3, 0);
	len += make_frame(buf + len, "", 0, 0);
	len += make_frame(buf + len, "three!", 6, 0);
	write_all_or_fail(sv[0], buf, len);
	ra_expect(&t, sv[1], "one");
	assert_int_equal(t.r.ra_end, len); /* all of it, in one read */
	assert_true(t.r.ra_drained);
	ra_expect(&t, sv[1], "");
	ra_expect(&t, sv[1], "three!");
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	len = make_frame(buf, "four", 4, 0);
	write_all_or_fail(sv[0], buf, len);
	ra_expect(&t, sv[1], "four");
	close(sv[0]);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_EOF);
	close(sv[1]);
}

/* Frames that arrive a byte at a time, and a frame that ends where the
 * buffer ends, are put together across reads. */
static void test_readahead_joins_frames_split_across_reads(void **state)
{
	(void)state;
	struct ra_reader t;
	uint8_t buf[2 * (FRAME_HEADER_SIZE + RA_MAX)], big[RA_MAX];
	size_t len = 0;
	int sv[2], got = 0;

	memset(big, 'x', sizeof(big));
	make_socketpair(sv);
	ra_init(&t);
	len += make_frame(buf + len, "ab", 2, 0);
	len += make_frame(buf + len, big, RA_MAX, 0);
	for (size_t i = 0; i < len; i++) {
		write_all_or_fail(sv[0], buf + i, 1);
		int r;
		while ((r = frame_reader_read(&t.r, sv[1])) == FRAME_READ_READY) {
			assert_int_equal(t.r.h.length, got ? RA_MAX : 2);
			assert_memory_equal(t.r.payload, got ? big : (const uint8_t *)"ab",
					    t.r.h.length);
			frame_reader_next(&t.r);
			got++;
		}
		assert_int_equal(r, FRAME_READ_AGAIN);
	}
	assert_int_equal(got, 2);
	close_pair(sv);
}

/* The same endings as without read-ahead: EOF inside a frame, a frame
 * over the limit, a bad header. */
static void test_readahead_reports_bad_streams(void **state)
{
	(void)state;
	struct ra_reader t;
	uint8_t buf[FRAME_HEADER_SIZE + RA_MAX + 1];
	int sv[2];

	make_socketpair(sv);
	ra_init(&t);
	write_all_or_fail(sv[0], buf, make_frame(buf, "abc", 3, 0) - 1);
	close(sv[0]);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), FRAME_READ_AGAIN);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
	close(sv[1]);

	make_socketpair(sv);
	ra_init(&t);
	frame_header_pack(buf, RA_MAX + 1, 0);
	write_all_or_fail(sv[0], buf, FRAME_HEADER_SIZE);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EMSGSIZE);
	close_pair(sv);

	make_socketpair(sv);
	ra_init(&t);
	make_frame(buf, "abc", 3, 0);
	buf[6] = 2; /* version */
	write_all_or_fail(sv[0], buf, FRAME_HEADER_SIZE + 3);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
	close_pair(sv);

	/* A buffer without room for the largest frame allowed. */
	make_socketpair(sv);
	ra_init(&t);
	t.r.ra_cap = FRAME_HEADER_SIZE + RA_MAX - 1;
	write_all_or_fail(sv[0], buf, make_frame(buf, "abc", 3, 0));
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -ENOMEM);
	close_pair(sv);
}

/* No descriptor may arrive: any that do are closed and the stream is
 * refused, as is a frame whose header announces some. */
static void test_readahead_refuses_descriptors_without_leak(void **state)
{
	(void)state;
	struct ra_reader t;
	uint8_t buf[32];
	int sv[2], p[2];
	int before = count_open_fds();

	make_socketpair(sv);
	assert_int_equal(pipe(p), 0);
	ra_init(&t);
	size_t len = make_frame(buf, "abc", 3, 1);
	assert_int_equal(frame_send(sv[0], buf, len, &p[0], 1), 0);
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
	close_pair(sv);
	close(p[0]);
	close(p[1]);
	assert_int_equal(count_open_fds(), before);

	make_socketpair(sv);
	ra_init(&t);
	write_all_or_fail(sv[0], buf, len); /* announces 1, carries none */
	assert_int_equal(frame_reader_read(&t.r, sv[1]), -EPROTO);
	close_pair(sv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_pack_writes_little_endian_layout),
		cmocka_unit_test(test_header_pack_parse_round_trip),
		cmocka_unit_test(test_header_with_bad_version_is_rejected),
		cmocka_unit_test(test_header_with_nonzero_flags_is_rejected),
		cmocka_unit_test(test_header_with_fd_count_above_max_is_rejected),
		cmocka_unit_test(test_header_with_length_above_max_is_rejected),
		cmocka_unit_test(test_frame_pack_writes_header_and_message),
		cmocka_unit_test(test_frame_in_one_piece_is_read),
		cmocka_unit_test(test_frame_delivered_one_byte_at_a_time_is_read),
		cmocka_unit_test(test_fd_on_first_byte_of_bytewise_frame_is_received),
		cmocka_unit_test(test_two_frames_back_to_back_are_read_separately),
		cmocka_unit_test(test_zero_length_frame_is_read),
		cmocka_unit_test(test_frame_with_fds_delivers_usable_fds),
		cmocka_unit_test(test_received_fds_are_close_on_exec),
		cmocka_unit_test(test_frame_with_300_fds_uses_several_sendmsg_calls),
		cmocka_unit_test(test_frame_with_max_fds_is_read),
		cmocka_unit_test(test_fds_of_next_frame_are_not_taken_by_current),
		cmocka_unit_test(test_more_fds_than_header_announces_is_rejected_without_leak),
		cmocka_unit_test(test_fewer_fds_than_header_announces_is_rejected_without_leak),
		cmocka_unit_test(test_fds_beyond_frame_max_are_closed),
		cmocka_unit_test(test_frame_reader_next_closes_fds_not_taken),
		cmocka_unit_test(test_eof_between_frames_is_clean),
		cmocka_unit_test(test_eof_inside_header_is_protocol_error),
		cmocka_unit_test(test_eof_inside_payload_is_protocol_error),
		cmocka_unit_test(test_reader_rejects_bad_header),
		cmocka_unit_test(test_reader_grows_only_with_arriving_bytes),
		cmocka_unit_test(test_refused_growth_gives_enomem),
		cmocka_unit_test(test_partial_sends_resume_after_eagain),
		cmocka_unit_test(test_send_to_closed_peer_fails_without_sigpipe),
		cmocka_unit_test(test_readahead_takes_queued_frames_in_one_read),
		cmocka_unit_test(test_readahead_joins_frames_split_across_reads),
		cmocka_unit_test(test_readahead_reports_bad_streams),
		cmocka_unit_test(test_readahead_refuses_descriptors_without_leak),
	};
	return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
