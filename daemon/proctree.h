/*
 * Processes seen through /proc: the launcher's view of a job's session
 * and of who still feeds a job's stdin.
 *
 * Only the launcher uses this (the listener may not open files). Every
 * scan is a snapshot of a moving system: a process that exits during it
 * is skipped, as is one whose entries cannot be read (another user's,
 * without the capability to look).
 */
#ifndef TOOLRUN_PROCTREE_H
#define TOOLRUN_PROCTREE_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Send signo to every live process whose session id is sid (the session
 * a job's program leads: its pid), whatever its process group. The
 * calling process is never signalled. With SIGKILL the scan is repeated
 * while it finds processes, so that children forked during a scan go
 * too (a bounded number of times).
 * Returns how many processes the first scan signalled, or -errno when
 * /proc cannot be read (-EINVAL for sid <= 0).
 */
int proctree_kill_session(pid_t sid, int signo);

/*
 * Whether a process outside session exclude_sid (and other than the
 * calling process) holds the pipe or FIFO (dev, ino) open for writing:
 * O_WRONLY, or O_RDWR as a FIFO may be opened. exclude_sid <= 0 excludes
 * no session. /proc unreadable counts as no writer.
 */
bool proctree_pipe_has_writer(dev_t dev, ino_t ino, pid_t exclude_sid);

/*
 * Whether a process of one of the sessions sids (nsids of them) is
 * blocked reading the file (dev, ino): in read(), readv(), pread64(),
 * preadv() on it, or in poll(), ppoll(), select() or pselect6() waiting
 * for it to be readable (from /proc/PID/syscall, and /proc/PID/mem for
 * the poll set). The kernel shows those only to a process that may trace
 * the one it looks at. Returns 1 waiting, 0 not, or -errno when no
 * process could be looked at and none was found waiting.
 */
int proctree_session_waiting(const pid_t *sids, size_t nsids, dev_t dev, ino_t ino);

#endif
