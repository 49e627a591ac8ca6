/*
 * A job's output streams: from the program's pipe to what reaches the
 * agent, and to the spill file that keeps the whole of a cut stream.
 *
 *   output_open       the pipe; its read end is watched here
 *   stream_readable   read, shape, hand the client its Output; pause for
 *                     a slow client or while the spill file is being
 *                     opened
 *   spill_bytes       everything of a cut stream, into its spill file
 *   stream_eof        the end: shaper_finish writes the marker, which
 *                     names the spill file, so it waits for that file
 *
 * The listener may open no file (its seccomp filter), so the launcher
 * opens the spill file (OpenSpill) and passes its descriptor back. Until
 * then the stream's bytes wait in memory, and the pipe is not read: a
 * program writing fast is held back for that long rather than losing
 * what the file should keep.
 *
 * Process: the listener.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"
#include "util.h"

/* Shaped pipes are made this large when the kernel allows, so that a
 * program writing fast wakes the daemon less often. */
#define PIPE_SIZE (1024 * 1024)

static void emit_append(void *ctx, const uint8_t *p, size_t n)
{
	struct jobs *J = ((struct job_stream *)ctx)->job->J;

	if (J->emit_len + n > J->emit_cap) {
		size_t cap = J->emit_cap * 2 > J->emit_len + n ? J->emit_cap * 2
							       : J->emit_len + n;
		uint8_t *e = realloc(J->emit, cap);
		if (!e)
			return; /* shaped bytes lost; logged by the caller */
		J->emit = e;
		J->emit_cap = cap;
	}
	memcpy(J->emit + J->emit_len, p, n);
	J->emit_len += n;
}

/* Hand the client what the shaper kept, if a client is there to take it. */
static void queue_emitted(struct job_stream *s)
{
	struct jobs *J = s->job->J;
	struct job_client *c = s->job->client;

	if (J->emit_len && c)
		c->ops->output(c, s->stream, J->emit, J->emit_len);
	J->emit_len = 0;
}

/* ------------------------------------------------------------------ */
/* The spill file                                                      */

static void spill_fail(struct job_spill *sp, const char *what, int err)
{
	if (sp->error[0])
		return;
	snprintf(sp->error, sizeof(sp->error), "%s%s%s", what, err ? ": " : "",
		 err ? errno_text(err) : "");
	if (sp->written)
		sp->partial = true;
}

static void spill_write(struct job_stream *s, const uint8_t *p, size_t n)
{
	struct job_spill *sp = &s->spill;
	uint64_t cap = s->job->J->cfg->spill_max_bytes;

	if (sp->fd < 0 || sp->partial)
		return;
	if (sp->written + n > cap) {
		n = (size_t)(cap - sp->written);
		sp->partial = true;
	}
	while (n > 0) {
		ssize_t w = write(sp->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			spill_fail(sp, "writing the spill file failed", w < 0 ? errno : EIO);
			sp->partial = true;
			return;
		}
		sp->written += (uint64_t)w;
		p += w;
		n -= (size_t)w;
	}
}

static void request_spill(struct job_stream *s)
{
	struct job *j = s->job;

	order_open_spill(j->J->orders, j->id, s->stream, j->uid);
	s->spill.requested = true;
}

/* The shaper's spill callback: every byte of a stream that is cut. */
static void spill_bytes(void *ctx, const uint8_t *p, size_t n)
{
	struct job_stream *s = ctx;
	struct job_spill *sp = &s->spill;

	if (sp->fd >= 0) {
		spill_write(s, p, n);
		return;
	}
	if (sp->error[0])
		return;
	if (!sp->requested) {
		if (!s->job->J->cfg->spill_dir[0]) {
			spill_fail(sp, "spill_dir is empty", 0);
			return;
		}
		request_spill(s);
	}
	if (sp->pending_len + n > sp->pending_cap) {
		size_t cap = MAX(sp->pending_cap * 2, sp->pending_len + n);
		uint8_t *b = realloc(sp->pending, cap);
		if (!b) {
			spill_fail(sp, "toolrund is out of memory", 0);
			return;
		}
		sp->pending = b;
		sp->pending_cap = cap;
	}
	memcpy(sp->pending + sp->pending_len, p, n);
	sp->pending_len += n;
}

/* ------------------------------------------------------------------ */
/* The stream                                                          */

void output_close(struct job_stream *s)
{
	if (s->fd < 0)
		return;
	event_del(s->job->J->loop, &s->ev);
	if (s->borrowed)
		s->fd = -1;
	else
		close_fd(&s->fd);
}

/* Shaped and spilled to the end: the tail, the marker. */
static void stream_finish(struct job_stream *s)
{
	struct job_spill *sp = &s->spill;
	bool kept = sp->path[0] != '\0';
	struct shape_end end = {
		.spill_path = kept ? sp->path : NULL,
		.spill_partial = sp->partial,
		.spill_bytes = sp->written,
		.spill_error = sp->error[0] ? sp->error : "the spill file was not opened",
	};

	if (s->finished)
		return;
	s->finished = true;
	shaper_finish(&s->shaper, &end, emit_append, s);
	queue_emitted(s);
	close_fd(&sp->fd);
}

static void stream_eof(struct job_stream *s)
{
	output_close(s);
	/* A short stream is known to be binary only now: it may spill. */
	shaper_eof(&s->shaper, emit_append, spill_bytes, s);
	queue_emitted(s);
	if (s->spill.requested) {
		s->eof_waiting = true; /* finished when the file is open */
		return;
	}
	stream_finish(s);
}

static bool client_too_slow(const struct job *j)
{
	size_t queued = j->client ? j->client->ops->queued(j->client) : 0;

	/* While slow clients hold much in all, each is held to less. */
	return queued > OUTQ_HIGH ||
	       (queued > OUTQ_LOW && *j->J->queued_total > MAX_QUEUED_BYTES);
}

/* Stop watching the pipe while its stream waits (for its spill file, for
 * a slow client). Its result may be dropped: a pause that fails leaves
 * the pipe armed, and the loop calls stream_pull for it each turn, which
 * reads nothing while paused or waiting_spill: no byte is lost or
 * reordered, the cost is wake-ups until the wait ends. */
static int pause_pipe(struct job_stream *s)
{
	return event_modify(s->job->J->loop, &s->ev, 0);
}

/* Read what the pipe holds, shape it, hand it on. Returns false at the
 * stream's end (or a read error), which the caller handles. */
static bool stream_pull(struct job_stream *s)
{
	struct job *j = s->job;
	struct jobs *J = j->J;

	/* A bounded number of reads per wakeup keeps one busy program from
	 * starving the other clients. */
	for (int round = 0; round < 16 && s->fd >= 0 && !s->paused && !s->waiting_spill;
	     round++) {
		ssize_t n = read(s->fd, J->read_buf, sizeof(J->read_buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return true;
			log_warn("job %llu: read: %s", (unsigned long long)j->id,
				 errno_text(errno));
			return false;
		}
		if (n == 0)
			return false;
		shaper_feed(&s->shaper, J->read_buf, (size_t)n, emit_append, spill_bytes, s);
		queue_emitted(s);
		if (s->spill.requested) {
			IGNORE_RESULT(pause_pipe(s)); /* see pause_pipe */
			s->waiting_spill = true;
			return true;
		}
		if (j->client && !j->client->ops->flush(j->client))
			continue; /* the client left: keep draining */
		/* A slow client: stop reading until its queue drains, unless
		 * nothing more reaches it before the end anyway. */
		if (client_too_slow(j) && !shaper_draining(&s->shaper)) {
			IGNORE_RESULT(pause_pipe(s)); /* see pause_pipe */
			s->paused = true;
		}
	}
	return true;
}

static void stream_readable(struct event_loop *loop, uint32_t events, void *data)
{
	struct job_stream *s = data;
	(void)loop;
	(void)events;

	if (!stream_pull(s)) {
		stream_eof(s);
		job_maybe_finish(s->job);
	}
}

void output_settle(struct job *j)
{
	for (int i = 0; i < 2; i++) {
		struct job_stream *s = &j->out[i];
		if (s->fd < 0 || !s->shaped)
			continue;
		/* The end, if it came, is the loop's to handle. */
		(void)stream_pull(s);
		shaper_settle(&s->shaper, emit_append, spill_bytes, s);
		queue_emitted(s);
	}
}

int output_attach(struct job *j, int i, Toolrun__Stream stream, int fd)
{
	struct job_stream *s = &j->out[i];

	s->fd = fd;
	s->borrowed = true;
	s->stream = stream;
	if (event_add(j->J->loop, &s->ev, fd, EPOLLIN, stream_readable, s) < 0) {
		int e = errno;
		s->fd = -1;
		return -e;
	}
	return 0;
}

int output_open(struct job *j, int i, Toolrun__Stream stream, int *write_end)
{
	struct job_stream *s = &j->out[i];
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	fcntl(p[0], F_SETPIPE_SZ, PIPE_SIZE); /* best effort */
	s->fd = p[0];
	s->stream = stream;
	*write_end = p[1];
	if (event_add(j->J->loop, &s->ev, p[0], EPOLLIN, stream_readable, s) < 0) {
		int e = errno;
		close_fd(&s->fd);
		close(p[1]);
		return -e;
	}
	return 0;
}

static void watch_again(struct job_stream *s)
{
	if (s->fd < 0 || s->paused || s->waiting_spill)
		return;
	/* EPOLL_CTL_MOD of an fd in the set fails only by a bug (EBADF,
	 * ENOENT): nothing to recover, but the log says why the stream then
	 * stalls until the job's timeout or its client leaves. */
	int r = event_modify(s->job->J->loop, &s->ev, EPOLLIN);
	if (r < 0)
		log_error("job %llu: cannot watch its %s pipe again: %s",
			  (unsigned long long)s->job->id,
			  s->stream == TOOLRUN__STREAM__STREAM_STDERR ? "stderr" : "stdout",
			  errno_text(r));
}

void job_resume_output(struct job *j)
{
	for (int i = 0; i < 2; i++) {
		struct job_stream *s = &j->out[i];
		if (s->paused) {
			s->paused = false;
			watch_again(s);
		}
	}
}

void output_drain_and_close(struct job *j)
{
	for (int i = 0; i < 2; i++) {
		struct job_stream *s = &j->out[i];
		if (s->fd < 0)
			continue;
		for (;;) {
			ssize_t n = read(s->fd, j->J->read_buf, sizeof(j->J->read_buf));
			if (n <= 0)
				break;
			shaper_feed(&s->shaper, j->J->read_buf, (size_t)n, emit_append,
				    spill_bytes, s);
			queue_emitted(s);
		}
		stream_eof(s);
	}
}

void output_spill_opened(struct job_stream *s, int fd, const char *path,
			 const char *reason)
{
	struct job_spill *sp = &s->spill;

	if (!sp->requested) {
		if (fd >= 0)
			close(fd);
		return;
	}
	sp->requested = false;
	if (fd >= 0) {
		sp->fd = fd;
		snprintf(sp->path, sizeof(sp->path), "%s", path);
		spill_write(s, sp->pending, sp->pending_len);
	} else {
		spill_fail(sp, reason && reason[0] ? reason : "the spill file could not be made", 0);
	}
	free(sp->pending);
	sp->pending = NULL;
	sp->pending_len = sp->pending_cap = 0;
	if (s->eof_waiting) {
		s->eof_waiting = false;
		stream_finish(s);
		job_maybe_finish(s->job);
		return;
	}
	s->waiting_spill = false;
	watch_again(s);
}

void output_free(struct job_stream *s)
{
	output_close(s);
	close_fd(&s->spill.fd);
	free(s->spill.pending);
	s->spill.pending = NULL;
	if (s->shaped)
		shaper_free(&s->shaper);
}
