/*
 * Starting a job: from a decoded Request to the launcher's Spawn order.
 *
 *   policy_check       validated, a listed tool or an agent command
 *   job_new            the job, with what the audit log will need
 *   job_open_streams   pipes for the shaped streams, shapers
 *   policy_environment the program's environment (a command's adds the
 *                      declaration of its new streams, TOOLRUN_COMMAND)
 *   job_spawn          the Spawn (order_spawn checks it as the launcher
 *                      will read it); the timeout
 *
 * Whom the program runs as comes with the request (job_caller): the peer
 * that asked, as it connected.
 *
 * Process: the listener.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "policy.h"
#include "util.h"

/* The fds a Spawn carries: the directory, the caller's fds that are not
 * shaped, then the write ends of the shaped streams; and where each goes. */
struct spawn_fds {
	int send[FRAME_MAX_FDS + FRAME_SPAWN_ADDED_FDS];
	uint32_t targets[FRAME_MAX_FDS + FRAME_SPAWN_ADDED_FDS];
	unsigned nsend, ntargets;
	int write_end[2];
};

static void close_all(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

/* The most of argv an audit record holds: its JSON must fit one order to
 * the launcher, whatever the request's size and bytes. */
#define AUDIT_ARGV_MAX (16 * 1024)

/* The job's record of what ran, for the audit log: argv (its first
 * AUDIT_ARGV_MAX bytes, each argument counting one more, so that empty
 * ones count too: each is a JSON string in the record; then a note of
 * what is left out) and the cwd. */
static int keep_request(struct job *j, const Toolrun__Request *req)
{
	size_t total = 0, kept = 0, nkept = 0;
	char note[128] = "";

	for (size_t i = 0; i < req->n_argv; i++)
		total += req->argv[i].len;
	while (nkept < req->n_argv && kept + nkept < AUDIT_ARGV_MAX) {
		kept += MIN(req->argv[nkept].len, AUDIT_ARGV_MAX - kept - nkept);
		nkept++;
	}
	if (nkept < req->n_argv)
		snprintf(note, sizeof(note),
			 "[toolrun: %zu more arguments (%zu bytes) of argv not recorded]",
			 req->n_argv - nkept, total - kept);
	else if (kept < total)
		snprintf(note, sizeof(note), "[toolrun: %zu more bytes of argv not recorded]",
			 total - kept);
	size_t cwd_len = MIN(req->cwd.len, (size_t)PATH_MAX);
	size_t slots = nkept + (note[0] ? 1 : 0);
	j->argv = malloc((slots + 1) * sizeof(*j->argv) + kept + strlen(note) + cwd_len + 1);
	if (!j->argv)
		return -ENOMEM;
	uint8_t *p = (uint8_t *)(j->argv + slots + 1);
	size_t left = kept;
	for (size_t i = 0; i < nkept; i++) {
		size_t n = MIN(req->argv[i].len, left);
		j->argv[i].data = p;
		j->argv[i].len = n;
		if (n)
			memcpy(p, req->argv[i].data, n);
		p += n;
		left -= n;
	}
	if (note[0]) {
		j->argv[nkept].data = p;
		j->argv[nkept].len = strlen(note);
		memcpy(p, note, strlen(note));
		p += strlen(note);
	}
	j->argc = slots;
	j->cwd.data = p;
	j->cwd.len = cwd_len;
	if (cwd_len)
		memcpy(p, req->cwd.data, cwd_len);
	return 0;
}

static struct job *job_new(struct jobs *J, const struct job_caller *who,
			   struct job_client *client, const Toolrun__Request *req)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j || keep_request(j, req) < 0) {
		free(j);
		return NULL;
	}
	j->J = J;
	j->id = ++J->next_id;
	j->client = client;
	j->uid = who->uid;
	j->caller_pid = who->pid;
	j->command = req->command;
	j->below_harness = req->below_harness;
	j->start_ms = wall_ms();
	for (int i = 0; i < 2; i++)
		j->out[i] = (struct job_stream){.job = j, .fd = -1, .ev.fd = -1,
						.spill.fd = -1};
	char exe[PATH_MAX];
	size_t n = MIN(req->executable.len, sizeof(exe) - 1);
	memcpy(exe, req->executable.data, n);
	exe[n] = '\0';
	snprintf(j->name, sizeof(j->name), "%.63s", path_base_name(exe));
	snprintf(j->tool, sizeof(j->tool), "-");
	LIST_INSERT_HEAD(&J->list, j, link);
	J->running++;
	client->job = j;
	return j;
}

/* Well-formed, but not for this daemon to run: say why in one line. */
static void job_refuse(struct job *j, enum policy_verdict v)
{
	const struct jobs *J = j->J;
	char reason[CONFIG_PATH_MAX + 160];
	char when[32];
	struct tm tm;

	/* The caller's library read the file as allowing it: the file
	 * changed since the daemon read it, most likely. */
	gmtime_r(&J->cfg_read_at, &tm);
	strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
	if (v == POLICY_COMMANDS_OFF)
		snprintf(reason, sizeof(reason),
			 "agent_commands is off in %s as toolrund read it (at %s); if the "
			 "file turns it on now, run 'toolrun reload'", J->cfg->file, when);
	else
		snprintf(reason, sizeof(reason),
			 "not a tool listed in %s as toolrund read it (at %s); if the "
			 "file lists it now, run 'toolrun reload'", J->cfg->file, when);
	j->exited = true;
	job_not_run(j, 126, EACCES, reason);
}

/* The shaper of stream i (0 stdout, 1 stderr) under limits. Binary output
 * is summarised only on a stream that reaches the agent. */
static int stream_shaper_init(struct job *j, int i, const struct limits *limits, bool joined,
			      bool agent)
{
	struct job_stream *s = &j->out[i];
	struct shape_opts o = {
		.max_bytes = limits->max_bytes,
		.max_lines = limits->max_lines,
		.mode = limits->shape,
		.binary_summary = agent && j->J->cfg->binary == BINARY_SUMMARY,
		.stream_name = i == 1 ? "stderr" : joined ? "output" : "stdout",
		.program = j->command ? NULL : j->name,
	};
	if (shaper_init(&s->shaper, &o) < 0)
		return -1;
	s->shaped = true;
	return 0;
}

/* Pipes for the shaped streams; the caller's fds for the others. */
static int job_open_streams(struct job *j, const Toolrun__Request *req,
			    const struct policy_decision *d, int *fds, unsigned nfds,
			    struct spawn_fds *sf, char *failure, size_t len)
{
	sf->send[sf->nsend++] = fds[0];
	for (unsigned k = 0; k + 1 < nfds; k++) {
		uint32_t t = req->fds[k];
		if ((t == 1 && d->shape_stdout) || (t == 2 && d->shape_stderr)) {
			close(fds[1 + k]); /* truncate = always takes it over */
			continue;
		}
		sf->send[sf->nsend++] = fds[1 + k];
		sf->targets[sf->ntargets++] = t;
	}
	for (int i = 0; i < 2; i++) {
		bool shaped = i == 0 ? d->shape_stdout : d->shape_stderr;
		if (!shaped)
			continue;
		bool agent = i == 0 ? d->agent_stdout : d->agent_stderr;
		if (stream_shaper_init(j, i, &d->limits, d->joined, agent) < 0) {
			snprintf(failure, len, "toolrund is out of memory");
			return -1;
		}
		int w = -1;
		if (i == 1 && d->joined) {
			w = fcntl(sf->write_end[0], F_DUPFD_CLOEXEC, 3);
		} else {
			int r = output_open(j, i, i == 0 ? TOOLRUN__STREAM__STREAM_STDOUT
							 : TOOLRUN__STREAM__STREAM_STDERR, &w);
			if (r < 0) {
				snprintf(failure, len, "toolrund failed to create a pipe: %s",
					 errno_text(r));
				return -1;
			}
		}
		if (w < 0) {
			snprintf(failure, len, "toolrund failed to duplicate a pipe: %s",
				 errno_text(errno));
			return -1;
		}
		sf->write_end[i] = w;
		sf->send[sf->nsend++] = w;
		sf->targets[sf->ntargets++] = (uint32_t)(i + 1);
	}
	return 0;
}

/*
 * What a command adds to its environment: the agent's streams are now
 * the daemon's pipes (declared, so that the tree below knows where the
 * agent reads), and which command this is (for the tools inside it).
 */
struct command_env {
	char out[64], err[64], id[48];
	ProtobufCBinaryData vars[3];
};

void job_stream_var(int fd, const char *key, char *buf, size_t len)
{
	struct stat st;

	if (fd >= 0 && fstat(fd, &st) == 0)
		snprintf(buf, len, "%s=%llu:%llu", key, (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
	else
		snprintf(buf, len, "%s=", key);
}

static size_t command_env_fill(struct command_env *ce, const struct job *j,
			       const struct spawn_fds *sf)
{
	job_stream_var(sf->write_end[0], "TOOLRUN_AGENT_STDOUT", ce->out, sizeof(ce->out));
	job_stream_var(j->joined ? sf->write_end[0] : sf->write_end[1], "TOOLRUN_AGENT_STDERR",
		    ce->err, sizeof(ce->err));
	snprintf(ce->id, sizeof(ce->id), "TOOLRUN_COMMAND=%llu", (unsigned long long)j->id);
	const char *v[3] = {ce->out, ce->err, ce->id};
	for (int i = 0; i < 3; i++) {
		ce->vars[i].data = (uint8_t *)v[i];
		ce->vars[i].len = strlen(v[i]);
	}
	return 3;
}

/*
 * A tool whose streams go straight to its caller's fds: the launcher can
 * answer its client itself (launcher.proto: Answer), so that Started and
 * Exit reach it one hop sooner. The client's connection goes with the
 * Spawn, after the program's fds.
 */
static bool job_answer(struct job *j, const struct policy_decision *d, struct spawn_fds *sf,
		       Toolrun__Launcher__Answer *a)
{
	struct job_client *c = j->client;
	bool hello;
	uint32_t version;

	if (j->command || d->shape_stdout || d->shape_stderr || !c || !c->ops->answer_fd)
		return false;
	int fd = c->ops->answer_fd(c, &hello, &version);
	if (fd < 0)
		return false;
	toolrun__launcher__answer__init(a);
	a->hello = hello;
	a->version = version;
	a->timeout_below_command_s = job_timeout_below_command(j);
	a->timeout_s = j->below_harness ? a->timeout_below_command_s : j->limits.timeout_s;
	sf->send[sf->nsend++] = fd;
	return true;
}

static int job_spawn(struct job *j, const struct job_caller *who,
		     const Toolrun__Request *req, const ProtobufCBinaryData *env, size_t nenv,
		     const struct spawn_fds *sf, const struct tool_file *file,
		     const Toolrun__Launcher__Answer *answer, char *failure, size_t len)
{
	struct spawn_order o = {
		.job = j->id,
		.req = req,
		.env = env,
		.nenv = nenv,
		.limits = &j->limits,
		.command = j->command,
		.tool = j->command ? j->name : j->tool,
		/* Whom it runs as: the peer that asked. */
		.uid = who->uid,
		.gid = who->gid,
		.groups = who->groups,
		.ngroups = who->ngroups,
		.caller_pid = who->pid,
		.fds = sf->send,
		.nfds = sf->nsend,
		.targets = sf->targets,
		.ntargets = sf->ntargets,
		.file = file,
		.answer = answer,
	};
	uint64_t start_us = monotonic_us();
	int r = order_spawn(j->J->orders, &o, failure, len);
	if (r < 0)
		return r;
	j->start_us = start_us;
	if (j->limits.timeout_s)
		job_arm_timeout(j, (int64_t)j->limits.timeout_s * 1000);
	return 0;
}

/* A job the policy lets run: its streams, its environment, the Spawn;
 * or the reason it did not run. */
static void job_launch(struct job *j, const struct job_caller *who,
		       const Toolrun__Request *req, const struct policy_decision *d,
		       int *fds, unsigned nfds)
{
	const struct config *cfg = j->J->cfg;
	struct spawn_fds sf = {.write_end = {-1, -1}};
	struct command_env ce;
	ProtobufCBinaryData *env = NULL;
	size_t nenv = 0;
	char failure[256] = "";
	int code = 1; /* the daemon failed */

	if (job_open_streams(j, req, d, fds, nfds, &sf, failure, sizeof(failure)) == 0) {
		size_t nextra = j->command ? command_env_fill(&ce, j, &sf) : 0;
		if (policy_environment(req, cfg, &d->limits, ce.vars, nextra, &env, &nenv) < 0)
			snprintf(failure, sizeof(failure), "toolrund is out of memory");
	}
	if (!failure[0]) {
		Toolrun__Launcher__Answer answer;
		bool answered = job_answer(j, d, &sf, &answer);
		int r = job_spawn(j, who, req, env, nenv, &sf, j->command ? NULL : &d->file,
				  answered ? &answer : NULL, failure, sizeof(failure));
		free(env);
		if (r == 0) {
			if (answered) {
				j->answered = true;
				j->client->ops->handed_over(j->client);
			}
			return;
		}
		if (r != -ENOMEM)
			code = 126; /* refused: it cannot be run through toolrund */
	}
	close_all(sf.send, sf.nsend);
	j->exited = true;
	output_close(&j->out[0]);
	output_close(&j->out[1]);
	job_not_run(j, code, 0, failure);
}

int job_start(struct jobs *J, const struct job_caller *who, struct job_client *client,
	      const Toolrun__Request *req, int *fds, unsigned nfds,
	      Toolrun__ErrorCode *code, char *why, size_t len)
{
	struct policy_decision d;
	enum policy_verdict v = policy_check(J->cfg, req, nfds, nfds ? fds[0] : -1, &d);

	if (v == POLICY_MALFORMED) {
		close_all(fds, nfds);
		*code = TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE;
		snprintf(why, len, "bad Request: %s", d.error);
		return -1;
	}
	struct job *j = job_new(J, who, client, req);
	if (!j) {
		close_all(fds, nfds);
		*code = TOOLRUN__ERROR_CODE__ERROR_BUSY;
		snprintf(why, len, "out of memory");
		return -1;
	}
	if (v != POLICY_RUN) {
		close_all(fds, nfds);
		job_refuse(j, v);
		return 0;
	}
	if (!j->command)
		snprintf(j->tool, sizeof(j->tool), "%.63s", config_tool_name(J->cfg, d.tool));
	j->limits = d.limits;
	j->joined = d.joined;
	job_launch(j, who, req, &d, fds, nfds);
	return 0;
}

/* ------------------------------------------------------------------ */
/* A session's command                                                 */

struct job *job_attach(struct jobs *J, const struct job_attach *a, char *why, size_t len)
{
	static const char shell[] = "bash";
	ProtobufCBinaryData argv[1] = {a->command};
	Toolrun__Request req = TOOLRUN__REQUEST__INIT;

	req.executable = (ProtobufCBinaryData){sizeof(shell) - 1, (uint8_t *)shell};
	req.argv = argv;
	req.n_argv = 1;
	req.cwd = a->cwd;
	req.command = true;
	struct job *j = job_new(J, a->who, a->client, &req);
	if (!j) {
		snprintf(why, len, "toolrund is out of memory");
		return NULL;
	}
	snprintf(j->name, sizeof(j->name), "%s", a->name);
	j->attached = true;
	j->spawned = true;
	j->pid = a->pid;
	j->command_job = a->command_job;
	j->limits = policy_command_limits(J->cfg);
	j->limits.timeout_s = 0; /* interrupt or close ends a session's command */
	j->joined = a->fds[1] < 0;
	j->start_us = monotonic_us();
	for (int i = 0; i < 2; i++) {
		if (a->fds[i] < 0)
			continue;
		Toolrun__Stream st = i ? TOOLRUN__STREAM__STREAM_STDERR : TOOLRUN__STREAM__STREAM_STDOUT;
		if (stream_shaper_init(j, i, &j->limits, j->joined, true) < 0 ||
		    output_attach(j, i, st, a->fds[i]) < 0) {
			snprintf(why, len, "toolrund cannot read the session's output: %s",
				 errno_text(errno ? errno : ENOMEM));
			job_attached_ended(j, W_EXITCODE(1, 0), false);
			return NULL;
		}
	}
	return j;
}
