/*
 * Writes the fuzzer's seed corpus: a few client byte streams, valid and
 * malformed, one file each, into the directory given (test/fuzz/corpus).
 *
 *   meson compile -C BUILD fuzz-corpus     # rewrites test/fuzz/corpus
 *
 * Each file is what a client writes to toolrund's socket: frames, back to
 * back. The names say what each holds; meson.build lists them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frame.h"
#include "toolrun.pb-c.h"

#define BIN(s) ((ProtobufCBinaryData){sizeof(s) - 1, (uint8_t *)(s)})

/* The stream being built. */
static uint8_t stream[1 << 16];
static size_t stream_len;
static const char *outdir;
static bool failed;

static void add_bytes(const void *p, size_t n)
{
	if (n > sizeof(stream) - stream_len) {
		fprintf(stderr, "make-corpus: stream too long\n");
		exit(1);
	}
	memcpy(stream + stream_len, p, n);
	stream_len += n;
}

/* One frame: header with nfds, then the raw payload. */
static void add_raw_frame(const void *payload, size_t n, uint16_t nfds)
{
	uint8_t h[FRAME_HEADER_SIZE];
	frame_header_pack(h, (uint32_t)n, nfds);
	add_bytes(h, sizeof(h));
	add_bytes(payload, n);
}

static void add_frame(const Toolrun__ClientMessage *m, uint16_t nfds)
{
	uint8_t buf[1 << 14];
	size_t n = protobuf_c_message_get_packed_size(&m->base);
	if (n > sizeof(buf)) {
		fprintf(stderr, "make-corpus: message too long\n");
		exit(1);
	}
	protobuf_c_message_pack(&m->base, buf);
	add_raw_frame(buf, n, nfds);
}

static void emit(const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(stream, 1, stream_len, f) != stream_len || fclose(f) != 0) {
		fprintf(stderr, "make-corpus: %s: %s\n", path, strerror(errno));
		failed = true;
	}
	stream_len = 0;
}

static void add_hello(void)
{
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__Hello hello = TOOLRUN__HELLO__INIT;
	hello.protocol_version = TOOLRUN__VERSION__VERSION_1;
	hello.software = "libtoolrun 0.1.0";
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	m.hello = &hello;
	add_frame(&m, 0);
}

static void add_signal(int signo)
{
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__Signal sig = TOOLRUN__SIGNAL__INIT;
	sig.signo = signo;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_SIGNAL;
	m.signal = &sig;
	add_frame(&m, 0);
}

static void add_ping(void)
{
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__Ping ping = TOOLRUN__PING__INIT;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
	m.ping = &ping;
	add_frame(&m, 0);
}

static void add_front_record(bool ok)
{
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__FrontRecord r = TOOLRUN__FRONT_RECORD__INIT;
	r.front = (char *)"mcp";
	r.tool = (char *)"read_file";
	r.target = (ProtobufCBinaryData){11, (uint8_t *)"src/main.c\xff"};
	r.ok = ok;
	r.error_code = (char *)(ok ? "" : "OUTSIDE_ROOT");
	r.bytes = 1234;
	r.duration_us = 56;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_FRONT_RECORD;
	m.front_record = &r;
	add_frame(&m, 0);
}

static void add_request(Toolrun__Request *req, uint16_t nfds)
{
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
	m.request = req;
	add_frame(&m, nfds);
}

/* `cat -n file.txt` under the library, stdin attached, both streams
 * shaped, with the caller's process state. */
static void full_request(Toolrun__Request *req, Toolrun__ProcessState *st,
			 Toolrun__Limit **limits)
{
	static ProtobufCBinaryData argv[] = {BIN("cat"), BIN("-n"), BIN("file.txt")};
	static ProtobufCBinaryData envp[] = {
		BIN("PATH=/usr/local/bin:/usr/bin:/bin"),
		BIN("HOME=/root"),
		BIN("LD_PRELOAD=/usr/lib/x86_64-linux-gnu/toolrun/libtoolrun.so"),
		BIN("TOOLRUN_SOCKET=/run/toolrun/toolrun.sock"),
		BIN("LANG=C.UTF-8"),
	};
	static uint32_t fds[] = {0};
	static Toolrun__Limit nofile = TOOLRUN__LIMIT__INIT, core = TOOLRUN__LIMIT__INIT;
	static uint8_t cpus[] = {0x03};

	Toolrun__Request r = TOOLRUN__REQUEST__INIT;
	Toolrun__ProcessState s = TOOLRUN__PROCESS_STATE__INIT;
	*req = r;
	*st = s;
	req->executable = BIN("/usr/bin/cat");
	req->n_argv = 3;
	req->argv = argv;
	req->n_envp = 5;
	req->envp = envp;
	req->cwd = BIN("/home/user/project");
	req->n_fds = 1;
	req->fds = fds;
	req->shape_stdout = true;
	req->shape_stderr = true;

	nofile.resource = 7; /* RLIMIT_NOFILE */
	nofile.soft = 1024;
	nofile.hard = 524288;
	core.resource = 4; /* RLIMIT_CORE */
	core.soft = 0;
	core.hard = UINT64_MAX;
	limits[0] = &nofile;
	limits[1] = &core;
	st->umask = 022;
	st->blocked_signals = 1u << 1; /* SIGINT */
	st->ignored_signals = 1u << 12; /* SIGPIPE */
	st->n_limits = 2;
	st->limits = limits;
	st->nice = 5;
	st->cpu_affinity.len = sizeof(cpus);
	st->cpu_affinity.data = cpus;
	st->oom_score_adj = 100;
	req->state = st;
}

int main(int argc, char **argv)
{
	Toolrun__Request req;
	Toolrun__ProcessState st;
	Toolrun__Limit *limits[2];

	if (argc != 2) {
		fprintf(stderr, "usage: make-corpus DIR\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "make-corpus: %s: %s\n", outdir, strerror(errno));
		return 1;
	}

	/* ── valid conversations ── */
	add_hello();
	emit("hello");

	add_hello();
	full_request(&req, &st, limits);
	add_request(&req, 2);
	add_signal(2);
	add_signal(15);
	emit("hello-request-signal");

	add_hello();
	add_ping();
	emit("hello-ping");

	add_hello();
	add_front_record(true);
	add_front_record(false);
	emit("front-record");

	/* The tool listed by path, under another name and relative to the
	 * working directory (the fuzzer's holds env-link -> /usr/bin/env);
	 * three fds; stderr joined to stdout; no state. */
	{
		static ProtobufCBinaryData args[] = {BIN("env"), BIN("-i"), BIN("true")};
		static ProtobufCBinaryData envp[] = {
			BIN("TOOLRUN_NESTED=1"), BIN("TOOLRUN_DEPTH=2"), BIN("PATH=/bin"),
			BIN("LD_PRELOAD=libfoo.so libtoolrun.so:/opt/x/libbar.so")};
		static uint32_t fds[] = {0, 5, 9};
		Toolrun__Request r = TOOLRUN__REQUEST__INIT;
		r.executable = BIN("env-link");
		r.n_argv = 3;
		r.argv = args;
		r.n_envp = 4;
		r.envp = envp;
		r.n_fds = 3;
		r.fds = fds;
		r.shape_stdout = true;
		r.shape_stderr = true;
		r.stderr_joins_stdout = true;
		add_hello();
		add_request(&r, 4);
		emit("request-relative-joined");

		r.executable = BIN("/bin/env");
		r.n_fds = 0;
		r.stderr_joins_stdout = false;
		r.shape_stderr = false;
		r.n_envp = 3; /* TOOLRUN_* without the library: removed */
		add_request(&r, 1);
		emit("request-path-alias");

		r.executable = BIN("make");
		r.argv = NULL;
		r.n_argv = 0;
		r.shape_stdout = false;
		add_request(&r, 1);
		emit("request-make-unshaped");
	}

	/* ── malformed frames ── */
	{
		uint8_t h[FRAME_HEADER_SIZE];

		frame_header_pack(h, 0, 0);
		h[6] = 2; /* version */
		add_bytes(h, sizeof(h));
		emit("bad-version");

		add_hello();
		frame_header_pack(h, 4, 0);
		h[7] = 1; /* flags */
		add_bytes(h, sizeof(h));
		emit("bad-flags");

		frame_header_pack(h, FRAME_MAX_CLIENT_PAYLOAD + 1, 0);
		add_bytes(h, sizeof(h));
		emit("too-large");

		frame_header_pack(h, 2, FRAME_MAX_FDS + 1);
		add_bytes(h, sizeof(h));
		add_bytes("\x22\x00", 2);
		emit("too-many-fds");

		add_hello();
		add_bytes(h, 5);
		emit("cut-in-header");

		frame_header_pack(h, 100, 0);
		add_bytes(h, sizeof(h));
		add_bytes("\x0a\x02\x08\x01", 4);
		emit("cut-in-payload");
	}

	/* ── malformed messages ── */
	/* No message set (an empty payload). */
	add_raw_frame("", 0, 0);
	emit("empty-message");
	/* Hello with an unknown field 15 inside it. */
	add_raw_frame("\x0a\x04\x08\x01\x78\x01", 6, 0);
	emit("unknown-field-hello");
	/* A Limit with an unknown field inside a Request's state. */
	add_raw_frame("\x12\x0d\x0a\x03\x63\x61\x74\x4a\x06\x22\x04\x08\x07\x78\x01",
		      15, 1);
	emit("unknown-field-limit");
	/* A length that runs past the payload's end. */
	add_raw_frame("\x12\x40\x0a\x03\x63\x61\x74", 7, 1);
	emit("overlong-field");
	{
		static ProtobufCBinaryData nul_argv[] = {BIN("c\0at")};
		Toolrun__Request r = TOOLRUN__REQUEST__INIT;
		r.executable = BIN("/usr/bin/cat");
		r.n_argv = 1;
		r.argv = nul_argv;
		add_request(&r, 1);
		emit("nul-in-argv");

		static uint32_t fds[] = {1, 1};
		r.n_argv = 0;
		r.n_fds = 2;
		r.fds = fds;
		add_request(&r, 2); /* one fd fewer than listed, and twice 1 */
		emit("fds-mismatch");
	}
	full_request(&req, &st, limits);
	st.umask = 01000;
	limits[1]->soft = 5;
	limits[1]->hard = 4;
	add_request(&req, 2);
	emit("bad-state");

	return failed ? 1 : 0;
}
