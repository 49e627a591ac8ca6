/*
 * Orders to the launcher (order.h): the queue on its channel, and the
 * messages jobs send it.
 *
 *   order_send     queue, written at the end of the listener's turn
 *   order_spawn    the Spawn: the caller's state under the policy's
 *                  limits, checked as the launcher will read it
 *   order_kill, order_release, order_check_input, order_open_spill,
 *   order_audit    one small message each
 *
 * Process: the listener.
 */
#include "order.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "arena.h"
#include "log.h"
#include "policy.h"
#include "util.h"

void order_flush(struct order_link *o)
{
	int r = outq_flush(&o->out, o->launcher.fd);
	if (r < 0 && r != -EAGAIN) {
		log_error("cannot write to the launcher: %s", errno_text(r));
		o->broken = true;
		event_loop_stop(o->loop);
		return;
	}
	/* Unarmed, the channel would hold every later order: as broken as a
	 * failed write. */
	r = event_modify(o->loop, &o->ev, EPOLLIN | (r == -EAGAIN ? EPOLLOUT : 0));
	if (r < 0) {
		log_error("cannot watch the channel to the launcher: %s", errno_text(r));
		o->broken = true;
		event_loop_stop(o->loop);
	}
}

void order_send(struct order_link *o, Toolrun__Launcher__ToLauncher *msg,
		const int *fds, unsigned nfds)
{
	if (outq_push(&o->out, &msg->base, fds, nfds) < 0) {
		log_error("out of memory for an order to the launcher");
		o->broken = true;
		event_loop_stop(o->loop);
		return;
	}
}

void order_flush_queued(struct order_link *o)
{
	/* A full channel is flushed when it drains (EPOLLOUT). */
	if (o->out.head && !(o->ev.mask & EPOLLOUT) && !o->broken)
		order_flush(o);
}

void order_take_in(struct order_link *o)
{
	if (o->ev.fd >= 0 && o->ev.fn)
		o->ev.fn(o->loop, EPOLLIN, o->ev.data);
}

void order_close(struct order_link *o)
{
	for (int i = 0; i < 1000 && outq_flush(&o->out, o->launcher.fd) == -EAGAIN; i++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	outq_clear(&o->out);
	close_fd(&o->launcher.fd);
}

/* ------------------------------------------------------------------ */
/* Spawn                                                               */

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
	else if (r == -E2BIG)
		snprintf(failure, len,
			 "argv and the environment toolrund would give it take %zu bytes as "
			 "execve counts them: more than the %u any execve takes",
			 a.exec_bytes, FRAME_MAX_EXEC_BYTES);
	else if (r == -EMSGSIZE)
		snprintf(failure, len,
			 "the order to run it would not decode within %zu bytes", a.cap);
	else
		snprintf(failure, len, "toolrund cannot check its order to run it: %s",
			 errno_text(r));
	return r;
}

int order_spawn(struct order_link *o, const struct spawn_order *s, char *failure,
		size_t len)
{
	Toolrun__Launcher__Spawn sp = TOOLRUN__LAUNCHER__SPAWN__INIT;
	Toolrun__Launcher__CheckedFile checked = TOOLRUN__LAUNCHER__CHECKED_FILE__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;
	Toolrun__ProcessState state;
	Toolrun__Limit limits[RLIM_NLIMITS + POLICY_RLIMIT_COUNT];
	Toolrun__Limit *limit_ptrs[RLIM_NLIMITS + POLICY_RLIMIT_COUNT];
	const Toolrun__Request *req = s->req;

	spawn_state(req, s->limits, &state, limits, limit_ptrs);
	sp.state = &state;
	sp.network = s->limits->network == NETWORK_ALLOW;
	sp.command = s->command;
	sp.job = s->job;
	sp.executable = req->executable;
	sp.n_argv = req->n_argv;
	sp.argv = req->argv;
	sp.n_envp = s->nenv;
	sp.envp = (ProtobufCBinaryData *)s->env;
	sp.n_fds = s->ntargets;
	sp.fds = (uint32_t *)s->targets;
	sp.tool = (char *)s->tool;
	sp.uid = s->uid;
	sp.gid = s->gid;
	sp.n_groups = s->ngroups;
	sp.groups = (uint32_t *)s->groups;
	sp.controlling_tty = s->controlling_tty;
	sp.caller_pid = s->caller_pid;
	sp.answer = (Toolrun__Launcher__Answer *)s->answer;
	if (s->file && s->file->path[0]) {
		checked.path.data = (uint8_t *)s->file->path;
		checked.path.len = strlen(s->file->path);
		checked.dev = s->file->dev;
		checked.ino = s->file->ino;
		checked.by_name = s->file->by_name;
		sp.checked = &checked;
	}
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_SPAWN;
	m.spawn = &sp;
	int r = order_check(&m, s->nfds, failure, len);
	if (r < 0)
		return r;
	order_send(o, &m, s->fds, s->nfds); /* the queue owns and closes them */
	return 0;
}

/* ------------------------------------------------------------------ */
/* The small orders                                                    */

static void send_kill(struct order_link *o, Toolrun__Launcher__Kill *k)
{
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_KILL;
	m.kill = k;
	order_send(o, &m, NULL, 0);
}

void order_kill(struct order_link *o, uint64_t job, int signo, enum kill_reach reach)
{
	Toolrun__Launcher__Kill k = TOOLRUN__LAUNCHER__KILL__INIT;

	k.job = job;
	k.signo = signo;
	k.whole_tree = reach != KILL_GROUP;
	k.spare_leader = reach == KILL_BELOW;
	k.report = reach != KILL_GROUP;
	send_kill(o, &k);
}

void order_kill_timed_out(struct order_link *o, uint64_t job, const char *notice)
{
	Toolrun__Launcher__Kill k = TOOLRUN__LAUNCHER__KILL__INIT;

	k.job = job;
	k.signo = SIGKILL;
	k.timeout_notice = (char *)notice;
	send_kill(o, &k);
}

void order_kill_refused(struct order_link *o, uint64_t job, Toolrun__ErrorCode code,
			const char *message)
{
	Toolrun__Launcher__Kill k = TOOLRUN__LAUNCHER__KILL__INIT;
	Toolrun__Error e = TOOLRUN__ERROR__INIT;

	e.code = code;
	e.message = (char *)message;
	k.job = job;
	k.signo = SIGKILL;
	k.refusal = &e;
	send_kill(o, &k);
}

void order_release(struct order_link *o, uint64_t job)
{
	Toolrun__Launcher__Release r = TOOLRUN__LAUNCHER__RELEASE__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	r.job = job;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_RELEASE;
	m.release = &r;
	order_send(o, &m, NULL, 0);
}

void order_check_input(struct order_link *o, uint64_t job)
{
	Toolrun__Launcher__CheckInput c = TOOLRUN__LAUNCHER__CHECK_INPUT__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	c.job = job;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_CHECK_INPUT;
	m.check_input = &c;
	order_send(o, &m, NULL, 0);
}

void order_open_pty(struct order_link *o, uint64_t job, uid_t uid, gid_t gid)
{
	Toolrun__Launcher__OpenPty p = TOOLRUN__LAUNCHER__OPEN_PTY__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	p.job = job;
	p.uid = (uint32_t)uid;
	p.gid = (uint32_t)gid;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_OPEN_PTY;
	m.open_pty = &p;
	order_send(o, &m, NULL, 0);
}

void order_check_waiting(struct order_link *o, uint64_t job, dev_t dev, ino_t ino)
{
	Toolrun__Launcher__CheckWaiting c = TOOLRUN__LAUNCHER__CHECK_WAITING__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	c.job = job;
	c.input_dev = (uint64_t)dev;
	c.input_ino = (uint64_t)ino;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_CHECK_WAITING;
	m.check_waiting = &c;
	order_send(o, &m, NULL, 0);
}

void order_open_spill(struct order_link *o, uint64_t job, Toolrun__Stream stream,
		      uid_t uid)
{
	Toolrun__Launcher__OpenSpill os = TOOLRUN__LAUNCHER__OPEN_SPILL__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	os.job = job;
	os.stream = (uint32_t)stream;
	os.uid = (uint32_t)uid;
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_OPEN_SPILL;
	m.open_spill = &os;
	order_send(o, &m, NULL, 0);
}

void order_audit(struct order_link *o, const char *line)
{
	Toolrun__Launcher__Audit au = TOOLRUN__LAUNCHER__AUDIT__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	au.line.data = (uint8_t *)line;
	au.line.len = strlen(line);
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_AUDIT;
	m.audit = &au;
	order_send(o, &m, NULL, 0);
}

void order_query_state(struct order_link *o)
{
	Toolrun__Launcher__QueryState q = TOOLRUN__LAUNCHER__QUERY_STATE__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;

	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_QUERY_STATE;
	m.query_state = &q;
	order_send(o, &m, NULL, 0);
}
