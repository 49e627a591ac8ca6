/*
 * The audit log's hash chain, shared by the launcher (which writes the
 * log, daemon/launcher/auditlog.c) and `toolrun audit verify`.
 *
 * Every line of the log is one JSON object whose first member is
 *
 *     {"prev":"<64 lowercase hex digits>", ...
 *
 * the SHA-256 of the line before it (its bytes without the '\n'). The
 * first line of a chain has 64 zeros. Rotated files continue the chain:
 * the first line of audit.jsonl chains to the last line of audit.jsonl.1.
 * docs/audit.md says what the chain does and does not protect against.
 *
 * Error convention (common/util.h): negative errno for a failure, a
 * positive enum value for an expected outcome.
 */
#ifndef TOOLRUN_AUDITCHAIN_H
#define TOOLRUN_AUDITCHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"

#define AUDITCHAIN_DIGEST DIGEST_SHA256_SIZE
/* 64 hex digits and the NUL. */
#define AUDITCHAIN_HEX_SIZE (2 * AUDITCHAIN_DIGEST + 1)
/* What a line starts with, before the hex digits. */
#define AUDITCHAIN_PREFIX "{\"prev\":\""
#define AUDITCHAIN_PREFIX_LEN (sizeof(AUDITCHAIN_PREFIX) - 1)

/* The first line of a chain chains to this. */
extern const char auditchain_zero[AUDITCHAIN_HEX_SIZE];

/* The SHA-256 of len bytes as lowercase hex. Returns 0 (the int stays
 * for the error convention: hashing itself cannot fail). */
int auditchain_hash(const void *line, size_t len, char hex[AUDITCHAIN_HEX_SIZE]);

/* The same, fed in pieces. */
struct auditchain_hasher {
	struct sha256_ctx ctx;
};
int auditchain_hasher_init(struct auditchain_hasher *h);
int auditchain_hasher_add(struct auditchain_hasher *h, const void *data, size_t len);
/* Writes the hex digest. */
int auditchain_hasher_end(struct auditchain_hasher *h, char hex[AUDITCHAIN_HEX_SIZE]);

enum auditchain_result {
	AUDITCHAIN_INTACT = 0,
	AUDITCHAIN_BROKEN = 1, /* report->error names the first bad line */
};

struct auditchain_report {
	/* Lines read, in all files; file_lines (optional, n entries, the
	 * caller's) gets each file's count. */
	uint64_t lines;
	uint64_t *file_lines;
	/* BROKEN: "FILE:LINE: what is wrong"; a failure: "FILE: reason". */
	char error[2048];
	/* BROKEN: which file (index into paths) and line (from 1). */
	size_t bad_file;
	uint64_t bad_line;
};

/*
 * Verify paths[0..n) as one chain, oldest first: every line must be a
 * JSON object beginning with {"prev":"<hex>" where hex is the SHA-256 of
 * the line before it, across file boundaries. The first line of
 * paths[0] may chain to anything: a line of a file that rotation has
 * deleted, or all zeros when it begins the chain. A line of all zeros
 * anywhere else is a break.
 *
 * Returns AUDITCHAIN_INTACT, AUDITCHAIN_BROKEN, or -errno when a file
 * cannot be read (report->error says which and why).
 */
int auditchain_verify(const char *const paths[], size_t n,
		      struct auditchain_report *report);

#endif
