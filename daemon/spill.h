/*
 * The spill store: where the whole of a stream that was cut is kept, so
 * that the agent can read what it was not shown.
 *
 *   <spill_dir>/              0755, toolrund's (made if missing)
 *     <uid>/                  0700, owned by uid: nobody else reads it
 *       20261123T061501Z-<job>-stdout.log   0600, owned by uid
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
 */
#ifndef TOOLRUN_SPILL_H
#define TOOLRUN_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/*
 * Make a new spill file for one stream ("stdout" or "stderr") of job,
 * for uid. Returns an fd opened O_WRONLY | O_APPEND | O_CLOEXEC, with the
 * file's absolute path in path; or -errno with one line in reason naming
 * what failed ("spill_dir /tmp/x: Read-only file system"). -ENOENT with
 * an empty spill_dir: nothing is kept.
 */
int spill_open(const struct config *cfg, uid_t uid, uint64_t job, const char *stream,
	       char *path, size_t path_len, char *reason, size_t reason_len);

#endif
