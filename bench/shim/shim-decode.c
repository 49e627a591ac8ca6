/*
 * shim-decode: the decoder of the PATH-shim baseline (bench/shim/README.md).
 *
 *   ... | socat ... | shim-decode
 *
 * The seed's decoder (seed 001, section 7.5: `elixir -e` with
 * :erlang.binary_to_term) in C. It reads shimd's whole reply from stdin,
 *
 *   "SHIM1 <code> <out_len> <err_len>\n" <out_len bytes> <err_len bytes>
 *
 * checks it strictly (decimal numbers without sign or leading zeros, code
 * at most 255, exactly out_len + err_len bytes after the header), writes
 * the stdout part to fd 1, then the stderr part to fd 2, and exits with
 * <code>.
 *
 * A reply it cannot use (none, short, malformed, trailing bytes), or a
 * failed write: one line on stderr, "shim-decode: <what was wrong>", and
 * exit 125, a status no tool that matters here uses for itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_DECODE 125

/* "SHIM1 " + 3 digits + 2 x (space + 20 digits) + '\n' is 52 bytes. */
#define HDR_MAX 64

__attribute__((format(printf, 1, 2), noreturn))
static void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("shim-decode: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_DECODE);
}

/* All of stdin, until EOF. */
static char *read_all(size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		fail("cannot allocate %zu bytes: %s", cap, strerror(errno));
	for (;;) {
		if (n == cap) {
			if (cap > SIZE_MAX / 2)
				fail("reply too large");
			cap *= 2;
			char *p = realloc(buf, cap);
			if (!p)
				fail("cannot allocate %zu bytes: %s", cap,
				     strerror(errno));
			buf = p;
		}
		ssize_t r = read(0, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fail("read reply: %s", strerror(errno));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

/* A decimal number at *p ending with sep; *p moves past sep. */
static uint64_t parse_num(const char **p, const char *end, char sep,
			  const char *what)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		fail("malformed reply header: %s is not a number", what);
	if (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9')
		fail("malformed reply header: %s has a leading zero", what);
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			fail("malformed reply header: %s overflows", what);
		v = v * 10 + d;
	}
	if (s >= end || *s != sep)
		fail("malformed reply header: bad character after %s", what);
	*p = s + 1;
	return v;
}

static void write_all(int fd, const char *p, size_t n, const char *what)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			fail("write %s: %s", what, strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
}

int main(void)
{
	size_t len;
	const char *buf = read_all(&len);

	if (len == 0)
		fail("no reply from shimd (is it listening on "
		     "$TOOLRUN_SHIM_SOCKET?)");
	const char *end = buf + len;
	const char *nl = memchr(buf, '\n', len < HDR_MAX ? len : HDR_MAX);
	if (!nl)
		fail("malformed reply: no header line in its first %zu bytes",
		     len < HDR_MAX ? len : (size_t)HDR_MAX);
	if ((size_t)(nl - buf) < 6 || memcmp(buf, "SHIM1 ", 6) != 0)
		fail("malformed reply: header does not start with \"SHIM1 \"");

	const char *p = buf + 6;
	uint64_t code = parse_num(&p, nl, ' ', "the exit code");
	uint64_t out_len = parse_num(&p, nl, ' ', "the stdout length");
	uint64_t err_len = parse_num(&p, nl + 1, '\n', "the stderr length");
	if (code > 255)
		fail("malformed reply header: exit code %" PRIu64 " above 255",
		     code);

	uint64_t body = (uint64_t)(end - p);
	if (out_len > body || err_len > body - out_len)
		fail("short reply: header announces %" PRIu64 " + %" PRIu64
		     " bytes, %" PRIu64 " came",
		     out_len, err_len, body);
	if (out_len + err_len < body)
		fail("malformed reply: trailing bytes after its end: %" PRIu64,
		     body - out_len - err_len);

	write_all(1, p, (size_t)out_len, "stdout");
	write_all(2, p + out_len, (size_t)err_len, "stderr");
	return (int)code;
}
