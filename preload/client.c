#include "client.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "connect.h"
#include "frame.h"
#include "procstate.h"
#include "sbuf.h"
#include "sink.h"
#include "toolrun.pb-c.h"

/* Signals that a terminal, `kill` or `timeout` send to a program: the
 * client receives them in its place and forwards them. The job-control
 * ones (TSTP, TTIN, TTOU, CONT) are handled by stop_with_program(). */
static const int forwarded_signals[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM,
	SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT,
};

/*
 * A stuck toolrund. The client waits for the daemon as long as a job may
 * legitimately take: its whole time limit, and longer while a tool waits
 * on a producer of its input (`make check | tail`) or a program handles
 * a signal. It must not wait for ever on a daemon that has stopped (a
 * SIGSTOP to its listener, a wedged process): nobody, not even `timeout`,
 * could then end the caller. So at the points below it asks, on a
 * connection of its own, for a Ping. A daemon that answers serves, and is
 * waited for again; one that says nothing within PING_WAIT_MS is given up
 * on: a job past its time limit ends with 124, one sent SIGTERM, SIGINT or
 * SIGHUP ends on that signal, one that never started leaves the exec to
 * the caller's fallback. The points:
 *   - START_WAIT_MS after the request, while Started has not come;
 *   - TIMEOUT_GRACE_MS past the job's time limit (Started.timeout_ms);
 *   - SIGNAL_GRACE_MS after a forwarded signal that ends the program;
 *   - RECHECK_MS after each answered Ping.
 * On the usual path this costs no system call: poll() gets a timeout
 * instead of -1, and the clock is read through the vDSO.
 */

/* Hello and Started follow the request within milliseconds (the daemon
 * only forks and execs). Ten seconds, the time the daemon itself gives a
 * client to send its request, leaves room for any load; and a look that
 * comes early costs one Ping. */
#define START_WAIT_MS 10000
/* Past the time limit the daemon asks whether a tool waits on a producer,
 * kills the group, reaps it, drains its pipes and sends Exit: milliseconds,
 * seconds on a loaded machine. A few seconds covers that, and the notice
 * of a real timeout is the daemon's, not ours. */
#define TIMEOUT_GRACE_MS 5000
/* A program that dies of a signal is reported within milliseconds. Two
 * seconds is short enough that `timeout` or a person at Ctrl-C sees the
 * caller end at once; a program that handles the signal and takes longer
 * is waited for, since the daemon answers the Ping. */
#define SIGNAL_GRACE_MS 2000
/* A listener that runs answers at its next turn of its loop; five seconds
 * of silence is one that is stopped or wedged, not one that is busy. */
#define PING_WAIT_MS 5000
/* The daemon answered, but the job goes on: look again this much later. */
#define RECHECK_MS 5000
#define NEVER INT64_MAX

/* Decoded messages live here; an Output holds at most 64 KiB. */
#define UNPACK_ARENA_SIZE (FRAME_MAX_SERVER_PAYLOAD + 16 * 1024)
/* Frames are read ahead into this: the largest fits whole. */
#define RECV_BUF_SIZE (FRAME_HEADER_SIZE + FRAME_MAX_SERVER_PAYLOAD)
/* Protobuf's worst case per string: tag plus a 5-byte length. */
#define PER_STRING_OVERHEAD 6

struct arena {
	uint8_t *base;
	size_t size;
	size_t used;
};

static void *arena_alloc(struct arena *a, size_t n)
{
	size_t at = (a->used + 15) & ~(size_t)15;
	if (at > a->size || n > a->size - at)
		return NULL;
	a->used = at + n;
	return a->base + at;
}

static void *pb_alloc(void *data, size_t n)
{
	return arena_alloc(data, n);
}

static void pb_free(void *data, void *p)
{
	(void)data;
	(void)p; /* the arena is reset per message */
}

/*
 * What the client sends after Hello: the Request (megabytes, with its
 * fds, for a long argv), then Signal and ReaderGone frames. A daemon that
 * reads nothing (a stopped listener) fills the socket, and a send that
 * waited for room there would keep the client from the signals it must
 * act on (timeout(1)'s SIGTERM) and from its watch on the daemon: only
 * SIGKILL would end it. So nothing waits for room. A frame goes out as far
 * as the socket takes it, the rest when poll() says there is room, and
 * the messages behind it wait in a queue as the kernel keeps signals
 * pending: each at most once, a SIGCONT dropping a waiting SIGSTOP and
 * the reverse.
 */
#define OUTBOX_QUEUE 32 /* more than the distinct messages queued */
#define OUTBOX_GONE(index) (-1 - (index)) /* ReaderGone for stdout (0), stderr (1) */

struct outbox {
	const uint8_t *buf; /* the frame going out, or NULL */
	size_t len, off;
	const int *fds;     /* attached to its first bytes */
	unsigned nfds, fds_sent;
	unsigned frames_sent;
	int error;          /* a send failed (-errno): nothing more is sent */
	uint8_t small[64];  /* a Signal or ReaderGone frame */
	int queue[OUTBOX_QUEUE]; /* signal numbers, or OUTBOX_GONE() */
	unsigned queued;
};

struct client {
	const struct client_call *call;
	struct client_result *res;

	uint8_t *map;
	size_t map_len;
	struct arena build;  /* request and Hello frames */
	struct arena unpack; /* one decoded message at a time */
	uint8_t *recv_buf;

	int sock;
	int sigfd;
	int cwd_fd;
	sigset_t saved_mask;
	bool signals_taken;

	struct sink_decision sink;
	/* The caller's signal state, read before the client blocks signals. */
	uint64_t blocked;
	uint64_t ignored;
	int *fds;          /* attached: the directory, then inherited fds */
	uint32_t *targets; /* fd number in the program, for fds[1..] */
	unsigned ntargets;
	unsigned nextra;   /* inherited fds beyond what a frame carries */

	struct outbox out;
	struct frame_reader reader;
	bool got_hello;
	bool started;
	bool reader_gone[2]; /* stdout, stderr: told the daemon */
	uint64_t delivered[2]; /* bytes of Output written to our stdout, stderr */

	/* The watch on a stuck daemon (above). */
	int64_t check_at;    /* monotonic ms of the next look, or NEVER */
	int ping;            /* the Ping's connection while it waits, or -1 */
	uint32_t timeout_ms; /* Started's: the job's time limit; 0: none */
	int ending_signal;   /* the first forwarded signal that ends the program */
	int dumpable;        /* PR_GET_DUMPABLE before client_run */
};

/* Give up before anything ran: the caller applies the fallback. */
static void unreachable(struct client *cl, int err, const char *what,
			const char *detail)
{
	struct sbuf sb = SBUF_INIT(cl->res->reason);

	cl->res->outcome = CLIENT_UNREACHABLE;
	cl->res->err = err;
	cl->res->reason[0] = '\0';
	sbuf_add(&sb, what);
	if (detail) {
		sbuf_add(&sb, ": ");
		sbuf_add(&sb, detail);
	}
}

/* "toolrun: NAME: WHAT[: DETAIL]" on stderr. */
static void say(const struct client *cl, const char *what, const char *detail)
{
	char msg[768];
	struct sbuf sb = SBUF_INIT(msg);

	sbuf_add(&sb, "toolrun: ");
	sbuf_add(&sb, path_base_name(cl->call->path));
	sbuf_add(&sb, ": ");
	sbuf_add(&sb, what);
	if (detail) {
		sbuf_add(&sb, ": ");
		sbuf_add(&sb, detail);
	}
	sbuf_addc(&sb, '\n');
	(void)write_all(STDERR_FILENO, msg, sb.len);
}

/* Give up after the program started: say why and exit 1. */
static NORETURN void fail_running(struct client *cl, const char *what,
				  const char *detail)
{
	say(cl, what, detail);
	_exit(1);
}

void client_exit_failure(const char *path, const struct client_result *res)
{
	char msg[768];
	struct sbuf sb = SBUF_INIT(msg);

	sbuf_add(&sb, "toolrun: ");
	sbuf_add(&sb, path_base_name(path));
	sbuf_add(&sb, ": ");
	sbuf_add(&sb, res->reason);
	sbuf_addc(&sb, '\n');
	(void)write_all(STDERR_FILENO, msg, sb.len);
	_exit(res->code ? res->code : 1);
}

/* Does a core dump of this process land somewhere other than the
 * program's (a pipe to a handler, or a name with the pid in it)? */
static bool core_name_is_per_process(void)
{
	char buf[256];
	int fd = open("/proc/sys/kernel/core_uses_pid", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, 1) : -1;

	close_fd(&fd);
	if (n == 1 && buf[0] == '1')
		return true;
	fd = open("/proc/sys/kernel/core_pattern", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	close_fd(&fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return buf[0] == '|' || strstr(buf, "%p") || strstr(buf, "%P");
}

/*
 * The stand-in holds its caller's channel: the stdout and stderr that
 * reach the agent (or an MCP client), and the socket of the job. The
 * programs it serves run as the same uid, and could open all of them
 * through /proc/PID/fd and write there past the budget and the audit's
 * counts. Undumpable, its fds, memory and environment take CAP_SYS_PTRACE
 * to reach (what the daemon does for its own processes). Returns what it
 * was, for put_back_dumpable().
 */
static int hide_from_programs(void)
{
	int was = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return was;
}

/* The process goes on as itself (nothing ran, or it dies dumping core):
 * as dumpable as it was. An execve that follows sets it anew anyway. */
static void put_back_dumpable(int was)
{
	if (was == 1)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/* Die of sig as the program did, so that the shell reports 128+sig. */
static NORETURN void die_by_signal(int sig, bool core_dumped, int dumpable)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t one;

	/* Our image is not the program's: dump it only when the program
	 * dumped (so that the shell says "core dumped") and our core cannot
	 * take the place of the program's own. An undumpable process dumps
	 * nothing: it becomes dumpable again, as it was, but only once it
	 * holds nothing of its caller's that a program could then reach. */
	if (!core_dumped || !core_name_is_per_process()) {
		struct rlimit none = {0, 0};
		setrlimit(RLIMIT_CORE, &none);
	} else if (dumpable == 1) {
		if (syscall(SYS_close_range, 0U, ~0U, 0U) < 0)
			for (int fd = 0; fd < 1024; fd++)
				close(fd);
		put_back_dumpable(dumpable);
	}
	sigaction(sig, &dfl, NULL);
	kill(getpid(), sig);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	/* Not a terminating signal after all (or SIGSTOP and we resumed). */
	_exit(128 + (sig & 0x7f));
}

static size_t count_strings(char *const *v, size_t *bytes)
{
	size_t n = 0;

	for (; v && v[n]; n++)
		*bytes += strlen(v[n]);
	return n;
}

static int setup_memory(struct client *cl, size_t *argc, size_t *envc)
{
	size_t bytes = strlen(cl->call->path);

	*argc = count_strings(cl->call->argv, &bytes);
	*envc = count_strings(cl->call->envp, &bytes);
	size_t strings = *argc + *envc + 2;
	size_t build = strings * (sizeof(ProtobufCBinaryData) + PER_STRING_OVERHEAD) +
		       bytes + 2 * PATH_MAX +
		       FRAME_MAX_FDS * (sizeof(int) + 2 * sizeof(uint32_t)) +
		       64 * 1024;
	size_t page = 4096;
	build = (build + page - 1) & ~(page - 1);

	cl->map_len = build + UNPACK_ARENA_SIZE + RECV_BUF_SIZE;
	cl->map = mmap(NULL, cl->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cl->map == MAP_FAILED) {
		cl->map = NULL;
		return -errno;
	}
	cl->build = (struct arena){cl->map, build, 0};
	cl->unpack = (struct arena){cl->map + build, UNPACK_ARENA_SIZE, 0};
	cl->recv_buf = cl->map + build + UNPACK_ARENA_SIZE;
	cl->fds = arena_alloc(&cl->build, FRAME_MAX_FDS * sizeof(int));
	cl->targets = arena_alloc(&cl->build, FRAME_MAX_FDS * sizeof(uint32_t));
	return 0;
}

static void consider_fd(struct client *cl, int fd)
{
	if (fd == cl->cwd_fd)
		return;
	if ((fd == 1 && cl->sink.shape_stdout) || (fd == 2 && cl->sink.shape_stderr))
		return; /* the daemon supplies a pipe */
	int flags = fcntl(fd, F_GETFD);
	if (flags < 0 || (flags & FD_CLOEXEC))
		return; /* closed, or would not survive exec */
	if (cl->ntargets + 1 >= FRAME_MAX_FDS) {
		cl->nextra++; /* the request fails: see too_many_fds() */
		return;
	}
	/* Keep the list sorted: the directory scan is, mostly. */
	unsigned i = cl->ntargets++;
	while (i > 0 && cl->targets[i - 1] > (uint32_t)fd) {
		cl->targets[i] = cl->targets[i - 1];
		i--;
	}
	cl->targets[i] = (uint32_t)fd;
}

static void consider_listed_fd(int fd, void *arg)
{
	consider_fd(arg, fd);
}

/* Every fd the program would inherit across exec, at its number. */
static void collect_fds(struct client *cl)
{
	/* A read that fails part-way keeps the fds seen so far. */
	if (fd_walk(consider_listed_fd, cl) == FD_WALK_NO_DIR)
		for (int fd = 0; fd < 1024; fd++)
			consider_fd(cl, fd);
	cl->fds[0] = cl->cwd_fd;
	for (unsigned i = 0; i < cl->ntargets; i++)
		cl->fds[1 + i] = (int)cl->targets[i];
}

/*
 * The program would inherit more fds than a request may carry. Passing
 * only some would run it with fewer than it would have run with, and
 * nothing says which it needs: refuse, and say how to make room. Only
 * fds without close-on-exec count, since no others reach the program,
 * and not a stdout or stderr that the daemon replaces with its pipe.
 */
static void too_many_fds(struct client *cl)
{
	struct sbuf sb = SBUF_INIT(cl->res->reason);

	cl->res->outcome = CLIENT_EXEC_FAILED;
	cl->res->err = EMFILE;
	cl->res->code = 126;
	cl->res->reason[0] = '\0';
	sbuf_add(&sb, "the program would inherit ");
	sbuf_add_u64(&sb, cl->ntargets + cl->nextra);
	sbuf_add(&sb, " open file descriptors; toolrun passes at most ");
	sbuf_add_u64(&sb, FRAME_MAX_FDS - 1);
	sbuf_add(&sb, " (close the others, or set close-on-exec on them)");
}

/*
 * The program runs, with its own copies of the fds it inherits. Ours would
 * keep a pipe's read end open after the program died, so that the writer
 * upstream (`seq | cat | head -1`) never got its SIGPIPE; and a write end
 * would delay a reader's end of file. Not before Started: an exec that
 * fails returns to a caller that still needs them. Stderr stays: our own
 * messages go there.
 */
static void drop_passed_fds(struct client *cl)
{
	for (unsigned i = 0; i < cl->ntargets; i++)
		if (cl->targets[i] != STDERR_FILENO)
			close((int)cl->targets[i]);
}

static bool fill_binaries(struct client *cl, char *const *v, size_t n,
			  ProtobufCBinaryData **out)
{
	ProtobufCBinaryData *b = arena_alloc(&cl->build, (n ? n : 1) * sizeof(*b));
	if (!b)
		return false;
	for (size_t i = 0; i < n; i++) {
		b[i].data = (uint8_t *)v[i];
		b[i].len = strlen(v[i]);
	}
	*out = b;
	return true;
}

static uint64_t signal_bit(int sig)
{
	return UINT64_C(1) << (sig - 1);
}

/* What the program would inherit across exec, besides fds and cwd: each
 * part that cannot be read is sent as 0 (a limit: not sent). */
static void capture_state(struct client *cl, Toolrun__ProcessState *st,
			  struct procstate *ps, Toolrun__Limit *limits,
			  Toolrun__Limit **limit_ptrs)
{
	(void)procstate_capture(ps);
	st->umask = ps->umask;
	cl->blocked = ps->blocked_signals;
	cl->ignored = ps->ignored_signals;
	st->blocked_signals = cl->blocked;
	st->ignored_signals = cl->ignored;
	st->n_limits = 0;
	st->limits = limit_ptrs;
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		if (!(ps->limits_read & (UINT32_C(1) << r)))
			continue;
		Toolrun__Limit *l = &limits[st->n_limits];
		toolrun__limit__init(l);
		l->resource = (uint32_t)r;
		l->soft = ps->limits[r].rlim_cur;
		l->hard = ps->limits[r].rlim_max;
		limit_ptrs[st->n_limits++] = l;
	}
	/* Scheduling attributes that survive exec. */
	st->nice = ps->nice;
	if (ps->cpu_affinity_len) {
		st->cpu_affinity.data = ps->cpu_affinity;
		st->cpu_affinity.len = ps->cpu_affinity_len;
	}
	st->oom_score_adj = ps->oom_score_adj;
	st->io_priority = ps->io_priority;
	st->sched_policy = (uint32_t)ps->sched_policy;
	st->sched_priority = (uint32_t)ps->sched_priority;
	st->personality = (uint32_t)ps->personality;
}

/* What execve makes of these strings (frame.h). */
static size_t exec_bytes(const ProtobufCBinaryData *v, size_t n)
{
	size_t bytes = 0;

	for (size_t i = 0; i < n; i++)
		bytes += FRAME_EXEC_COST(v[i].len);
	return bytes;
}

/* Pack Hello and Request into one buffer; the fds go with the Request. */
static int build_frames(struct client *cl, size_t argc, size_t envc,
			uint8_t **buf, size_t *hello_len, size_t *total)
{
	const struct client_call *call = cl->call;
	Toolrun__Hello hello = TOOLRUN__HELLO__INIT;
	Toolrun__ClientMessage hmsg = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__Request req = TOOLRUN__REQUEST__INIT;
	Toolrun__ClientMessage rmsg = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__ProcessState state = TOOLRUN__PROCESS_STATE__INIT;
	Toolrun__AgentStreams agent = TOOLRUN__AGENT_STREAMS__INIT;
	Toolrun__Limit limits[RLIM_NLIMITS];
	Toolrun__Limit *limit_ptrs[RLIM_NLIMITS];
	struct procstate ps;

	hello.protocol_version = TOOLRUN__VERSION__VERSION_1;
	hello.software = (char *)call->software;
	hello.request_follows = true; /* sent back to back below */
	hmsg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	hmsg.hello = &hello;

	char *cwd = arena_alloc(&cl->build, PATH_MAX);
	if (!cwd || !fill_binaries(cl, call->argv, argc, &req.argv) ||
	    !fill_binaries(cl, call->envp, envc, &req.envp))
		return -ENOMEM;
	if (syscall(SYS_getcwd, cwd, PATH_MAX) < 0 || cwd[0] != '/')
		cwd[0] = '\0'; /* deleted or unreachable: the fd still works */

	req.executable.data = (uint8_t *)call->path;
	req.executable.len = strlen(call->path);
	req.n_argv = argc;
	req.n_envp = envc;
	req.cwd.data = (uint8_t *)cwd;
	req.cwd.len = strlen(cwd);
	req.n_fds = cl->ntargets;
	req.fds = cl->targets;
	req.shape_stdout = cl->sink.shape_stdout;
	req.shape_stderr = cl->sink.shape_stderr;
	req.stderr_joins_stdout = cl->sink.joined;
	agent.stdout_reaches_agent = cl->sink.agent_stdout;
	agent.stderr_reaches_agent = cl->sink.agent_stderr;
	req.agent_streams = &agent;
	req.command = call->command;
	req.below_harness = !call->command && sink_below_harness(call->envp);
	capture_state(cl, &state, &ps, limits, limit_ptrs);
	req.state = &state;
	rmsg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
	rmsg.request = &req;

	/* More than any execve takes fails as it would directly, and
	 * toolrund would refuse it. */
	if (exec_bytes(req.argv, argc) + exec_bytes(req.envp, envc) > FRAME_MAX_EXEC_BYTES)
		return -E2BIG;
	size_t hsize = frame_size(&hmsg.base);
	size_t rsize = frame_size(&rmsg.base);
	if (rsize - FRAME_HEADER_SIZE > FRAME_MAX_CLIENT_PAYLOAD)
		return -E2BIG;
	*buf = arena_alloc(&cl->build, hsize + rsize);
	if (!*buf)
		return -ENOMEM;
	*hello_len = frame_pack(&hmsg.base, 0, *buf);
	*total = *hello_len +
		 frame_pack(&rmsg.base, (uint16_t)(cl->ntargets + 1), *buf + *hello_len);
	return 0;
}

static int take_signals(struct client *cl)
{
	sigset_t all, fwd;

	/* Block everything but faults of our own: the caller's handlers must
	 * not run in the program's place, and signals for the program are
	 * read from the signalfd. */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	if (sigprocmask(SIG_BLOCK, &all, &cl->saved_mask) < 0)
		return -errno;
	cl->signals_taken = true;

	/* Every signal goes on to the program, which ignores what the
	 * caller ignored (the request carries that), exactly as it would run
	 * directly. The job-control ones, which stop the client itself, are
	 * taken only where the caller does not ignore them. */
	sigemptyset(&fwd);
	for (size_t i = 0; i < ARRAY_SIZE(forwarded_signals); i++) {
		int sig = forwarded_signals[i];
		bool stops = sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
		if (!(stops && (cl->ignored & signal_bit(sig))))
			sigaddset(&fwd, sig);
	}
	cl->sigfd = signalfd(-1, &fwd, SFD_CLOEXEC | SFD_NONBLOCK);
	return cl->sigfd < 0 ? -errno : 0;
}

static void release(struct client *cl)
{
	close_fd(&cl->sock);
	close_fd(&cl->ping);
	close_fd(&cl->sigfd);
	close_fd(&cl->cwd_fd);
	if (cl->signals_taken) {
		sigprocmask(SIG_SETMASK, &cl->saved_mask, NULL);
		cl->signals_taken = false;
	}
	if (cl->map) {
		munmap(cl->map, cl->map_len);
		cl->map = NULL;
	}
	put_back_dumpable(cl->dumpable);
}

static void send_signal(struct client *cl, int signo);

/*
 * Job control. The program runs in its own session, where the kernel
 * discards SIGTSTP (its process group is orphaned), so it is stopped with
 * SIGSTOP; then the client stops itself with the signal it got, so that
 * the shell sees the job stopped. When the shell continues it, the
 * program continues too.
 */
static void stop_with_program(struct client *cl, int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
	sigset_t one;

	send_signal(cl, SIGSTOP);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigaction(sig, &dfl, &old);
	kill(getpid(), sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL); /* stops here until SIGCONT */
	sigprocmask(SIG_BLOCK, &one, NULL);
	sigaction(sig, &old, NULL);
	send_signal(cl, SIGCONT);
}

/* ---- The outbox (above) ---- */

static void outbox_remove(struct outbox *o, int item)
{
	for (unsigned i = 0; i < o->queued; i++) {
		if (o->queue[i] != item)
			continue;
		memmove(o->queue + i, o->queue + i + 1, (o->queued - i - 1) * sizeof(int));
		o->queued--;
		return;
	}
}

static void outbox_queue(struct outbox *o, int item)
{
	if (o->error)
		return;
	if (item == SIGCONT)
		outbox_remove(o, SIGSTOP);
	else if (item == SIGSTOP)
		outbox_remove(o, SIGCONT);
	for (unsigned i = 0; i < o->queued; i++)
		if (o->queue[i] == item)
			return; /* already pending */
	if (o->queued < OUTBOX_QUEUE)
		o->queue[o->queued++] = item;
}

/* The next queued message, packed into the outbox's own frame. */
static void outbox_next(struct outbox *o)
{
	Toolrun__ClientMessage msg = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__Signal sig = TOOLRUN__SIGNAL__INIT;
	Toolrun__ReaderGone gone = TOOLRUN__READER_GONE__INIT;
	int item = o->queue[0];

	outbox_remove(o, item);
	if (item > 0) {
		sig.signo = item;
		msg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_SIGNAL;
		msg.signal = &sig;
	} else {
		gone.stream = item == OUTBOX_GONE(1) ? TOOLRUN__STREAM__STREAM_STDERR
						     : TOOLRUN__STREAM__STREAM_STDOUT;
		msg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_READER_GONE;
		msg.reader_gone = &gone;
	}
	o->len = frame_pack(&msg.base, 0, o->small);
	o->buf = o->small;
	o->off = 0;
	o->fds = NULL;
	o->nfds = o->fds_sent = 0;
}

/* Send what the socket takes now. Returns 0 when all went, -EAGAIN when
 * the rest waits for room, or the -errno of a send that failed, this time
 * or before (then nothing more is sent). */
static int outbox_flush(struct outbox *o, int sock)
{
	while (!o->error && (o->buf || o->queued)) {
		if (!o->buf)
			outbox_next(o);
		int r = frame_send_partial(sock, o->buf, o->len, &o->off, o->fds, o->nfds,
					   &o->fds_sent);
		if (r == -EAGAIN)
			return r;
		o->buf = NULL;
		if (r < 0) {
			o->error = r;
			o->queued = 0;
		} else {
			o->frames_sent++;
		}
	}
	return o->error;
}

static bool outbox_waiting(const struct outbox *o)
{
	return !o->error && (o->buf || o->queued);
}

static bool request_sent(const struct client *cl)
{
	return cl->out.frames_sent > 0;
}

static bool read_frames(struct client *cl);

/* Send what the outbox holds, as far as the socket takes it. Returns true
 * when client_run returns: the request could not be sent. A failure
 * after it shows up as EOF on the next read. */
static bool send_pending(struct client *cl)
{
	int r = outbox_flush(&cl->out, cl->sock);

	if (request_sent(cl))
		close_fd(&cl->cwd_fd); /* toolrund has its own */
	if (r == 0 || r == -EAGAIN || request_sent(cl))
		return false;
	/* A daemon that refuses a peer says why, then closes: the reason
	 * may be waiting, unread. */
	if ((r == -EPIPE || r == -ECONNRESET) && read_frames(cl))
		return true;
	unreachable(cl, -r, "cannot send the request to toolrund", errno_text(r));
	return true;
}

/* Queued, and sent as far as the socket takes it; the event loop sends
 * the rest, and learns there of a failure. */
static void send_signal(struct client *cl, int signo)
{
	outbox_queue(&cl->out, signo);
	(void)outbox_flush(&cl->out, cl->sock);
}

/* Write all of p to fd, waiting if fd is non-blocking; *done counts
 * what was written, also before a failure. */
static int write_out(int fd, const uint8_t *p, size_t n, uint64_t *done)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = {.fd = fd, .events = POLLOUT};
				poll(&pfd, 1, -1);
				continue;
			}
			return -errno;
		}
		p += w;
		n -= (size_t)w;
		*done += (uint64_t)w;
	}
	return 0;
}

/*
 * Whoever read a shaped stream on our side is gone. Run directly, the
 * program would get SIGPIPE (or EPIPE) at its next write; so the daemon
 * closes its end of the program's pipe, and the program meets the same
 * fate at the same point. Its status then comes back with Exit as usual.
 */
/* Our stdout (index 0) or stderr (1), where a job's Output goes. */
static int output_fd(int index)
{
	return index ? STDERR_FILENO : STDOUT_FILENO;
}

static void reader_gone(struct client *cl, int index)
{
	if (cl->reader_gone[index])
		return;
	cl->reader_gone[index] = true;
	outbox_queue(&cl->out, OUTBOX_GONE(index));
	(void)outbox_flush(&cl->out, cl->sock);
}

static void on_output(struct client *cl, const Toolrun__Output *out)
{
	int index = out->stream == TOOLRUN__STREAM__STREAM_STDERR ? 1 : 0;

	if (cl->reader_gone[index])
		return; /* already sent away: nobody reads it */
	int r = write_out(output_fd(index), out->data.data,
			  out->data.len, &cl->delivered[index]);
	if (r == -EPIPE)
		reader_gone(cl, index);
	/* Other errors: the stream is gone (a closed fd), as is the output. */
}

/* ---- The watch on a stuck daemon ---- */

static void check_no_later(struct client *cl, int64_t at)
{
	if (at < cl->check_at)
		cl->check_at = at;
}

/* poll()'s timeout: until the next look at toolrund, or none. */
static int poll_timeout(const struct client *cl)
{
	if (cl->check_at == NEVER)
		return -1;
	int64_t left = cl->check_at - monotonic_ms();
	return left <= 0 ? 0 : left < INT_MAX ? (int)left : INT_MAX;
}

/*
 * The signals that ask a program to end (timeout(1), Ctrl-C, a terminal
 * that closed), when the program does not ignore or block them: it gets
 * the caller's choice. The client ends on them itself if toolrund is
 * stuck; other signals only go on to the program, as before.
 */
static bool ends_program(const struct client *cl, int sig)
{
	if (sig != SIGTERM && sig != SIGINT && sig != SIGHUP)
		return false;
	return !((cl->ignored | cl->blocked) & signal_bit(sig));
}

static const char *ending_signal_name(int sig)
{
	switch (sig) {
	case SIGTERM:
		return "SIGTERM";
	case SIGINT:
		return "SIGINT";
	default:
		return "SIGHUP";
	}
}

/* A signal went on to the program: if it ends it, its Exit is due soon.
 * A Ping already waiting decides first. */
static void note_signal(struct client *cl, int sig)
{
	if (cl->ending_signal || !ends_program(cl, sig))
		return;
	cl->ending_signal = sig;
	if (cl->ping < 0)
		check_no_later(cl, monotonic_ms() + SIGNAL_GRACE_MS);
}

/* Started: the next look is due past the job's time limit, if it has one
 * (or sooner, for a signal that ends it). */
static void on_started(struct client *cl, const Toolrun__Started *s)
{
	cl->started = true;
	cl->timeout_ms = s->timeout_ms;
	drop_passed_fds(cl);
	close_fd(&cl->ping); /* it serves */
	if (cl->ending_signal)
		return;
	cl->check_at = s->timeout_ms
			       ? monotonic_ms() + s->timeout_ms + TIMEOUT_GRACE_MS
			       : NEVER;
}

/* The daemon answered the Ping, or wrote to the job's connection while it
 * waited: it serves. Look again later. */
static void daemon_answered(struct client *cl)
{
	close_fd(&cl->ping);
	cl->check_at = monotonic_ms() + RECHECK_MS;
}

/* Ask toolrund, on a connection of its own, whether it serves: Hello and
 * Ping. Returns that connection, or -errno. */
static int ping_daemon(const struct client *cl)
{
	Toolrun__Hello hello = TOOLRUN__HELLO__INIT;
	Toolrun__Ping ping = TOOLRUN__PING__INIT;
	Toolrun__ClientMessage hmsg = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__ClientMessage pmsg = TOOLRUN__CLIENT_MESSAGE__INIT;
	uint8_t buf[256];
	char why[256];
	const char *where;

	hello.protocol_version = TOOLRUN__VERSION__VERSION_1;
	hello.software = (char *)cl->call->software;
	hmsg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	hmsg.hello = &hello;
	pmsg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
	pmsg.ping = &ping;
	if (frame_size(&hmsg.base) + frame_size(&pmsg.base) > sizeof(buf))
		return -E2BIG;
	int s = connect_daemon(cl->call->cfg, 0, &where, why, sizeof(why));
	if (s < 0)
		return s;
	size_t n = frame_pack(&hmsg.base, 0, buf);
	n += frame_pack(&pmsg.base, 0, buf + n);
	int r = frame_send(s, buf, n, NULL, 0);
	if (r < 0) {
		close(s);
		return r;
	}
	return s;
}

/* "N s", or "N ms" for a part of a second */
static void add_duration(struct sbuf *sb, uint64_t ms)
{
	sbuf_add_u64(sb, ms % 1000 ? ms : ms / 1000);
	sbuf_add(sb, ms % 1000 ? " ms" : " s");
}

/* toolrund is late and does not answer. Returns true when client_run
 * returns (nothing ran); otherwise the process ends here. */
static bool give_up(struct client *cl)
{
	char what[256];
	struct sbuf sb = SBUF_INIT(what);

	if (cl->ending_signal) {
		const char *sig = ending_signal_name(cl->ending_signal);
		sbuf_add(&sb, "toolrund did not report the program's end within ");
		add_duration(&sb, SIGNAL_GRACE_MS);
		sbuf_add(&sb, " of ");
		sbuf_add(&sb, sig);
		sbuf_add(&sb, " and does not answer; ending on ");
		sbuf_add(&sb, sig);
		say(cl, what, NULL);
		die_by_signal(cl->ending_signal, false, cl->dumpable);
	}
	if (cl->started) {
		sbuf_add(&sb, "toolrund did not end the job within its ");
		sbuf_add(&sb, cl->call->command ? "command_timeout (" : "timeout (");
		add_duration(&sb, cl->timeout_ms);
		sbuf_add(&sb, ") + ");
		add_duration(&sb, TIMEOUT_GRACE_MS);
		sbuf_add(&sb, " and does not answer; giving up");
		say(cl, what, NULL);
		_exit(124); /* the status of a timeout */
	}
	sbuf_add(&sb, "toolrund did not start the program within ");
	add_duration(&sb, START_WAIT_MS);
	sbuf_add(&sb, " of the request and does not answer");
	unreachable(cl, ETIMEDOUT, what, NULL);
	return true;
}

/* A look at toolrund is due, and nothing arrived meanwhile. Returns true
 * when client_run returns. */
static bool on_check_due(struct client *cl)
{
	if (cl->ping < 0) {
		cl->ping = ping_daemon(cl);
		if (cl->ping >= 0) {
			cl->check_at = monotonic_ms() + PING_WAIT_MS;
			return false;
		}
	}
	return give_up(cl);
}

/* Our stdout or stderr (index) has no reader left: told the daemon
 * already, or a pipe whose read end is closed now. */
static bool reader_left(const struct client *cl, int index)
{
	struct pollfd pfd = {.fd = output_fd(index)};

	if (cl->reader_gone[index])
		return true;
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR);
}

/* Bytes of ours that the pipe at our stdout or stderr (index) holds,
 * not taken by its reader; still counted once the reader has left. */
static uint64_t unread_bytes(int index)
{
	int n = 0;

	return ioctl(output_fd(index), FIONREAD, &n) == 0 && n > 0 ? (uint64_t)n : 0;
}

/* Run directly, would the program still be in a write to this reader:
 * did it write more than the reader took plus what the pipe holds? */
static bool would_be_writing(const struct client *cl, int index, uint64_t written,
			     uint64_t capacity)
{
	uint64_t unread = unread_bytes(index);
	uint64_t taken = cl->delivered[index] > unread ? cl->delivered[index] - unread : 0;

	return written > taken + capacity;
}

/* A signal while the caller stands in for the program's last write: the
 * program, run directly, would have met it there. */
static void on_signal_in_write(struct client *cl)
{
	struct signalfd_siginfo si;

	while (read(cl->sigfd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;
		if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			stop_with_program(cl, sig);
		else if (ends_program(cl, sig))
			die_by_signal(sig, false, cl->dumpable);
	}
}

/* A pipe tells its writer when the reader leaves, not when it has read
 * everything: how often the caller looks, while it stands in for a write. */
#define READER_LOOK_MS 10

/*
 * The program ended while, run directly, it would still be in a write to
 * our stdout or stderr (index), having written `written` bytes. Stand in
 * for that write: wait while the reader is there and has bytes of ours
 * left to read. Returns true when the reader leaves with the program
 * still in that write (it would have died of SIGPIPE); false when it took
 * enough for the write to end, or took all it was given and waits for
 * more: bytes that were cut never reach it, and what it would have done
 * with them cannot be known.
 */
static bool reader_leaves_during_write(struct client *cl, int index, uint64_t written,
				       uint64_t capacity)
{
	for (;;) {
		bool left = reader_left(cl, index);
		if (!would_be_writing(cl, index, written, capacity))
			return false;
		if (left)
			return true;
		if (unread_bytes(index) == 0)
			return false;
		struct pollfd pfd[2] = {
			{.fd = output_fd(index)}, /* POLLERR: the reader left */
			{.fd = cl->sigfd, .events = POLLIN},
		};
		if (poll(pfd, 2, READER_LOOK_MS) > 0 && (pfd[1].revents & POLLIN))
			on_signal_in_write(cl);
	}
}

/*
 * Would the tool have died of SIGPIPE, run directly? toolrund reads a
 * shaped stream ahead of its reader (it drains what it cuts, and holds a
 * tail until the stream ends), so the program may end while, run
 * directly, it would still be in a write: it wrote more than its reader
 * took plus what the pipe holds. Then the caller stands in for that write
 * (reader_leaves_during_write). Not when the caller had SIGPIPE ignored
 * or blocked (the program would have met EPIPE and chosen its own
 * status), nor for an agent command, whose shell turns its programs'
 * deaths into a status of its own.
 */
static bool died_of_sigpipe_directly(struct client *cl, const Toolrun__Exit *ex)
{
	const Toolrun__StreamStats *stats[2] = {ex->stdout_stats, ex->stderr_stats};

	if (cl->call->command || ex->timed_out || ex->exec_errno ||
	    ((cl->ignored | cl->blocked) & signal_bit(SIGPIPE)))
		return false;
	for (int i = 0; i < 2; i++) {
		if (!stats[i] || !stats[i]->shaped)
			continue;
		int capacity = fcntl(output_fd(i), F_GETPIPE_SZ);
		if (capacity > 0 && /* a pipe */
		    reader_leaves_during_write(cl, i, stats[i]->bytes_seen, (uint64_t)capacity))
			return true;
	}
	return false;
}

static NORETURN void on_exit_started(struct client *cl, const Toolrun__Exit *ex)
{
	if (ex->status_case == TOOLRUN__EXIT__STATUS_SIGNAL)
		die_by_signal(ex->signal, ex->core_dumped, cl->dumpable);
	if (died_of_sigpipe_directly(cl, ex))
		die_by_signal(SIGPIPE, false, cl->dumpable);
	_exit(ex->code & 0xff);
}

/* Handle one message. Returns true when client_run should return. */
static bool on_message(struct client *cl, const Toolrun__ServerMessage *m)
{
	if (!cl->got_hello && m->msg_case != TOOLRUN__SERVER_MESSAGE__MSG_HELLO &&
	    m->msg_case != TOOLRUN__SERVER_MESSAGE__MSG_ERROR)
		goto unexpected;

	switch (m->msg_case) {
	case TOOLRUN__SERVER_MESSAGE__MSG_HELLO:
		if (cl->got_hello)
			goto unexpected;
		if (m->hello->protocol_version != TOOLRUN__VERSION__VERSION_1) {
			char v[24];
			fmt_u64(v, m->hello->protocol_version);
			unreachable(cl, EPROTO, "toolrund speaks another protocol version", v);
			return true;
		}
		cl->got_hello = true;
		return false;
	case TOOLRUN__SERVER_MESSAGE__MSG_STARTED:
		on_started(cl, m->started);
		return false;
	case TOOLRUN__SERVER_MESSAGE__MSG_OUTPUT:
		on_output(cl, m->output);
		return false;
	case TOOLRUN__SERVER_MESSAGE__MSG_EXIT:
		if (cl->started)
			on_exit_started(cl, m->exit);
		/* Nothing ran: let the caller decide what the exec returns. */
		cl->res->outcome = CLIENT_EXEC_FAILED;
		cl->res->err = m->exit->exec_errno;
		cl->res->code = m->exit->status_case == TOOLRUN__EXIT__STATUS_CODE
					? m->exit->code
					: 1;
		{
			struct sbuf sb = SBUF_INIT(cl->res->reason);
			cl->res->reason[0] = '\0';
			sbuf_add(&sb, m->exit->reason && m->exit->reason[0]
					      ? m->exit->reason
					      : "toolrund could not run it");
		}
		return true;
	case TOOLRUN__SERVER_MESSAGE__MSG_ERROR:
		if (cl->started)
			fail_running(cl, "toolrund ended the request", m->error->message);
		unreachable(cl, EACCES, "toolrund refused the request",
			    m->error->message);
		return true;
	case TOOLRUN__SERVER_MESSAGE__MSG_PONG:
	case TOOLRUN__SERVER_MESSAGE__MSG__NOT_SET:
	default:
		break;
	}
unexpected:
	if (cl->started)
		fail_running(cl, "protocol error", "unexpected message from toolrund");
	unreachable(cl, EPROTO, "protocol error", "unexpected message from toolrund");
	return true;
}

/* Read whatever frames are ready. Returns true when client_run returns. */
static bool read_frames(struct client *cl)
{
	ProtobufCAllocator alloc = {pb_alloc, pb_free, &cl->unpack};

	for (;;) {
		int r = frame_reader_read(&cl->reader, cl->sock);
		if (r == FRAME_READ_AGAIN)
			return false;
		if (r != FRAME_READ_READY) {
			const char *why = r == FRAME_READ_EOF ? "the daemon closed the connection"
							      : errno_text(-r);
			if (cl->started)
				fail_running(cl, "lost connection to toolrund", why);
			unreachable(cl, r == FRAME_READ_EOF ? EPIPE : -r,
				    "toolrund did not answer", why);
			return true;
		}
		cl->unpack.used = 0;
		Toolrun__ServerMessage *m = toolrun__server_message__unpack(
			&alloc, cl->reader.h.length, cl->reader.payload);
		frame_reader_next(&cl->reader);
		if (!m) {
			if (cl->started)
				fail_running(cl, "protocol error", "undecodable message from toolrund");
			unreachable(cl, EPROTO, "protocol error",
				    "undecodable message from toolrund");
			return true;
		}
		if (on_message(cl, m))
			return true;
	}
}

static bool watchable(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

static void event_loop(struct client *cl)
{
	/* Shaped output goes through us: notice when its reader leaves. */
	bool watch[2] = {
		cl->sink.shape_stdout && watchable(STDOUT_FILENO),
		cl->sink.shape_stderr && !cl->sink.joined && watchable(STDERR_FILENO),
	};

	for (;;) {
		/* poll() skips the Ping's entry while none waits (fd -1). */
		struct pollfd pfd[5] = {
			{.fd = cl->sock,
			 .events = POLLIN | (outbox_waiting(&cl->out) ? POLLOUT : 0)},
			{.fd = cl->sigfd, .events = POLLIN},
			{.fd = cl->ping, .events = POLLIN},
		};
		int stream_of[5] = {-1, -1, -1, -1, -1};
		nfds_t n = 3;
		for (int i = 0; i < 2; i++) {
			if (!watch[i] || cl->reader_gone[i])
				continue;
			stream_of[n] = i;
			pfd[n++] = (struct pollfd){.fd = output_fd(i)};
		}

		int ready = poll(pfd, n, poll_timeout(cl));
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			if (cl->started)
				fail_running(cl, "poll", errno_text(errno));
			unreachable(cl, errno, "poll", errno_text(errno));
			return;
		}
		if (ready == 0) {
			if (monotonic_ms() >= cl->check_at && on_check_due(cl))
				return;
			continue;
		}
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(cl->sigfd, &si, sizeof(si)) == sizeof(si)) {
				int sig = (int)si.ssi_signo;
				if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
					stop_with_program(cl, sig);
				} else {
					send_signal(cl, sig);
					note_signal(cl, sig);
				}
			}
		}
		for (nfds_t i = 3; i < n; i++)
			if (pfd[i].revents & (POLLERR | POLLHUP))
				reader_gone(cl, stream_of[i]);
		/* Whatever comes back, even a refusal, is a daemon that runs
		 * (room in the socket is one that reads). */
		if (cl->ping >= 0 && (pfd[2].revents || pfd[0].revents))
			daemon_answered(cl);
		if ((pfd[0].revents & ~POLLOUT) && read_frames(cl))
			return;
		if (send_pending(cl))
			return;
	}
}

/* The working directory, as an O_PATH fd. A process may be in a
 * directory it cannot search (root without CAP_DAC_OVERRIDE in another
 * user's 0700 directory, where `docker exec -w` put it): "." is then out
 * of its reach, but the kernel's own link to it is not. */
static int open_cwd(void)
{
	int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 && errno == EACCES)
		fd = open("/proc/self/cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd;
}

void client_run(const struct client_call *call, struct client_result *res)
{
	struct client cl = {
		.call = call, .res = res, .sock = -1, .sigfd = -1, .cwd_fd = -1,
		.ping = -1, .check_at = NEVER,
	};
	size_t argc, envc, hello_len, total;
	uint8_t *frames;
	int r;

	memset(res, 0, sizeof(*res));
	cl.dumpable = hide_from_programs();
	if ((r = setup_memory(&cl, &argc, &envc)) < 0) {
		unreachable(&cl, -r, "cannot map memory", errno_text(r));
		goto out;
	}
	if (call->command) {
		sink_decide_command(&cl.sink);
	} else {
		/* `toolrun run` of a program the config does not list: the
		 * daemon says why it will not run it. */
		struct limits limits = call->tool >= 0 ? config_tool_limits(call->cfg, call->tool)
						       : call->cfg->defaults;
		sink_decide(call->cfg, &limits, call->envp, &cl.sink);
	}
	cl.cwd_fd = open_cwd();
	if (cl.cwd_fd < 0) {
		unreachable(&cl, errno, "cannot open the working directory",
			    errno_text(errno));
		goto out;
	}
	collect_fds(&cl);
	if (cl.nextra) {
		too_many_fds(&cl);
		goto out;
	}

	r = build_frames(&cl, argc, envc, &frames, &hello_len, &total);
	if (r == -E2BIG) {
		res->outcome = CLIENT_EXEC_FAILED;
		res->err = E2BIG;
		res->code = 126;
		struct sbuf sb = SBUF_INIT(res->reason);
		sbuf_add(&sb, "Argument list too long");
		goto out;
	}
	if (r < 0) {
		unreachable(&cl, -r, "cannot build the request", errno_text(r));
		goto out;
	}

	const char *where;
	cl.sock = connect_daemon(call->cfg, call->cfg->wait_daemon_s, &where,
				 res->reason, sizeof(res->reason));
	if (cl.sock < 0) {
		res->outcome = CLIENT_UNREACHABLE;
		res->err = -cl.sock;
		goto out;
	}
	if ((r = take_signals(&cl)) < 0) {
		unreachable(&cl, -r, "cannot take signals", errno_text(r));
		goto out;
	}

	/* toolrund sends no descriptors, so one read may take several
	 * frames (Hello and Started, the last Output and Exit). */
	cl.reader = (struct frame_reader){
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.ra = cl.recv_buf,
		.ra_cap = RECV_BUF_SIZE,
	};
	/* Hello without fds, into a new socket that has room for it; then
	 * the Request with its own, through the outbox. */
	r = frame_send(cl.sock, frames, hello_len, NULL, 0);
	cl.out = (struct outbox){
		.buf = frames + hello_len,
		.len = total - hello_len,
		.fds = cl.fds,
		.nfds = cl.ntargets + 1,
		.error = r < 0 ? r : 0,
	};
	cl.check_at = monotonic_ms() + START_WAIT_MS;
	if (!send_pending(&cl))
		event_loop(&cl);
out:
	release(&cl);
}
