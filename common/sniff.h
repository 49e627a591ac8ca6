/*
 * The one rule for "is this binary?" and the one table of file types,
 * for a file or a stream alike: the daemon's shaper (daemon/rules/shape.c),
 * read_file and <open> (front/core/files.c) and the search index
 * (front/core/searchindex.c) ask here, so that what one calls text the others do.
 * What valid UTF-8 is comes from utf8.h.
 */
#ifndef TOOLRUN_SNIFF_H
#define TOOLRUN_SNIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How much of a file or stream the rule looks at: enough for the magic
 * numbers (tar's is at 257) and a fair sample of text. The shaper holds
 * this much of each stream until it has decided. */
#define SNIFF_WINDOW 1024

/* Whether the file or stream that starts with p[0..n) is binary, on its
 * first min(n, SNIFF_WINDOW) bytes: they hold a NUL byte, or more than
 * 10% of them belong to invalid UTF-8. A valid sequence cut by the end of
 * those bytes does not count. Later bytes never matter: a file whose NUL
 * comes after the window is text. */
bool sniff_binary(const uint8_t *p, size_t n);

/* Where the text from p[from] ends: before a NUL or an invalid sequence
 * (then *not_text is set), or before a sequence cut by the end of
 * p[0..n), or at n. */
size_t sniff_text_end(const uint8_t *p, size_t from, size_t n, bool *not_text);

/* A short name of the file type p[0..n) starts ("ELF", "gzip", "tar
 * archive", ...: the table in sniff.c), or "data". Only its first
 * SNIFF_WINDOW bytes are looked at. */
const char *sniff_type(const uint8_t *p, size_t n);

#endif
