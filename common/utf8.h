/*
 * What valid UTF-8 is, once for toolrun: the one binary check of the
 * shaper, read_file and search, the shaper's cut points (sniff.h) and
 * every JSON text toolrun writes (jsontext.h) ask here.
 */
#ifndef TOOLRUN_UTF8_H
#define TOOLRUN_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* utf8_sequence's answer for a sequence valid so far that p[0..n) ends
 * before its last byte: the next bytes may complete it. */
#define UTF8_CUT ((size_t)-1)

/* The length (1 to 4) of the valid UTF-8 sequence at p[0..n), n > 0; 0
 * when p[0] begins none: a stray continuation byte, an overlong form, a
 * surrogate, a code point past U+10FFFF, a byte that can never appear
 * (Unicode, table 3-7); UTF8_CUT when it is valid so far but cut by the
 * end of p[0..n). */
size_t utf8_sequence(const uint8_t *p, size_t n);

/* p[0..n) with each byte that begins no valid sequence (a sequence cut
 * by the end included) replaced by U+FFFD (EF BF BD), in a buffer of
 * malloc's with its length in *out_len; NULL, and *out_len 0, when
 * p[0..n) is valid UTF-8 already or memory ran out (*out_len then
 * SIZE_MAX). */
char *utf8_scrub(const uint8_t *p, size_t n, size_t *out_len);

#endif
