/*
 * The path policy (path.h): the text of a path is checked first (NUL,
 * "~", URL, backslash, ".." above the root), then the object is opened
 * beneath the root's fd, so that the check is made on what is opened.
 *
 * Two ways to open beneath the root: openat2(RESOLVE_BENEATH), where the
 * kernel has it and seccomp allows it; and a walk of our own, one
 * component at a time with O_NOFOLLOW from fds we hold, following links
 * by hand. The walk also decides what openat2 refuses wholesale: an
 * absolute link whose target lies under the root, and a link as the last
 * component of a read (whose target's extension is checked).
 */
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* Directories the walk may hold open at once, and links it follows for
 * one path: the kernel's own limit (MAXSYMLINKS). */
#define WALK_MAX_DEPTH 256
#define WALK_MAX_LINKS 40

#define READ_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

enum { NORM_ESCAPE = -1, NORM_TOO_LONG = -2 };

/* ───────────────────────── the text ───────────────────────── */

int path_check_bytes(const char *path, size_t len, struct front_error *e)
{
	if (len == 0)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_PATH", "the path is empty");
	if (memchr(path, '\0', len))
		return front_fail(e, FRONT_VALIDATION, "NUL_IN_PATH",
				  "%.*s: the path holds a NUL byte", (int)strnlen(path, len), path);
	return 0;
}

/* "scheme://": a letter, then letters, digits, "+", "-" or "." (RFC 3986). */
static bool is_url(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return false;
	s += strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
	return strncmp(s, "://", 3) == 0;
}

static int check_text(const struct path_policy *p, const char *path, struct front_error *e)
{
	if (!*path)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_PATH", "the path is empty");
	if (path[0] == '~')
		return front_fail(e, FRONT_VALIDATION, "HOME_PATH",
				  "%s: \"~\" is not expanded; use a path under %s", path, p->root);
	if (strchr(path, '\\'))
		return front_fail(e, FRONT_VALIDATION, "BACKSLASH_PATH",
				  "%s: backslash in the path; separate with \"/\"", path);
	if (is_url(path))
		return front_fail(e, FRONT_VALIDATION, "URL_PATH",
				  "%s: a URL, not a path; use a path under %s", path, p->root);
	if (strlen(path) >= PATH_MAX)
		return front_fail(e, FRONT_SYNTAX, "PATH_TOO_LONG", "%.64s...: the path is too long",
				  path);
	return 0;
}

/*
 * Join the components of in into out, dropping empty ones and "." and
 * taking ".." as a step up. A step above the start is NORM_ESCAPE, unless
 * clamp (an absolute path: "/.." is "/"). out is "." when nothing is left.
 */
static int normalise(const char *in, bool clamp, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (;;) {
		in += strspn(in, "/");
		if (!*in)
			break;
		size_t n = strcspn(in, "/");
		if (n == 2 && in[0] == '.' && in[1] == '.') {
			if (len == 0 && !clamp)
				return NORM_ESCAPE;
			char *slash = memrchr(out, '/', len);
			len = slash ? (size_t)(slash - out) : 0;
			out[len] = '\0';
		} else if (!(n == 1 && in[0] == '.')) {
			if (len + 1 + n + 1 > size)
				return NORM_TOO_LONG;
			if (len)
				out[len++] = '/';
			memcpy(out + len, in, n);
			len += n;
			out[len] = '\0';
		}
		in += n;
	}
	if (len == 0)
		snprintf(out, size, ".");
	return 0;
}

/* An absolute path, normalised, as a path from the root, or NORM_ESCAPE. */
static int under_root(const struct path_policy *p, const char *abs, char *rel, size_t size)
{
	char norm[PATH_MAX];
	int r = normalise(abs, true, norm, sizeof(norm));
	if (r < 0)
		return r;
	const char *root = p->root + 1; /* without its "/" */
	size_t n = strlen(root);
	const char *rest;
	if (n == 0)
		rest = norm;
	else if (strcmp(norm, root) == 0)
		rest = ".";
	else if (strncmp(norm, root, n) == 0 && norm[n] == '/')
		rest = norm + n + 1;
	else
		return NORM_ESCAPE;
	if ((size_t)snprintf(rel, size, "%s", rest) >= size)
		return NORM_TOO_LONG;
	return 0;
}

/* The path from the root that path names, with the message when it
 * names none. */
static int relative(const struct path_policy *p, const char *path, char *rel, size_t size,
		    struct front_error *e)
{
	int r = path[0] == '/' ? under_root(p, path, rel, size)
			       : normalise(path, false, rel, size);
	if (r == NORM_TOO_LONG)
		return front_fail(e, FRONT_SYNTAX, "PATH_TOO_LONG", "%.64s...: the path is too long",
				  path);
	if (r < 0)
		return front_fail(e, FRONT_VALIDATION, "OUTSIDE_ROOT",
				  "%s: outside the root %s; use a path under it", path, p->root);
	return 0;
}

static bool extension_allowed(const struct path_policy *p, const char *name)
{
	if (p->nextensions == 0)
		return true;
	const char *dot = strrchr(name, '.');
	if (!dot || dot == name) /* ".bashrc" has no extension */
		return false;
	for (unsigned i = 0; i < p->nextensions; i++)
		if (strcasecmp(dot + 1, p->extensions[i]) == 0)
			return true;
	return false;
}

static int check_extension(const struct path_policy *p, const char *path, const char *name,
			   struct front_error *e)
{
	char list[256] = "";
	size_t len = 0;

	if (extension_allowed(p, name))
		return 0;
	for (unsigned i = 0; i < p->nextensions && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s.%s", i ? ", " : "",
					p->extensions[i]);
	return front_fail(e, FRONT_VALIDATION, "EXTENSION_NOT_ALLOWED",
			  "%s: this file type is not allowed; allowed: %s", path, list);
}

/* ───────────────────────── errors ───────────────────────── */

static int fail_errno(struct front_error *e, int err, const char *path)
{
	switch (err) {
	case ENOENT:
		return front_fail(e, FRONT_EXECUTION, "NOT_FOUND", "%s: no such file or directory",
				  path);
	case ENOTDIR:
		return front_fail(e, FRONT_EXECUTION, "NOT_A_DIRECTORY",
				  "%s: a component of the path is not a directory", path);
	case EACCES:
	case EPERM:
		return front_fail(e, FRONT_EXECUTION, "PERMISSION_DENIED", "%s: permission denied",
				  path);
	case ELOOP:
		return front_fail(e, FRONT_EXECUTION, "SYMLINK_LOOP",
				  "%s: too many levels of symbolic links", path);
	case ENAMETOOLONG:
		return front_fail(e, FRONT_SYNTAX, "PATH_TOO_LONG", "%.64s...: the path is too long",
				  path);
	default:
		return front_fail(e, FRONT_EXECUTION, "IO_ERROR", "%s: %s", path, errno_text(err));
	}
}

static int symlink_outside(const struct path_policy *p, const char *path, struct front_error *e)
{
	return front_fail(e, FRONT_VALIDATION, "SYMLINK_OUTSIDE",
			  "%s: a symbolic link on the way leads outside the root %s", path, p->root);
}

/* ───────────────────────── the walk ───────────────────────── */

struct walk {
	const struct path_policy *p;
	const char *path;          /* as given, for messages */
	int fds[WALK_MAX_DEPTH];   /* O_PATH directories; [0] the root's, borrowed */
	unsigned depth;            /* fds[depth] is where the walk is */
	unsigned links;
	char todo[PATH_MAX];       /* what is left to resolve */
	char name[NAME_MAX + 1];   /* the last component opened */
	int obj;                   /* the final object when not a directory */
};

static void walk_up_to(struct walk *w, unsigned depth)
{
	while (w->depth > depth)
		close(w->fds[w->depth--]);
}

/* Take the first component of w->todo into w->name: 1, 0 at the end,
 * or -1 for one too long to be a name. */
static int next_component(struct walk *w)
{
	char *s = w->todo + strspn(w->todo, "/");
	size_t n = strcspn(s, "/");

	if (n == 0)
		return 0;
	if (n > NAME_MAX)
		return -1;
	memcpy(w->name, s, n);
	w->name[n] = '\0';
	memmove(w->todo, s + n, strlen(s + n) + 1);
	return 1;
}

/* Put a link's target in front of what is left to resolve. */
static int walk_splice(struct walk *w, const char *target, struct front_error *e)
{
	char rel[PATH_MAX], todo[PATH_MAX];

	if (target[0] == '/') {
		if (under_root(w->p, target, rel, sizeof(rel)) < 0)
			return symlink_outside(w->p, w->path, e);
		walk_up_to(w, 0);
		target = rel;
	}
	if ((size_t)snprintf(todo, sizeof(todo), "%s/%s", target, w->todo) >= sizeof(todo))
		return fail_errno(e, ENAMETOOLONG, w->path);
	memcpy(w->todo, todo, sizeof(todo));
	return 0;
}

static int walk_link(struct walk *w, int fd, struct front_error *e)
{
	char target[PATH_MAX];

	if (++w->links > WALK_MAX_LINKS)
		return fail_errno(e, ELOOP, w->path);
	ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
	if (n <= 0)
		return fail_errno(e, n < 0 ? errno : ENOENT, w->path);
	target[n] = '\0';
	return walk_splice(w, target, e);
}

/* One component: a step up, a link to follow, a directory to enter, or
 * the final object. */
static int walk_step(struct walk *w, struct front_error *e)
{
	struct stat st;

	if (strcmp(w->name, ".") == 0)
		return 0;
	if (strcmp(w->name, "..") == 0) {
		/* The text had no ".." left: only a link's target climbs. */
		if (w->depth == 0)
			return symlink_outside(w->p, w->path, e);
		walk_up_to(w, w->depth - 1);
		return 0;
	}
	_cleanup_close_ int fd = openat(w->fds[w->depth], w->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return fail_errno(e, errno, w->path);
	if (S_ISLNK(st.st_mode))
		return walk_link(w, fd, e);
	if (S_ISDIR(st.st_mode)) {
		if (w->depth + 1 >= WALK_MAX_DEPTH)
			return fail_errno(e, ENAMETOOLONG, w->path);
		w->fds[++w->depth] = steal_fd(&fd);
		return 0;
	}
	if (w->todo[strspn(w->todo, "/")])
		return fail_errno(e, ENOTDIR, w->path);
	w->obj = steal_fd(&fd);
	return 0;
}

/*
 * Resolve rel from the root. On success *dir is the directory reached
 * (O_PATH), or the one holding the final object, then in w->name, when
 * that is not a directory (w->obj >= 0, which the caller closes).
 */
static int walk(struct walk *w, const struct path_policy *p, const char *path, const char *rel,
		int *dir, struct front_error *e)
{
	int r = 0;

	w->p = p;
	w->path = path;
	w->fds[0] = p->root_fd;
	w->depth = 0;
	w->links = 0;
	w->obj = -1;
	snprintf(w->todo, sizeof(w->todo), "%s", rel);
	while (r == 0 && w->obj < 0) {
		int got = next_component(w);
		if (got <= 0) {
			r = got < 0 ? fail_errno(e, ENAMETOOLONG, path) : 0;
			break;
		}
		r = walk_step(w, e);
	}
	if (r == 0) {
		*dir = w->depth ? steal_fd(&w->fds[w->depth--])
				: fcntl(p->root_fd, F_DUPFD_CLOEXEC, 0);
		if (*dir < 0)
			r = fail_errno(e, errno, path);
	}
	walk_up_to(w, 0);
	if (r < 0)
		close_fd(&w->obj);
	return r;
}

/* ───────────────────────── opening ───────────────────────── */

/* openat2 beneath the root: the fd or -errno (-ENOSYS: not to be used). */
static int beneath(const struct path_policy *p, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)flags,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};

	if (p->walk_only)
		return -ENOSYS;
	long fd = syscall(SYS_openat2, p->root_fd, rel, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* Whether the walk should decide after openat2 gave err: no openat2
 * (old kernel, seccomp), or a refusal the walk tells apart (an escape,
 * an absolute link, a rename under way). */
static bool walk_decides(int err)
{
	switch (err) {
	case ENOSYS: case EPERM: case EINVAL: case E2BIG:
	case EXDEV: case ELOOP: case EAGAIN:
		return true;
	default:
		return false;
	}
}

static int open_dir(const struct path_policy *p, const char *path, const char *rel,
		    struct front_error *e)
{
	struct walk w;
	_cleanup_close_ int dir = -1;

	int fd = beneath(p, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 || !walk_decides(-fd))
		return fd >= 0 ? fd : fail_errno(e, -fd, path);
	if (walk(&w, p, path, rel, &dir, e) < 0)
		return -1;
	if (w.obj >= 0) {
		close(w.obj);
		return fail_errno(e, ENOTDIR, path);
	}
	fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 ? fd : fail_errno(e, errno, path);
}

/* A regular file, read without blocking on a FIFO while opened, then
 * blocking as usual. */
static int regular_file(int fd, const char *path, struct front_error *e)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || fcntl(fd, F_SETFL, 0) < 0) {
		int err = errno;
		close(fd);
		return fail_errno(e, err, path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return front_fail(e, FRONT_EXECUTION, "NOT_A_FILE", "%s: not a regular file%s",
				  path, S_ISDIR(st.st_mode) ? " but a directory" : "");
	}
	return fd;
}

/* The file by the walk: a link at its end followed, its target's
 * extension checked too. */
static int walk_file(const struct path_policy *p, const char *path, const char *rel,
		     struct front_error *e)
{
	struct walk w;
	_cleanup_close_ int dir = -1;

	if (walk(&w, p, path, rel, &dir, e) < 0)
		return -1;
	if (w.obj < 0)
		return front_fail(e, FRONT_EXECUTION, "NOT_A_FILE",
				  "%s: not a regular file but a directory", path);
	close(w.obj);
	if (check_extension(p, path, w.name, e) < 0)
		return -1;
	/* O_NOFOLLOW from the held directory: a swap since is still in it. */
	int fd = openat(dir, w.name, READ_FLAGS);
	return fd >= 0 ? regular_file(fd, path, e) : fail_errno(e, errno, path);
}

static void split(const char *rel, char *dir, size_t size, const char **base)
{
	const char *slash = strrchr(rel, '/');

	*base = slash ? slash + 1 : rel;
	snprintf(dir, size, "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".");
}

static int open_file(const struct path_policy *p, const char *path, const char *rel,
		     struct front_error *e)
{
	char dirrel[PATH_MAX];
	const char *base;

	split(rel, dirrel, sizeof(dirrel), &base);
	int dir = beneath(p, dirrel, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir >= 0) {
		int fd = openat(dir, base, READ_FLAGS);
		int err = errno;
		close(dir);
		if (fd >= 0)
			return regular_file(fd, path, e);
		if (err != ELOOP) /* ELOOP: a link, for the walk to follow */
			return fail_errno(e, err, path);
	} else if (!walk_decides(-dir)) {
		return fail_errno(e, -dir, path);
	}
	return walk_file(p, path, rel, e);
}

/* "x/", "x/." and "x/.." name a directory, whatever x is. */
static bool names_a_directory(const char *path)
{
	const char *last = strrchr(path, '/');

	last = last ? last + 1 : path;
	return !*last || strcmp(last, ".") == 0 || strcmp(last, "..") == 0;
}

static int fill_ref(const struct path_policy *p, const char *path, struct path_ref *ref,
		    struct front_error *e)
{
	size_t n = strlen(p->root);
	const char *sep = n > 1 ? "/" : "";
	int r = strcmp(ref->rel, ".") == 0
		? snprintf(ref->abs, sizeof(ref->abs), "%s", p->root)
		: snprintf(ref->abs, sizeof(ref->abs), "%s%s%s", p->root, sep, ref->rel);

	if (r < 0 || (size_t)r >= sizeof(ref->abs))
		return fail_errno(e, ENAMETOOLONG, path);
	return 0;
}

int path_open(const struct path_policy *p, const char *path, enum path_use use,
	      struct path_ref *ref, struct front_error *e)
{
	const char *base;
	char dirrel[PATH_MAX];

	ref->fd = -1;
	ref->name[0] = '\0';
	if (check_text(p, path, e) < 0 || relative(p, path, ref->rel, sizeof(ref->rel), e) < 0 ||
	    fill_ref(p, path, ref, e) < 0)
		return -1;
	if (use == PATH_DIR) {
		ref->fd = open_dir(p, path, ref->rel, e);
		return ref->fd < 0 ? -1 : 0;
	}
	if (strcmp(ref->rel, ".") == 0)
		return front_fail(e, FRONT_EXECUTION, "NOT_A_FILE",
				  "%s: the root directory, not a file", path);
	if (names_a_directory(path))
		return front_fail(e, FRONT_EXECUTION, "NOT_A_FILE",
				  "%s: names a directory, not a file", path);
	split(ref->rel, dirrel, sizeof(dirrel), &base);
	if (strlen(base) > NAME_MAX)
		return fail_errno(e, ENAMETOOLONG, path);
	if (check_extension(p, path, base, e) < 0)
		return -1;
	if (use == PATH_READ) {
		ref->fd = open_file(p, path, ref->rel, e);
	} else {
		snprintf(ref->name, sizeof(ref->name), "%s", base);
		ref->fd = open_dir(p, path, dirrel, e);
		/* Say what to do: a file is written only where its directory
		 * is (writes make no directories). */
		if (ref->fd < 0 && strcmp(e->code, "NOT_FOUND") == 0)
			front_fail(e, FRONT_EXECUTION, "NOT_FOUND",
				   "%s: the directory %s does not exist; make it first "
				   "(mkdir -p %s)", path, dirrel, dirrel);
	}
	return ref->fd < 0 ? -1 : 0;
}

/* ───────────────────────── the policy ───────────────────────── */

static int add_extension(struct path_policy *p, const char *s, size_t n, struct front_error *e)
{
	while (n && (*s == '.' || *s == ' ')) {
		s++;
		n--;
	}
	while (n && s[n - 1] == ' ')
		n--;
	if (n == 0)
		return 0;
	if (n >= sizeof(p->extensions[0]) || memchr(s, '/', n))
		return front_fail(e, FRONT_SYNTAX, "BAD_EXTENSION",
				  "extension \"%.*s\": at most %zu characters, no \"/\"", (int)n, s,
				  sizeof(p->extensions[0]) - 1);
	if (p->nextensions == PATH_POLICY_MAX_EXTENSIONS)
		return front_fail(e, FRONT_SYNTAX, "TOO_MANY_EXTENSIONS",
				  "more than %d extensions allowed", PATH_POLICY_MAX_EXTENSIONS);
	memcpy(p->extensions[p->nextensions], s, n);
	p->extensions[p->nextensions++][n] = '\0';
	return 0;
}

static int parse_extensions(struct path_policy *p, const char *list, struct front_error *e)
{
	while (list && *list) {
		size_t n = strcspn(list, ",");
		if (add_extension(p, list, n, e) < 0)
			return -1;
		list += n + (list[n] == ',');
	}
	return 0;
}

int path_policy_init(struct path_policy *p, const char *root, const char *extensions,
		     struct front_error *e)
{
	memset(p, 0, sizeof(*p));
	p->root_fd = -1;
	p->max_read_bytes = PATH_DEFAULT_MAX_READ_BYTES;
	p->max_write_bytes = PATH_DEFAULT_MAX_WRITE_BYTES;
	if (!root || !*root)
		return front_fail(e, FRONT_SYNTAX, "EMPTY_PATH", "the root is empty");
	if (!realpath(root, p->root))
		return fail_errno(e, errno, root);
	p->root_fd = open(p->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (p->root_fd < 0)
		return fail_errno(e, errno, root);
	if (parse_extensions(p, extensions, e) < 0) {
		path_policy_free(p);
		return -1;
	}
	return 0;
}

void path_policy_free(struct path_policy *p)
{
	close_fd(&p->root_fd);
}
