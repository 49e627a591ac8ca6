/*
 * What a stream's first bytes say about it: text or binary, and which
 * kind of file. Used by the shaper (shape.h states the rule).
 */
#ifndef TOOLRUN_SNIFF_H
#define TOOLRUN_SNIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when p[0..n) holds a NUL byte or more than 10% of its bytes
 * belong to invalid UTF-8. A valid sequence cut by the end of p[0..n)
 * does not count. */
bool sniff_binary(const uint8_t *p, size_t n);

/* A short name of the file type p[0..n) starts, or "data". */
const char *sniff_type(const uint8_t *p, size_t n);

#endif
