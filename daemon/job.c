/*
 * Jobs: one request, from the validated Request to the Exit message.
 *
 *   job_start       policy check, pipes for shaped streams, Spawn order
 *   job_on_spawned  Started (or the reason nothing ran)
 *   stream_readable read, shape, queue Output; pause for a slow client
 *   job_on_exited   the program's status
 *   job_finish      once the program has ended and its streams are at
 *                   EOF: the timeout notice, Exit, Release, the log line
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"
#include "listener.h"
#include "log.h"
#include "policy.h"
#include "reply.h"
#include "util.h"

/* Shaped pipes are made this large when the kernel allows, so that a
 * program writing fast wakes the daemon less often. */
#define PIPE_SIZE (1024 * 1024)

static struct job *find_job(struct listener *L, uint64_t id)
{
	for (struct job *j = L->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

static void send_kill(struct job *j, int signo)
{
	Toolrun__Launcher__Kill k = TOOLRUN__LAUNCHER__KILL__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	k.job = j->id;
	k.signo = signo;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_KILL;
	m.kill = &k;
	launcher_send(j->L, &m, NULL, 0);
}

static void send_release(struct job *j)
{
	Toolrun__Launcher__Release r = TOOLRUN__LAUNCHER__RELEASE__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	r.job = j->id;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_RELEASE;
	m.release = &r;
	launcher_send(j->L, &m, NULL, 0);
}

static void emit_append(void *ctx, const uint8_t *p, size_t n)
{
	struct listener *L = ctx;

	if (L->emit_len + n > L->emit_cap) {
		size_t cap = L->emit_cap * 2 > L->emit_len + n ? L->emit_cap * 2
							       : L->emit_len + n;
		uint8_t *e = realloc(L->emit, cap);
		if (!e)
			return; /* shaped bytes lost; logged by the caller */
		L->emit = e;
		L->emit_cap = cap;
	}
	memcpy(L->emit + L->emit_len, p, n);
	L->emit_len += n;
}

/* Queue what the shaper kept, if a client is there to take it. */
static void queue_emitted(struct job *j, Toolrun__Stream stream)
{
	struct listener *L = j->L;

	if (L->emit_len && j->conn)
		reply_output(&j->conn->out, stream, L->emit, L->emit_len);
	L->emit_len = 0;
}

static void job_free(void *p)
{
	struct job *j = p;

	for (int i = 0; i < 2; i++)
		if (j->out[i].shaped)
			shaper_free(&j->out[i].shaper);
	free(j);
}

static void describe_stream(char *buf, size_t len, const struct job_stream *s,
			    bool joined_err)
{
	struct shape_stats st;

	if (joined_err) {
		snprintf(buf, len, "joined");
		return;
	}
	if (!s->shaped) {
		snprintf(buf, len, "direct");
		return;
	}
	shaper_stats(&s->shaper, &st);
	snprintf(buf, len, "%lluB/%lluL-dropped:%lluB/%lluL%s",
		 (unsigned long long)st.bytes_seen, (unsigned long long)st.lines_seen,
		 (unsigned long long)st.bytes_dropped,
		 (unsigned long long)st.lines_dropped, s->reader_gone ? "-reader-gone" : "");
}

static void log_job(const struct job *j, const struct exit_report *r)
{
	char status[64], out[96], err[96];

	if (r->reason)
		snprintf(status, sizeof(status), "not run");
	else if (r->signaled)
		snprintf(status, sizeof(status), "signal=%s%s", sigabbrev_np(r->signal),
			 r->core_dumped ? "+core" : "");
	else
		snprintf(status, sizeof(status), "exit=%d%s", r->code,
			 r->timed_out ? " timeout" : "");
	describe_stream(out, sizeof(out), &j->out[0], false);
	describe_stream(err, sizeof(err), &j->out[1], j->joined);
	log_info("job %llu uid=%u tool=%s pid=%d %s time=%llums stdout=%s stderr=%s%s%s%s",
		 (unsigned long long)j->id, (unsigned)j->uid, j->tool, (int)j->pid,
		 status, (unsigned long long)(r->duration_us / 1000), out, err,
		 j->client_gone ? " client-gone" : "", r->reason ? " reason=" : "",
		 r->reason ? r->reason : "");
}

static void close_stream(struct job_stream *s)
{
	if (s->fd < 0)
		return;
	event_del(&s->job->L->loop, &s->ev);
	close_fd(&s->fd);
}

/* End of a shaped stream: the marker, if anything was cut. */
static void stream_eof(struct job_stream *s)
{
	struct job *j = s->job;

	shaper_finish(&s->shaper, &(struct shape_end){.spill_error = "spill_dir is empty"},
		      emit_append, j->L);
	queue_emitted(j, s->stream);
	close_stream(s);
}

static void job_unlink(struct job *j)
{
	struct listener *L = j->L;

	timer_cancel(&L->loop, &j->timeout);
	close_stream(&j->out[0]);
	close_stream(&j->out[1]);
	if (j->prev)
		j->prev->next = j->next;
	else
		L->jobs = j->next;
	if (j->next)
		j->next->prev = j->prev;
	if (j->conn)
		j->conn->job = NULL;
	L->running--;
	L->served++;
	if (event_release(&L->loop, j, job_free) < 0)
		log_error("out of memory: job %llu not freed", (unsigned long long)j->id);
}

/* Send Exit (if the client is still there) and retire the job. */
static void job_report(struct job *j, struct exit_report *r)
{
	struct conn *c = j->conn;

	r->shaped[0] = j->out[0].shaped;
	r->shaped[1] = j->out[1].shaped;
	if (j->out[0].shaped)
		shaper_stats(&j->out[0].shaper, &r->stats[0]);
	if (j->out[1].shaped && !j->joined)
		shaper_stats(&j->out[1].shaper, &r->stats[1]);
	log_job(j, r);
	if (c) {
		c->job = NULL;
		j->conn = NULL;
		reply_exit(&c->out, r);
		conn_close_after_flush(c);
	}
	job_unlink(j);
}

static void job_finish(struct job *j)
{
	struct exit_report r = {0};

	if (j->timed_out) {
		char notice[160];
		int n = snprintf(notice, sizeof(notice),
				 "toolrun: %s: timed out after %u s\n", j->name,
				 j->limits.timeout_s);
		if (j->conn)
			reply_output(&j->conn->out, TOOLRUN__STREAM__STREAM_STDERR,
				     (const uint8_t *)notice, (size_t)n);
		r.code = 124;
		r.timed_out = true;
	} else if (WIFSIGNALED(j->wait_status)) {
		r.signaled = true;
		r.signal = WTERMSIG(j->wait_status);
		r.core_dumped = WCOREDUMP(j->wait_status);
	} else {
		r.code = WEXITSTATUS(j->wait_status);
	}
	r.duration_us = j->end_us - j->start_us;
	send_release(j);
	job_report(j, &r);
}

static void job_maybe_finish(struct job *j)
{
	if (j->exited && j->out[0].fd < 0 && j->out[1].fd < 0)
		job_finish(j);
}

/* Nothing ran: say why, with the code a shell would give. */
static void job_not_run(struct job *j, int code, int exec_errno, const char *reason)
{
	struct exit_report r = {.code = code, .exec_errno = exec_errno, .reason = reason};

	send_release(j);
	job_report(j, &r);
}

static void stream_readable(struct event_loop *loop, uint32_t events, void *data)
{
	struct job_stream *s = data;
	struct job *j = s->job;
	struct listener *L = j->L;
	(void)loop;
	(void)events;

	/* A bounded number of reads per wakeup keeps one busy program from
	 * starving the other clients. */
	for (int round = 0; round < 16 && s->fd >= 0; round++) {
		ssize_t n = read(s->fd, L->read_buf, sizeof(L->read_buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			log_warn("job %llu: read: %s", (unsigned long long)j->id,
				 errno_text(errno));
			n = 0;
		}
		if (n == 0) {
			stream_eof(s);
			job_maybe_finish(j);
			return;
		}
		shaper_feed(&s->shaper, L->read_buf, (size_t)n, emit_append, NULL, L);
		queue_emitted(j, s->stream);
		if (j->conn && !conn_flush(j->conn))
			continue; /* the client left: keep draining */
		/* A slow client: stop reading until its queue drains, unless
		 * the output is past its limit and only being counted. While
		 * slow clients hold much in all, each is held to less. */
		size_t queued = j->conn ? j->conn->out.bytes : 0;
		bool too_much = queued > OUTQ_HIGH ||
				(queued > OUTQ_LOW && L->queued > MAX_QUEUED_BYTES);
		if (too_much && !shaper_draining(&s->shaper)) {
			event_modify(&L->loop, &s->ev, 0);
			s->paused = true;
			return;
		}
	}
}

void job_resume_output(struct job *j)
{
	for (int i = 0; i < 2; i++) {
		struct job_stream *s = &j->out[i];
		if (s->fd >= 0 && s->paused) {
			s->paused = false;
			event_modify(&j->L->loop, &s->ev, EPOLLIN);
		}
	}
}

/* Read what is there and stop waiting for the rest. */
static void drain_and_close(struct job *j)
{
	for (int i = 0; i < 2; i++) {
		struct job_stream *s = &j->out[i];
		if (s->fd < 0)
			continue;
		for (;;) {
			ssize_t n = read(s->fd, j->L->read_buf, sizeof(j->L->read_buf));
			if (n <= 0)
				break;
			shaper_feed(&s->shaper, j->L->read_buf, (size_t)n, emit_append,
				    NULL, j->L);
			queue_emitted(j, s->stream);
		}
		stream_eof(s);
	}
}

static void on_timeout(struct event_loop *loop, void *data)
{
	struct job *j = data;
	(void)loop;

	if (!j->exited) {
		log_info("job %llu: %s timed out after %u s; killing its process group",
			 (unsigned long long)j->id, j->name, j->limits.timeout_s);
		j->timed_out = true;
		if (j->spawned)
			send_kill(j, SIGKILL);
		return;
	}
	/* The program ended, but processes that left its group still hold
	 * its output open: stop waiting for them. */
	drain_and_close(j);
	job_maybe_finish(j);
}

void job_on_spawned(struct listener *L, uint64_t id, pid_t pid, int err,
		    unsigned step)
{
	struct job *j = find_job(L, id);
	char reason[256];

	if (!j)
		return;
	if (err) {
		int code = 1, exec_errno = 0;
		if (step == LAUNCH_STEP_EXEC) {
			exec_errno = err;
			code = err == ENOENT ? 127 : 126;
			snprintf(reason, sizeof(reason), "%s",
				 err == ENOENT ? "command not found" : errno_text(err));
		} else {
			snprintf(reason, sizeof(reason), "toolrund failed to %s: %s",
				 launch_step_name((enum launch_step)step), errno_text(err));
		}
		j->exited = true;
		close_stream(&j->out[0]);
		close_stream(&j->out[1]);
		job_not_run(j, code, exec_errno, reason);
		return;
	}
	j->pid = pid;
	j->spawned = true;
	j->start_us = monotonic_us();
	if (j->conn) {
		reply_started(&j->conn->out, pid);
		conn_flush(j->conn);
	}
	if (j->client_gone || j->timed_out) {
		send_kill(j, SIGKILL);
		return;
	}
	for (unsigned i = 0; i < j->npending; i++)
		send_kill(j, j->pending_signals[i]);
	j->npending = 0;
}

void job_on_exited(struct listener *L, uint64_t id, int wait_status)
{
	struct job *j = find_job(L, id);

	if (!j)
		return;
	j->exited = true;
	j->wait_status = wait_status;
	j->end_us = monotonic_us();
	if (j->timed_out || j->client_gone)
		drain_and_close(j);
	job_maybe_finish(j);
}

void job_signal(struct job *j, int signo)
{
	if (j->exited)
		return;
	if (j->spawned) {
		send_kill(j, signo);
	} else if (j->npending < ARRAY_SIZE(j->pending_signals)) {
		j->pending_signals[j->npending++] = signo;
	}
}

void job_reader_gone(struct job *j, Toolrun__Stream stream)
{
	struct job_stream *s = &j->out[stream == TOOLRUN__STREAM__STREAM_STDERR ? 1 : 0];

	if (!s->shaped || s->fd < 0)
		return; /* not ours to close (joined stderr has no pipe of its own) */
	log_debug("job %llu: the reader of its %s is gone; closing the pipe",
		  (unsigned long long)j->id, s->stream == TOOLRUN__STREAM__STREAM_STDERR
						     ? "stderr" : "stdout");
	s->reader_gone = true;
	close_stream(s);
	job_maybe_finish(j);
}

void job_client_gone(struct job *j)
{
	j->conn = NULL;
	j->client_gone = true;
	job_resume_output(j); /* nobody to wait for: drain */
	if (j->spawned && !j->exited)
		send_kill(j, SIGKILL);
	else if (j->exited)
		job_maybe_finish(j);
}

void job_stop_all(struct listener *L)
{
	while (L->jobs) {
		struct job *j = L->jobs;
		if (j->conn) {
			j->conn->job = NULL;
			j->conn = NULL;
		}
		send_release(j);
		j->exited = true;
		job_unlink(j);
	}
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The resource behind each of the config's rlimit keys. */
static const int policy_resources[POLICY_RLIMIT_COUNT] = {
	[POLICY_RLIMIT_AS] = RLIMIT_AS,
	[POLICY_RLIMIT_NPROC] = RLIMIT_NPROC,
	[POLICY_RLIMIT_FSIZE] = RLIMIT_FSIZE,
	[POLICY_RLIMIT_NOFILE] = RLIMIT_NOFILE,
	[POLICY_RLIMIT_CPU] = RLIMIT_CPU,
};

/* Lower the state's limits to the tool's; add those the caller did not
 * report. limits has room for every resource once more. */
static void apply_policy_limits(Toolrun__ProcessState *st, Toolrun__Limit *limits,
				const struct limits *policy)
{
	for (int r = 0; r < POLICY_RLIMIT_COUNT; r++) {
		uint64_t cap = policy->rlimit[r];
		if (cap == POLICY_UNLIMITED)
			continue;
		Toolrun__Limit *l = NULL;
		for (size_t i = 0; i < st->n_limits; i++)
			if (st->limits[i]->resource == (uint32_t)policy_resources[r])
				l = st->limits[i];
		if (!l) {
			l = &limits[st->n_limits];
			toolrun__limit__init(l);
			l->resource = (uint32_t)policy_resources[r];
			l->soft = l->hard = POLICY_UNLIMITED;
			st->limits[st->n_limits++] = l;
		}
		l->hard = MIN(l->hard, cap);
		l->soft = MIN(l->soft, l->hard);
	}
}

/* Make a pipe for a shaped stream: the read end stays here, the write
 * end goes to the program. */
static int open_stream(struct job *j, int i, Toolrun__Stream stream, int *write_end)
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
	if (event_add(&j->L->loop, &s->ev, p[0], EPOLLIN, stream_readable, s) < 0) {
		int e = errno;
		close_fd(&s->fd);
		close(p[1]);
		return -e;
	}
	return 0;
}

void job_start(struct conn *c, const Toolrun__Request *req, int *fds, unsigned nfds)
{
	struct listener *L = c->L;
	struct policy_decision d;
	enum policy_verdict v = policy_check(L->cfg, req, nfds, nfds ? fds[0] : -1, &d);

	if (v == POLICY_MALFORMED) {
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE, "bad Request: %s",
			    d.error);
		return;
	}

	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY, "out of memory");
		return;
	}
	j->L = L;
	j->id = ++L->next_job;
	j->conn = c;
	j->uid = c->uid;
	j->pid = 0;
	j->out[0] = (struct job_stream){.job = j, .fd = -1, .ev.fd = -1};
	j->out[1] = (struct job_stream){.job = j, .fd = -1, .ev.fd = -1};
	{
		char exe[PATH_MAX];
		size_t n = MIN(req->executable.len, sizeof(exe) - 1);
		memcpy(exe, req->executable.data, n);
		exe[n] = '\0';
		snprintf(j->name, sizeof(j->name), "%.63s", base_name(exe));
	}
	j->next = L->jobs;
	if (L->jobs)
		L->jobs->prev = j;
	L->jobs = j;
	L->running++;
	c->job = j;

	if (v == POLICY_NOT_LISTED) {
		char reason[CONFIG_PATH_MAX + 160];
		snprintf(j->tool, sizeof(j->tool), "-");
		/* The caller's library read the file as listing it: the file
		 * changed since the daemon read it, most likely. */
		char when[32];
		struct tm tm;
		gmtime_r(&L->cfg_read_at, &tm);
		strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
		snprintf(reason, sizeof(reason),
			 "not a tool listed in %s as toolrund read it (at %s); if the "
			 "file lists it now, run 'toolrun reload'", L->cfg->file, when);
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		j->exited = true;
		job_not_run(j, 126, EACCES, reason);
		return;
	}
	snprintf(j->tool, sizeof(j->tool), "%.63s", config_tool_name(L->cfg, d.tool));
	j->limits = d.limits;
	j->joined = d.joined;

	/* The fds for the program: the directory, the caller's fds that are
	 * not shaped, then the write ends of the shaped streams. */
	int send[FRAME_MAX_FDS + 2];
	uint32_t targets[FRAME_MAX_FDS + 2];
	unsigned nsend = 0, ntargets = 0;
	int write_end[2] = {-1, -1};
	char failure[256] = "";

	send[nsend++] = fds[0];
	for (unsigned k = 0; k + 1 < nfds; k++) {
		uint32_t t = req->fds[k];
		if ((t == 1 && d.shape_stdout) || (t == 2 && d.shape_stderr)) {
			close(fds[1 + k]); /* truncate = always takes it over */
			continue;
		}
		send[nsend++] = fds[1 + k];
		targets[ntargets++] = t;
	}
	for (int i = 0; i < 2 && !failure[0]; i++) {
		bool shaped = i == 0 ? d.shape_stdout : d.shape_stderr;
		struct job_stream *s = &j->out[i];
		if (!shaped)
			continue;
		struct shape_opts o = {
			.max_bytes = d.limits.max_bytes,
			.max_lines = d.limits.max_lines,
			.mode = d.limits.shape,
			.binary_summary = L->cfg->binary == BINARY_SUMMARY,
			.stream_name = i == 1 ? "stderr" : d.joined ? "output" : "stdout",
		};
		if (shaper_init(&s->shaper, &o) < 0) {
			snprintf(failure, sizeof(failure), "toolrund is out of memory");
			break;
		}
		s->shaped = true;
		int w = -1;
		if (i == 1 && d.joined) {
			w = fcntl(write_end[0], F_DUPFD_CLOEXEC, 3);
		} else {
			int r = open_stream(j, i, i == 0 ? TOOLRUN__STREAM__STREAM_STDOUT
							 : TOOLRUN__STREAM__STREAM_STDERR, &w);
			if (r < 0) {
				snprintf(failure, sizeof(failure),
					 "toolrund failed to create a pipe: %s", errno_text(r));
				break;
			}
		}
		if (w < 0) {
			snprintf(failure, sizeof(failure),
				 "toolrund failed to duplicate a pipe: %s", errno_text(errno));
			break;
		}
		write_end[i] = w;
		send[nsend++] = w;
		targets[ntargets++] = (uint32_t)(i + 1);
	}

	ProtobufCBinaryData *env = NULL;
	size_t nenv = 0;
	if (!failure[0] && policy_environment(req, L->cfg, &d.limits, &env, &nenv) < 0)
		snprintf(failure, sizeof(failure), "toolrund is out of memory");

	if (failure[0]) {
		for (unsigned i = 0; i < nsend; i++)
			close(send[i]);
		j->exited = true;
		close_stream(&j->out[0]);
		close_stream(&j->out[1]);
		job_not_run(j, 1, 0, failure);
		return;
	}

	Toolrun__Launcher__Spawn sp = TOOLRUN__LAUNCHER__SPAWN__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;
	/* The caller's state, with the tool's resource limits as ceilings:
	 * the program gets the lower of the two. */
	Toolrun__ProcessState state = TOOLRUN__PROCESS_STATE__INIT;
	Toolrun__Limit limits[RLIM_NLIMITS + POLICY_RLIMIT_COUNT];
	Toolrun__Limit *limit_ptrs[RLIM_NLIMITS + POLICY_RLIMIT_COUNT];
	if (req->state) {
		/* SIGKILL and SIGSTOP can be neither blocked nor ignored. */
		uint64_t fixed = (UINT64_C(1) << (SIGKILL - 1)) | (UINT64_C(1) << (SIGSTOP - 1));
		state = *req->state;
		state.blocked_signals &= ~fixed;
		state.ignored_signals &= ~fixed;
	} else {
		state.umask = 022;
	}
	state.n_limits = 0;
	state.limits = limit_ptrs;
	for (size_t i = 0; req->state && i < req->state->n_limits; i++) {
		limits[state.n_limits] = *req->state->limits[i];
		limit_ptrs[state.n_limits] = &limits[state.n_limits];
		state.n_limits++;
	}
	apply_policy_limits(&state, limits, &d.limits);
	sp.state = &state;
	sp.network = d.limits.network == NETWORK_ALLOW;
	sp.job = j->id;
	sp.executable = req->executable;
	sp.n_argv = req->n_argv;
	sp.argv = req->argv;
	sp.n_envp = nenv;
	sp.envp = env;
	sp.n_fds = ntargets;
	sp.fds = targets;
	sp.tool = j->tool;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_SPAWN;
	m.spawn = &sp;
	j->start_us = monotonic_us();
	launcher_send(L, &m, send, nsend); /* the queue owns and closes them */
	free(env);

	if (j->limits.timeout_s)
		timer_arm(&L->loop, &j->timeout, (int64_t)j->limits.timeout_s * 1000,
			  on_timeout, j);
}
