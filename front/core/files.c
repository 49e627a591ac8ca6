/*
 * read_file, write_file and edit_file (files.h), each after path_open().
 *
 * A read takes the whole file into memory, up to the policy's
 * max_read_bytes (TOO_LARGE beyond), so that total_lines is always
 * counted and a range from the end needs no second pass.
 */
#include "files.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "sniff.h"
#include "util.h"

/* Names tried for a temporary file before giving up. */
#define TEMP_TRIES 100
#define TEMP_SUFFIX ".toolrun-XXXXXX"

static int fail_io(struct front_error *e, int err, const char *path, const char *what)
{
	if (err == EACCES || err == EPERM)
		return front_fail(e, FRONT_EXECUTION, "PERMISSION_DENIED", "%s: %s: permission denied",
				  path, what);
	return front_fail(e, FRONT_EXECUTION, "IO_ERROR", "%s: %s: %s", path, what,
			  errno_text(err));
}

static int out_of_memory(struct front_error *e, const char *path)
{
	return front_fail(e, FRONT_INTERNAL, "OUT_OF_MEMORY", "%s: out of memory", path);
}

/* ───────────────────────── a growing buffer ───────────────────────── */

struct buf {
	char *p;
	size_t len, cap;
};

static bool buf_reserve(struct buf *b, size_t more)
{
	if (b->cap - b->len > more)
		return true;
	size_t cap = MAX(b->cap * 2, b->len + more + 1);
	char *p = realloc(b->p, cap);
	if (!p)
		return false;
	b->p = p;
	b->cap = cap;
	return true;
}

/* Append, keeping the text NUL-terminated. */
static bool buf_add(struct buf *b, const void *data, size_t n)
{
	if (!buf_reserve(b, n))
		return false;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static int read_whole(int fd, uint64_t max, const char *path, struct buf *b,
		      struct front_error *e)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return fail_io(e, errno, path, "stat");
	if ((uint64_t)st.st_size > max)
		goto too_large;
	for (;;) {
		/* One allocation for a file that does not grow while read: its
		 * size and room to see the end. */
		if (!buf_reserve(b, b->len ? BUFSIZ : (size_t)st.st_size + BUFSIZ))
			return out_of_memory(e, path);
		ssize_t n = read(fd, b->p + b->len, b->cap - b->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail_io(e, errno, path, "read");
		if (n == 0)
			break;
		b->len += (size_t)n;
		if (b->len > max) /* it grew while read */
			goto too_large;
	}
	b->p[b->len] = '\0';
	return 0;
too_large:
	return front_fail(e, FRONT_RESOURCE, "TOO_LARGE",
			  "%s: larger than the %llu bytes a read takes in (max_read_bytes)", path,
			  (unsigned long long)max);
}

/* ───────────────────────── text or binary ───────────────────────── */

/* The shaper's rule and type table (sniff.h), so that a file read here
 * and the same bytes printed by a command are called the same. */
static int summarise(const char *buf, size_t len, const char *path, struct read_result *out,
		     struct front_error *e)
{
	char hex[DIGEST_HEX_SIZE];
	struct buf text = { 0 };
	char line[256];

	digest_sha256_hex(buf, len, hex);
	int n = snprintf(line, sizeof(line), "binary file, %zu bytes, %s, sha256 %s", len,
			 sniff_type((const uint8_t *)buf, len), hex);
	if (!buf_add(&text, line, (size_t)n))
		return out_of_memory(e, path);
	out->binary = true;
	out->text = text.p;
	out->text_len = text.len;
	return 0;
}

/* ───────────────────────── lines ───────────────────────── */

static uint64_t count_lines(const char *buf, size_t len)
{
	uint64_t n = 0;

	for (const char *s = buf; (s = memchr(s, '\n', (size_t)(buf + len - s))); s++)
		n++;
	return n + (len && buf[len - 1] != '\n');
}

/* Where line (from 1) begins; len past the last. */
static size_t line_start(const char *buf, size_t len, uint64_t line)
{
	size_t at = 0;

	while (--line > 0 && at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);
		at = nl ? (size_t)(nl - buf) + 1 : len;
	}
	return at;
}

static size_t prefix_len(bool numbered, uint64_t line)
{
	char pre[32];
	return numbered ? (size_t)snprintf(pre, sizeof(pre), "%6llu\t", (unsigned long long)line)
			: 0;
}

/* The first of the last lines that fit the budget: the tail of the file
 * when no range is asked for. At least the last line, cut if need be. */
static uint64_t tail_start(const char *buf, size_t len, uint64_t total,
			   const struct read_budget *b, bool numbered)
{
	uint64_t line = total, bytes = 0;
	size_t end = len;

	for (; line >= 1; line--) {
		const char *nl = end > 1 ? memrchr(buf, '\n', end - 1) : NULL;
		size_t start = nl ? (size_t)(nl - buf) + 1 : 0;
		uint64_t cost = end - start + prefix_len(numbered, line);
		if ((b->max_lines && total - line + 1 > b->max_lines) ||
		    (b->max_bytes && bytes + cost > b->max_bytes))
			break;
		bytes += cost;
		end = start;
	}
	return line < total ? line + 1 : total;
}

struct emit {
	const struct read_budget *b;
	bool numbered;
	struct buf text;
	uint64_t shown;
};

enum emit_result { EMIT_OK, EMIT_FULL, EMIT_NOMEM };

/* Add one line; a line alone over the byte budget is cut, at a character
 * boundary, and ends the read. */
static enum emit_result emit_line(struct emit *em, uint64_t number, const char *s, size_t n)
{
	const struct read_budget *b = em->b;
	char pre[32];
	size_t plen = 0;

	if (b->max_lines && em->shown >= b->max_lines)
		return EMIT_FULL;
	if (em->numbered)
		plen = (size_t)snprintf(pre, sizeof(pre), "%6llu\t", (unsigned long long)number);
	bool cut = b->max_bytes && em->text.len + plen + n > b->max_bytes;
	if (cut) {
		if (em->shown > 0 || em->text.len + plen >= b->max_bytes)
			return EMIT_FULL;
		n = b->max_bytes - em->text.len - plen;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	if (!buf_add(&em->text, pre, plen) || !buf_add(&em->text, s, n))
		return EMIT_NOMEM;
	em->shown++;
	return cut ? EMIT_FULL : EMIT_OK;
}

/* Lines [first, first + count) (count 0: to the end) under the budget:
 * EMIT_FULL when the budget stopped it. */
static enum emit_result emit_range(struct emit *em, const char *buf, size_t len,
				   uint64_t first, uint64_t count)
{
	size_t at = line_start(buf, len, first);

	for (uint64_t line = first; at < len && (count == 0 || line < first + count); line++) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - buf) + 1 : len;
		enum emit_result r = emit_line(em, line, buf + at, end - at);
		if (r != EMIT_OK)
			return r;
		at = end;
	}
	return EMIT_OK;
}

static int select_lines(const char *buf, size_t len, const struct read_budget *b,
			const struct read_request *rq, const char *path, struct read_result *out,
			struct front_error *e)
{
	uint64_t total = out->total_lines, first = rq->offset ? rq->offset : 1;
	uint64_t count = rq->limit;
	struct emit em = { .b = b, .numbered = rq->numbered };
	bool cut_before = false;

	if (rq->from_end && rq->offset) {
		first = rq->offset < total ? total - rq->offset + 1 : 1;
	} else if (rq->from_end && total) {
		uint64_t wanted = rq->limit && rq->limit < total ? total - rq->limit + 1 : 1;
		first = MAX(wanted, tail_start(buf, len, total, b, rq->numbered));
		cut_before = first > wanted;
		count = 0;
	}
	enum emit_result r = first <= total ? emit_range(&em, buf, len, first, count) : EMIT_OK;
	if (r == EMIT_NOMEM || !buf_add(&em.text, "", 0)) {
		free(em.text.p);
		return out_of_memory(e, path);
	}
	out->truncated = cut_before || r == EMIT_FULL;
	out->first_line = em.shown ? first : 0;
	out->last_line = em.shown ? first + em.shown - 1 : 0;
	out->text = em.text.p;
	out->text_len = em.text.len;
	return 0;
}

int front_read_file(const struct path_policy *p, const struct read_budget *b,
		    const struct read_request *rq, struct read_result *out,
		    struct front_error *e)
{
	static const struct read_budget unlimited = { 0 };
	struct path_ref ref;
	struct buf data = { 0 };

	memset(out, 0, sizeof(*out));
	if (!rq->path)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_PATH", "the path is empty");
	if (path_open(p, rq->path, PATH_READ, &ref, e) < 0)
		return -1;
	snprintf(out->rel, sizeof(out->rel), "%s", ref.rel);
	int r = read_whole(ref.fd, p->max_read_bytes ? p->max_read_bytes
						       : PATH_DEFAULT_MAX_READ_BYTES,
			   rq->path, &data, e);
	close(ref.fd);
	if (r == 0) {
		out->size = data.len;
		out->total_lines = count_lines(data.p, data.len);
		r = sniff_binary((const uint8_t *)data.p, data.len)
			? summarise(data.p, data.len, rq->path, out, e)
			: select_lines(data.p, data.len, b ? b : &unlimited, rq, rq->path, out, e);
	}
	free(data.p);
	return r;
}

void read_result_free(struct read_result *r)
{
	free(r->text);
	r->text = NULL;
	r->text_len = 0;
}

/* ───────────────────────── writing ───────────────────────── */

struct target {
	bool exists;
	struct stat st;
};

static int inspect_target(int dir, const struct path_ref *ref, const char *path,
			  struct target *t, struct front_error *e)
{
	t->exists = fstatat(dir, ref->name, &t->st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!t->exists)
		return errno == ENOENT ? 0 : fail_io(e, errno, path, "stat");
	/* Renaming over a link would replace it, not write where it leads. */
	if (S_ISLNK(t->st.st_mode))
		return front_fail(e, FRONT_VALIDATION, "SYMLINK_TARGET",
				  "%s: a symbolic link; write to the file it points to by that "
				  "file's own path",
				  path);
	if (!S_ISREG(t->st.st_mode))
		return front_fail(e, FRONT_EXECUTION, "NOT_A_FILE", "%s: not a regular file%s",
				  path, S_ISDIR(t->st.st_mode) ? " but a directory" : "");
	/* A rename needs only the directory's permission: without this, a
	 * file the caller may not write (read-only, another user's) would
	 * be replaced all the same, and become the caller's. */
	if (faccessat(dir, ref->name, W_OK, AT_EACCESS) < 0)
		return errno == EACCES || errno == EPERM || errno == EROFS
			       ? front_fail(e, FRONT_EXECUTION, "PERMISSION_DENIED",
					    "%s: you may not write to this file (mode %04o, "
					    "owner uid %u)", path, (unsigned)(t->st.st_mode & 07777),
					    (unsigned)t->st.st_uid)
			       : fail_io(e, errno, path, "access");
	return 0;
}

/* ".NAME.toolrun-XXXXXX" in dir, new. mode 0600 while an existing file's
 * content is being replaced (its own mode comes after); 0666 & ~umask,
 * as for any new file, otherwise. */
static int make_temp(int dir, const char *name, mode_t mode, char *tmp, size_t size)
{
	int keep = NAME_MAX - 1 - (int)strlen(TEMP_SUFFIX);

	for (int i = 0; i < TEMP_TRIES; i++) {
		unsigned char r[3];
		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return -1;
		snprintf(tmp, size, ".%.*s.toolrun-%02x%02x%02x", keep, name, r[0], r[1], r[2]);
		int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/* The replaced file's owner (where we may give it: as root, or our own
 * group) and mode. */
static int keep_attributes(int fd, const struct stat *st)
{
	if ((st->st_uid != geteuid() || st->st_gid != getegid()) &&
	    fchown(fd, st->st_uid, st->st_gid) < 0)
		(void)!fchown(fd, (uid_t)-1, st->st_gid);
	/* New content is not the program the set-id bits were given to:
	 * they go, as the kernel drops them when such a file is written. */
	return fchmod(fd, st->st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) < 0 ? -errno : 0;
}

/* Fill the temporary file; -errno, with what failed. */
static int fill_temp(int fd, const void *data, size_t len, const struct target *t,
		     const char **what)
{
	int err;

	*what = "write";
	if ((err = write_all(fd, data, len)))
		return err;
	*what = "chmod";
	if (t->exists && (err = keep_attributes(fd, &t->st)))
		return err;
	*what = "fsync";
	return fsync(fd) < 0 ? -errno : 0;
}

static int replace(int dir, const char *name, const void *data, size_t len,
		   const struct target *t, const char *path, struct front_error *e)
{
	char tmp[NAME_MAX + 1];
	const char *what;
	_cleanup_close_ int fd = make_temp(dir, name, t->exists ? 0600 : 0666, tmp, sizeof(tmp));

	if (fd < 0)
		return fail_io(e, errno, path, "temporary file");
	int err = fill_temp(fd, data, len, t, &what);
	if (!err && renameat(dir, tmp, dir, name) < 0) {
		err = -errno;
		what = "rename";
	}
	if (err) {
		unlinkat(dir, tmp, 0);
		return fail_io(e, -err, path, what);
	}
	/* The rename itself lasts once the directory is on disk. */
	fsync(dir);
	return 0;
}

static int too_large_write(const char *path, uint64_t len, uint64_t max, struct front_error *e)
{
	return front_fail(e, FRONT_RESOURCE, "TOO_LARGE",
			  "%s: %llu bytes, more than the %llu a write may hold (max_write_bytes)",
			  path, (unsigned long long)len, (unsigned long long)max);
}

int front_write_file(const struct path_policy *p, const char *path, const void *data,
		     size_t len, struct write_result *out, struct front_error *e)
{
	struct path_ref ref;
	struct target t;
	uint64_t max = p->max_write_bytes ? p->max_write_bytes : PATH_DEFAULT_MAX_WRITE_BYTES;

	memset(out, 0, sizeof(*out));
	if (!path)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_PATH", "the path is empty");
	if (path_open(p, path, PATH_WRITE, &ref, e) < 0)
		return -1;
	_cleanup_close_ int dir = ref.fd;
	snprintf(out->rel, sizeof(out->rel), "%s", ref.rel);
	if (len > max)
		return too_large_write(path, len, max, e);
	if (inspect_target(dir, &ref, path, &t, e) < 0 ||
	    replace(dir, ref.name, data, len, &t, path, e) < 0)
		return -1;
	out->created = !t.exists;
	out->bytes = len;
	return 0;
}

/* ───────────────────────── editing ───────────────────────── */

/* Where needle occurs in hay, overlapping ones counted: "aa" is twice in
 * "aaa", which is no unique place to edit either. */
static uint64_t occurrences(const char *hay, size_t len, const char *needle, size_t n,
			    const char **first)
{
	uint64_t count = 0;

	*first = NULL;
	for (const char *s = hay; (s = memmem(s, (size_t)(hay + len - s), needle, n)); s++) {
		if (!count)
			*first = s;
		count++;
	}
	return count;
}

static int edit_buffer(const struct path_policy *p, const char *path, const struct buf *old,
		       const char *at, size_t old_len, const char *new_string, size_t new_len,
		       struct write_result *out, struct front_error *e)
{
	size_t head = (size_t)(at - old->p), tail = old->len - head - old_len;
	uint64_t max = p->max_write_bytes ? p->max_write_bytes : PATH_DEFAULT_MAX_WRITE_BYTES;
	uint64_t len = (uint64_t)head + new_len + tail;

	if (len > max)
		return too_large_write(path, len, max, e);
	char *buf = malloc(len ? len : 1);
	if (!buf)
		return out_of_memory(e, path);
	memcpy(buf, old->p, head);
	memcpy(buf + head, new_string, new_len);
	memcpy(buf + head + new_len, at + old_len, tail);
	int r = front_write_file(p, path, buf, len, out, e);
	free(buf);
	return r;
}

int front_edit_file(const struct path_policy *p, const char *path, const char *old_string,
		    size_t old_len, const char *new_string, size_t new_len,
		    struct write_result *out, struct front_error *e)
{
	struct path_ref ref;
	struct buf data = { 0 };
	const char *at;

	memset(out, 0, sizeof(*out));
	if (!path)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_PATH", "the path is empty");
	if (old_len == 0)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_OLD_STRING",
				  "%s: old_string is empty; give the exact text to replace", path);
	if (path_open(p, path, PATH_READ, &ref, e) < 0)
		return -1;
	int r = read_whole(ref.fd, p->max_read_bytes ? p->max_read_bytes
						       : PATH_DEFAULT_MAX_READ_BYTES,
			   path, &data, e);
	close(ref.fd);
	if (r == 0) {
		uint64_t n = occurrences(data.p, data.len, old_string, old_len, &at);
		if (n == 0)
			r = front_fail(e, FRONT_EXECUTION, "NOT_FOUND",
				       "%s: old_string not found; it must match the file exactly, "
				       "whitespace included",
				       path);
		else if (n > 1)
			r = front_fail(e, FRONT_EXECUTION, "NOT_UNIQUE",
				       "%s: old_string occurs %llu times; include more of the "
				       "text around it so that it occurs once",
				       path, (unsigned long long)n);
		else
			r = edit_buffer(p, path, &data, at, old_len, new_string, new_len, out, e);
	}
	free(data.p);
	if (r == 0)
		out->replacements = 1;
	return r;
}
