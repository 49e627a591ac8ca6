#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

const char *errno_text(int err)
{
	/* strerror() may translate and allocate; strerrordesc_np() is a
	 * plain table lookup (glibc 2.32+). */
	const char *s = strerrordesc_np(err < 0 ? -err : err);
	return s ? s : "Unknown error";
}

const char *path_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

bool preload_entry_is_toolrun(const char *entry, size_t len)
{
	static const char name[] = "libtoolrun.so";
	const size_t n = sizeof(name) - 1;

	return len >= n && memcmp(entry + len - n, name, n) == 0 &&
	       (len == n || entry[len - n - 1] == '/');
}

int uid_index(const uid_t *uids, unsigned n, uid_t uid)
{
	for (unsigned i = 0; i < n; i++)
		if (uids[i] == uid)
			return (int)i;
	return -1;
}

DIR *dir_open_at(int dirfd, const char *path, int flags)
{
	int fd = path[0] ? openat(dirfd, path, flags | O_DIRECTORY | O_CLOEXEC)
			 : fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

int fd_walk(void (*visit)(int fd, void *arg), void *arg)
{
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[1024];
	long n;

	if (dir < 0)
		return FD_WALK_NO_DIR;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			unsigned fd = 0;
			for (const char *p = d->d_name; *p; p++)
				fd = fd * 10 + (unsigned)(*p - '0');
			if ((int)fd != dir)
				visit((int)fd, arg);
		}
	}
	if (n < 0) {
		int err = errno;
		close(dir);
		errno = err;
		return -err;
	}
	close(dir);
	return FD_WALK_DONE;
}

void close_fd_list(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n;) {
		unsigned end = i + 1;
		while (end < n && fds[end - 1] >= 0 && fds[end] == fds[end - 1] + 1)
			end++;
		if (end - i < 2 ||
		    syscall(SYS_close_range, (unsigned)fds[i], (unsigned)fds[end - 1], 0U) < 0)
			for (unsigned k = i; k < end; k++)
				close(fds[k]);
		i = end;
	}
}
