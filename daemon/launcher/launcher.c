/*
 * The launcher process (launcher.h).
 *
 * Process: the launcher.
 */
#include "launcher.h"

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/fsuid.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arena.h"
#include "auditlog.h"
#include "caps.h"
#include "direct.h"
#include "frame.h"
#include "launch.h"
#include "launcher.pb-c.h"
#include "log.h"
#include "outq.h"
#include "proctree.h"
#include "sandbox.h"
#include "spill.h"
#include "util.h"

/* Orders are the size of a request at most, plus a little framing. */
#define ORDER_MAX_PAYLOAD (FRAME_MAX_CLIENT_PAYLOAD + 64 * 1024)

struct launched {
	uint64_t job;
	pid_t pid; /* leader of its process group and of its session */
	bool released;
	/* An agent command (or a session's bash): its whole tree goes at
	 * Release, so it is kept after its leader ends (exited) until then. */
	bool command;
	bool exited;
	/* The program's stdin, when it is a pipe or FIFO: who else holds
	 * it for writing says whether input may still come (CheckInput). */
	bool stdin_fifo;
	dev_t stdin_dev;
	ino_t stdin_ino;
	uid_t uid;          /* whom it runs as (Spawn.uid, gid) */
	gid_t gid;
	struct direct_client client; /* answered here (Spawn.answer), or fd -1 */
	LIST_ENTRY(launched) link; /* in launcher.jobs */
};

/* The launcher process's one context. */
struct launcher {
	const struct config *cfg; /* as it was when the launcher started */
	int chan;
	int sigfd;
	struct launch_self self;
	struct child_filters filters;
	struct frame_reader reader;
	int fds[FRAME_MAX_ORDER_FDS]; /* a Spawn's: the client's and the listener's */
	LIST_HEAD(, launched) jobs; /* newest first */
	struct auditlog audit;
	struct launcher_callers callers;
	bool root;          /* runs as uid 0: its programs' capabilities are root's */
	struct spill_root spill; /* spill_dir, held from the start (spill.h) */
	/* Why the spill store could not be prepared, the last time it was
	 * tried (at the start, or before a spill); "" when it was. */
	char spill_failure[CONFIG_PATH_MAX + 160];
};

static NORETURN void fatal(const char *what, int err)
{
	log_error("%s: %s", what, errno_text(err));
	_exit(1);
}

/* Send one message, with fds attached (nfds of them, at most 2). */
static void send_msg(struct launcher *L, const Toolrun__Launcher__FromLauncher *msg,
		     const int *fds, unsigned nfds)
{
	uint8_t stack[256];
	size_t len = frame_size(&msg->base);
	uint8_t *buf = len <= sizeof(stack) ? stack : malloc(len);

	if (!buf)
		fatal("send", ENOMEM);
	frame_pack(&msg->base, (uint16_t)nfds, buf);
	int r = frame_send(L->chan, buf, len, fds, nfds);
	if (buf != stack)
		free(buf);
	if (r < 0)
		fatal("send to listener", -r);
}

static void report_spawned(struct launcher *L, uint64_t job, pid_t pid,
			   int err, enum launch_step step, uint64_t command_job)
{
	Toolrun__Launcher__Spawned s = TOOLRUN__LAUNCHER__SPAWNED__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;

	s.job = job;
	s.pid = pid;
	s.error = err;
	s.step = step;
	s.command_job = command_job;
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPAWNED;
	m.spawned = &s;
	send_msg(L, &m, NULL, 0);
}

/* Copy protobuf bytes into NUL-terminated strings, NULL-terminated. */
static char **strings(ProtobufCBinaryData *v, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += v[i].len + 1;
	char **out = malloc((n + 1) * sizeof(char *) + total);
	if (!out)
		return NULL;
	char *p = (char *)(out + n + 1);
	for (size_t i = 0; i < n; i++) {
		/* An empty field has no data pointer at all. */
		if (v[i].len && memchr(v[i].data, '\0', v[i].len))
			fatal("order carries a NUL inside a string", EPROTO);
		out[i] = p;
		if (v[i].len)
			memcpy(p, v[i].data, v[i].len);
		p[v[i].len] = '\0';
		p += v[i].len + 1;
	}
	out[n] = NULL;
	return out;
}

/* The program runs as the caller the listener names, who must be one
 * this daemon serves: a listener that asks for another is broken or
 * subverted. */
static void plan_identity(const struct launcher *L, const Toolrun__Launcher__Spawn *s,
			  struct launch_plan *plan)
{
	if (uid_index(L->callers.allowed, L->callers.nallowed, (uid_t)s->uid) < 0)
		fatal("order to run a program as a uid not in allow_uids", EPROTO);
	_Static_assert(sizeof(gid_t) == sizeof(uint32_t), "groups are 32-bit gids");
	plan->switch_identity = true;
	plan->drop_caps = !L->root;
	plan->uid = (uid_t)s->uid;
	plan->gid = (gid_t)s->gid;
	plan->groups = (const gid_t *)s->groups;
	plan->ngroups = s->n_groups;
}

/* Run the plan's child and learn how its exec went. Returns its pid, or
 * 0 with the failing step and errno in *err and *step. */
static pid_t launch_and_wait(const struct launch_plan *plan, int *err, enum launch_step *step)
{
	volatile struct launch_report rep;

	pid_t pid = launch_spawn(plan, &rep);
	if (pid < 0) {
		*err = errno;
		*step = LAUNCH_STEP_FORK;
		return 0;
	}
	*err = rep.err;
	*step = (enum launch_step)rep.step;
	if (*step == LAUNCH_STEP_NONE)
		return pid;
	waitpid(pid, NULL, 0);
	return 0;
}

/* The agent command or session whose tree caller runs in: its job id,
 * or 0. Asked of the kernel, so that no caller can claim another's. */
static uint64_t command_below(const struct launcher *L, pid_t caller)
{
	pid_t roots[64];
	uint64_t ids[ARRAY_SIZE(roots)];
	size_t n = 0;
	const struct launched *j;

	LIST_FOREACH(j, &L->jobs, link)
		if (n < ARRAY_SIZE(roots) && j->command && !j->exited) {
			roots[n] = j->pid;
			ids[n++] = j->job;
		}
	if (n == 0 || caller <= 0)
		return 0;
	int at = proctree_command_of(caller, roots, n);
	return at < 0 ? 0 : ids[at];
}

/* Whether the program's stdin (target 0, if the order has one) is a pipe
 * or FIFO, and which: CheckInput asks who else holds it for writing. */
static bool stdin_is_fifo(const Toolrun__Launcher__Spawn *s, const int *fds, struct stat *in)
{
	bool in_fifo = false;
	for (size_t i = 0; i < s->n_fds; i++)
		if (s->fds[i] == 0)
			in_fifo = fstat(fds[i + 1], in) == 0 && S_ISFIFO(in->st_mode);
	return in_fifo;
}

/* A Spawn's strings, NUL-terminated, and the child's scratch space: what
 * the child uses, allocated before the fork (it may not allocate). */
struct spawn_args {
	char **argv;
	char **envp;
	char **path;    /* the executable: path[0] */
	char **ck_path; /* the checked file (Spawn.checked), or NULL */
	int *scratch;   /* launch_plan.scratch */
};

/* Returns false when memory ran out; what was copied is freed by
 * spawn_args_free all the same. */
static bool spawn_args_copy(struct spawn_args *a, const Toolrun__Launcher__Spawn *s)
{
	ProtobufCBinaryData exe = s->executable;
	const Toolrun__Launcher__CheckedFile *ck = s->checked;
	ProtobufCBinaryData ck_bytes = ck ? ck->path : (ProtobufCBinaryData){0};

	a->argv = strings(s->argv, s->n_argv);
	a->envp = strings(s->envp, s->n_envp);
	a->path = strings(&exe, 1);
	a->ck_path = ck ? strings(&ck_bytes, 1) : NULL;
	a->scratch = malloc((2 * s->n_fds + 1) * sizeof(int));
	if (ck && ck->path.len == 0)
		fatal("order with an empty checked path", EPROTO);
	return a->argv && a->envp && a->path && a->scratch && (!ck || a->ck_path);
}

static void spawn_args_free(struct spawn_args *a)
{
	free(a->argv);
	free(a->envp);
	free(a->path);
	free(a->ck_path);
	free(a->scratch);
}

/* The caller's process state (Spawn.state), which the program inherits
 * as if its caller had run it; limits holds RLIM_NLIMITS. */
static void plan_state(struct launch_plan *plan, const Toolrun__ProcessState *st,
		       struct launch_limit *limits)
{
	unsigned nlimits = 0;

	plan->umask = (mode_t)(st->umask & 0777);
	plan->blocked_signals = st->blocked_signals;
	plan->ignored_signals = st->ignored_signals;
	plan->nice = st->nice;
	plan->cpu_affinity = st->cpu_affinity.len ? st->cpu_affinity.data : NULL;
	plan->cpu_affinity_len = st->cpu_affinity.len;
	plan->oom_score_adj = st->oom_score_adj;
	plan->io_priority = st->io_priority;
	plan->sched_policy = (int)st->sched_policy;
	plan->sched_priority = (int)st->sched_priority;
	plan->personality = st->personality;
	for (size_t i = 0; i < st->n_limits && nlimits < RLIM_NLIMITS; i++) {
		if (st->limits[i]->resource >= RLIM_NLIMITS)
			fatal("order with an unknown resource limit", EPROTO);
		limits[nlimits++] = (struct launch_limit){
			.resource = (int)st->limits[i]->resource,
			.soft = st->limits[i]->soft,
			.hard = st->limits[i]->hard,
		};
	}
	plan->nlimits = nlimits;
}

/* The plan for a Spawn: its program, fds, state and identity. */
static void plan_spawn(struct launch_plan *plan, const struct launcher *L,
		       const Toolrun__Launcher__Spawn *s, const struct spawn_args *a,
		       int *fds, struct launch_limit *limits)
{
	*plan = (struct launch_plan){
		.path = a->path[0],
		.argv = a->argv,
		.envp = a->envp,
		.cwd_fd = fds[0],
		.src_fds = fds + 1,
		.targets = s->fds,
		.ntargets = (unsigned)s->n_fds,
		.scratch = a->scratch,
		.self = &L->self,
		.has_state = s->state != NULL,
		.limits = limits,
		.filters = &L->filters,
		.network = s->network,
		.controlling_tty = s->controlling_tty,
		.subreaper = s->command,
	};
	if (s->state)
		plan_state(plan, s->state, limits);
	if (L->callers.can_switch)
		plan_identity(L, s, plan);
}

/* Start the Spawn's program. Returns its pid, or 0 with the failing step
 * and errno in *err and *step. */
static pid_t launch_spawned(const struct launcher *L, const Toolrun__Launcher__Spawn *s,
			    const struct spawn_args *a, int *fds, int *err,
			    enum launch_step *step)
{
	const Toolrun__Launcher__CheckedFile *ck = s->checked;
	struct launch_limit limits[RLIM_NLIMITS];
	struct launch_plan plan;
	struct exec_expect expect;

	plan_spawn(&plan, L, s, a, fds, limits);
	if (ck) {
		expect = (struct exec_expect){
			.path = a->ck_path[0],
			.dev = (dev_t)ck->dev,
			.ino = (ino_t)ck->ino,
			.by_name = ck->by_name,
		};
		plan.expect = &expect;
	}
	pid_t pid = launch_and_wait(&plan, err, step);
	/* A caller in a directory it may not search (root without
	 * CAP_DAC_OVERRIDE in the agent's 0700 workspace) is in it all the
	 * same, as a program it ran directly would be: the child enters it
	 * as its owner, then becomes the caller, who gains no access by it
	 * (every lookup from there is still checked as the caller's). */
	struct stat dir;
	if (pid == 0 && *step == LAUNCH_STEP_CWD && *err == EACCES && plan.switch_identity &&
	    fstat(fds[0], &dir) == 0) {
		plan.enter_as_owner = true;
		plan.dir_owner = dir.st_uid;
		pid = launch_and_wait(&plan, err, step);
	}
	return pid;
}

/* Keep the started program for the orders that name its job, and for
 * its end, with its client if answered here. Without the memory to, it
 * is killed: a failed start. */
static struct launched *remember_spawned(struct launcher *L, const Toolrun__Launcher__Spawn *s,
					 pid_t pid, bool in_fifo, const struct stat *in,
					 struct direct_client *client, int *err,
					 enum launch_step *step)
{
	struct launched *j = calloc(1, sizeof(*j));
	if (!j) {
		kill(-pid, SIGKILL);
		*err = ENOMEM;
		*step = LAUNCH_STEP_FORK;
		return NULL;
	}
	j->job = s->job;
	j->pid = pid;
	j->command = s->command;
	j->stdin_fifo = in_fifo;
	j->stdin_dev = in->st_dev;
	j->stdin_ino = in->st_ino;
	j->uid = (uid_t)s->uid;
	j->gid = (gid_t)s->gid;
	j->client = *client;
	client->fd = -1; /* the job's now */
	LIST_INSERT_HEAD(&L->jobs, j, link);
	return j;
}

/* Spawn: start the program, tell its client if answered here (Started,
 * or the Exit of a failed start), report to the listener (Spawned), and
 * close the order's fds (the child has its copies). */
static void spawn(struct launcher *L, const Toolrun__Launcher__Spawn *s,
		  int *fds, unsigned nfds)
{
	unsigned nconn = s->answer ? 1 : 0;

	/* The listener validated the request; a malformed order means it is
	 * broken or subverted, and the launcher will not guess. */
	if (nfds != s->n_fds + 1 + nconn)
		fatal("order with a wrong number of fds", EPROTO);

	struct direct_client client;
	direct_init(&client, s->answer, nconn ? fds[nfds - 1] : -1);
	nfds -= nconn;
	struct stat in = {0};
	bool in_fifo = stdin_is_fifo(s, fds, &in);
	struct spawn_args a;
	struct launched *j = NULL;
	pid_t pid = -1;
	int err = 0;
	enum launch_step step = LAUNCH_STEP_NONE;

	if (spawn_args_copy(&a, s)) {
		pid = launch_spawned(L, s, &a, fds, &err, &step);
	} else {
		err = ENOMEM;
		step = LAUNCH_STEP_FORK;
	}
	if (pid > 0)
		j = remember_spawned(L, s, pid, in_fifo, &in, &client, &err, &step);
	uint64_t below = s->command || err ? 0 : command_below(L, (pid_t)s->caller_pid);
	/* The client first, which waits for this; then the listener. */
	if (err)
		direct_not_run(&client, step, err);
	else
		direct_started(&j->client, pid, below != 0);
	report_spawned(L, s->job, err ? 0 : pid, err, step, below);
	spawn_args_free(&a);
	close_fd_list(fds, nfds);
}

/* Tell the listener which file the audit log is (AuditLogAt). */
static void report_audit_log(struct launcher *L)
{
	Toolrun__Launcher__AuditLogAt at = TOOLRUN__LAUNCHER__AUDIT_LOG_AT__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;

	at.path = L->audit.path;
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_AUDIT_LOG_AT;
	m.audit_log_at = &at;
	send_msg(L, &m, NULL, 0);
}

/* One record from the listener: chained and appended. A record that is
 * not one JSON object on one line is a broken listener's. */
static void audit(struct launcher *L, const Toolrun__Launcher__Audit *a)
{
	int r = auditlog_append(&L->audit, (const char *)a->line.data, a->line.len);

	if (r == -EINVAL)
		fatal("audit record that is not one JSON object on one line", EPROTO);
	if (r < 0 && r != -EBADF)
		log_error("cannot write to the audit log %s: %s", L->audit.path,
			  errno_text(r));
	if (r == AUDITLOG_MOVED)
		report_audit_log(L);
}

static struct launched *find(struct launcher *L, uint64_t job)
{
	struct launched *j;
	LIST_FOREACH(j, &L->jobs, link)
		if (j->job == job)
			return j;
	return NULL;
}

static void forget(struct launched *j)
{
	direct_close(&j->client);
	LIST_REMOVE(j, link);
	free(j);
}

/* End what is left of a command's tree: every process below it, in
 * whatever process group or session (proctree_kill_tree), then, unless
 * spared, its first process and that one's group. Returns how many
 * processes below it were signalled. */
static unsigned kill_tree(const struct launched *j, int signo, bool spare_leader)
{
	int r = proctree_kill_tree(j->pid, signo, !spare_leader && !j->exited);
	if (r < 0)
		log_warn("cannot signal the processes of job %" PRIu64 " (pid %d): %s", j->job,
			 (int)j->pid, errno_text(r));
	if (!spare_leader && !j->exited)
		kill(-j->pid, signo);
	return r < 0 ? 0 : (unsigned)r;
}

static void report_killed(struct launcher *L, const struct launched *j, uint64_t job,
			  unsigned processes)
{
	Toolrun__Launcher__Killed k = TOOLRUN__LAUNCHER__KILLED__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;

	k.job = job;
	k.processes = processes;
	k.leader_ignores_sigint = j && !j->exited && proctree_ignores(j->pid, SIGINT);
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_KILLED;
	m.killed = &k;
	send_msg(L, &m, NULL, 0);
}

static void kill_job(struct launcher *L, const Toolrun__Launcher__Kill *k)
{
	struct launched *j = find(L, k->job);
	unsigned processes = 0;

	if (j && k->refusal)
		direct_refuse(&j->client, k->refusal);
	if (j && k->signo > 0 && k->signo < NSIG) {
		if (k->timeout_notice[0] && !j->exited &&
		    direct_timed_out(&j->client, k->timeout_notice) < 0)
			log_error("job %" PRIu64 ": no memory for its timeout notice", j->job);
		if (k->whole_tree)
			processes = kill_tree(j, k->signo, k->spare_leader);
		else if (!j->exited)
			kill(-j->pid, k->signo);
	}
	if (k->report)
		report_killed(L, j, k->job, processes);
}

static void release_job(struct launcher *L, uint64_t job)
{
	struct launched *j = find(L, job);

	if (!j)
		return;
	/* An agent command that ended leaves its background processes
	 * running, as `docker exec` does: the agent may have started a
	 * server for its next command. */
	if (j->exited) {
		forget(j);
		return;
	}
	/* Still running: end its group (a command's whole tree); reaped
	 * without a report. */
	if (j->command)
		kill_tree(j, SIGKILL, false);
	kill(-j->pid, SIGKILL);
	j->released = true;
}

static void check_input(struct launcher *L, uint64_t job)
{
	Toolrun__Launcher__InputState s = TOOLRUN__LAUNCHER__INPUT_STATE__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;
	const struct launched *j = find(L, job);

	s.job = job;
	/* The program leads its own session: what runs in it is the job,
	 * not a producer of its input. */
	if (j && j->stdin_fifo) {
		/* As the caller: its processes' fd tables are closed to
		 * toolrund's own user (checked as ptrace's, against the file
		 * system ids). */
		struct fs_ids was = {0};
		if (L->callers.can_switch)
			was = caps_fs_as(j->uid, j->gid);
		s.producer_running = proctree_pipe_has_writer(j->stdin_dev, j->stdin_ino, j->pid);
		if (L->callers.can_switch)
			caps_fs_as(was.uid, was.gid);
	}
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_INPUT_STATE;
	m.input_state = &s;
	send_msg(L, &m, NULL, 0);
}

static void open_spill(struct launcher *L, const Toolrun__Launcher__OpenSpill *o)
{
	Toolrun__Launcher__SpillOpened s = TOOLRUN__LAUNCHER__SPILL_OPENED__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;
	char path[CONFIG_PATH_MAX + 320], reason[CONFIG_PATH_MAX + 160];
	const char *stream = o->stream == TOOLRUN__STREAM__STREAM_STDOUT   ? "stdout"
			     : o->stream == TOOLRUN__STREAM__STREAM_STDERR ? "stderr"
									   : NULL;

	if (!stream)
		fatal("order to spill an unknown stream", EPROTO);
	_cleanup_close_ int fd = spill_open(&L->spill, L->cfg, (uid_t)o->uid, o->job, stream,
					    path, sizeof(path), reason, sizeof(reason));
	if (L->cfg->spill_dir[0] && L->spill.fd < 0 && fd < 0)
		snprintf(L->spill_failure, sizeof(L->spill_failure), "%s", reason);
	else if (L->spill.fd >= 0)
		L->spill_failure[0] = '\0';
	s.job = o->job;
	s.stream = o->stream;
	s.path = fd >= 0 ? path : "";
	s.error = fd >= 0 ? 0 : -fd;
	s.reason = fd >= 0 ? "" : reason;
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_SPILL_OPENED;
	m.spill_opened = &s;
	send_msg(L, &m, &fd, fd >= 0 ? 1 : 0);
}

/* spill_dir, made and held as the launcher starts (in the box, before
 * any caller runs), so that no caller makes it first (spill.h). Where it
 * cannot be made yet, each spill tries again and its marker says why. */
static void prepare_spill(struct launcher *L)
{
	char reason[CONFIG_PATH_MAX + 160];

	L->spill = (struct spill_root)SPILL_ROOT_INIT;
	L->spill_failure[0] = '\0';
	if (L->cfg->spill_dir[0] &&
	    spill_prepare(&L->spill, L->cfg->spill_dir, reason, sizeof(reason)) < 0) {
		log_warn("%s; no cut stream is kept until it can be made", reason);
		snprintf(L->spill_failure, sizeof(L->spill_failure), "%s", reason);
	}
}

/* The spill store as held now (toolrun.SpillStatus). why is the
 * caller's buffer for a reason made up here. */
static void spill_state(const struct launcher *L, Toolrun__SpillStatus *s, char *why,
			size_t whylen)
{
	const char *want = L->cfg->spill_dir;
	size_t len = strlen(want);

	while (len > 1 && want[len - 1] == '/')
		len--;
	s->configured = (char *)want;
	s->held = L->spill.fd >= 0;
	s->dir = s->held ? (char *)L->spill.dir : "";
	s->exists = s->held && spill_root_intact(&L->spill);
	s->fallback = s->held && !(strlen(L->spill.dir) == len && !strncmp(L->spill.dir, want, len));
	s->reason = (char *)L->spill_failure;
	if (s->held && !s->exists) {
		snprintf(why, whylen, "%s is no longer toolrund's directory at that path (removed, "
			 "renamed or opened to others); it is made again before the next spill",
			 L->spill.dir);
		s->reason = why;
	}
}

/* A client asked for toolrund's status: what programs get from us, and
 * what we hold. */
static void query_state(struct launcher *L)
{
	Toolrun__Launcher__LauncherState st = TOOLRUN__LAUNCHER__LAUNCHER_STATE__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;
	Toolrun__SpillStatus spill = TOOLRUN__SPILL_STATUS__INIT;
	Toolrun__AuditStatus audit = TOOLRUN__AUDIT_STATUS__INIT;
	char why[CONFIG_PATH_MAX + 160];

	st.seccomp_inherited = prctl(PR_GET_SECCOMP) == 2;
	st.no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
	st.network_filter_ready = L->filters.deny_network.len > 0;
	st.runs_as_root = L->root;
	spill_state(L, &spill, why, sizeof(why));
	audit.configured = (char *)L->cfg->audit_log;
	audit.path = L->audit.path;
	audit.writable = L->audit.fd >= 0;
	audit.records = L->audit.records;
	audit.chain_head = audit.writable ? L->audit.prev : "";
	audit.reason = L->audit.failure;
	st.spill = &spill;
	st.audit = &audit;
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_LAUNCHER_STATE;
	m.launcher_state = &st;
	send_msg(L, &m, NULL, 0);
}

/* A terminal for a TTY session, opened as its caller: devpts gives the
 * slave to the opener's file system ids. */
static int pty_open_as(const struct launcher *L, uid_t uid, gid_t gid, int *slave)
{
	struct fs_ids was = {0};
	struct winsize size = {.ws_row = 50, .ws_col = 200};

	if (L->callers.can_switch)
		was = caps_fs_as(uid, gid);
	int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int err = master < 0 ? errno : 0;
	if (L->callers.can_switch)
		caps_fs_as(was.uid, was.gid);
	if (master < 0)
		return -err;
	int unlock = 0;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0 || ioctl(master, TIOCSWINSZ, &size) < 0) {
		err = errno;
		close(master);
		return -err;
	}
	*slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0) {
		char name[64];
		if (ptsname_r(master, name, sizeof(name)) == 0)
			*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	}
	if (*slave < 0) {
		err = errno;
		close(master);
		return -err;
	}
	return master;
}

static void open_pty(struct launcher *L, const Toolrun__Launcher__OpenPty *o)
{
	Toolrun__Launcher__PtyOpened p = TOOLRUN__LAUNCHER__PTY_OPENED__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;
	int fds[2] = {-1, -1};

	fds[0] = pty_open_as(L, (uid_t)o->uid, (gid_t)o->gid, &fds[1]);
	p.job = o->job;
	p.error = fds[0] < 0 ? -fds[0] : 0;
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_PTY_OPENED;
	m.pty_opened = &p;
	send_msg(L, &m, fds, fds[0] < 0 ? 0 : 2);
	if (fds[0] >= 0) {
		close(fds[0]);
		close(fds[1]);
	}
}

/* The sessions that may read a session's input: its own, and those of
 * the listed tools its commands handed to toolrund with that input as
 * their stdin (each job leads its own session), which run outside it. */
static size_t input_readers(struct launcher *L, const struct launched *session, dev_t dev,
			    ino_t ino, pid_t *sids, size_t max)
{
	size_t n = 0;

	sids[n++] = session->pid;
	const struct launched *k;
	LIST_FOREACH(k, &L->jobs, link)
		if (n < max && k != session && !k->exited && k->uid == session->uid && k->stdin_fifo &&
		    k->stdin_dev == dev && k->stdin_ino == ino)
			sids[n++] = k->pid;
	return n;
}

static void check_waiting(struct launcher *L, const Toolrun__Launcher__CheckWaiting *c)
{
	Toolrun__Launcher__WaitingState w = TOOLRUN__LAUNCHER__WAITING_STATE__INIT;
	Toolrun__Launcher__FromLauncher m = TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;
	const struct launched *j = find(L, c->job);

	w.job = c->job;
	w.unknown = true;
	if (j && !j->exited) {
		pid_t sids[64];
		size_t n = input_readers(L, j, (dev_t)c->input_dev, (ino_t)c->input_ino, sids,
					 ARRAY_SIZE(sids));
		/* As the caller, as check_input looks (ptrace's rules). */
		struct fs_ids was = {0};
		if (L->callers.can_switch)
			was = caps_fs_as(j->uid, j->gid);
		int r = proctree_session_waiting(sids, n, (dev_t)c->input_dev, (ino_t)c->input_ino);
		if (L->callers.can_switch)
			caps_fs_as(was.uid, was.gid);
		w.waiting = r > 0;
		w.unknown = r < 0;
	}
	m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_WAITING_STATE;
	m.waiting_state = &w;
	send_msg(L, &m, NULL, 0);
}

/* One order from the listener. An unknown one is fatal: the listener is
 * our own, so it is broken or subverted. */
static void launcher_dispatch_listener(struct launcher *L, const Toolrun__Launcher__ToLauncher *m)
{
	switch (m->msg_case) {
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_SPAWN:
		spawn(L, m->spawn, L->reader.fds, L->reader.nfds);
		L->reader.nfds = 0; /* spawn() closed them */
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_KILL:
		kill_job(L, m->kill);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_AUDIT:
		audit(L, m->audit);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_RELEASE:
		release_job(L, m->release->job);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_CHECK_INPUT:
		check_input(L, m->check_input->job);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_OPEN_SPILL:
		open_spill(L, m->open_spill);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_OPEN_PTY:
		open_pty(L, m->open_pty);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_CHECK_WAITING:
		check_waiting(L, m->check_waiting);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_QUERY_STATE:
		query_state(L);
		return;
	case TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG__NOT_SET:
	default:
		fatal("unknown order", EPROTO);
	}
}

/*
 * Decode the order in the reader into a, within the memory its size
 * allows (arena.h), as the listener decodes a request: an order is the
 * size of a request, and must not cost the launcher more than the
 * request cost the listener. The listener sends only orders that fit
 * (it decodes each so before sending), so one that does not is a broken
 * listener's.
 */
static Toolrun__Launcher__ToLauncher *decode_order(struct launcher *L, struct arena *a)
{
	ProtobufCMessage *m;
	int r = arena_unpack(a, &toolrun__launcher__to_launcher__descriptor,
			     L->reader.h.length, L->reader.payload, &m);

	if (r == -EMSGSIZE)
		fatal("order that does not decode within its size's arena", EPROTO);
	if (r < 0)
		fatal("undecodable order", r == -EBADMSG ? EPROTO : -r);
	return (Toolrun__Launcher__ToLauncher *)m;
}

static uint64_t timeval_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000u + (uint64_t)tv->tv_usec;
}

static void reap(struct launcher *L)
{
	for (;;) {
		int status;
		struct rusage ru;
		pid_t pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid <= 0)
			return;
		struct launched *j;
		LIST_FOREACH(j, &L->jobs, link)
			if (j->pid == pid && !j->exited)
				break;
		if (!j)
			continue; /* an orphan we adopted as subreaper */

		/* The leader is gone: end what remains of a tool's group now,
		 * while the group id cannot yet have been reused. A command's
		 * background processes live on, as after `docker exec`. */
		if (!j->command)
			kill(-pid, SIGKILL);
		if (!j->released) {
			Toolrun__Launcher__Exited e = TOOLRUN__LAUNCHER__EXITED__INIT;
			Toolrun__Launcher__FromLauncher m =
				TOOLRUN__LAUNCHER__FROM_LAUNCHER__INIT;
			e.job = j->job;
			e.wait_status = status;
			e.user_us = timeval_us(&ru.ru_utime);
			e.system_us = timeval_us(&ru.ru_stime);
			e.timed_out = direct_tells_timeout(&j->client);
			m.msg_case = TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_EXITED;
			m.exited = &e;
			/* The listener before the client: when the client,
			 * told, goes away, its Exited is already there. */
			send_msg(L, &m, NULL, 0);
			direct_exited(&j->client, status, e.user_us, e.system_us);
		}
		/* A command's session may outlive its leader (a background
		 * job still writing): the listener's Release ends it. */
		if (j->command && !j->released)
			j->exited = true;
		else
			forget(j);
	}
}

static void shutdown_all(struct launcher *L)
{
	struct launched *j;
	LIST_FOREACH(j, &L->jobs, link) {
		direct_close(&j->client);
		if (j->command)
			kill_tree(j, SIGKILL, false);
		if (!j->exited)
			kill(-j->pid, SIGKILL);
	}
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

static NORETURN void launcher_main(struct launcher *L, pid_t parent)
{
	sigset_t chld;
	char err[256];

	/* Power first: die with the supervisor, compile the programs'
	 * filters (libseccomp needs a memfd), then lock ourselves down. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	prctl(PR_SET_NAME, "toolrund-launch");
	log_set_role("launcher");
	if (sandbox_child_filters(&L->filters, err, sizeof(err)) < 0 ||
	    sandbox_launcher(err, sizeof(err)) < 0)
		fatal(err, EPERM);
	/* The supervisor holds them permitted only; here they are used. */
	L->root = geteuid() == 0;
	if (L->callers.can_switch) {
		int raised = caps_raise();
		if (raised < 0)
			fatal("raise the capabilities to switch users", -raised);
	}

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_SETMASK, &chld, NULL) < 0)
		fatal("block SIGCHLD", errno);
	L->sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (L->sigfd < 0)
		fatal("signalfd", errno);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		fatal("become subreaper", errno);
	/* Stopping is the listener's decision, not a terminal's. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	/* Last: what a child inherits, and need not set again. */
	if (launch_self_init(&L->self) < 0)
		fatal("read the launcher's own process state", errno);

	L->audit.shared_uid = !L->callers.can_switch;
	auditlog_open(&L->audit, L->cfg);
	report_audit_log(L);
	prepare_spill(L);

	L->reader = (struct frame_reader){
		.max_payload = ORDER_MAX_PAYLOAD,
		.max_fds = FRAME_MAX_ORDER_FDS,
		.grow = frame_grow_heap,
		.fds = L->fds,
	};

	for (;;) {
		struct pollfd p[2] = {{L->chan, POLLIN, 0}, {L->sigfd, POLLIN, 0}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fatal("poll", errno);
		}
		if (p[1].revents) {
			/* SIGCHLD, the one signal it takes, is pending once
			 * at most: one read empties it; reap takes every
			 * child that ended. */
			struct signalfd_siginfo si;
			(void)!read(L->sigfd, &si, sizeof(si));
			reap(L);
		}
		if (!p[0].revents)
			continue;
		for (;;) {
			int r = frame_reader_read(&L->reader, L->chan);
			if (r == FRAME_READ_AGAIN)
				break;
			if (r == FRAME_READ_EOF) {
				shutdown_all(L);
				_exit(0);
			}
			if (r < 0)
				fatal("read from listener", -r);
			struct arena a;
			Toolrun__Launcher__ToLauncher *m = decode_order(L, &a);
			launcher_dispatch_listener(L, m);
			arena_release(&a);
			frame_reader_next(&L->reader);
		}
	}
}

int launcher_start(struct launcher_link *link, const struct config *cfg,
		   const struct launcher_callers *callers, const int *close_in_child)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(sv[0]);
		close(sv[1]);
		return -err;
	}
	if (pid == 0) {
		struct launcher L = {.cfg = cfg, .chan = sv[1], .sigfd = -1};
		if (callers)
			L.callers = *callers;
		close(sv[0]);
		for (const int *fd = close_in_child; fd && *fd >= 0; fd++)
			close(*fd);
		launcher_main(&L, parent);
	}
	close(sv[1]);
	link->fd = sv[0];
	link->pid = pid;
	return 0;
}
