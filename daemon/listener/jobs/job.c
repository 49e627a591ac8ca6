/*
 * Jobs: one request, from the validated Request to the Exit message.
 *
 *   job_start       (start.c) policy check, pipes for shaped streams,
 *                   Spawn order
 *   jobs_on_spawned Started (or the reason nothing ran)
 *   (output.c)      read, shape, spill, queue Output
 *   on_timeout      a tool's timeout (unless it waits on a producer), a
 *                   command's command_timeout (its whole tree)
 *   jobs_on_exited  the program's status
 *   job_finish      once the program has ended and its streams are at
 *                   EOF: the timeout notice, Exit, Release, the log line,
 *                   the audit record
 *
 * A job is a listed tool, or an agent command (Request.command): the
 * first process of a tree, handed over whole so that one budget shapes
 * what reaches the agent (preload/command.h).
 *
 * Process: the listener.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "launchstep.h"
#include "internal.h"
#include "log.h"
#include "policy.h"
#include "reply.h"
#include "util.h"

struct job *job_find(struct jobs *J, uint64_t id)
{
	struct job *j;
	LIST_FOREACH(j, &J->list, link)
		if (j->id == id)
			return j;
	return NULL;
}

/* A signal the client forwards reaches the process group, as a terminal's
 * would; ending a job reaches all of a command. */
static void send_kill(struct job *j, int signo)
{
	order_kill(j->J->orders, j->id, signo, KILL_GROUP);
}

static int timeout_notice(const struct job *j, char *buf, size_t len);

static void end_job(struct job *j)
{
	if (j->attached)
		return;
	/* Its client hears of the time limit from the launcher. */
	if (j->answered && j->timed_out) {
		char notice[512];
		timeout_notice(j, notice, sizeof(notice));
		order_kill_timed_out(j->J->orders, j->id, notice);
		return;
	}
	order_kill(j->J->orders, j->id, SIGKILL, j->command ? KILL_TREE : KILL_GROUP);
}

static void send_check_input(struct job *j)
{
	order_check_input(j->J->orders, j->id);
	j->checking_input = true;
}

static void send_release(struct job *j)
{
	if (j->attached)
		return;
	order_release(j->J->orders, j->id);
}

static void job_free(void *p)
{
	struct job *j = p;

	output_free(&j->out[0]);
	output_free(&j->out[1]);
	free(j->argv);
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
	log_info("job %llu uid=%u %s=%s pid=%d %s time=%llums stdout=%s stderr=%s%s%s%s",
		 (unsigned long long)j->id, (unsigned)j->uid,
		 j->command ? "command" : "tool", j->command ? j->name : j->tool, (int)j->pid,
		 status, (unsigned long long)(r->duration_us / 1000), out, err,
		 j->client_gone ? " client-gone" : "", r->reason ? " reason=" : "",
		 r->reason ? r->reason : "");
}

static void job_unlink(struct job *j)
{
	struct jobs *J = j->J;

	timer_cancel(J->loop, &j->timeout);
	output_close(&j->out[0]);
	output_close(&j->out[1]);
	LIST_REMOVE(j, link);
	if (j->client)
		j->client->job = NULL;
	J->running--;
	J->served++;
	if (event_release(J->loop, j, job_free) < 0)
		log_error("out of memory: job %llu not freed", (unsigned long long)j->id);
}

static void audit_stream(const struct job *j, int i, struct audit_stream *a,
			 const struct exit_report *r)
{
	const struct job_spill *sp = &j->out[i].spill;

	a->shaped = r->shaped[i] && !(i == 1 && j->joined);
	a->bytes = r->stats[i].bytes_seen;
	a->lines = r->stats[i].lines_seen;
	a->bytes_dropped = r->stats[i].bytes_dropped;
	a->lines_dropped = r->stats[i].lines_dropped;
	a->spill = sp->path[0] ? sp->path : NULL;
	a->spill_partial = sp->partial;
}

/* One line in the audit log, written by the launcher. */
static void job_audit(const struct job *j, const struct exit_report *r)
{
	struct audit_record a = {
		.kind = j->command ? "command" : "tool",
		.job = j->id,
		.command_job = j->command_job,
		.start_ms = j->start_ms,
		.duration_us = r->duration_us,
		.user_us = r->user_us,
		.system_us = r->system_us,
		.uid = (uint32_t)j->uid,
		.caller_pid = j->caller_pid,
		.pid = j->spawned ? j->pid : 0,
		.tool = j->command ? NULL : j->tool,
		.cwd = j->cwd.data,
		.cwd_len = j->cwd.len,
		.argv = j->argv,
		.argc = j->argc,
		.not_run = r->reason != NULL,
		.reason = r->reason,
		.signaled = r->signaled,
		.exit_code = r->code,
		.signal = r->signal,
		.core_dumped = r->core_dumped,
		.timed_out = r->timed_out,
		.shell_reported = j->shell_reported,
	};
	audit_stream(j, 0, &a.out[0], r);
	audit_stream(j, 1, &a.out[1], r);
	char *line = audit_format(&a);
	if (!line) {
		log_error("job %llu: out of memory for its audit record", (unsigned long long)j->id);
		return;
	}
	order_audit(j->J->orders, line);
	free(line);
}

/* Tell the client (if still there) how it ended, and retire the job. */
static void job_report(struct job *j, struct exit_report *r)
{
	struct job_client *c = j->client;

	for (int i = 0; i < 2; i++) {
		const struct job_stream *s = &j->out[i];
		r->shaped[i] = s->shaped;
		if (s->shaped && !(i == 1 && j->joined)) {
			struct shape_stats st;
			shaper_stats(&s->shaper, &st);
			r->stats[i] = (struct exit_stream){st.bytes_seen, st.lines_seen,
							   st.bytes_dropped, st.lines_dropped};
		}
		r->spill_path[i] = s->spill.path[0] ? s->spill.path : NULL;
		r->spill_partial[i] = s->spill.partial;
	}
	/* The log line before the reply (whoever sees the exit finds the job
	 * in the log), the audit record after it: the launcher writes it
	 * asynchronously either way, and formatting it need not delay the
	 * caller. */
	log_job(j, r);
	if (c) {
		c->job = NULL;
		j->client = NULL;
		c->ops->finished(c, r);
	}
	job_audit(j, r);
	job_unlink(j);
}

/*
 * The line a command that timed out ends with: what was killed, as the
 * launcher counted it, and how to run longer work. Every process below
 * the command was found through its first process, which adopts what
 * its tree orphans; "below it" is what that search covers, and nothing
 * more is claimed.
 */
static int command_timeout_notice(const struct job *j, char *buf, size_t len)
{
	char others[64] = "";

	if (j->killed_below == 1)
		snprintf(others, sizeof(others), ", with the 1 other process running below it");
	else if (j->killed_below > 1)
		snprintf(others, sizeof(others), ", with the %u other processes running below it",
			 j->killed_below);
	return snprintf(buf, len,
			"toolrun: the command timed out after %u s (command_timeout) and was "
			"killed%s; for longer work, use a session (toolrun session: no command "
			"timeout) or run it in the background (nohup CMD > FILE 2>&1 &) and read "
			"FILE later\n",
			j->limits.timeout_s, others);
}

/* The line a job that timed out ends with, on its stderr. */
static int timeout_notice(const struct job *j, char *buf, size_t len)
{
	if (j->command)
		return command_timeout_notice(j, buf, len);
	return snprintf(buf, len, "toolrun: %s: timed out after %u s\n", j->name,
			j->limits.timeout_s);
}

static void job_finish(struct job *j)
{
	struct exit_report r = {0};

	/* A client the launcher answers was told by the launcher. */
	if (j->timed_out && j->client && !j->answered) {
		char notice[512];
		int n = timeout_notice(j, notice, sizeof(notice));
		j->client->ops->output(j->client, TOOLRUN__STREAM__STREAM_STDERR,
				       (const uint8_t *)notice, (size_t)n);
	}
	answer_wait_status(&r, j->wait_status, j->timed_out);
	r.duration_us = j->end_us - j->start_us;
	r.user_us = j->cpu_user_us;
	r.system_us = j->cpu_system_us;
	send_release(j);
	job_report(j, &r);
}

static bool stream_done(const struct job_stream *s)
{
	return s->fd < 0 && !s->eof_waiting;
}

void job_maybe_finish(struct job *j)
{
	if (j->exited && stream_done(&j->out[0]) && stream_done(&j->out[1]))
		job_finish(j);
}

/* Nothing ran: say why, with the code a shell would give. */
void job_not_run(struct job *j, int code, int exec_errno, const char *reason)
{
	struct exit_report r = {.code = code, .exec_errno = exec_errno, .reason = reason};

	send_release(j);
	job_report(j, &r);
}

static void kill_timed_out(struct job *j)
{
	log_info("job %llu: %s timed out after %u s; killing its %s",
		 (unsigned long long)j->id, j->name, j->limits.timeout_s,
		 j->command ? "session" : "process group");
	j->timed_out = true;
	if (j->spawned)
		end_job(j);
}

/* How long a command's streams may stay open after it ended. */
#define COMMAND_LINGER_MS 2000

/* How often a tool waiting on its producer is looked at again. */
#define INPUT_RECHECK_MS 1000

/*
 * The launcher's answer after a tool's timeout expired. While a process
 * outside the tool still holds its stdin open for writing, the tool may
 * only be waiting for it (`make check 2>&1 | tail -5`): look again in a
 * second. Once that producer is gone, the tool gets its whole timeout
 * again, to finish reading and write what it has.
 */
void jobs_on_input_state(struct jobs *J, uint64_t id, bool producer_running)
{
	struct job *j = job_find(J, id);

	if (!j || !j->checking_input)
		return;
	j->checking_input = false;
	if (j->exited)
		return;
	if (producer_running) {
		j->waited_for_input = true;
		job_arm_timeout(j, INPUT_RECHECK_MS);
	} else if (j->waited_for_input) {
		j->waited_for_input = false;
		job_arm_timeout(j, (int64_t)j->limits.timeout_s * 1000);
	} else {
		kill_timed_out(j);
	}
}

void jobs_on_spill_opened(struct jobs *J, uint64_t id, unsigned stream, int fd,
			  const char *path, const char *reason)
{
	struct job *j = job_find(J, id);

	if (!j || (stream != TOOLRUN__STREAM__STREAM_STDOUT &&
		   stream != TOOLRUN__STREAM__STREAM_STDERR)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	output_spill_opened(&j->out[stream == TOOLRUN__STREAM__STREAM_STDERR ? 1 : 0],
			    fd, path, reason);
}

static void on_timeout(struct event_loop *loop, void *data)
{
	struct job *j = data;
	(void)loop;

	if (!j->exited) {
		/* A tool may only be waiting for its input: ask first. */
		if (!j->command && j->spawned && !j->checking_input) {
			send_check_input(j);
			return;
		}
		kill_timed_out(j);
		return;
	}
	/* The program ended, but processes that left its group still hold
	 * its output open: stop waiting for them. */
	output_drain_and_close(j);
	job_maybe_finish(j);
}

void jobs_on_killed(struct jobs *J, uint64_t id, unsigned processes)
{
	struct job *j = job_find(J, id);

	if (j)
		j->killed_below += processes;
}

/*
 * Inside an agent command or a session, the command's own time limit
 * bounds a listed tool, unless the tool's section sets a timeout of its
 * own (as for max_bytes and max_lines): `tail -f` or a slow `find /` in a
 * command with command_timeout = 300 is not ended at the tool's default
 * 30 s. Below a harness's direct program (Request.below_harness), the
 * harness's own time bounds it, as run directly.
 */
uint32_t job_timeout_below_command(const struct job *j)
{
	return j->limits.from_section & LIMIT_SET_TIMEOUT ? j->limits.timeout_s : 0;
}

static void follow_command_timeout(struct job *j)
{
	if (j->command || !(j->command_job || j->below_harness))
		return;
	j->limits.timeout_s = job_timeout_below_command(j);
	if (!j->limits.timeout_s)
		timer_cancel(j->J->loop, &j->timeout);
}

void jobs_on_spawned(struct jobs *J, uint64_t id, pid_t pid, int err, unsigned step,
		     uint64_t command_job)
{
	struct job *j = job_find(J, id);
	char reason[256];

	if (!j)
		return;
	j->command_job = command_job;
	if (err) {
		struct exit_report r = {0};
		answer_not_run(&r, (enum launch_step)step, err, reason, sizeof(reason));
		j->exited = true;
		output_close(&j->out[0]);
		output_close(&j->out[1]);
		job_not_run(j, r.code, r.exec_errno, reason);
		return;
	}
	j->pid = pid;
	j->spawned = true;
	j->start_us = monotonic_us();
	follow_command_timeout(j);
	if (j->client && !j->answered)
		j->client->ops->started(j->client, pid, j->limits.timeout_s);
	if (j->client_gone || j->timed_out) {
		end_job(j);
		return;
	}
	for (unsigned i = 0; i < j->npending; i++)
		send_kill(j, j->pending_signals[i]);
	j->npending = 0;
}

void jobs_on_exited(struct jobs *J, uint64_t id, int wait_status, uint64_t user_us,
		    uint64_t system_us, bool timed_out)
{
	struct job *j = job_find(J, id);

	if (!j)
		return;
	/* What the launcher told the client decides: the program may have
	 * ended by itself just before its Kill at the time limit. */
	if (j->answered)
		j->timed_out = timed_out;
	j->exited = true;
	j->wait_status = wait_status;
	j->cpu_user_us = user_us;
	j->cpu_system_us = system_us;
	j->end_us = monotonic_us();
	if (j->timed_out || j->client_gone)
		output_drain_and_close(j);
	job_maybe_finish(j);
	/* A command's background processes may hold its streams: they keep
	 * running, and `docker exec` itself waits about this long for them
	 * to finish writing before it returns. */
	if (j->command && job_find(J, id) == j)
		job_arm_timeout(j, COMMAND_LINGER_MS);
}

void job_signal(struct job *j, int signo)
{
	if (j->exited || j->attached)
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
	output_close(s);
	job_maybe_finish(j);
}

void job_client_gone(struct job *j)
{
	if (j->client)
		j->client->job = NULL;
	j->client = NULL;
	j->client_gone = true;
	job_resume_output(j); /* nobody to wait for: drain */
	if (j->spawned && !j->exited)
		end_job(j);
	else if (j->exited)
		job_maybe_finish(j);
}

void job_client_refused(struct job *j, Toolrun__ErrorCode code, const char *message)
{
	/* Its client hears why from the launcher, which writes to it. */
	if (j->answered)
		order_kill_refused(j->J->orders, j->id, code, message);
	job_client_gone(j);
}

void job_attached_ended(struct job *j, int wait_status, bool by_shell)
{
	if (j->exited)
		return;
	j->exited = true;
	j->shell_reported = by_shell;
	j->wait_status = wait_status;
	j->end_us = monotonic_us();
	output_drain_and_close(j);
	job_maybe_finish(j);
}

int jobs_init(struct jobs *J, struct event_loop *loop, struct order_link *orders,
	      const size_t *queued_total)
{
	J->loop = loop;
	J->orders = orders;
	J->queued_total = queued_total;
	J->emit_cap = READ_CHUNK + 1024;
	J->emit = malloc(J->emit_cap);
	return J->emit ? 0 : -ENOMEM;
}

void jobs_free(struct jobs *J)
{
	free(J->emit);
	J->emit = NULL;
}

void jobs_stop_all(struct jobs *J)
{
	struct job *j;
	while ((j = LIST_FIRST(&J->list))) {
		if (j->client) {
			j->client->job = NULL;
			j->client = NULL;
		}
		send_release(j);
		j->exited = true;
		job_unlink(j);
	}
}

void job_arm_timeout(struct job *j, int64_t ms)
{
	timer_arm(j->J->loop, &j->timeout, ms, on_timeout, j);
}
