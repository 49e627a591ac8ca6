/*
 * The agent front ends' shared module: what `toolrun mcp` and `toolrun
 * tags` both call, so that read_file and <open>, search and <search> are
 * the same code. Every file operation runs in the caller's process, as
 * the caller, inside the box, after the one path check (path.h).
 *
 * Errors: functions return 0 or -1; on -1 the struct front_error they
 * were given says what went wrong in one line, with the seed's category
 * and a short code ("OUTSIDE_ROOT", "NOT_FOUND", "TOO_LARGE", ...).
 */
#ifndef TOOLRUN_FRONT_H
#define TOOLRUN_FRONT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum front_category {
	FRONT_SYNTAX,     /* a malformed command or argument */
	FRONT_VALIDATION, /* a security check refused it (path policy) */
	FRONT_EXECUTION,  /* it ran and failed (no such file, I/O error) */
	FRONT_RESOURCE,   /* a limit was reached (size, time) */
	FRONT_INTERNAL,   /* a bug or an allocation failure in toolrun */
};

struct front_error {
	enum front_category category;
	char code[32];     /* upper case, stable: tests and agents match it */
	char message[512]; /* one line, naming the object */
};

/* "SYNTAX", "VALIDATION", ... */
const char *front_category_name(enum front_category c);

/* Fill *e; returns -1, so that `return front_fail(...)` reads well. */
__attribute__((format(printf, 4, 5))) int front_fail(struct front_error *e,
						     enum front_category c,
						     const char *code, const char *fmt, ...);

/* A growing run of bytes, NUL-terminated after len (p is NULL until the
 * first byte): text the front ends build up as it comes. */
struct front_buf {
	char *p;
	size_t len, cap;
};

/* Append n bytes (p may be NULL when n is 0). 0, or -1 out of memory,
 * with b as it was. */
int front_buf_add(struct front_buf *b, const void *p, size_t n);
/* Empty again, keeping the memory. */
void front_buf_clear(struct front_buf *b);
/* Whether the text so far ends mid-line (not empty, no final newline). */
bool front_buf_mid_line(const struct front_buf *b);
#endif
