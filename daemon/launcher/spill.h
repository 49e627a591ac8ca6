/*
 * The spill store: where the whole of a stream that was cut is kept, so
 * that the agent can read what it was not shown.
 *
 *   <spill_dir>/              0755, toolrund's (made if missing)
 *     <uid>/                  0700, owned by uid: nobody else reads it
 *       20261123T061501Z-<job>-stdout.log   0600, owned by uid
 *
 * The launcher makes spill_dir when it starts (in the box, before any
 * caller runs) and holds it open (struct spill_root). It must be
 * toolrund's own directory, that nobody else may write to. Where it
 * already exists and is not (another user made it first, it is open to
 * others, a link), toolrund makes a directory of its own beside it,
 * <spill_dir>.XXXXXX (mkdtemp: a name nobody can have taken first), uses
 * that, and logs a warning naming both. A held directory that is no
 * longer at its path (removed, renamed) is prepared again the same way
 * before the next file.
 *
 * File names sort by creation time (UTC). Before a file is made, files
 * older than spill_expire go, in every uid's directory, then the oldest
 * until what is left, with room for one more full file (spill_max), fits
 * spill_total. The size of each file is the listener's to enforce: it
 * writes to the fd it is handed.
 *
 * Only the launcher calls this (the listener may not open files). The
 * tree is walked from directory fds with *at() calls and O_NOFOLLOW, so
 * a symbolic link anywhere below spill_dir is never followed.
 *
 * Errors: -errno, with one line in reason naming what failed
 * ("spill_dir /tmp/x: Read-only file system").
 *
 * Process: the launcher.
 */
#ifndef TOOLRUN_SPILL_H
#define TOOLRUN_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* Where spill files go: spill_dir, or the directory made beside it. */
struct spill_root {
	int fd;                         /* open on dir; -1 until prepared */
	char dir[CONFIG_PATH_MAX + 16]; /* without trailing slashes */
};

#define SPILL_ROOT_INIT {.fd = -1, .dir = ""}

/*
 * Make spill_dir (0755) or take it as it is, when it is toolrund's and
 * closed to others; otherwise make <spill_dir>.XXXXXX and log a warning
 * naming both. Holds the directory open in root (closing what root held
 * before). Returns 0, or -errno with reason: -ENOENT for an empty
 * spill_dir ("no spill_dir is set").
 */
int spill_prepare(struct spill_root *root, const char *spill_dir, char *reason,
		  size_t reason_len);

/*
 * Make a new spill file for one stream ("stdout" or "stderr") of job,
 * for uid, under root (prepared again first with cfg's spill_dir when it
 * was not, or is no longer at its path). Returns an fd opened O_WRONLY |
 * O_APPEND | O_CLOEXEC, with the file's absolute path in path; or -errno
 * with reason. -ENOENT with an empty spill_dir: nothing is kept.
 */
int spill_open(struct spill_root *root, const struct config *cfg, uid_t uid, uint64_t job,
	       const char *stream, char *path, size_t path_len, char *reason, size_t reason_len);

/* root holds a directory that is still what its path names, and still
 * toolrund's alone (not removed, renamed or opened to others since). */
bool spill_root_intact(const struct spill_root *root);

/* Close what root holds. */
void spill_root_close(struct spill_root *root);

#endif
