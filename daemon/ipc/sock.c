/*
 * The listening socket (sock.h).
 *
 * Processes: the supervisor binds it, the listener accepts on it.
 */
#include "sock.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "caps.h"
#include "util.h"

#define LISTEN_BACKLOG 512

/* "cannot VERB OBJECT: reason" */
static int fail(char *err, size_t errlen, int e, const char *verb,
		const char *object)
{
	snprintf(err, errlen, "cannot %s %s: %s", verb, object, errno_text(e));
	return -e;
}

/* Is a live server answering on path? */
static bool answered(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	return connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
}

/* The socket's directory: its last component is made if missing; it must
 * not be writable by others, who could put a socket of their own there. */
static int prepare_dir(const char *path, mode_t dir_mode, uid_t owner, gid_t group,
		       char *err, size_t errlen)
{
	char dir[CONFIG_SOCKET_MAX];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, dir_mode) == 0) {
		if (chmod(dir, dir_mode) < 0)
			return fail(err, errlen, errno, "chmod", dir);
		if (geteuid() == 0 && chown(dir, owner, group) < 0)
			return fail(err, errlen, errno, "chown", dir);
	} else if (errno != EEXIST) {
		return fail(err, errlen, errno, "create", dir);
	}
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail(err, errlen, ENOTDIR, "use", dir);
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
			 "socket directory %s is writable by %s: another user could "
			 "replace the socket; give it a directory of its own",
			 dir, st.st_mode & S_IWOTH ? "others" : "its group");
		return -EPERM;
	}
	return 0;
}

/* Open and lock PATH.lock. Returns the fd, or -errno with err set. */
static int take_lock(const char *path, char *err, size_t errlen)
{
	char lock[CONFIG_SOCKET_MAX + 8];

	snprintf(lock, sizeof(lock), "%s.lock", path);
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fail(err, errlen, errno, "open", lock);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK) {
			snprintf(err, errlen, "%s is served by a running toolrund (%s is locked)",
				 path, lock);
			return -EADDRINUSE;
		}
		return fail(err, errlen, e, "lock", lock);
	}
	return fd;
}

/* A listening socket bound at PATH.new and renamed over PATH, so that the
 * socket's existence means it is ready. Returns the fd or -errno. */
static int bind_socket(const char *path, dev_t *dev, ino_t *ino, char *err,
		       size_t errlen)
{
	char tmp[CONFIG_SOCKET_MAX + 8];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail(err, errlen, errno, "create a socket for", path);
	unlink(tmp);
	memcpy(sa.sun_path, tmp, strlen(tmp) + 1);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return fail(err, errlen, errno, "bind", tmp);
	/* Anyone may connect; peer credentials decide who is served. */
	if (chmod(tmp, 0666) < 0)
		return fail(err, errlen, errno, "chmod", tmp);
	if (listen(fd, LISTEN_BACKLOG) < 0)
		return fail(err, errlen, errno, "listen on", tmp);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return fail(err, errlen, e, "move the socket to", path);
	}
	if (stat(path, &st) == 0) {
		*dev = st.st_dev;
		*ino = st.st_ino;
	}
	return steal_fd(&fd);
}

/* Lock path, check no server answers there, bind it. */
static int claim(struct listen_socket *ls, const char *path, char *err, size_t errlen)
{
	int r;

	ls->lock_fd = take_lock(path, err, errlen);
	if (ls->lock_fd < 0) {
		r = ls->lock_fd;
		ls->lock_fd = -1;
		return r;
	}
	if (answered(path)) {
		close_fd(&ls->lock_fd);
		snprintf(err, errlen, "%s is served by a running server", path);
		return -EADDRINUSE;
	}
	ls->fd = bind_socket(path, &ls->dev, &ls->ino, err, errlen);
	if (ls->fd < 0) {
		r = ls->fd;
		ls->fd = -1;
		return r;
	}
	return 0;
}

int sock_listen(struct listen_socket *ls, const char *path, mode_t dir_mode,
		uid_t owner, gid_t group, char *err, size_t errlen)
{
	struct sockaddr_un sa;

	*ls = (struct listen_socket){.fd = -1, .lock_fd = -1};
	snprintf(ls->path, sizeof(ls->path), "%s", path);
	if (strlen(path) + 4 >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	int r = prepare_dir(path, dir_mode, owner, group, err, errlen);
	if (r < 0)
		return r;
	r = claim(ls, path, err, errlen);
	/* Root without CAP_DAC_OVERRIDE (a container's) may not write into
	 * the directory of the user it is about to become: as that user,
	 * then. Not first: that user may not be able to reach the directory
	 * through root's. */
	if (r == -EACCES && owner != geteuid()) {
		struct fs_ids was = caps_fs_as(owner, group);
		r = claim(ls, path, err, errlen);
		caps_fs_as(was.uid, was.gid);
	}
	return r;
}

int sock_renew(struct listen_socket *ls, mode_t dir_mode, uid_t owner, gid_t group,
	       char *err, size_t errlen)
{
	char lock[CONFIG_SOCKET_MAX + 8];
	struct stat held, named;

	int r = prepare_dir(ls->path, dir_mode, owner, group, err, errlen);
	if (r < 0)
		return r;
	/* A lock file removed with the socket: lock a new one, or another
	 * daemon could start on this path beside us. */
	snprintf(lock, sizeof(lock), "%s.lock", ls->path);
	if (fstat(ls->lock_fd, &held) < 0 || stat(lock, &named) < 0 ||
	    held.st_dev != named.st_dev || held.st_ino != named.st_ino) {
		int fd = take_lock(ls->path, err, errlen);
		if (fd < 0)
			return fd;
		close(ls->lock_fd);
		ls->lock_fd = fd;
	}
	int fd = bind_socket(ls->path, &ls->dev, &ls->ino, err, errlen);
	if (fd < 0)
		return fd;
	close(ls->fd);
	ls->fd = fd;
	return 0;
}

void sock_close(struct listen_socket *ls)
{
	struct stat st;

	if (ls->fd >= 0 && stat(ls->path, &st) == 0 && st.st_dev == ls->dev &&
	    st.st_ino == ls->ino)
		unlink(ls->path);
	/* We hold the lock, so no other daemon uses this file: without it,
	 * clients know that nobody is coming back (client/connect.h). */
	if (ls->lock_fd >= 0) {
		char lock[CONFIG_SOCKET_MAX + 8];
		snprintf(lock, sizeof(lock), "%s.lock", ls->path);
		unlink(lock);
	}
	close_fd(&ls->fd);
	close_fd(&ls->lock_fd);
}

bool sock_still_ours(const struct listen_socket *ls, char *why, size_t whylen)
{
	struct stat st;

	if (lstat(ls->path, &st) < 0) {
		snprintf(why, whylen, "%s is gone (%s)", ls->path, errno_text(errno));
		return false;
	}
	if (st.st_dev != ls->dev || st.st_ino != ls->ino) {
		snprintf(why, whylen, "%s was replaced by another file", ls->path);
		return false;
	}
	return true;
}
