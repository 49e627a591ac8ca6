/*
 * Sessions: making one (its fds, its environment, its bash), finding
 * one, attaching a command's job to it, and freeing it.
 *
 *   session_new          limits, then the pipes (or OpenPty first, for a
 *                        TTY session), then Spawn of the shell below
 *   sessions_on_pty      the terminal came: Spawn
 *   sessions_on_spawned  its bash runs: answer NEW
 *
 * The listener may open nothing, so a terminal comes from the launcher,
 * opened as the caller; the pipes are the listener's own (pipe2).
 *
 * Process: the listener.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launchstep.h"
#include "log.h"
#include "policy.h"
#include "util.h"

/*
 * What the session's bash runs (bash -c). It loads toolrun's builtin
 * (preload/sessionbuiltin.c, beside the library), says it is ready, then
 * loops: `toolrun_session read` takes a command from fd 3 (toolrund's key
 * for it, the command, NUL), and `toolrun_session report` writes "KEY
 * STATUS CWD\0" to fd 4 after it. The key never reaches a shell
 * variable, and the builtin answers only the loop at the shell's top
 * level, so that a command, which runs in the same shell, cannot report
 * an end of its own (session.h).
 *
 * A command is read by `.` from a here-string, so that it runs in the
 * shell itself (cd, export, functions and jobs persist, declare stays
 * global) and so that SIGINT's trap can `return` from it: an interrupt
 * ends the whole command, as Ctrl-C does at a prompt, and not the shell,
 * with the status of the program the signal ended, or 130 when it
 * interrupted builtins; one that comes as the command ends finds no
 * `.` to return from, and says nothing.
 * The trap is set again before each command, which may have replaced it.
 * A command that breaks the loop itself (a function named `builtin`)
 * cannot make it run an old command again: `read` that gave nothing
 * ends the shell (SESSION_LOOP_BROKEN).
 * Neither fd 3 nor 4 is open in the command's programs (bash keeps its
 * copies close-on-exec), nor fd 9: `.` has read the here-string whole
 * before the command's first words close it (on the same line, so that
 * bash's line numbers in messages stay the command's; `anon` makes them
 * name the shell, "bash: line 1: ...", as under bash -c).
 */
static const char wrapper_fmt[] =
	"builtin enable -f '%s' toolrun_session || exit %d\n"
	"builtin toolrun_session ready || exit %d\n"
	"while :; do\n"
	"  trap '__toolrun_was=$?; [[ -n $__toolrun_in ]] && return $(( __toolrun_was > 128 ? __toolrun_was : 130 )) 2>/dev/null' INT\n"
	"  __toolrun_cmd=\n"
	"  builtin toolrun_session read __toolrun_cmd\n"
	"  __toolrun_st=$?\n"
	"  if (( __toolrun_st != 0 )); then\n"
	"    (( __toolrun_st > 128 )) && continue\n"
	"    exit 0\n"
	"  fi\n"
	"  [[ -n $__toolrun_cmd ]] || exit %d\n"
	"  __toolrun_in=1\n"
	"  . /dev/fd/9 9<<<\"builtin toolrun_session anon; exec 9<&- ; $__toolrun_cmd\" 3<&- 4>&-\n"
	"  builtin toolrun_session report $?\n"
	"  __toolrun_in=\n"
	"done\n";

/* The commands' pipe holds one whole command and its key (session.h). */
#define COMMAND_PIPE_SIZE (SESSION_COMMAND_MAX + SESSION_KEY_LEN + 1)

/* toolrun-session.so, beside toolrun's library (cfg->preload). Returns
 * false when the path does not fit or cannot be quoted as the wrapper
 * quotes it. */
static bool builtin_path(const char *preload, char *out, size_t len)
{
	const char *slash = strrchr(preload, '/');
	int dir = slash ? (int)(slash - preload) : 0;
	int n = snprintf(out, len, "%.*s/%s", dir, preload, SESSION_BUILTIN);

	return slash && n > 0 && (size_t)n < len && !strchr(out, '\'');
}

struct session *session_by_id(struct sessions *S, const char *id, uid_t uid)
{
	struct session *s;
	TAILQ_FOREACH(s, &S->list, link)
		if (s->uid == uid && strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

struct session *session_by_job(struct sessions *S, uint64_t job)
{
	struct session *s;
	TAILQ_FOREACH(s, &S->list, link)
		if (s->job_id == job)
			return s;
	return NULL;
}

void sessions_init(struct sessions *S, struct jobs *J, const uid_t *served,
		   unsigned nserved)
{
	*S = (struct sessions){.J = J, .served = served, .nserved = nserved};
	TAILQ_INIT(&S->list);
}

/* ------------------------------------------------------------------ */
/* Answers to NEW                                                      */

static void reply_new_failed(struct session_peer *p, Toolrun__ErrorCode code, const char *why)
{
	Toolrun__SessionReply r = TOOLRUN__SESSION_REPLY__INIT;

	r.session = (char *)"";
	r.error = code;
	r.message = (char *)why;
	p->ops->reply(p, &r);
}

/* The session could not start: tell its creator, and forget it. */
static void session_failed(struct session *s, const char *why)
{
	struct session_peer *p = s->waiter;

	log_warn("session %s (uid %u): %s", s->id, (unsigned)s->uid, why);
	if (p) {
		s->waiter = NULL;
		p->waiting_on = NULL;
		reply_new_failed(p, TOOLRUN__ERROR_CODE__ERROR_INTERNAL, why);
	}
	session_close_fds(s);
	session_forget(s);
}

bool sessions_on_spawned(struct sessions *S, uint64_t id, pid_t pid, int err, unsigned step)
{
	struct session *s = session_by_job(S, id);
	char why[256];

	if (!s)
		return false;
	if (err) {
		snprintf(why, sizeof(why), "toolrund could not start %s: %s failed: %s",
			 SESSION_SHELL, launch_step_name((enum launch_step)step), errno_text(err));
		order_release(S->J->orders, id);
		session_failed(s, why);
		return true;
	}
	s->pid = pid;
	/* Answered once its loop says it is ready (session_loop_ready). */
	s->phase = SESSION_LOADING;
	if (session_watch_status(s) < 0) {
		snprintf(why, sizeof(why), "toolrund cannot watch the session: %s",
			 errno_text(errno));
		order_release(S->J->orders, id);
		session_failed(s, why);
		return true;
	}
	if (s->orphan)
		session_close(s, "its creator left before it started");
	return true;
}

void session_loop_ready(struct session *s)
{
	s->phase = SESSION_READY;
	session_touch(s);
	log_info("session %s: bash pid %d for uid %u%s", s->id, (int)s->pid, (unsigned)s->uid,
		 s->tty ? " on a terminal" : "");
	if (s->orphan) {
		session_close(s, "its creator left before it started");
		return;
	}
	struct session_peer *p = s->waiter;
	if (p) {
		Toolrun__SessionReply r = TOOLRUN__SESSION_REPLY__INIT;
		s->waiter = NULL;
		p->waiting_on = NULL;
		r.session = s->id;
		r.state = TOOLRUN__SESSION_STATE__SESSION_STATE_IDLE;
		r.pid = s->pid;
		p->ops->reply(p, &r);
	}
}

bool session_loop_failed(struct session *s, int wait_status)
{
	char why[CONFIG_PATH_MAX + 200];

	if (s->phase != SESSION_LOADING)
		return false;
	if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == SESSION_NO_BUILTIN)
		snprintf(why, sizeof(why),
			 "its bash could not load toolrun's session builtin (enable -f %s): a "
			 "bash that supports loadable builtins is needed (docs/sessions.md)",
			 s->builtin);
	else
		snprintf(why, sizeof(why), "its bash (pid %d) ended before its loop was ready",
			 (int)s->pid);
	order_release(s->S->J->orders, s->job_id);
	session_failed(s, why);
	return true;
}

/* ------------------------------------------------------------------ */
/* The environment                                                     */

static bool has_prefix(const ProtobufCBinaryData *e, const char *prefix)
{
	size_t n = strlen(prefix);
	return e->len >= n && memcmp(e->data, prefix, n) == 0;
}

/* Variables toolrund sets for the session (build_env): a client's own
 * are dropped. TOOLRUN_CONFIG and TOOLRUN stay the client's. */
static bool set_by_daemon(const ProtobufCBinaryData *e)
{
	static const char *const names[] = {
		"TOOLRUN_AGENT_STDOUT=", "TOOLRUN_AGENT_STDERR=", "TOOLRUN_COMMAND=",
		"TOOLRUN_SESSION=", "TOOLRUN_NESTED=",
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (has_prefix(e, names[i]))
			return true;
	return false;
}

/* The client's entries, less those toolrund sets and those the global
 * env_allow / env_deny remove (policy_shell_env_keeps; an LD_PRELOAD
 * they remove leaves toolrun's library alone: preload_entry), copied:
 * the call's memory goes with it. */
static int keep_env(struct session *s, const Toolrun__SessionCall *c)
{
	const struct config *cfg = s->S->J->cfg;
	size_t bytes = 0;
	for (size_t i = 0; i < c->n_envp; i++)
		bytes += c->envp[i].len;
	s->env = malloc((c->n_envp + 1) * sizeof(*s->env) + bytes + 1);
	if (!s->env)
		return -ENOMEM;
	uint8_t *pool = (uint8_t *)(s->env + c->n_envp + 1);
	for (size_t i = 0; i < c->n_envp; i++) {
		const ProtobufCBinaryData *e = &c->envp[i];
		if (set_by_daemon(e) || !policy_shell_env_keeps(cfg, e))
			continue;
		memcpy(pool, e->data, e->len);
		s->env[s->nenv++] = (ProtobufCBinaryData){e->len, pool};
		pool += e->len;
	}
	return 0;
}

struct session_env {
	ProtobufCBinaryData *v;
	size_t n;
	char preload[CONFIG_PATH_MAX + 4096], out[64], err[64], cmd[48], id[48];
};

/* LD_PRELOAD with toolrun's library first, unless the client's has it. */
static void preload_entry(struct session_env *se, const struct session *s, const char *lib)
{
	const ProtobufCBinaryData *theirs = NULL;
	for (size_t i = 0; i < s->nenv; i++)
		if (has_prefix(&s->env[i], "LD_PRELOAD="))
			theirs = &s->env[i];
	size_t skip = strlen("LD_PRELOAD=");
	int n = theirs ? (int)(theirs->len - skip) : 0;
	const char *v = theirs ? (const char *)theirs->data + skip : "";
	if (!lib[0] || (theirs && memmem(v, (size_t)n, lib, strlen(lib))))
		snprintf(se->preload, sizeof(se->preload), "LD_PRELOAD=%.*s", n, v);
	else
		snprintf(se->preload, sizeof(se->preload), "LD_PRELOAD=%s%s%.*s", lib,
			 n ? " " : "", n, v);
}

static int build_env(struct session_env *se, const struct session *s, int out_w, int err_w,
		     const char *lib)
{
	se->v = calloc(s->nenv + 6, sizeof(*se->v));
	if (!se->v)
		return -ENOMEM;
	bool has_term = false;
	for (size_t i = 0; i < s->nenv; i++) {
		if (has_prefix(&s->env[i], "LD_PRELOAD="))
			continue;
		has_term |= has_prefix(&s->env[i], "TERM=");
		se->v[se->n++] = s->env[i];
	}
	preload_entry(se, s, lib);
	job_stream_var(out_w, "TOOLRUN_AGENT_STDOUT", se->out, sizeof(se->out));
	job_stream_var(err_w, "TOOLRUN_AGENT_STDERR", se->err, sizeof(se->err));
	snprintf(se->cmd, sizeof(se->cmd), "TOOLRUN_COMMAND=%llu", (unsigned long long)s->job_id);
	snprintf(se->id, sizeof(se->id), "TOOLRUN_SESSION=%s", s->id);
	const char *extra[] = {se->preload, se->out, se->err, se->cmd, se->id,
			       s->tty && !has_term ? "TERM=dumb" : NULL};
	for (size_t i = 0; i < ARRAY_SIZE(extra); i++)
		if (extra[i])
			se->v[se->n++] = (ProtobufCBinaryData){strlen(extra[i]), (uint8_t *)extra[i]};
	return 0;
}

/* ------------------------------------------------------------------ */
/* The Spawn                                                           */

/* Our ends of the commands' and the statuses' pipes; theirs in child[]. */
static int control_pipes(struct session *s, int child[2])
{
	int cmd[2], st[2];

	if (pipe2(cmd, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(st, O_CLOEXEC) < 0) {
		int e = errno;
		close(cmd[0]);
		close(cmd[1]);
		return -e;
	}
	fcntl(cmd[1], F_SETPIPE_SZ, COMMAND_PIPE_SIZE);
	fcntl(cmd[1], F_SETFL, O_NONBLOCK);
	fcntl(st[0], F_SETFL, O_NONBLOCK);
	s->cmd_fd = cmd[1];
	s->status_fd = st[0];
	child[0] = cmd[0];
	child[1] = st[1];
	return 0;
}

/* Spawn its bash with std[3] as its fds 0-2 (the order takes them). */
static int spawn_shell(struct session *s, int std[3], char *why, size_t len)
{
	struct jobs *J = s->S->J;
	static const uint32_t targets[] = {0, 1, 2, 3, 4};
	int ctl[2] = {-1, -1};
	int r = control_pipes(s, ctl);
	if (r < 0) {
		snprintf(why, len, "toolrund failed to create a pipe: %s", errno_text(-r));
		return r;
	}
	if (!builtin_path(J->cfg->preload, s->builtin, sizeof(s->builtin))) {
		close(ctl[0]);
		close(ctl[1]);
		snprintf(why, len, "no place for toolrun's session builtin beside preload = %.160s",
			 J->cfg->preload);
		return -EINVAL;
	}
	struct session_env se = {0};
	if (build_env(&se, s, std[1], std[2], J->cfg->preload) < 0) {
		close(ctl[0]);
		close(ctl[1]);
		snprintf(why, len, "toolrund is out of memory");
		return -ENOMEM;
	}
	char wrapper[sizeof(wrapper_fmt) + sizeof(s->builtin) + 16];
	snprintf(wrapper, sizeof(wrapper), wrapper_fmt, s->builtin, SESSION_NO_BUILTIN,
		 SESSION_NO_BUILTIN, SESSION_LOOP_BROKEN);
	const char *const argv_s[] = {"bash", "--noprofile", "--norc", "-c", wrapper, "bash"};
	ProtobufCBinaryData argv[ARRAY_SIZE(argv_s)];
	for (size_t i = 0; i < ARRAY_SIZE(argv_s); i++)
		argv[i] = (ProtobufCBinaryData){strlen(argv_s[i]), (uint8_t *)argv_s[i]};
	Toolrun__Request req = TOOLRUN__REQUEST__INIT;
	req.executable = (ProtobufCBinaryData){strlen(SESSION_SHELL), (uint8_t *)SESSION_SHELL};
	req.argv = argv;
	req.n_argv = ARRAY_SIZE(argv);
	struct limits lim = policy_command_limits(J->cfg);
	int fds[6] = {s->cwd_fd, std[0], std[1], std[2], ctl[0], ctl[1]};
	struct spawn_order so = {
		.job = s->job_id, .req = &req, .env = se.v, .nenv = se.n, .limits = &lim,
		.command = true, .tool = "session", .uid = s->uid, .gid = s->gid,
		.groups = s->groups, .ngroups = s->ngroups, .fds = fds, .nfds = 6,
		.targets = targets, .ntargets = 5, .controlling_tty = s->tty,
	};
	r = order_spawn(J->orders, &so, why, len);
	free(se.v);
	if (r < 0) {
		close(ctl[0]);
		close(ctl[1]);
		return r;
	}
	s->cwd_fd = -1; /* the order's now, as are std and ctl */
	s->phase = SESSION_STARTING;
	return 0;
}

/* Without a terminal: a pipe for each of stdin, stdout and stderr. */
static int spawn_with_pipes(struct session *s, char *why, size_t len)
{
	int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	for (int i = 0; i < 3; i++) {
		if (pipe2(p[i], O_CLOEXEC) < 0) {
			snprintf(why, len, "toolrund failed to create a pipe: %s", errno_text(errno));
			for (int k = 0; k < i; k++) {
				close(p[k][0]);
				close(p[k][1]);
			}
			return -1;
		}
	}
	s->in_fd = p[0][1];
	s->out_fd[0] = p[1][0];
	s->out_fd[1] = p[2][0];
	struct stat st;
	if (fstat(p[0][0], &st) == 0) {
		s->in_dev = st.st_dev;
		s->in_ino = st.st_ino;
	}
	fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 2; i++) {
		fcntl(s->out_fd[i], F_SETFL, O_NONBLOCK);
		fcntl(s->out_fd[i], F_SETPIPE_SZ, 1024 * 1024); /* best effort */
	}
	int std[3] = {p[0][0], p[1][1], p[2][1]};
	if (spawn_shell(s, std, why, len) < 0) {
		for (int i = 0; i < 3; i++)
			close(std[i]);
		return -1;
	}
	return 0;
}

bool sessions_on_pty(struct sessions *S, uint64_t id, int err, int master, int slave)
{
	struct session *s = session_by_job(S, id);
	char why[256];

	if (!s) {
		if (master >= 0)
			close(master);
		if (slave >= 0)
			close(slave);
		return false;
	}
	if (!err && s->orphan)
		err = ECANCELED;
	if (err) {
		if (master >= 0)
			close(master);
		if (slave >= 0)
			close(slave);
		snprintf(why, sizeof(why), "toolrund could not open a terminal (/dev/ptmx): %s",
			 errno_text(err));
		session_failed(s, why);
		return true;
	}
	struct stat st;
	if (fstat(slave, &st) == 0) {
		s->in_dev = st.st_dev;
		s->in_ino = st.st_ino;
	}
	fcntl(master, F_SETFL, O_NONBLOCK);
	s->out_fd[0] = master;
	s->in_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
	int std[3] = {slave, fcntl(slave, F_DUPFD_CLOEXEC, 3), fcntl(slave, F_DUPFD_CLOEXEC, 3)};
	if (s->in_fd < 0 || std[1] < 0 || std[2] < 0) {
		snprintf(why, sizeof(why), "toolrund failed to duplicate the terminal: %s",
			 errno_text(errno));
	} else if (spawn_shell(s, std, why, sizeof(why)) == 0) {
		return true;
	}
	for (int i = 0; i < 3; i++)
		if (std[i] >= 0)
			close(std[i]);
	session_failed(s, why);
	return true;
}

/* ------------------------------------------------------------------ */
/* NEW                                                                 */

static unsigned sessions_of(const struct sessions *S, uid_t uid)
{
	unsigned n = 0;
	const struct session *s;
	TAILQ_FOREACH(s, &S->list, link)
		n += s->uid == uid && s->phase != SESSION_ENDED;
	return n;
}

static bool id_taken(const struct sessions *S, const char *id)
{
	const struct session *s;
	TAILQ_FOREACH(s, &S->list, link)
		if (strcmp(s->id, id) == 0)
			return true;
	return false;
}

/* Eight random hex digits: the ids of a daemon that restarted do not
 * name the new daemon's sessions by chance. */
static void new_id(struct sessions *S, char *id, size_t len)
{
	do {
		uint32_t v = 0;
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint32_t)monotonic_us() ^ (uint32_t)S->J->next_id;
		snprintf(id, len, "%08x", v);
	} while (id_taken(S, id));
}

static struct session *session_alloc(struct sessions *S, const struct session_peer *p,
				     const Toolrun__SessionCall *c)
{
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	*s = (struct session){
		.S = S, .uid = p->who.uid, .gid = p->who.gid, .caller_pid = p->who.pid,
		.tty = c->tty, .cwd_fd = -1, .in_fd = -1, .out_fd = {-1, -1}, .cmd_fd = -1,
		.status_fd = -1, .status_ev.fd = -1, .job_id = ++S->J->next_id,
		.created_ms = monotonic_ms(),
	};
	s->client.ops = &session_client_ops;
	s->last_call_ms = s->created_ms;
	new_id(S, s->id, sizeof(s->id));
	s->groups = p->who.ngroups ? malloc(p->who.ngroups * sizeof(gid_t)) : NULL;
	s->cwd = strndup(c->cwd.len ? (const char *)c->cwd.data : "", c->cwd.len);
	if ((p->who.ngroups && !s->groups) || !s->cwd || keep_env(s, c) < 0) {
		free(s->groups);
		free(s->cwd);
		free(s->env);
		free(s);
		return NULL;
	}
	if (p->who.ngroups)
		memcpy(s->groups, p->who.groups, p->who.ngroups * sizeof(gid_t));
	s->ngroups = p->who.ngroups;
	TAILQ_INSERT_TAIL(&S->list, s, link);
	S->count++;
	return s;
}

/*
 * The room session_max leaves. Each uid toolrund serves is sure of a
 * share, session_max / (uids served); a uid may go past its share (up to
 * session_max_per_uid) only into room that the other uids' unused shares
 * do not need. So one uid's sessions never lock out another uid, or
 * root: whoever is below its share always finds a free place. Ended
 * sessions, kept a while for their news, take no place.
 */
struct session_room {
	unsigned live;     /* sessions not ended */
	unsigned mine;     /* of those, the caller's */
	unsigned share;    /* what each served uid is sure of */
	unsigned kept;     /* free places the other uids' shares need */
};

static void count_room(const struct sessions *S, uid_t uid, struct session_room *r)
{
	unsigned n = S->nserved ? S->nserved : 1;

	*r = (struct session_room){.share = MAX(S->J->cfg->session_max / n, 1u)};
	const struct session *s;
	TAILQ_FOREACH(s, &S->list, link)
		r->live += s->phase != SESSION_ENDED;
	r->mine = sessions_of(S, uid);
	for (unsigned i = 0; i < S->nserved; i++)
		if (S->served[i] != uid) {
			unsigned theirs = sessions_of(S, S->served[i]);
			r->kept += theirs < r->share ? r->share - theirs : 0;
		}
}

/* At the limits (session_max, session_max_per_uid, the other uids'
 * shares): say which. */
static bool at_limit(struct sessions *S, struct session_peer *p)
{
	const struct config *cfg = S->J->cfg;
	struct session_room r;
	char why[300];

	count_room(S, p->who.uid, &r);
	unsigned free_places = r.live < cfg->session_max ? cfg->session_max - r.live : 0;
	if (r.mine >= cfg->session_max_per_uid)
		snprintf(why, sizeof(why),
			 "uid %u has %u sessions, the most session_max_per_uid allows: close one "
			 "('toolrun session list' shows them)", (unsigned)p->who.uid, r.mine);
	else if (free_places == 0)
		snprintf(why, sizeof(why), "toolrund hosts %u sessions, the most session_max allows",
			 r.live);
	else if (r.mine >= r.share && free_places <= r.kept)
		snprintf(why, sizeof(why),
			 "uid %u has %u sessions, more than its share (%u: session_max %u among the "
			 "%u uids toolrund serves), and the %u free places are kept for the other "
			 "uids' shares: close one ('toolrun session list' shows them)",
			 (unsigned)p->who.uid, r.mine, r.share, cfg->session_max, S->nserved,
			 free_places);
	else
		return false;
	reply_new_failed(p, TOOLRUN__ERROR_CODE__ERROR_BUSY, why);
	return true;
}

void session_new(struct sessions *S, struct session_peer *p, const Toolrun__SessionCall *c,
		 int cwd_fd)
{
	char why[256] = "";

	if (at_limit(S, p)) {
		close(cwd_fd);
		return;
	}
	struct session *s = session_alloc(S, p, c);
	if (!s) {
		close(cwd_fd);
		reply_new_failed(p, TOOLRUN__ERROR_CODE__ERROR_BUSY, "toolrund is out of memory");
		return;
	}
	s->cwd_fd = cwd_fd;
	s->waiter = p;
	p->waiting_on = s;
	if (s->tty) {
		s->phase = SESSION_OPENING_PTY;
		order_open_pty(S->J->orders, s->job_id, s->uid, s->gid);
		return;
	}
	if (spawn_with_pipes(s, why, sizeof(why)) < 0)
		session_failed(s, why);
}

/* ------------------------------------------------------------------ */
/* Commands, and the end                                               */

int session_attach_command(struct session *s, const ProtobufCBinaryData *command, char *why,
			   size_t len)
{
	struct job_caller who = {
		.uid = s->uid, .gid = s->gid, .groups = s->groups, .ngroups = s->ngroups,
		.pid = s->caller_pid,
	};
	struct job_attach a = {
		.who = &who,
		.client = &s->client,
		.fds = {s->out_fd[0], s->out_fd[1]},
		.command = *command,
		.cwd = {s->cwd ? strlen(s->cwd) : 0, (uint8_t *)s->cwd},
		.command_job = s->job_id,
		.pid = s->pid,
	};
	snprintf(a.name, sizeof(a.name), "session %s", s->id);
	return job_attach(s->S->J, &a, why, len) ? 0 : -1;
}

void session_close_fds(struct session *s)
{
	event_del(s->S->J->loop, &s->status_ev);
	close_fd(&s->cwd_fd);
	close_fd(&s->in_fd);
	close_fd(&s->out_fd[0]);
	close_fd(&s->out_fd[1]);
	close_fd(&s->cmd_fd);
	close_fd(&s->status_fd);
}

static void session_free(void *p)
{
	struct session *s = p;

	free(s->groups);
	free(s->env);
	free(s->command);
	free(s->cwd);
	free(s->pending[0].p);
	free(s->pending[1].p);
	free(s);
}

void session_forget(struct session *s)
{
	struct sessions *S = s->S;
	struct event_loop *loop = S->J->loop;

	if (s->waiter) {
		s->waiter->waiting_on = NULL;
		s->waiter = NULL;
	}
	timer_cancel(loop, &s->wait_timer);
	timer_cancel(loop, &s->check_timer);
	timer_cancel(loop, &s->idle_timer);
	/* A command still running, or finishing (its spill file being
	 * opened), must not hand its end to a session that is gone. No call
	 * waits any more, so its end is only recorded. */
	if (s->client.job)
		job_attached_ended(s->client.job, W_EXITCODE(0, SIGKILL), false);
	if (s->client.job)
		job_client_gone(s->client.job);
	session_close_fds(s);
	TAILQ_REMOVE(&S->list, s, link);
	S->count--;
	if (event_release(loop, s, session_free) < 0)
		log_error("out of memory: session %s not freed", s->id);
}
