/*
 * The path policy: one validator for every file operation of the front
 * ends. A path an agent gives is checked against a root:
 *   - relative paths are taken from the root; absolute paths must lie
 *     under it;
 *   - refused: NUL bytes, "~" at the start, a URL ("file://", any
 *     "scheme://"), backslashes used as separators ("..\\.."), an escape
 *     by "..", and symbolic links that lead out of the root (checked on
 *     the object actually opened, not on the text, so that no race
 *     between check and use lets a link swap escape);
 *   - an optional allow-list of extensions ("c,h,md"; "" allows all);
 *   - size limits for reads and writes.
 * The refusals are FRONT_VALIDATION errors whose message names the path
 * and says which rule it broke.
 */
#ifndef TOOLRUN_FRONT_PATH_H
#define TOOLRUN_FRONT_PATH_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "front.h"

#include <stddef.h>

#define PATH_POLICY_MAX_EXTENSIONS 64

/* The size limits path_policy_init() sets, and what 0 in the struct
 * means: a file is read whole to count its lines, so the read limit
 * bounds the memory one read takes. */
#define PATH_DEFAULT_MAX_READ_BYTES (64ULL << 20)
#define PATH_DEFAULT_MAX_WRITE_BYTES (16ULL << 20)

struct path_policy {
	char root[PATH_MAX]; /* canonical and absolute */
	int root_fd;         /* O_PATH | O_DIRECTORY of root, or -1 */
	char extensions[PATH_POLICY_MAX_EXTENSIONS][16]; /* without the dot */
	unsigned nextensions; /* 0: any extension */
	uint64_t max_read_bytes;  /* larger files are refused: TOO_LARGE */
	uint64_t max_write_bytes; /* write_file / edit_file refuse more */
	/* Resolve every component here, not with openat2(RESOLVE_BENEATH):
	 * what a kernel without openat2 (or a seccomp profile that refuses
	 * it) gets anyway; the tests run both ways. */
	bool walk_only;
};

/* root must exist and be a directory; extensions: NULL or "" for any, or
 * a comma-separated list ("c,h,md", leading dots allowed). The limits are
 * set to the defaults above; the caller may change them after. */
int path_policy_init(struct path_policy *p, const char *root, const char *extensions,
		     struct front_error *e);
void path_policy_free(struct path_policy *p);

enum path_use {
	PATH_READ,  /* an existing regular file, opened O_RDONLY */
	PATH_WRITE, /* a file that may not exist yet: its parent directory,
		     * which must exist, is opened, not the file */
	PATH_DIR,   /* an existing directory (search, tree) */
};

struct path_ref {
	int fd;             /* READ: the file; WRITE: the parent directory;
			     * DIR: the directory; all O_CLOEXEC */
	char rel[PATH_MAX]; /* the path from the root, "." for the root */
	char abs[PATH_MAX]; /* root + "/" + rel */
	char name[NAME_MAX + 1]; /* WRITE: the file's name in fd */
};

/* Check path for the use; on success ref->fd is open and the caller
 * closes it.
 *
 * ".." is resolved in the text first ("a/../b" is "b"), and the path so
 * normalised is what is opened and reported in ref->rel. A symbolic link
 * on the way is followed only while it stays under the root (an absolute
 * target must name a place under it); the allow-list of extensions holds
 * for the name given and, for PATH_READ, for the name a final link leads
 * to. Codes: EMPTY_PATH, PATH_TOO_LONG (SYNTAX); NUL_IN_PATH, HOME_PATH,
 * URL_PATH, BACKSLASH_PATH (any backslash), OUTSIDE_ROOT,
 * SYMLINK_OUTSIDE, EXTENSION_NOT_ALLOWED (VALIDATION); NOT_FOUND, NOT_A_FILE,
 * NOT_A_DIRECTORY, PERMISSION_DENIED, SYMLINK_LOOP, IO_ERROR (EXECUTION). */
int path_open(const struct path_policy *p, const char *path, enum path_use use,
	      struct path_ref *ref, struct front_error *e);

/* For front ends that receive a path with its length (JSON, tags): refuse
 * an empty one (EMPTY_PATH) and one holding a NUL byte (NUL_IN_PATH),
 * which a C string would silently cut short. */
int path_check_bytes(const char *path, size_t len, struct front_error *e);

#endif
