#include "sbuf.h"

#include <string.h>

void sbuf_addn(struct sbuf *sb, const char *s, size_t n)
{
	if (sb->cap == 0)
		return;
	size_t room = sb->cap - 1 - sb->len;
	if (n > room)
		n = room;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void sbuf_add(struct sbuf *sb, const char *s)
{
	sbuf_addn(sb, s, strlen(s));
}

void sbuf_addc(struct sbuf *sb, char c)
{
	sbuf_addn(sb, &c, 1);
}

size_t fmt_u64(char *out, uint64_t v)
{
	char tmp[21];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return n;
}

void sbuf_add_u64(struct sbuf *sb, uint64_t v)
{
	char tmp[21];
	sbuf_addn(sb, tmp, fmt_u64(tmp, v));
}

void sbuf_add_i64(struct sbuf *sb, int64_t v)
{
	if (v < 0) {
		sbuf_addc(sb, '-');
		sbuf_add_u64(sb, (uint64_t)0 - (uint64_t)v);
	} else {
		sbuf_add_u64(sb, (uint64_t)v);
	}
}
