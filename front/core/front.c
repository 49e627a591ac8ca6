/*
 * The front ends' one error convention (front.h).
 */
#include "front.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *front_category_name(enum front_category c)
{
	switch (c) {
	case FRONT_SYNTAX: return "SYNTAX";
	case FRONT_VALIDATION: return "VALIDATION";
	case FRONT_EXECUTION: return "EXECUTION";
	case FRONT_RESOURCE: return "RESOURCE";
	case FRONT_INTERNAL:
	default: return "INTERNAL";
	}
}

int front_fail(struct front_error *e, enum front_category c, const char *code, const char *fmt,
	       ...)
{
	va_list ap;

	e->category = c;
	snprintf(e->code, sizeof(e->code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	/* One line, whatever a file name held. */
	for (char *p = e->message; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return -1;
}

int front_buf_add(struct front_buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *grown = realloc(b->p, cap);
		if (!grown)
			return -1;
		b->p = grown;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

void front_buf_clear(struct front_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

bool front_buf_mid_line(const struct front_buf *b)
{
	return b->len && b->p[b->len - 1] != '\n';
}
