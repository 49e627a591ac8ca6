/*
 * A fixed-size text builder that never allocates: messages composed in a
 * vfork child or in a signal-unsafe context cannot use snprintf (locale,
 * malloc). Output past the capacity is cut; the result is always
 * NUL-terminated.
 */
#ifndef TOOLRUN_SBUF_H
#define TOOLRUN_SBUF_H

#include <stddef.h>
#include <stdint.h>

struct sbuf {
	char *buf;
	size_t cap; /* including the NUL */
	size_t len;
};

#define SBUF_INIT(array) {.buf = (array), .cap = sizeof(array), .len = 0}

void sbuf_add(struct sbuf *sb, const char *s);
void sbuf_addn(struct sbuf *sb, const char *s, size_t n);
void sbuf_addc(struct sbuf *sb, char c);
void sbuf_add_u64(struct sbuf *sb, uint64_t v);
void sbuf_add_i64(struct sbuf *sb, int64_t v);

/* Format an unsigned decimal into out (at least 21 bytes); returns length. */
size_t fmt_u64(char *out, uint64_t v);

#endif
