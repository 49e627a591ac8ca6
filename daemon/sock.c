#include "sock.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

int sock_listen(struct listen_socket *ls, const char *path, mode_t dir_mode,
		uid_t owner, gid_t group, char *err, size_t errlen)
{
	char dir[CONFIG_SOCKET_MAX], lock[CONFIG_SOCKET_MAX + 8];
	char tmp[CONFIG_SOCKET_MAX + 8];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;

	*ls = (struct listen_socket){.fd = -1, .lock_fd = -1};
	snprintf(ls->path, sizeof(ls->path), "%s", path);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	if (strlen(tmp) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -ENAMETOOLONG;
	}

	/* The directory: create the last component if it is missing. */
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
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
	}

	ls->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (ls->lock_fd < 0)
		return fail(err, errlen, errno, "open", lock);
	if (flock(ls->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close_fd(&ls->lock_fd);
		if (e == EWOULDBLOCK) {
			snprintf(err, errlen,
				 "%s is served by a running toolrund (%s is locked)",
				 path, lock);
			return -EADDRINUSE;
		}
		return fail(err, errlen, e, "lock", lock);
	}
	if (answered(path)) {
		close_fd(&ls->lock_fd);
		snprintf(err, errlen, "%s is served by a running server", path);
		return -EADDRINUSE;
	}

	ls->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ls->fd < 0)
		return fail(err, errlen, errno, "create a socket for", path);
	unlink(tmp);
	memcpy(sa.sun_path, tmp, strlen(tmp) + 1);
	if (bind(ls->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return fail(err, errlen, errno, "bind", tmp);
	/* Anyone may connect; peer credentials decide who is served. */
	if (chmod(tmp, 0666) < 0)
		return fail(err, errlen, errno, "chmod", tmp);
	if (listen(ls->fd, LISTEN_BACKLOG) < 0)
		return fail(err, errlen, errno, "listen on", tmp);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return fail(err, errlen, e, "move the socket to", path);
	}
	if (stat(path, &st) == 0) {
		ls->dev = st.st_dev;
		ls->ino = st.st_ino;
	}
	return 0;
}

void sock_close(struct listen_socket *ls)
{
	struct stat st;

	if (ls->fd >= 0 && stat(ls->path, &st) == 0 && st.st_dev == ls->dev &&
	    st.st_ino == ls->ino)
		unlink(ls->path);
	close_fd(&ls->fd);
	close_fd(&ls->lock_fd);
}
