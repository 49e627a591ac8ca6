#include "trust.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sbuf.h"
#include "util.h"

/* Parse a decimal uid; false if text is not one. */
static bool parse_uid(const char *text, size_t len, uid_t *uid)
{
	uint64_t v = 0;

	if (len == 0 || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(text[i] - '0');
	}
	if (v > UINT32_MAX - 1)
		return false;
	*uid = (uid_t)v;
	return true;
}

/* A line of /etc/passwd: "name:password:uid:...". */
static bool passwd_line_uid(const char *line, size_t len, const char *name, uid_t *uid)
{
	size_t nlen = strlen(name);

	if (len <= nlen || memcmp(line, name, nlen) != 0 || line[nlen] != ':')
		return false;
	const char *pw = line + nlen + 1, *end = line + len;
	const char *colon = memchr(pw, ':', (size_t)(end - pw));
	if (!colon)
		return false;
	const char *u = colon + 1;
	const char *uend = memchr(u, ':', (size_t)(end - u));
	return uend && parse_uid(u, (size_t)(uend - u), uid);
}

/* The uid of a user name or number, from /etc/passwd (getpwnam is not
 * async-signal-safe, and NSS may load modules). Lines longer than the
 * buffer are skipped: no account name is that long. */
static bool lookup_user(const char *name, uid_t *uid)
{
	char buf[4096];
	size_t have = 0;
	bool skipping = false, found = false;

	if (parse_uid(name, strlen(name), uid))
		return true;
	_cleanup_close_ int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (;;) {
		ssize_t n = RETRY_EINTR(read(fd, buf + have, sizeof(buf) - have));
		if (n <= 0)
			return n == 0 && have && !skipping &&
			       passwd_line_uid(buf, have, name, uid);
		have += (size_t)n;
		char *start = buf, *nl;
		while ((nl = memchr(start, '\n', have - (size_t)(start - buf)))) {
			if (!skipping && passwd_line_uid(start, (size_t)(nl - start), name, uid))
				found = true;
			skipping = false;
			start = nl + 1;
			if (found)
				return true;
		}
		have -= (size_t)(start - buf);
		memmove(buf, start, have);
		if (have == sizeof(buf)) {
			skipping = true;
			have = 0;
		}
	}
}

/*
 * Whose the daemon is: root's, the config's `user`'s, or the caller's own.
 * The last is a daemon the caller started, or one that could not become
 * its `user` (started without the capabilities: single identity). A
 * socket of the caller's own uid hands the caller's request to nobody
 * who could not already read the caller's processes; what must never be
 * trusted is a socket of another uid, which is how one caller's program
 * would reach another caller's commands.
 */
static bool expected_uid(const struct config *cfg, uid_t uid)
{
	uid_t user;

	if (uid == 0 || uid == geteuid())
		return true;
	return cfg->user[0] && lookup_user(cfg->user, &user) && user == uid;
}

/* Whom expected_uid() trusts, in words. */
static void add_expected(struct sbuf *sb, const struct config *cfg)
{
	if (cfg->user[0]) {
		sbuf_add(sb, "not root, toolrund's user (");
		sbuf_add(sb, cfg->user);
		sbuf_add(sb, ") or the caller");
	} else {
		sbuf_add(sb, "not root or the caller (the config sets no user)");
	}
}

/* As chmod takes it: four octal digits. */
static void add_mode(struct sbuf *sb, mode_t mode)
{
	for (int shift = 9; shift >= 0; shift -= 3)
		sbuf_addc(sb, (char)('0' + ((mode >> shift) & 7)));
}

static void refusal(struct sbuf *sb, const char *path)
{
	sbuf_add(sb, "refusing toolrund's socket ");
	sbuf_add(sb, path);
	sbuf_add(sb, ": ");
}

/*
 * One directory on the way to the socket. The socket's own directory
 * must be writable by its owner alone: anyone else could replace the
 * socket. Above it, a directory others may write to is safe only when
 * sticky, since then no one else can rename what is below.
 */
static int check_dir(const struct config *cfg, const char *path, const char *dir,
		     bool innermost, struct sbuf *sb)
{
	struct stat st;

	/* A directory that cannot be looked at cannot be connected
	 * through either: connect() will say why. */
	if (stat(dir, &st) < 0)
		return 0;
	if (!expected_uid(cfg, st.st_uid)) {
		refusal(sb, path);
		sbuf_add(sb, dir);
		sbuf_add(sb, " is owned by uid ");
		sbuf_add_u64(sb, st.st_uid);
		sbuf_add(sb, ", ");
		add_expected(sb, cfg);
		return -EPERM;
	}
	bool shared = st.st_mode & (S_IWGRP | S_IWOTH);
	if (shared && (innermost || !(st.st_mode & S_ISVTX))) {
		refusal(sb, path);
		sbuf_add(sb, dir);
		sbuf_add(sb, (st.st_mode & S_IWOTH) ? " is writable by others (mode "
						      : " is writable by its group (mode ");
		add_mode(sb, st.st_mode & 07777);
		sbuf_addc(sb, ')');
		return -EPERM;
	}
	return 0;
}

int trust_socket_path(const struct config *cfg, const char *path, char *why,
		      size_t whylen)
{
	char dir[CONFIG_SOCKET_MAX];
	struct sbuf sb = {.buf = why, .cap = whylen};
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(dir) || path[0] != '/')
		return 0;
	memcpy(dir, path, len + 1);
	why[0] = '\0';
	/* From the socket's directory up to the root, lexically: each name
	 * is what connect() will walk through. */
	bool innermost = true;
	for (;;) {
		char *slash = strrchr(dir, '/');
		if (slash == dir)
			return check_dir(cfg, path, "/", innermost, &sb);
		*slash = '\0';
		int r = check_dir(cfg, path, dir, innermost, &sb);
		if (r < 0)
			return r;
		innermost = false;
	}
}

int trust_peer(const struct config *cfg, const char *path, int fd, char *why,
	       size_t whylen)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct sbuf sb = {.buf = why, .cap = whylen};

	why[0] = '\0';
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		int err = errno;
		refusal(&sb, path);
		sbuf_add(&sb, "cannot read its credentials: ");
		sbuf_add(&sb, errno_text(err));
		return -err;
	}
	if (expected_uid(cfg, cred.uid))
		return 0;
	refusal(&sb, path);
	sbuf_add(&sb, "it is served by uid ");
	sbuf_add_u64(&sb, cred.uid);
	sbuf_add(&sb, ", ");
	add_expected(&sb, cfg);
	return -EPERM;
}
