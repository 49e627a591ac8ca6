/*
 * The spill store (spill.h).
 *
 * Process: the launcher.
 */
#include "spill.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "log.h"
#include "util.h"

/* Names tried for one file before giving up: the plain one, then -1, -2,
 * ... (several spills of one job and stream within a second). */
#define SPILL_TRIES 100

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* A file met while cleaning up, by age. */
struct spilled {
	char uid[16];
	char name[256];
	struct timespec mtime;
	uint64_t size;
};

/* Say what failed and why: "<what>: <errno text>". Returns -err. */
__attribute__((format(printf, 4, 5)))
static int fail(char *reason, size_t reason_len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(reason, reason_len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < reason_len)
		snprintf(reason + n, reason_len - (size_t)n, ": %s", errno_text(err));
	return -err;
}

/* Say what is wrong in words of our own. Returns -err. */
__attribute__((format(printf, 4, 5)))
static int refuse(char *reason, size_t reason_len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, reason_len, fmt, ap);
	va_end(ap);
	return -err;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Open dir/name (or name, from AT_FDCWD) as a directory without
 * following a link; say which it was when it is not one. */
static int open_dir(int at, const char *name, const char *what, const char *sub,
		    char *reason, size_t reason_len)
{
	int fd = openat(at, name, DIR_FLAGS);
	if (fd >= 0)
		return fd;
	int err = errno;
	struct stat st;
	if ((err == ENOTDIR || err == ELOOP) && fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return S_ISLNK(st.st_mode)
			? refuse(reason, reason_len, ELOOP, "spill_dir %s%s: is a symbolic link", what,
				 sub)
			: refuse(reason, reason_len, ENOTDIR, "spill_dir %s%s: is not a directory", what,
				 sub);
	return fail(reason, reason_len, err, "spill_dir %s%s", what, sub);
}

/* Fit to hold the users' directories: ours, and closed to other writers,
 * since whoever can rename entries in it could swap a user's directory
 * for another. Says why not in reason. */
static int check_root(const struct stat *st, const char *dir, char *reason, size_t reason_len)
{
	uid_t self = geteuid();

	if (st->st_uid != self)
		return refuse(reason, reason_len, EPERM,
			      "spill_dir %s: owned by uid %u, not by toolrund's (%u)", dir,
			      (unsigned)st->st_uid, (unsigned)self);
	if (st->st_mode & 022)
		return refuse(reason, reason_len, EPERM,
			      "spill_dir %s: mode %04o lets other users write to it", dir,
			      (unsigned)(st->st_mode & 07777));
	return 0;
}

/* Hold dir as the root when it is fit (check_root). made: we have just
 * made it, and users reach their own directory through it whatever our
 * umask. */
static int take_root(struct spill_root *r, const char *dir, bool made, char *reason,
		     size_t reason_len)
{
	struct stat st;
	int len = (int)strlen(dir);

	if (len >= (int)sizeof(r->dir))
		return refuse(reason, reason_len, ENAMETOOLONG, "spill_dir %s: name too long", dir);
	_cleanup_close_ int fd = open_dir(AT_FDCWD, dir, dir, "", reason, reason_len);
	if (fd < 0)
		return fd;
	if (made && fchmod(fd, 0755) < 0)
		return fail(reason, reason_len, errno, "spill_dir %s", dir);
	if (fstat(fd, &st) < 0)
		return fail(reason, reason_len, errno, "spill_dir %s", dir);
	int rc = check_root(&st, dir, reason, reason_len);
	if (rc < 0)
		return rc;
	spill_root_close(r);
	r->fd = steal_fd(&fd);
	memcpy(r->dir, dir, (size_t)len + 1);
	return 0;
}

/* spill_dir was there already, and is not fit: a directory of our own
 * beside it instead, which nobody can have made first (mkdtemp). why
 * says what was wrong with spill_dir. */
static int take_root_beside(struct spill_root *r, const char *dir, const char *why,
			    char *reason, size_t reason_len)
{
	char beside[sizeof(r->dir)], not_beside[CONFIG_PATH_MAX + 160];

	int n = snprintf(beside, sizeof(beside), "%s.XXXXXX", dir);
	if (n < 0 || (size_t)n >= sizeof(beside))
		return refuse(reason, reason_len, ENAMETOOLONG, "%s", why);
	if (!mkdtemp(beside))
		return fail(reason, reason_len, errno, "%s; and %s.XXXXXX beside it", why, dir);
	int rc = take_root(r, beside, true, not_beside, sizeof(not_beside));
	if (rc < 0) {
		rmdir(beside);
		return refuse(reason, reason_len, -rc, "%s; and %s", why, not_beside);
	}
	log_warn("%s; spill files go to %s instead, a directory of toolrund's own", why, beside);
	return 0;
}

int spill_prepare(struct spill_root *r, const char *spill_dir, char *reason, size_t reason_len)
{
	char dir[sizeof(r->dir)], why[CONFIG_PATH_MAX + 160];
	int len = (int)strlen(spill_dir);

	if (reason_len)
		reason[0] = '\0';
	while (len > 1 && spill_dir[len - 1] == '/')
		len--;
	if (len == 0)
		return refuse(reason, reason_len, ENOENT, "no spill_dir is set");
	if (len >= (int)sizeof(dir))
		return refuse(reason, reason_len, ENAMETOOLONG, "spill_dir %s: name too long",
			      spill_dir);
	snprintf(dir, sizeof(dir), "%.*s", len, spill_dir);
	if (mkdir(dir, 0755) == 0)
		return take_root(r, dir, true, reason, reason_len);
	if (errno != EEXIST)
		return fail(reason, reason_len, errno, "spill_dir %s", dir);
	int rc = take_root(r, dir, false, why, sizeof(why));
	return rc == 0 ? 0 : take_root_beside(r, dir, why, reason, reason_len);
}

void spill_root_close(struct spill_root *r)
{
	close_fd(&r->fd);
}

/* The root held is still what its path names, and still fit: it may
 * have been removed (a cleaner of /tmp), or renamed. */
bool spill_root_intact(const struct spill_root *r)
{
	struct stat held, named;
	char ignored[CONFIG_PATH_MAX + 160];

	return r->fd >= 0 && fstat(r->fd, &held) == 0 && held.st_nlink > 0 &&
	       check_root(&held, r->dir, ignored, sizeof(ignored)) == 0 &&
	       fstatat(AT_FDCWD, r->dir, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	       held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

/* File system calls as uid from here on (caps_fs_as): its directory is
 * closed to toolrund's own user. Returns the fsuid to go back to. */
static uid_t fs_as(uid_t uid)
{
	return caps_fs_as(uid, (gid_t)-1).uid;
}

/* Can this process act as uid on files (fs_as)? */
static bool may_act_as(uid_t uid)
{
	uid_t was = fs_as(uid);
	bool switched = fs_as((uid_t)-1) == uid;
	fs_as(was);
	return switched;
}

/* Make <spill_dir>/<uid> for uid: ours for now, in a directory only we may
 * write to, then given away under the name it was made with (CAP_CHOWN or
 * root). A file of ours in the user's name could be read by everyone this
 * daemon serves. */
static int make_uid_dir(const struct spill_root *r, const char *name, const char *sub, uid_t uid,
			char *reason, size_t reason_len)
{
	if (mkdirat(r->fd, name, 0700) < 0)
		return errno == EEXIST ? 0
				       : fail(reason, reason_len, errno, "spill_dir %s%s", r->dir, sub);
	if (fchmodat(r->fd, name, 0700, 0) < 0 ||
	    (uid != geteuid() && fchownat(r->fd, name, uid, (gid_t)-1, AT_SYMLINK_NOFOLLOW) < 0)) {
		int err = errno;
		unlinkat(r->fd, name, AT_REMOVEDIR);
		return fail(reason, reason_len, err, "spill_dir %s%s: cannot give it to uid %u",
			    r->dir, sub, (unsigned)uid);
	}
	return 0;
}

/* <spill_dir>/<uid>: made if missing; otherwise it must be uid's and
 * closed to everyone else. Checked as ourselves, opened as uid (fs_as). */
static int open_uid_dir(const struct spill_root *r, uid_t uid, char *reason, size_t reason_len)
{
	char name[16], sub[20];
	struct stat st;

	snprintf(name, sizeof(name), "%u", (unsigned)uid);
	snprintf(sub, sizeof(sub), "/%s", name);
	if (!may_act_as(uid))
		return refuse(reason, reason_len, EPERM,
			    "spill_dir %s%s: the file could not be given to uid %u (toolrund runs "
			    "as uid %u, without CAP_SETUID)",
			    r->dir, sub, (unsigned)uid, (unsigned)geteuid());
	int err = make_uid_dir(r, name, sub, uid, reason, reason_len);
	if (err < 0)
		return err;
	if (fstatat(r->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(reason, reason_len, errno, "spill_dir %s%s", r->dir, sub);
	if (S_ISDIR(st.st_mode) && st.st_uid != uid)
		return refuse(reason, reason_len, EPERM,
			      "spill_dir %s%s: owned by uid %u, not by uid %u", r->dir,
			      sub, (unsigned)st.st_uid, (unsigned)uid);
	if (S_ISDIR(st.st_mode) && (st.st_mode & 077))
		return refuse(reason, reason_len, EPERM,
			      "spill_dir %s%s: mode %04o lets other users in (0700 wanted)",
			      r->dir, sub, (unsigned)(st.st_mode & 07777));
	/* Only we may rename entries here: what was checked is what opens
	 * (and a link or a file is refused by open_dir). */
	uid_t was = fs_as(uid);
	int fd = open_dir(r->fd, name, r->dir, sub, reason, reason_len);
	fs_as(was);
	return fd;
}

static int older_first(const void *a, const void *b)
{
	const struct spilled *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static uid_t uid_of(const char *digits)
{
	return (uid_t)strtoul(digits, NULL, 10);
}

static bool unlink_in(const struct spill_root *r, const char *uid, const char *name)
{
	uid_t was = fs_as(uid_of(uid));
	int fd = openat(r->fd, uid, DIR_FLAGS);
	bool gone = fd >= 0 && (unlinkat(fd, name, 0) == 0 || errno == ENOENT);
	if (fd >= 0)
		close(fd);
	fs_as(was);
	return gone;
}

/* List the regular files of one uid's directory, deleting expired ones
 * on the way. Returns false when out of memory. */
static bool sweep_uid_dir(const struct spill_root *r, const char *uid, time_t expired,
			  struct spilled **v, size_t *n, size_t *cap)
{
	DIR *d = dir_open_at(r->fd, uid, DIR_FLAGS);
	if (!d)
		return true;
	bool ok = true;
	struct dirent *e;
	while (ok && (e = readdir(d))) {
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || strlen(e->d_name) >= sizeof((*v)->name))
			continue;
		if (st.st_mtim.tv_sec < expired) {
			unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		if (*n == *cap) {
			size_t grown = *cap ? 2 * *cap : 64;
			struct spilled *w = realloc(*v, grown * sizeof(**v));
			if (!w) {
				ok = false;
				break;
			}
			*v = w;
			*cap = grown;
		}
		struct spilled *s = &(*v)[(*n)++];
		snprintf(s->uid, sizeof(s->uid), "%s", uid);
		snprintf(s->name, sizeof(s->name), "%s", e->d_name);
		s->mtime = st.st_mtim;
		s->size = (uint64_t)st.st_size;
	}
	closedir(d);
	return ok;
}

/* Expiry, then the total: best effort, since the new file is what the
 * caller waits for and a full disk fails its own way. */
static void clean_up(const struct spill_root *r, const struct config *cfg, time_t now)
{
	DIR *d = dir_open_at(r->fd, "", 0);
	if (!d)
		return;
	time_t expired = now - (time_t)cfg->spill_expire_s;
	struct spilled *v = NULL;
	size_t n = 0, cap = 0;
	bool ok = true;
	struct dirent *e;
	while (ok && (e = readdir(d))) {
		if (!all_digits(e->d_name) || strlen(e->d_name) >= sizeof(v->uid))
			continue;
		uid_t was = fs_as(uid_of(e->d_name));
		ok = sweep_uid_dir(r, e->d_name, expired, &v, &n, &cap);
		fs_as(was);
	}
	closedir(d);

	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += v[i].size;
	/* Leave room for one more file of the largest size allowed. */
	uint64_t keep = cfg->spill_total_bytes > cfg->spill_max_bytes
				? cfg->spill_total_bytes - cfg->spill_max_bytes
				: 0;
	if (ok && total > 0 && total >= keep) {
		qsort(v, n, sizeof(*v), older_first);
		for (size_t i = 0; i < n && total > 0 && total >= keep; i++)
			if (unlink_in(r, v[i].uid, v[i].name))
				total -= v[i].size;
	}
	free(v);
}

/* A new file in the uid's directory: <UTC time>-<job>-<stream>[-N].log. */
static int create_file(int dir, const struct spill_root *r, uid_t uid, uint64_t job,
		       const char *stream, time_t now, char *name, size_t name_len,
		       char *reason, size_t reason_len)
{
	char stamp[32];
	struct tm tm;

	if (!gmtime_r(&now, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) == 0)
		return fail(reason, reason_len, EOVERFLOW, "spill file time");
	int fd = -1;
	for (int k = 0; k < SPILL_TRIES && fd < 0; k++) {
		if (k == 0)
			snprintf(name, name_len, "%s-%" PRIu64 "-%s.log", stamp, job, stream);
		else
			snprintf(name, name_len, "%s-%" PRIu64 "-%s-%d.log", stamp, job, stream, k);
		fd = openat(dir, name,
			    O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
			    0600);
		if (fd < 0 && errno != EEXIST)
			return fail(reason, reason_len, errno, "spill file %s/%u/%s",
				    r->dir, (unsigned)uid, name);
	}
	if (fd < 0)
		return fail(reason, reason_len, EEXIST, "spill file %s/%u/%s", r->dir,
			    (unsigned)uid, name);
	/* Made as uid (fs_as): its own already, whatever our umask. */
	if (fchmod(fd, 0600) < 0) {
		int err = errno;
		close(fd);
		unlinkat(dir, name, 0);
		return fail(reason, reason_len, err, "spill file %s/%u/%s", r->dir,
			    (unsigned)uid, name);
	}
	return fd;
}

int spill_open(struct spill_root *r, const struct config *cfg, uid_t uid, uint64_t job,
	       const char *stream, char *path, size_t path_len, char *reason, size_t reason_len)
{
	char name[256];

	if (path_len)
		path[0] = '\0';
	if (reason_len)
		reason[0] = '\0';
	if (!cfg->spill_dir[0])
		return refuse(reason, reason_len, ENOENT, "no spill_dir is set");
	if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
		return refuse(reason, reason_len, EINVAL, "no spill stream named %s", stream);
	if (!spill_root_intact(r)) {
		int rc = spill_prepare(r, cfg->spill_dir, reason, reason_len);
		if (rc < 0)
			return rc;
	}

	_cleanup_close_ int dir = open_uid_dir(r, uid, reason, reason_len);
	if (dir < 0)
		return dir;
	time_t now = time(NULL);
	clean_up(r, cfg, now);
	uid_t was = fs_as(uid);
	int fd = create_file(dir, r, uid, job, stream, now, name, sizeof(name), reason,
			     reason_len);
	fs_as(was);
	if (fd < 0)
		return fd;
	int n = snprintf(path, path_len, "%s/%u/%s", r->dir, (unsigned)uid, name);
	if (n < 0 || (size_t)n >= path_len) {
		close(fd);
		unlinkat(dir, name, 0);
		return fail(reason, reason_len, ENAMETOOLONG, "spill file %s/%u/%s", r->dir,
			    (unsigned)uid, name);
	}
	return fd;
}
