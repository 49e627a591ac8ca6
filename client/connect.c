#include "connect.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sbuf.h"
#include "trust.h"
#include "util.h"

/* Pauses between rounds while a daemon restarts: from FIRST, doubling,
 * never more than LAST. A restart takes 100 ms to a second. */
#define PAUSE_FIRST_MS 10
#define PAUSE_LAST_MS 200

/* What one socket path gave. The outcome of a round is the highest seen,
 * and its reason is the one reported: a daemon restarting anywhere is
 * waited for, whatever the other places gave. */
enum attempt {
	ATTEMPT_ABSENT,    /* nothing there */
	ATTEMPT_FAILED,    /* connect() failed for another reason */
	ATTEMPT_UNTRUSTED, /* answered, but not by the daemon we trust */
	ATTEMPT_DOWN,      /* there, but nobody answers: restarting */
	ATTEMPT_OK,
};

static void pause_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Is PATH.lock there? The daemon holds it while it runs, and removes it
 * when it stops cleanly. */
static bool lock_left(const char *path)
{
	char lock[CONFIG_SOCKET_MAX + 8];
	struct sbuf sb = SBUF_INIT(lock);
	struct stat st;

	if (strlen(path) + 6 > sizeof(lock))
		return false;
	sbuf_add(&sb, path);
	sbuf_add(&sb, ".lock");
	return stat(lock, &st) == 0;
}

static enum attempt attempt(const struct config *cfg, const char *path, int *fd,
			    int *err, char *why, size_t whylen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = CONNECT_TIMEOUT_S};
	size_t len = strlen(path);

	*fd = -1;
	if (len >= sizeof(sa.sun_path)) {
		*err = ENAMETOOLONG;
		return ATTEMPT_FAILED;
	}
	memcpy(sa.sun_path, path, len + 1);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		*err = errno;
		return ATTEMPT_FAILED;
	}
	/* connect() waits at most this long on a full backlog. */
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (RETRY_EINTR(connect(s, (struct sockaddr *)&sa, sizeof(sa))) < 0) {
		*err = errno;
		close(s);
		switch (*err) {
		case ENOENT:
		case ENOTDIR:
			return lock_left(path) ? ATTEMPT_DOWN : ATTEMPT_ABSENT;
		case ECONNREFUSED:
		case EAGAIN:
			return ATTEMPT_DOWN;
		default:
			return ATTEMPT_FAILED;
		}
	}
	/* Nothing is sent before both checks pass. */
	int r = trust_socket_path(cfg, path, why, whylen);
	if (r == 0)
		r = trust_peer(cfg, path, s, why, whylen);
	if (r < 0) {
		*err = -r;
		close(s);
		return ATTEMPT_UNTRUSTED;
	}
	*fd = s;
	return ATTEMPT_OK;
}

/* "A, B or C" */
static void add_paths(struct sbuf *sb, const struct config *cfg)
{
	unsigned n = config_socket_count(cfg);

	for (unsigned i = 0; i < n; i++) {
		if (i)
			sbuf_add(sb, i + 1 == n ? " or " : ", ");
		sbuf_add(sb, config_socket_at(cfg, i));
	}
}

int connect_daemon(const struct config *cfg, uint32_t wait_s, const char **path,
		   char *why, size_t whylen)
{
	int64_t deadline = monotonic_ms() + (int64_t)wait_s * 1000;
	unsigned pause = PAUSE_FIRST_MS;
	char detail[512];

	why[0] = '\0';
	for (;;) {
		enum attempt worst = ATTEMPT_ABSENT;
		const char *worst_path = cfg->socket;
		int worst_err = ENOENT;

		for (unsigned i = 0; i < config_socket_count(cfg); i++) {
			const char *p = config_socket_at(cfg, i);
			int fd, err = 0;
			enum attempt a = attempt(cfg, p, &fd, &err, detail, sizeof(detail));
			if (a == ATTEMPT_OK) {
				*path = p;
				return fd;
			}
			if (a > worst) {
				worst = a;
				worst_path = p;
				worst_err = err;
				if (a == ATTEMPT_UNTRUSTED) {
					struct sbuf sb = {.buf = why, .cap = whylen};
					why[0] = '\0';
					sbuf_add(&sb, detail);
				}
			}
		}
		if (worst == ATTEMPT_DOWN && monotonic_ms() < deadline) {
			pause_ms(pause);
			pause = pause * 2 > PAUSE_LAST_MS ? PAUSE_LAST_MS : pause * 2;
			continue;
		}

		struct sbuf sb = {.buf = why, .cap = whylen};
		switch (worst) {
		case ATTEMPT_UNTRUSTED:
			return -EPERM; /* why holds the trust check's reason */
		case ATTEMPT_DOWN:
			why[0] = '\0';
			sbuf_add(&sb, "toolrund is not answering at ");
			sbuf_add(&sb, worst_path);
			sbuf_add(&sb, " (");
			sbuf_add(&sb, errno_text(worst_err));
			sbuf_add(&sb, ")");
			if (wait_s) {
				sbuf_add(&sb, " after ");
				sbuf_add_u64(&sb, wait_s);
				sbuf_add(&sb, " s of waiting");
			}
			sbuf_add(&sb, ": it stopped or is restarting; its log says why");
			return -ECONNREFUSED;
		case ATTEMPT_FAILED:
			why[0] = '\0';
			sbuf_add(&sb, "cannot reach toolrund at ");
			sbuf_add(&sb, worst_path);
			sbuf_add(&sb, ": ");
			sbuf_add(&sb, errno_text(worst_err));
			return -worst_err;
		case ATTEMPT_ABSENT:
		case ATTEMPT_OK:
		default:
			why[0] = '\0';
			sbuf_add(&sb, "toolrund is not running: no socket at ");
			add_paths(&sb, cfg);
			return -ECONNREFUSED;
		}
	}
}
