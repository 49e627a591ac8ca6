/*
 * Processes seen through /proc: the launcher's view of a job's tree,
 * of who still feeds a job's stdin, and of which command a caller runs in.
 *
 * Only the launcher uses this (the listener may not open files). Every
 * scan is a snapshot of a moving system: a process that exits during it
 * is skipped, as is one whose entries cannot be read (another user's,
 * without the capability to look).
 *
 * Process: the launcher.
 */
#ifndef TOOLRUN_PROCTREE_H
#define TOOLRUN_PROCTREE_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Send signo to every live process below root: its children, theirs,
 * and so on, and the members of the session root leads, whatever their
 * process group or session; then, with_root, to root itself. An agent
 * command's first process is a subreaper (PR_SET_CHILD_SUBREAPER), so
 * what its tree orphans (`setsid -f`, a double fork) comes up to it
 * rather than to init, and stays below it. With SIGKILL the tree is
 * first stopped (SIGSTOP, scan after scan until one finds nothing new),
 * then killed, root last, so that nothing a victim forked escapes and
 * the root does not go on running its script meanwhile. Returns how many processes
 * below root were signalled, or -errno when /proc cannot be read
 * (-EINVAL for root <= 0).
 */
int proctree_kill_tree(pid_t root, int signo, bool with_root);

/*
 * Which of roots (the first processes of running agent commands and
 * sessions) process pid runs below: its own session's leader, or an
 * ancestor. Returns the index in roots, or -1 (none, or pid is gone).
 */
int proctree_command_of(pid_t pid, const pid_t *roots, size_t nroots);

/* Whether process pid ignores signo (SIG_IGN, from /proc/PID/status). */
bool proctree_ignores(pid_t pid, int signo);

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
