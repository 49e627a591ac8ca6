/*
 * The audit log file, in the launcher: the listener composes each record
 * (audit.h) but may open no file; the launcher opens the log at its
 * start, chains every record to the one before it (common/auditchain.h)
 * and rotates the file by size. docs/audit.md describes the format.
 *
 *   open     `audit_log` (its directory made if missing, 0700; the file
 *            0600, O_APPEND|O_NOFOLLOW), else audit.jsonl in the
 *            directory of each socket_fallback, in order; one warning
 *            names what failed and why. Each directory from / down is
 *            opened by fd without following a link (the links of the
 *            path's directories are resolved first) and must be root's
 *            or toolrund's euid's, and writable by no one else unless
 *            sticky (in single identity, shared_uid, that last is not
 *            asked): who can rename the log's entries could swap it.
 *   append   {"prev":"<SHA-256 of the line before>", + the record's
 *            members + "\n", in one write.
 *   rotate   when a line would take the file past audit_max: .K -> .K+1
 *            up to audit_keep (the oldest deleted), the file -> .1, a new
 *            file whose first line chains to the last line of .1. With
 *            audit_keep = 0 the file is emptied and a new chain begins.
 *            The directories are checked again first; unfit, the log is
 *            lost (a->failure says why) rather than reopened there.
 *
 * Error convention (common/util.h): negative errno on failure, positive
 * AUDITLOG_* values for outcomes the caller must act on.
 *
 * Process: the launcher.
 */
#ifndef TOOLRUN_AUDITLOG_H
#define TOOLRUN_AUDITLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auditchain.h"
#include "config.h"

/* The file in use changed (another file, or none): tell the listener. */
#define AUDITLOG_MOVED 1

struct auditlog {
	int fd;                   /* -1: no audit log */
	char path[CONFIG_PATH_MAX]; /* the file in use; "" with none */
	uint64_t size;            /* its size: what was there, and what we wrote */
	uint64_t max_bytes;       /* audit_max */
	unsigned keep;            /* audit_keep */
	char prev[AUDITCHAIN_HEX_SIZE]; /* the SHA-256 of the last line */
	uint64_t records;         /* lines appended since it was opened */
	/* Why audit_log itself is not the file in use: what failed when it
	 * was opened; "" when it is, or none is configured. */
	char failure[CONFIG_PATH_MAX + 128];
	/* Single identity: the programs served run as the log's owner and
	 * could change the log itself, so a directory above it that others
	 * may write (a Kubernetes emptyDir, root's 0777) is no further
	 * risk and is accepted. Set before opening. */
	bool shared_uid;
};

/*
 * Open the log the config names, or a fallback, and find where its chain
 * ends. Logs a warning when it writes elsewhere than `audit_log`, and an
 * error when it can write nowhere (a->fd is -1 then). Returns 0 when a
 * log is open or none is configured, else the errno of the first failure.
 */
int auditlog_open(struct auditlog *a, const struct config *cfg);

/*
 * Open one file (the directory made if missing) into a, whose fd must
 * not be open; a->path is path with the links of its directories
 * resolved. Returns 0, or -errno with a one-line reason in why.
 */
int auditlog_open_file(struct auditlog *a, const char *path, uint64_t max_bytes,
		       unsigned keep, char *why, size_t whylen);

/*
 * Chain and append one record: a JSON object on one line, without a
 * newline, beginning with '{'. Rotates first when needed. Returns 0,
 * AUDITLOG_MOVED (written, or not when the log was lost, and a->path
 * changed), or -errno (not written: a->fd is kept, and the file is as it
 * was). A record that is not such an object is -EINVAL.
 */
int auditlog_append(struct auditlog *a, const char *obj, size_t len);

void auditlog_close(struct auditlog *a);

#endif
