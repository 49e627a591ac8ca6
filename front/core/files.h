/*
 * File operations of the front ends: read_file / <open>, write_file /
 * <write>, edit_file. Each goes through path_open() first.
 */
#ifndef TOOLRUN_FRONT_FILES_H
#define TOOLRUN_FRONT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "front.h"
#include "path.h"

/* What one read may give back: the same budget as an agent command's
 * output (toolrun.conf max_bytes and max_lines; 0: none). */
struct read_budget {
	uint64_t max_bytes;
	uint64_t max_lines;
};

struct read_request {
	const char *path;
	/* The first line wanted, from 1; 0 means 1. With from_end, the
	 * number of lines from the end instead; 0 there: the last `limit`
	 * lines, or with limit 0 too, the last lines the budget allows. */
	uint64_t offset;
	uint64_t limit;   /* lines wanted; 0: as many as the budget allows */
	bool from_end;
	bool numbered;    /* "%6llu\t" before each line, as `cat -n` */
};

struct read_result {
	char rel[PATH_MAX];
	uint64_t size;        /* bytes in the file */
	uint64_t total_lines; /* lines in the file (a last line without a
			       * newline counts) */
	uint64_t first_line, last_line; /* shown: [first, last], 0 0 if none */
	bool truncated;       /* the budget stopped it before `limit` */
	bool binary;          /* not text: `text` is a one-line summary
			       * (size, type guess, SHA-256) */
	char *text;           /* malloc'd, NUL-terminated; the lines shown */
	size_t text_len;
};

/* The file is read whole, to count its lines: one larger than the
 * policy's max_read_bytes is refused (TOO_LARGE, RESOURCE). The budget
 * (b NULL: none) counts the text given back, line numbers included; a
 * first line alone over max_bytes is cut at a character boundary, and
 * truncated set. A range past the last line gives no text, and is no
 * error. Codes: path_open()'s, TOO_LARGE, IO_ERROR; OUT_OF_MEMORY and
 * INTERNAL (category INTERNAL). */
int front_read_file(const struct path_policy *p, const struct read_budget *b,
		    const struct read_request *rq, struct read_result *out,
		    struct front_error *e);
void read_result_free(struct read_result *r);

struct write_result {
	char rel[PATH_MAX];
	bool created;        /* the file did not exist before */
	uint64_t bytes;      /* its size now */
	uint64_t replacements; /* edit_file: 1 */
};

/* Create or replace path with data, atomically: a temporary file in the
 * same directory (".NAME.toolrun-XXXXXX", removed on any failure),
 * fsync'd, then renamed over it. An existing file keeps its mode, and
 * its owner where we may give it; a new one gets 0666 & ~umask. A
 * symlink at path is refused, SYMLINK_TARGET (it would be replaced, not
 * followed). Codes: path_open()'s, SYMLINK_TARGET, NOT_A_FILE, TOO_LARGE
 * (more than max_write_bytes), PERMISSION_DENIED, IO_ERROR. */
int front_write_file(const struct path_policy *p, const char *path, const void *data,
		     size_t len, struct write_result *out, struct front_error *e);

/* Replace old_string by new_string in path, where old_string must occur
 * exactly once (NOT_FOUND / NOT_UNIQUE with the count otherwise,
 * overlapping occurrences counted; an empty old_string is
 * EMPTY_OLD_STRING, SYNTAX); read as front_read_file does, written as
 * front_write_file does. Messages name the arguments as edit_file's
 * schema does (old_string). */
int front_edit_file(const struct path_policy *p, const char *path, const char *old_string,
		    size_t old_len, const char *new_string, size_t new_len,
		    struct write_result *out, struct front_error *e);

#endif
