/*
 * A client answered by the launcher (direct.h).
 *
 * Process: the launcher.
 */
#include "direct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "answer.h"
#include "frame.h"
#include "log.h"
#include "util.h"

/* Hello and Started, or a time limit's line (a few hundred bytes) and
 * Exit: far below this. */
#define DIRECT_FRAMES_MAX 2048
/* The listener's line is one sentence; a longer one is cut to this. */
#define TIMEOUT_NOTICE_MAX 1024

void direct_init(struct direct_client *d, const Toolrun__Launcher__Answer *a, int fd)
{
	*d = (struct direct_client){.fd = a ? fd : -1};
	if (!a)
		return;
	d->hello = a->hello;
	d->version = a->version;
	d->timeout_s = a->timeout_s;
	d->timeout_below_command_s = a->timeout_below_command_s;
}

void direct_close(struct direct_client *d)
{
	close_fd(&d->fd);
	free(d->timeout_notice);
	d->timeout_notice = NULL;
}

/* Add one message's frame to buf[*len], Hello first if still owed. */
static void add_frame(struct direct_client *d, uint8_t *buf, size_t *len,
		      Toolrun__ServerMessage *m)
{
	if (d->hello) {
		struct answer hello;
		answer_hello(&hello, d->version);
		d->hello = false;
		add_frame(d, buf, len, &hello.msg);
	}
	size_t n = frame_size(&m->base);
	if (n > DIRECT_FRAMES_MAX - *len)
		return; /* cannot happen: each is small (see DIRECT_FRAMES_MAX) */
	*len += frame_pack(&m->base, 0, buf + *len);
}

/*
 * Write the frames in one go. The connection holds nothing else (the
 * listener wrote nothing to it, or its Hello only, before the Spawn), so
 * a socket without room for a few hundred bytes is one whose client
 * reads nothing at all: it is shut, and the client, if it ever reads,
 * sees the connection lost rather than half a frame.
 */
static void send_frames(struct direct_client *d, const uint8_t *buf, size_t len)
{
	size_t off = 0;
	unsigned sent = 0;
	int r = frame_send_partial(d->fd, buf, len, &off, NULL, 0, &sent);

	if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
		log_warn("cannot answer the client on fd %d: %s", d->fd, errno_text(r));
		shutdown(d->fd, SHUT_RDWR);
	}
}

void direct_started(struct direct_client *d, pid_t pid, bool below_command)
{
	uint8_t buf[DIRECT_FRAMES_MAX];
	size_t len = 0;
	struct answer a;

	if (d->fd < 0)
		return;
	d->start_us = monotonic_us();
	answer_started(&a, pid, below_command ? d->timeout_below_command_s : d->timeout_s);
	add_frame(d, buf, &len, &a.msg);
	send_frames(d, buf, len);
}

/* Exit, after what buf[len] holds already; the connection is let go. */
static void send_exit(struct direct_client *d, uint8_t *buf, size_t len,
		      const struct exit_report *r)
{
	struct answer a;

	answer_exit(&a, r);
	add_frame(d, buf, &len, &a.msg);
	send_frames(d, buf, len);
	direct_close(d);
}

void direct_not_run(struct direct_client *d, enum launch_step step, int err)
{
	uint8_t buf[DIRECT_FRAMES_MAX];
	char reason[256];
	struct exit_report r = {0};

	if (d->fd < 0)
		return;
	answer_not_run(&r, step, err, reason, sizeof(reason));
	send_exit(d, buf, 0, &r);
}

void direct_refuse(struct direct_client *d, const Toolrun__Error *refusal)
{
	uint8_t buf[DIRECT_FRAMES_MAX];
	size_t len = 0;
	struct answer a;

	if (d->fd < 0)
		return;
	answer_error(&a, refusal->code, refusal->message);
	add_frame(d, buf, &len, &a.msg);
	send_frames(d, buf, len);
	direct_close(d);
}

int direct_timed_out(struct direct_client *d, const char *notice)
{
	if (d->fd < 0 || d->timeout_notice)
		return 0;
	d->timeout_notice = strndup(notice, TIMEOUT_NOTICE_MAX);
	return d->timeout_notice ? 0 : -ENOMEM;
}

bool direct_tells_timeout(const struct direct_client *d)
{
	return d->fd >= 0 && d->timeout_notice;
}

void direct_exited(struct direct_client *d, int wait_status, uint64_t user_us,
		   uint64_t system_us)
{
	uint8_t buf[DIRECT_FRAMES_MAX];
	size_t len = 0;
	struct exit_report r = {0};
	bool timed_out = direct_tells_timeout(d);

	if (d->fd < 0)
		return;
	if (timed_out) {
		struct answer notice;
		answer_output(&notice, TOOLRUN__STREAM__STREAM_STDERR,
			      (const uint8_t *)d->timeout_notice, strlen(d->timeout_notice));
		add_frame(d, buf, &len, &notice.msg);
	}
	answer_wait_status(&r, wait_status, timed_out);
	r.duration_us = monotonic_us() - d->start_us;
	r.user_us = user_us;
	r.system_us = system_us;
	send_exit(d, buf, len, &r);
}
