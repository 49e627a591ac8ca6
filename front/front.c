/*
 * The front ends' one error convention (front.h).
 */
#include "front.h"

#include <stdio.h>
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
