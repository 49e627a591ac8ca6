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

/* Where the text from p[from] ends: before a NUL or an invalid sequence
 * (then *not_text is set), or before a sequence cut by the end of
 * p[0..n), or at n. */
size_t sniff_text_end(const uint8_t *p, size_t from, size_t n, bool *not_text);

/* A short name of the file type p[0..n) starts, or "data". */
const char *sniff_type(const uint8_t *p, size_t n);

#endif
