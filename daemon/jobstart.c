/*
 * Starting a job: from a decoded Request to the launcher's Spawn order.
 *
 *   policy_check       validated, a listed tool or an agent command
 *   job_new            the job, with what the audit log will need
 *   job_open_streams   pipes for the shaped streams, shapers
 *   policy_environment the program's environment (a command's adds the
 *                      declaration of its new streams, TOOLRUN_COMMAND)
 *   job_spawn          the Spawn, checked as the launcher will read it;
 *                      the timeout
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "listener.h"
#include "policy.h"
#include "util.h"

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
 * AUDIT_ARGV_MAX bytes, then a note of what is left out) and the cwd. */
static int keep_request(struct job *j, const Toolrun__Request *req)
{
	size_t total = 0, kept = 0, nkept = 0;
	char note[96] = "";

	for (size_t i = 0; i < req->n_argv; i++)
		total += req->argv[i].len;
	while (nkept < req->n_argv && kept < AUDIT_ARGV_MAX) {
		kept += MIN(req->argv[nkept].len, AUDIT_ARGV_MAX - kept);
		nkept++;
	}
	if (kept < total)
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

/* The command a tool runs inside: TOOLRUN_COMMAND in its environment. */
static uint64_t command_of(const Toolrun__Request *req)
{
	static const char key[] = "TOOLRUN_COMMAND=";

	for (size_t i = 0; i < req->n_envp; i++) {
		const ProtobufCBinaryData *e = &req->envp[i];
		if (e->len > sizeof(key) - 1 && e->len < sizeof(key) + 20 &&
		    memcmp(e->data, key, sizeof(key) - 1) == 0) {
			uint64_t id = 0;
			for (size_t k = sizeof(key) - 1; k < e->len; k++) {
				if (e->data[k] < '0' || e->data[k] > '9')
					return 0;
				id = id * 10 + (uint64_t)(e->data[k] - '0');
			}
			return id;
		}
	}
	return 0;
}

static struct job *job_new(struct conn *c, const Toolrun__Request *req)
{
	struct listener *L = c->L;
	struct job *j = calloc(1, sizeof(*j));

	if (!j || keep_request(j, req) < 0) {
		free(j);
		return NULL;
	}
	j->L = L;
	j->id = ++L->next_job;
	j->conn = c;
	j->uid = c->uid;
	j->caller_pid = c->pid;
	j->command = req->command;
	j->command_job = req->command ? 0 : command_of(req);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	j->start_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	for (int i = 0; i < 2; i++)
		j->out[i] = (struct job_stream){.job = j, .fd = -1, .ev.fd = -1,
						.spill.fd = -1};
	char exe[PATH_MAX];
	size_t n = MIN(req->executable.len, sizeof(exe) - 1);
	memcpy(exe, req->executable.data, n);
	exe[n] = '\0';
	snprintf(j->name, sizeof(j->name), "%.63s", path_base_name(exe));
	snprintf(j->tool, sizeof(j->tool), "-");
	j->next = L->jobs;
	if (L->jobs)
		L->jobs->prev = j;
	L->jobs = j;
	L->running++;
	c->job = j;
	return j;
}

/* Well-formed, but not for this daemon to run: say why in one line. */
static void job_refuse(struct job *j, enum policy_verdict v)
{
	struct listener *L = j->L;
	char reason[CONFIG_PATH_MAX + 160];
	char when[32];
	struct tm tm;

	/* The caller's library read the file as allowing it: the file
	 * changed since the daemon read it, most likely. */
	gmtime_r(&L->cfg_read_at, &tm);
	strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
	if (v == POLICY_COMMANDS_OFF)
		snprintf(reason, sizeof(reason),
			 "agent_commands is off in %s as toolrund read it (at %s); if the "
			 "file turns it on now, run 'toolrun reload'", L->cfg->file, when);
	else
		snprintf(reason, sizeof(reason),
			 "not a tool listed in %s as toolrund read it (at %s); if the "
			 "file lists it now, run 'toolrun reload'", L->cfg->file, when);
	j->exited = true;
	job_not_run(j, 126, EACCES, reason);
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
		struct job_stream *s = &j->out[i];
		if (!shaped)
			continue;
		const char *who = j->command ? NULL : j->name;
		struct shape_opts o = {
			.max_bytes = d->limits.max_bytes,
			.max_lines = d->limits.max_lines,
			.mode = d->limits.shape,
			.binary_summary = j->L->cfg->binary == BINARY_SUMMARY,
			.stream_name = i == 1 ? "stderr" : d->joined ? "output" : "stdout",
			.program = who,
		};
		if (shaper_init(&s->shaper, &o) < 0) {
			snprintf(failure, len, "toolrund is out of memory");
			return -1;
		}
		s->shaped = true;
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

static void identity_of(int fd, const char *key, char *buf, size_t len)
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
	identity_of(sf->write_end[0], "TOOLRUN_AGENT_STDOUT", ce->out, sizeof(ce->out));
	identity_of(j->joined ? sf->write_end[0] : sf->write_end[1], "TOOLRUN_AGENT_STDERR",
		    ce->err, sizeof(ce->err));
	snprintf(ce->id, sizeof(ce->id), "TOOLRUN_COMMAND=%llu", (unsigned long long)j->id);
	const char *v[3] = {ce->out, ce->err, ce->id};
	for (int i = 0; i < 3; i++) {
		ce->vars[i].data = (uint8_t *)v[i];
		ce->vars[i].len = strlen(v[i]);
	}
	return 3;
}

/* The caller's state, with the policy's resource limits as ceilings: the
 * program gets the lower of the two. */
static void spawn_state(const Toolrun__Request *req, const struct limits *policy,
			Toolrun__ProcessState *state, Toolrun__Limit *limits,
			Toolrun__Limit **limit_ptrs)
{
	toolrun__process_state__init(state);
	if (req->state) {
		/* SIGKILL and SIGSTOP can be neither blocked nor ignored. */
		uint64_t fixed = (UINT64_C(1) << (SIGKILL - 1)) | (UINT64_C(1) << (SIGSTOP - 1));
		*state = *req->state;
		state->blocked_signals &= ~fixed;
		state->ignored_signals &= ~fixed;
	} else {
		state->umask = 022;
	}
	state->n_limits = 0;
	state->limits = limit_ptrs;
	for (size_t i = 0; req->state && i < req->state->n_limits; i++) {
		limits[state->n_limits] = *req->state->limits[i];
		limit_ptrs[state->n_limits] = &limits[state->n_limits];
		state->n_limits++;
	}
	apply_policy_limits(state, limits, policy);
}

/*
 * Will the launcher take this order? It reads frames of at most
 * FRAME_MAX_ORDER_FDS fds, and decodes each within the memory its size
 * allows (arena.h), as the listener decodes a request. An order it
 * refused would end it, and every job in flight with it; refused here,
 * it costs only its own client. The fds stay within the limit as long as
 * it is derived from the client's (frame.h); the decoding need not: a
 * request's environment, filtered, shrinks the order while its argv
 * keeps every entry. Returns 0, or -errno with a line in failure.
 */
static int order_check(const Toolrun__Launcher__ToLauncher *m, unsigned nfds,
		       char *failure, size_t len)
{
	if (nfds > FRAME_MAX_ORDER_FDS) {
		snprintf(failure, len,
			 "the program would get %u file descriptors (its caller's, and a pipe "
			 "for each shaped stream); toolrund passes at most %u",
			 nfds, FRAME_MAX_ORDER_FDS);
		return -EMFILE;
	}
	size_t n = protobuf_c_message_get_packed_size(&m->base);
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf) {
		snprintf(failure, len, "toolrund is out of memory");
		return -ENOMEM;
	}
	protobuf_c_message_pack(&m->base, buf);
	struct arena a;
	ProtobufCMessage *back;
	int r = arena_unpack(&a, &toolrun__launcher__to_launcher__descriptor, n, buf, &back);
	free(buf);
	if (r == 0)
		arena_release(&a);
	else if (r == -EMSGSIZE)
		snprintf(failure, len,
			 "argv and envp have too many entries for their size: the order to "
			 "run it would not decode within %zu bytes (%d per byte of its %zu, "
			 "plus %u MiB)",
			 arena_capacity(n), ARENA_PER_BYTE, n, ARENA_BASE >> 20);
	else
		snprintf(failure, len, "toolrund cannot check its order to run it: %s",
			 errno_text(r));
	return r;
}

static int job_spawn(struct job *j, const Toolrun__Request *req, ProtobufCBinaryData *env,
		     size_t nenv, struct spawn_fds *sf, const struct tool_file *file,
		     char *failure, size_t len)
{
	Toolrun__Launcher__Spawn sp = TOOLRUN__LAUNCHER__SPAWN__INIT;
	Toolrun__Launcher__CheckedFile checked = TOOLRUN__LAUNCHER__CHECKED_FILE__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;
	Toolrun__ProcessState state;
	Toolrun__Limit limits[RLIM_NLIMITS + POLICY_RLIMIT_COUNT];
	Toolrun__Limit *limit_ptrs[RLIM_NLIMITS + POLICY_RLIMIT_COUNT];

	spawn_state(req, &j->limits, &state, limits, limit_ptrs);
	sp.state = &state;
	sp.network = j->limits.network == NETWORK_ALLOW;
	sp.command = j->command;
	sp.job = j->id;
	sp.executable = req->executable;
	sp.n_argv = req->n_argv;
	sp.argv = req->argv;
	sp.n_envp = nenv;
	sp.envp = env;
	sp.n_fds = sf->ntargets;
	sp.fds = sf->targets;
	sp.tool = j->command ? j->name : j->tool;
	/* Whom it runs as: the peer that asked (the connection is there
	 * while its request is being started). */
	sp.uid = j->conn->uid;
	sp.gid = j->conn->gid;
	sp.n_groups = j->conn->ngroups;
	sp.groups = j->conn->groups;
	if (file && file->path[0]) {
		checked.path.data = (uint8_t *)file->path;
		checked.path.len = strlen(file->path);
		checked.dev = file->dev;
		checked.ino = file->ino;
		checked.by_name = file->by_name;
		sp.checked = &checked;
	}
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_SPAWN;
	m.spawn = &sp;
	int r = order_check(&m, sf->nsend, failure, len);
	if (r < 0)
		return r;
	j->start_us = monotonic_us();
	launcher_send(j->L, &m, sf->send, sf->nsend); /* the queue owns and closes them */
	if (j->limits.timeout_s)
		job_arm_timeout(j, (int64_t)j->limits.timeout_s * 1000);
	return 0;
}

void job_start(struct conn *c, const Toolrun__Request *req, int *fds, unsigned nfds)
{
	struct listener *L = c->L;
	struct policy_decision d;
	enum policy_verdict v = policy_check(L->cfg, req, nfds, nfds ? fds[0] : -1, &d);

	if (v == POLICY_MALFORMED) {
		close_all(fds, nfds);
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BAD_MESSAGE, "bad Request: %s",
			    d.error);
		return;
	}
	struct job *j = job_new(c, req);
	if (!j) {
		close_all(fds, nfds);
		conn_refuse(c, TOOLRUN__ERROR_CODE__ERROR_BUSY, "out of memory");
		return;
	}
	if (v != POLICY_RUN) {
		close_all(fds, nfds);
		job_refuse(j, v);
		return;
	}
	if (!j->command)
		snprintf(j->tool, sizeof(j->tool), "%.63s", config_tool_name(L->cfg, d.tool));
	j->limits = d.limits;
	j->joined = d.joined;

	struct spawn_fds sf = {.write_end = {-1, -1}};
	struct command_env ce;
	ProtobufCBinaryData *env = NULL;
	size_t nenv = 0;
	char failure[256] = "";
	int code = 1; /* the daemon failed */
	if (job_open_streams(j, req, &d, fds, nfds, &sf, failure, sizeof(failure)) == 0) {
		size_t nextra = j->command ? command_env_fill(&ce, j, &sf) : 0;
		if (policy_environment(req, L->cfg, &d.limits, ce.vars, nextra, &env, &nenv) < 0)
			snprintf(failure, sizeof(failure), "toolrund is out of memory");
	}
	if (!failure[0]) {
		int r = job_spawn(j, req, env, nenv, &sf, j->command ? NULL : &d.file, failure,
				  sizeof(failure));
		free(env);
		if (r == 0)
			return;
		if (r != -ENOMEM)
			code = 126; /* refused: it cannot be run through toolrund */
	}
	close_all(sf.send, sf.nsend);
	j->exited = true;
	output_close(&j->out[0]);
	output_close(&j->out[1]);
	job_not_run(j, code, 0, failure);
}
