/*
 * The audit log file (auditlog.h).
 *
 * Process: the launcher.
 */
#include "auditlog.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "log.h"
#include "util.h"

/* Room for the path and ".N". */
#define ROTATED_PATH_MAX (CONFIG_PATH_MAX + 12)
/* One read while looking for where the last line begins. */
#define TAIL_CHUNK (64 * 1024)

/* "cannot open PATH: reason" into why; returns -err. */
static int fail(char *why, size_t len, int err, const char *what, const char *path)
{
	snprintf(why, len, "%s%s%s: %s", what, what[0] ? " " : "", path, errno_text(err));
	return -err;
}

/* path.k, a rotated file. */
static void rotated_name(char out[ROTATED_PATH_MAX], const char *path, unsigned k)
{
	snprintf(out, ROTATED_PATH_MAX, "%.*s.%u", CONFIG_PATH_MAX - 1, path, k);
}

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/*
 * Whether dir (st its fstat) may lie above the log: whoever can rename
 * its entries could move the log aside and put a forged one at its path
 * (the chain is unkeyed), or make rotation reopen it inside a directory
 * of theirs. So it must be root's or toolrund's, and writable by nobody
 * else unless sticky (sshd's StrictModes rule). Says why not in why.
 */
static int check_dir(const struct stat *st, const char *dir, bool shared_uid, char *why,
		     size_t whylen)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);

	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(why, whylen,
			 "%s belongs to uid %u (mode %04o), neither root nor toolrund's uid %u: "
			 "its owner could replace the log",
			 dir, (unsigned)st->st_uid, mode, (unsigned)geteuid());
		return -EPERM;
	}
	if ((mode & 022) && !(mode & S_ISVTX) && !shared_uid) {
		snprintf(why, whylen,
			 "%s is writable by %s without the sticky bit (mode %04o): anyone%s could "
			 "replace the log",
			 dir, mode & 002 ? "others" : "its group", mode,
			 mode & 002 ? "" : " in its group");
		return -EPERM;
	}
	return 0;
}

/* Open the directory name in at (dir is its path), made 0700 when it is
 * missing, without following a link. */
static int open_subdir(int at, const char *name, const char *dir, char *why, size_t whylen)
{
	int fd = openat(at, name, DIR_FLAGS);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(at, name, 0700) < 0 && errno != EEXIST)
			return fail(why, whylen, errno, "cannot create directory", dir);
		fd = openat(at, name, DIR_FLAGS);
	}
	if (fd >= 0)
		return fd;
	int err = errno;
	struct stat st;
	if ((err == ELOOP || err == ENOTDIR) && fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		snprintf(why, whylen, "%s is %s", dir,
			 S_ISLNK(st.st_mode) ? "a symbolic link: audit_log must name real directories"
					     : "not a directory");
		return -err;
	}
	return fail(why, whylen, err, "cannot open directory", dir);
}

/*
 * The log's directory, walked from / by fd (no link followed, missing
 * directories made 0700), each directory on the way fit (check_dir; with
 * shared_uid, single identity, a directory others may write is accepted:
 * the programs served run as the log's owner and could change the log
 * itself). So what was checked is what the file is opened in. *name gets
 * where the file's own name begins in path. Returns the directory's fd,
 * or -errno with a one-line reason in why.
 */
static int open_log_dir(const char *path, bool shared_uid, const char **name, char *why,
			size_t whylen)
{
	char dir[CONFIG_PATH_MAX];
	struct stat st;

	if (strlen(path) >= sizeof(dir))
		return fail(why, whylen, ENAMETOOLONG, "", path);
	strcpy(dir, path);
	char *last = strrchr(dir, '/');
	if (dir[0] != '/' || !last[1]) {
		snprintf(why, whylen, "%s does not name a file by an absolute path", path);
		return -EINVAL;
	}
	*name = path + (last - dir) + 1;
	_cleanup_close_ int fd = open("/", DIR_FLAGS);
	if (fd < 0)
		return fail(why, whylen, errno, "cannot open directory", "/");
	if (fstat(fd, &st) < 0)
		return fail(why, whylen, errno, "cannot stat", "/");
	int r = check_dir(&st, "/", shared_uid, why, whylen);
	for (char *p = dir + 1; r == 0 && p <= last;) {
		char *end = strchr(p, '/');
		*end = '\0';
		if (end > p) {
			int next = open_subdir(fd, p, dir, why, whylen);
			if (next < 0)
				return next;
			close_fd(&fd);
			fd = next;
			if (fstat(fd, &st) < 0)
				return fail(why, whylen, errno, "cannot stat", dir);
			r = check_dir(&st, dir, shared_uid, why, whylen);
		}
		*end = '/';
		p = end + 1;
	}
	return r < 0 ? r : steal_fd(&fd);
}

/* The last '\n' in [0, end) of fd into *at, -1 when there is none.
 * Returns 0, or -errno. */
static int last_newline(int fd, int64_t end, char *buf, int64_t *at)
{
	*at = -1;
	while (end > 0) {
		int64_t from = end > TAIL_CHUNK ? end - TAIL_CHUNK : 0;
		ssize_t n = pread(fd, buf, (size_t)(end - from), from);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n != end - from)
			return -EIO;
		for (int64_t i = n - 1; i >= 0; i--)
			if (buf[i] == '\n') {
				*at = from + i;
				return 0;
			}
		end = from;
	}
	return 0;
}

/*
 * Where the chain of fd (size bytes) ends: the hash of its last complete
 * line into prev. *partial gets the bytes after the last '\n' (a write
 * cut short). Returns 1 when there is a complete line, 0 when not, or
 * -errno.
 */
static int chain_tail(int fd, uint64_t size, char prev[AUDITCHAIN_HEX_SIZE],
		      uint64_t *partial)
{
	char *buf = malloc(TAIL_CHUNK);
	int r = 0;

	*partial = 0;
	if (!buf)
		return -ENOMEM;
	int64_t end, start;
	r = last_newline(fd, (int64_t)size, buf, &end);
	if (r < 0)
		goto out;
	*partial = size - (uint64_t)(end + 1);
	if (end < 0)
		goto out;
	r = last_newline(fd, end, buf, &start);
	if (r < 0)
		goto out;
	start++;
	struct auditchain_hasher h;
	r = auditchain_hasher_init(&h);
	for (int64_t at = start; r == 0 && at < end;) {
		size_t want = (size_t)MIN(end - at, (int64_t)TAIL_CHUNK);
		ssize_t n = pread(fd, buf, want, at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else
			r = auditchain_hasher_add(&h, buf, (size_t)n);
		at += n > 0 ? n : 0;
	}
	int e = auditchain_hasher_end(&h, prev);
	r = r < 0 ? r : e < 0 ? e : 1;
out:
	free(buf);
	return r;
}

/* The chain's end in the rotated file name.1 in dir, if there is one. */
static bool rotated_tail(int dir, const char *name, char prev[AUDITCHAIN_HEX_SIZE])
{
	char rotated[ROTATED_PATH_MAX];
	struct stat st;
	uint64_t partial;

	rotated_name(rotated, name, 1);
	_cleanup_close_ int fd = openat(dir, rotated, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	return chain_tail(fd, (uint64_t)st.st_size, prev, &partial) == 1;
}

/* Open (or create) name in dir (path is dir/name) for appending: ours,
 * regular, 0600. */
static int open_log(int dir, const char *name, const char *path, struct stat *st, char *why,
		    size_t whylen)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC |
					    O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0600);
	if (fd < 0) {
		if (errno == ELOOP)
			return fail(why, whylen, ELOOP, "cannot open (a symbolic link)", path);
		return fail(why, whylen, errno, "cannot open", path);
	}
	if (fstat(fd, st) < 0)
		return fail(why, whylen, errno, "cannot stat", path);
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, whylen, "%s is not a regular file", path);
		return -EINVAL;
	}
	if (st->st_uid != geteuid()) {
		snprintf(why, whylen, "%s belongs to uid %u, not to toolrund's uid %u", path,
			 (unsigned)st->st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	/* Written by nobody else, read by nobody else. */
	if ((st->st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
		return fail(why, whylen, errno, "cannot chmod", path);
	return steal_fd(&fd);
}

/*
 * path with the links of its directories resolved (/var/run/x.jsonl is
 * /run/x.jsonl on Debian) into out: the walk follows no link, so it walks
 * the real directories, and a link swapped in after this is refused, not
 * followed. The part not there yet is kept as written (the walk makes
 * it). The file's own name is not resolved: a log that is a link is
 * refused. Returns 0, or -errno with a one-line reason in why.
 */
static int resolve_log_dirs(const char *path, char out[CONFIG_PATH_MAX], char *why,
			    size_t whylen)
{
	char prefix[CONFIG_PATH_MAX], real[PATH_MAX];

	if (strlen(path) >= sizeof(prefix))
		return fail(why, whylen, ENAMETOOLONG, "", path);
	strcpy(prefix, path);
	strcpy(out, path);
	if (path[0] != '/')
		return 0; /* refused by open_log_dir, as written */
	/* The longest directory of path that exists, resolved. */
	char *slash = strrchr(prefix, '/');
	for (;;) {
		if (slash == prefix)
			return 0; /* only / exists: nothing to resolve */
		*slash = '\0';
		if (realpath(prefix, real))
			break;
		if (errno != ENOENT)
			return fail(why, whylen, errno, "cannot resolve", prefix);
		slash = strrchr(prefix, '/');
	}
	const char *rest = path + (slash - prefix); /* "/" and what is not there yet */
	if ((size_t)snprintf(out, CONFIG_PATH_MAX, "%s%s", strcmp(real, "/") ? real : "", rest) >=
	    CONFIG_PATH_MAX)
		return fail(why, whylen, ENAMETOOLONG, "", path);
	return 0;
}

int auditlog_open_file(struct auditlog *a, const char *written, uint64_t max_bytes,
		       unsigned keep, char *why, size_t whylen)
{
	struct stat st;
	uint64_t partial;
	char path[CONFIG_PATH_MAX];
	const char *name;

	int resolved = resolve_log_dirs(written, path, why, whylen);
	if (resolved < 0)
		return resolved;
	_cleanup_close_ int dir = open_log_dir(path, a->shared_uid, &name, why, whylen);
	if (dir < 0)
		return dir;
	_cleanup_close_ int fd = open_log(dir, name, path, &st, why, whylen);
	if (fd < 0)
		return fd;
	uint64_t size = (uint64_t)st.st_size;
	char prev[AUDITCHAIN_HEX_SIZE];
	int found = chain_tail(fd, size, prev, &partial);
	if (found < 0)
		return fail(why, whylen, -found, "cannot read", path);
	if (partial) {
		/* A write cut short (a full disk, a crash): the next line
		 * starts on a line of its own, and verify names this one. */
		int r = write_all(fd, "\n", 1);
		if (r < 0)
			return fail(why, whylen, -r, "cannot write to", path);
		size++;
		log_warn("audit log %s ends with %llu bytes of a line cut short: it is ended "
			 "with a newline, and the chain goes on from the last complete line",
			 path, (unsigned long long)partial);
	}
	/* Nothing here yet: go on from the rotated file, if any (a new
	 * file that a rotation made, before its first line). */
	if (!found && !(keep > 0 && rotated_tail(dir, name, prev)))
		memcpy(prev, auditchain_zero, sizeof(prev));
	memcpy(a->prev, prev, sizeof(prev));
	a->fd = steal_fd(&fd);
	snprintf(a->path, sizeof(a->path), "%s", path);
	a->size = size;
	a->max_bytes = max_bytes;
	a->keep = keep;
	return 0;
}

int auditlog_open(struct auditlog *a, const struct config *cfg)
{
	char why[CONFIG_PATH_MAX + 128], all[4096], name[CONFIG_PATH_MAX];
	int first;

	a->fd = -1;
	a->path[0] = '\0';
	a->records = 0;
	a->failure[0] = '\0';
	if (!cfg->audit_log[0])
		return 0;
	first = auditlog_open_file(a, cfg->audit_log, cfg->audit_max_bytes, cfg->audit_keep,
				   why, sizeof(why));
	if (first == 0)
		return 0;
	snprintf(a->failure, sizeof(a->failure), "%s", why);
	snprintf(all, sizeof(all), "%s", why);
	for (unsigned i = 1; i < config_socket_count(cfg); i++) {
		const char *sock = config_socket_at(cfg, i);
		const char *slash = strrchr(sock, '/');
		if (!slash)
			continue;
		snprintf(name, sizeof(name), "%.*s/audit.jsonl", (int)(slash - sock), sock);
		char why2[sizeof(why)];
		if (auditlog_open_file(a, name, cfg->audit_max_bytes, cfg->audit_keep, why2,
				       sizeof(why2)) == 0) {
			log_warn("audit log: %s; writing to %s instead", why, name);
			return first;
		}
		size_t n = strlen(all);
		snprintf(all + n, sizeof(all) - n, "; %s", why2);
	}
	log_error("no audit log: %s", all);
	return first;
}

void auditlog_close(struct auditlog *a)
{
	if (a->fd >= 0)
		close_fd(&a->fd);
}

/* A record: one JSON object, on one line, that begins with '{'. */
static bool valid_record(const char *obj, size_t len)
{
	if (len < 2 || len > INT32_MAX || obj[0] != '{' || obj[len - 1] != '}' ||
	    memchr(obj, '\n', len))
		return false;
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		return false;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *o = json_tokener_parse_ex(tok, obj, (int)len);
	bool ok = o && json_object_is_type(o, json_type_object) &&
		  json_tokener_get_parse_end(tok) == len;
	json_object_put(o);
	json_tokener_free(tok);
	return ok;
}

/* No log any more (rotation could not reopen it): said in the log and in
 * a->failure, which status reports. Returns AUDITLOG_MOVED. */
static int lose_log(struct auditlog *a, const char *what, const char *why)
{
	log_error("audit log %s %s: %s; no audit log now", a->path, what, why);
	snprintf(a->failure, sizeof(a->failure), "%s", why);
	close_fd(&a->fd);
	a->path[0] = '\0';
	return AUDITLOG_MOVED;
}

/* Make room: rotate, or with keep = 0 start again. A file that cannot be
 * rotated grows on past audit_max (said in the log): records are not
 * dropped for it. Its directories are checked again first (open_log_dir):
 * a path no longer fit loses the log rather than reopen it there. */
static int rotate(struct auditlog *a)
{
	char from[ROTATED_PATH_MAX], to[ROTATED_PATH_MAX], why[sizeof(a->failure)];
	const char *name;

	if (a->keep == 0) {
		if (ftruncate(a->fd, 0) < 0) {
			log_error("cannot empty the audit log %s: %s", a->path, errno_text(errno));
			return 0;
		}
		a->size = 0;
		memcpy(a->prev, auditchain_zero, sizeof(a->prev));
		log_info("audit log %s reached audit_max (%llu bytes): emptied, a new chain "
			 "begins (audit_keep = 0)", a->path, (unsigned long long)a->max_bytes);
		return 0;
	}
	_cleanup_close_ int dir = open_log_dir(a->path, a->shared_uid, &name, why, sizeof(why));
	if (dir < 0)
		return lose_log(a, "not rotated", why);
	rotated_name(to, name, a->keep);
	if (unlinkat(dir, to, 0) < 0 && errno != ENOENT)
		goto failed;
	for (unsigned k = a->keep; k > 1; k--) {
		rotated_name(from, name, k - 1);
		rotated_name(to, name, k);
		if (renameat(dir, from, dir, to) < 0 && errno != ENOENT)
			goto failed;
	}
	snprintf(from, sizeof(from), "%s", name);
	rotated_name(to, name, 1);
	if (renameat(dir, from, dir, to) < 0)
		goto failed;

	struct stat st;
	int fd = open_log(dir, name, a->path, &st, why, sizeof(why));
	if (fd < 0)
		return lose_log(a, "rotated, but no new file", why);
	close_fd(&a->fd);
	a->fd = fd;
	a->size = (uint64_t)st.st_size;
	log_info("audit log %s reached audit_max (%llu bytes): rotated to %s.1", a->path,
		 (unsigned long long)a->max_bytes, a->path);
	return 0;
failed:
	log_error("cannot rotate the audit log %s (%s -> %s in its directory: %s): it grows "
		  "past audit_max", a->path, from, to, errno_text(errno));
	return 0;
}

int auditlog_append(struct auditlog *a, const char *obj, size_t len)
{
	if (!valid_record(obj, len))
		return -EINVAL;
	if (a->fd < 0)
		return -EBADF;

	/* {"prev":"<hex>", then the members after the record's '{'. */
	const char *rest = obj + 1;
	size_t rlen = len - 1, skip = 0;
	while (skip < rlen && (rest[skip] == ' ' || rest[skip] == '\t' || rest[skip] == '\r'))
		skip++;
	bool empty = rest[skip] == '}';
	size_t head = AUDITCHAIN_PREFIX_LEN + AUDITCHAIN_HEX_SIZE - 1 + (empty ? 1 : 2);
	size_t total = head + (empty ? 1 : rlen) + 1;
	char *line = malloc(total);
	if (!line)
		return -ENOMEM;

	int moved = 0;
	if (a->size > 0 && a->size + total > a->max_bytes) {
		moved = rotate(a);
		if (a->fd < 0) {
			free(line);
			return moved;
		}
	}
	memcpy(line, AUDITCHAIN_PREFIX, AUDITCHAIN_PREFIX_LEN);
	memcpy(line + AUDITCHAIN_PREFIX_LEN, a->prev, AUDITCHAIN_HEX_SIZE - 1);
	memcpy(line + head - (empty ? 1 : 2), empty ? "\"" : "\",", empty ? 1 : 2);
	if (empty)
		line[head] = '}';
	else
		memcpy(line + head, rest, rlen);
	line[total - 1] = '\n';

	char next[AUDITCHAIN_HEX_SIZE];
	int r = auditchain_hash(line, total - 1, next);
	if (r == 0)
		r = write_all(a->fd, line, total);
	free(line);
	if (r < 0) {
		/* Nothing half written stays: the chain goes on unbroken. */
		if (ftruncate(a->fd, (off_t)a->size) < 0)
			log_error("cannot cut a failed write off the audit log %s: %s", a->path,
				  errno_text(errno));
		return r;
	}
	a->size += total;
	a->records++;
	memcpy(a->prev, next, sizeof(next));
	return moved;
}
