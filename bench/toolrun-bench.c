/*
 * toolrun-bench: what toolrun costs, as ratios against running the same
 * thing without it, measured in one run on one machine.
 *
 * It starts its own toolrund (and the PATH-shim baseline's daemon) with a
 * temporary config, runs scenarios P1-P10 of bench/README.md, interleaving
 * the variants of each (A B A B ..., or A B C, B C A, C A B for three) so
 * that the machine's drift falls on all of them alike, and writes
 * latest.json, latest.md and a latency plot to the output directory.
 *
 * Beside toolrun, in the same rotations, it measures the floor (bench/
 * floor/): the smallest daemon that runs the program, with one hop and
 * with two, and an empty preloaded library; the targets of P1, P2 and P3
 * are set against what the floor measured in the same run.
 *
 * Every run is checked: it must exit 0, with the output expected of it,
 * and every intercepted call must have gone through the daemon (its log
 * gains a job line per call). A benchmark of something that failed
 * measures nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "toolrun.pb-c.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_ENV 16
#define HAMMERS 8
/* P1's ways: direct, toolrun, shim, the library loaded and off, the
 * floor with one hop and with two. */
#define LATENCY_WAYS 6
/* The floor's daemons: one hop and two (floord --hops N). */
#define FLOORS 2
/* The longest a daemon of the benchmark's may take to come up. */
#define START_WAIT_MS 60000

/* How much of each scenario: a full run, or a smoke run that only shows
 * that every scenario produces numbers. */
struct sizes {
	int latency_rounds;  /* P1/P7: rounds of direct, toolrun, shim */
	int warmup_rounds;
	int true_rounds;     /* P2 */
	int loop_calls;      /* P3: calls per loop */
	int loop_rounds;     /* P3: rounds of (toolrun, direct) */
	long long big_bytes; /* P4 */
	int big_rounds;
	int held_requests;   /* P5 */
	int p6_blocks;       /* P6: blocks of (unloaded, loaded) */
	int p6_calls;        /* P6: calls per block */
	int session_rounds;  /* P10: rounds of (session, direct, preload) */
};

static const struct sizes full_sizes = {
	.latency_rounds = 300, .warmup_rounds = 20, .true_rounds = 500,
	.loop_calls = 200, .loop_rounds = 5,
	.big_bytes = 1LL << 30, .big_rounds = 5,
	.held_requests = 256,
	.p6_blocks = 4, .p6_calls = 100,
	.session_rounds = 300,
};

static const struct sizes smoke_sizes = {
	.latency_rounds = 5, .warmup_rounds = 1, .true_rounds = 5,
	.loop_calls = 3, .loop_rounds = 1,
	.big_bytes = 8LL << 20, .big_rounds = 1,
	.held_requests = 8,
	.p6_blocks = 1, .p6_calls = 5,
	.session_rounds = 5,
};

/* An environment for the programs the benchmark starts. */
struct env {
	char *vars[MAX_ENV + 1];
	int n;
	int sink_slot; /* TOOLRUN_AGENT_STDOUT, set per run; -1 if none */
	char sink[64];
};

struct series {
	double *ms;
	int n, cap;
};

struct stats {
	double median, p90, p99, min, max, mean;
	int n;
};

/* The one context of the process. */
struct bench {
	struct sizes sz;
	bool smoke;
	const char *only; /* --only: the scenarios to run, or NULL for all */
	const char *build, *shim_dir, *out_dir;
	char tmp[PATH_MAX];
	char lib[PATH_MAX], daemon_bin[PATH_MAX], cli[PATH_MAX];
	char shimd_bin[PATH_MAX], shim_decode[PATH_MAX];
	char config[PATH_MAX], socket[PATH_MAX], daemon_log[PATH_MAX];
	char shim_bin[PATH_MAX], shim_socket[PATH_MAX];
	char small[PATH_MAX], big[PATH_MAX];
	char floord_bin[PATH_MAX], floor_lib[PATH_MAX], empty_lib[PATH_MAX];
	char floor_socket[FLOORS][PATH_MAX];
	char *small_text;
	size_t small_len;
	pid_t daemon, shimd, floord[FLOORS];
	struct env direct, toolrun, shim;
	/* The floor's caller side preloaded, cat listed: floor[0] one hop,
	 * floor[1] two. */
	struct env floor[FLOORS];
	/* P2's reference: an empty library preloaded. */
	struct env empty;
	/* An agent command's: the library preloaded, nothing declared. */
	struct env agent;
	/* P1's split: the library loaded into bash and cat, TOOLRUN=off, so
	 * that nothing is intercepted. */
	struct env loaded;
	json_object *results;
	FILE *md;
	int failures;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;
	fputs("toolrun-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* snprintf that refuses to cut: every path and line here must fit. */
static void xsnprintf(char *dst, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void xsnprintf(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(dst, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		die("a path or command line is too long: %.60s...", dst);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- environments ------------------------------------------------------ */

static void env_add(struct env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void env_add(struct env *e, const char *fmt, ...)
{
	if (e->n >= MAX_ENV)
		die("too many environment variables");
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&e->vars[e->n], fmt, ap) < 0)
		die("out of memory");
	va_end(ap);
	e->vars[++e->n] = NULL;
}

static void env_init(struct env *e, const struct bench *b)
{
	e->n = 0;
	e->vars[0] = NULL;
	e->sink_slot = -1;
	env_add(e, "PATH=/usr/local/bin:/usr/bin:/bin");
	env_add(e, "HOME=%s", b->tmp);
	env_add(e, "LANG=C");
	env_add(e, "TOOLRUN_CONFIG=%s", b->config);
}

static void env_free(struct env *e)
{
	for (int i = 0; i < e->n; i++)
		if (i != e->sink_slot)
			free(e->vars[i]);
	e->n = 0;
}

/* The agent-facing output is declared per run, as the profile snippet
 * declares a login shell's: DEV:INO of the pipe the benchmark reads. */
static void env_add_sink(struct env *e)
{
	if (e->n >= MAX_ENV)
		die("too many environment variables");
	xsnprintf(e->sink, sizeof(e->sink), "TOOLRUN_AGENT_STDOUT=");
	e->sink_slot = e->n;
	e->vars[e->n] = e->sink;
	e->vars[++e->n] = NULL;
}

static void env_set_sink(struct env *e, int fd)
{
	struct stat st;
	if (e->sink_slot < 0)
		return;
	if (fstat(fd, &st) < 0)
		die("fstat of a pipe: %s", strerror(errno));
	xsnprintf(e->sink, sizeof(e->sink), "TOOLRUN_AGENT_STDOUT=%ju:%ju",
		 (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	e->vars[e->sink_slot] = e->sink;
}

/* ---- running programs -------------------------------------------------- */

/* Start ARGV with ENV, stdout on OUT_FD (or /dev/null if -1), stdin and
 * stderr /dev/null, in a process group of its own (so that a loop and
 * everything it started can be signalled at once). */
static pid_t spawn(char *const argv[], struct env *env, int out_fd)
{
	if (out_fd >= 0)
		env_set_sink(env, out_fd);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null < 0)
			_exit(126);
		setpgid(0, 0);
		dup2(null, 0);
		dup2(out_fd >= 0 ? out_fd : null, 1);
		dup2(null, 2);
		execve(argv[0], argv, env->vars);
		_exit(127);
	}
	setpgid(pid, pid);
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid %d: %s", (int)pid, strerror(errno));
	return st;
}

/* Run ARGV to its end with stdout a pipe that is drained (the agent's
 * pipe). Returns the wall time in ms; the first KEEP bytes of the output
 * land in KEPT (NUL-terminated), the total in *TOTAL. Any exit other than
 * 0 is fatal: the run measured nothing. */
static double run_drained(struct bench *b, char *const argv[], struct env *env,
			  char *kept, size_t keep, size_t *total)
{
	int p[2];
	char buf[65536];
	size_t got = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	double t0 = now_ms();
	pid_t pid = spawn(argv, env, p[1]);
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read from %s: %s", argv[0], strerror(errno));
		if (n == 0)
			break;
		if (kept && got < keep) {
			size_t take = (size_t)n < keep - got ? (size_t)n : keep - got;
			memcpy(kept + got, buf, take);
		}
		got += (size_t)n;
	}
	int st = wait_status(pid);
	double ms = now_ms() - t0;
	close(p[0]);
	if (kept)
		kept[got < keep ? got : keep] = '\0';
	if (total)
		*total = got;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "toolrun-bench: %s %s: %s %d\n", argv[0],
			argv[1] ? argv[1] : "", WIFEXITED(st) ? "exit" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		b->failures++;
	}
	return ms;
}

/* Run a command line with bash -c, output drained. */
static double bash_drained(struct bench *b, const char *line, struct env *env,
			   char *kept, size_t keep, size_t *total)
{
	char *argv[] = {"/bin/bash", "-c", (char *)line, NULL};
	return run_drained(b, argv, env, kept, keep, total);
}

/* ---- statistics -------------------------------------------------------- */

static void series_add(struct series *s, double ms)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->ms = realloc(s->ms, (size_t)s->cap * sizeof(double));
		if (!s->ms)
			die("out of memory");
	}
	s->ms[s->n++] = ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentiles of a copy of the samples. */
static struct stats stats_of(const struct series *s)
{
	struct stats r = {.n = s->n};
	if (s->n == 0)
		return r;
	double *v = malloc((size_t)s->n * sizeof(double));
	if (!v)
		die("out of memory");
	memcpy(v, s->ms, (size_t)s->n * sizeof(double));
	qsort(v, (size_t)s->n, sizeof(double), cmp_double);
	double sum = 0;
	for (int i = 0; i < s->n; i++)
		sum += v[i];
#define RANK(q) v[(int)((q) * (s->n - 1) + 0.5)]
	r.median = RANK(0.5);
	r.p90 = RANK(0.9);
	r.p99 = RANK(0.99);
#undef RANK
	r.min = v[0];
	r.max = v[s->n - 1];
	r.mean = sum / s->n;
	free(v);
	return r;
}

static json_object *stats_json(const struct stats *s, const char *unit)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "unit", json_object_new_string(unit));
	json_object_object_add(o, "n", json_object_new_int(s->n));
	json_object_object_add(o, "median", json_object_new_double(s->median));
	json_object_object_add(o, "p90", json_object_new_double(s->p90));
	json_object_object_add(o, "p99", json_object_new_double(s->p99));
	json_object_object_add(o, "min", json_object_new_double(s->min));
	json_object_object_add(o, "max", json_object_new_double(s->max));
	json_object_object_add(o, "mean", json_object_new_double(s->mean));
	return o;
}

/* One figure: its result against the target, and what it was made of. */
static void report_result(struct bench *b, const char *id, const char *what,
			  const char *result, double ratio, const char *target, bool met,
			  const char *detail, json_object *data)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "what", json_object_new_string(what));
	json_object_object_add(o, "result", json_object_new_string(result));
	json_object_object_add(o, "ratio", json_object_new_double(ratio));
	json_object_object_add(o, "target", json_object_new_string(target));
	json_object_object_add(o, "met", target[0] ? json_object_new_boolean(met) : NULL);
	json_object_object_add(o, "data", data);
	json_object_object_add(json_object_object_get(b->results, "figures"), id, o);
	fprintf(b->md, "| %s | %s | **%s** | %s | %s | %s |\n", id, what, result,
		target[0] ? target : "report", target[0] ? (met ? "met" : "**missed**") : "",
		detail);
	fprintf(stderr, "%s  %-58.58s  %s  (%s)\n", id, what, result, target[0] ? target : "report");
}

static void report(struct bench *b, const char *id, const char *what,
		   double ratio, const char *target, bool met, const char *detail,
		   json_object *data)
{
	char result[64];
	xsnprintf(result, sizeof(result), "%.3f", ratio);
	report_result(b, id, what, result, ratio, target, met, detail, data);
}

/* ---- the daemons -------------------------------------------------------- */

/* The daemon's job lines that contain WHAT. */
static int daemon_jobs_with(const struct bench *b, const char *what)
{
	FILE *f = fopen(b->daemon_log, "r");
	char line[4096];
	int n = 0;
	if (!f)
		die("open %s: %s", b->daemon_log, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " info: job ") && strstr(line, what))
			n++;
	fclose(f);
	return n;
}

static int daemon_job_count(const struct bench *b)
{
	return daemon_jobs_with(b, "");
}

/* Calls that should each have gone through the daemon did: as many job
 * lines containing WHAT as before plus CALLS. */
static void expect_jobs_with(struct bench *b, const char *what, int before, int calls,
			     const char *scenario)
{
	/* The log is written as jobs start; give the last ones a moment (up
	 * to 10 s: a loaded machine may be slow to schedule the daemon). */
	int got = 0;
	for (int i = 0; i < 500; i++) {
		got = daemon_jobs_with(b, what) - before;
		if (got >= calls)
			break;
		sleep_ms(20);
	}
	if (got != calls) {
		fprintf(stderr, "toolrun-bench: %s: %d intercepted calls, but %d jobs in the daemon's log\n",
			scenario, calls, got);
		b->failures++;
	}
}

static void expect_jobs(struct bench *b, int before, int calls, const char *scenario)
{
	expect_jobs_with(b, "", before, calls, scenario);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		die("write %s: %s", path, strerror(errno));
}

static bool ping_ok(struct bench *b)
{
	char *argv[] = {b->cli, "ping", NULL};
	pid_t pid = spawn(argv, &b->direct, -1);
	int st = wait_status(pid);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* In a daemon's child: stdin and stdout away from whoever runs the
 * benchmark (a test runner waits for them to close), and an end with the
 * benchmark, however it ends. */
static void detach_stdio(void)
{
	int null = open("/dev/null", O_RDWR);
	if (null < 0)
		_exit(126);
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* The benchmark's config; spill: keep the whole of a cut stream (the
 * default) or nothing (spill_dir empty), to measure what keeping costs. */
static void write_config(struct bench *b, bool spill)
{
	char text[2048];
	xsnprintf(text, sizeof(text),
		 "# written by toolrun-bench\n"
		 "socket = %s\n"
		 "socket_fallback =\n"
		 "tools = cat sleep\n"
		 "max_bytes = 4000\n"
		 "max_lines = 200\n"
		 "timeout = 600\n"
		 "truncate = sink\n"
		 "fallback = fail\n"
		 /* The default's spill and audit log, in the benchmark's own
		  * directory. */
		 "spill_dir = %s%s\n"
		 "audit_log = %s/audit.jsonl\n"
		 /* The library sessions' bash and nested programs get. */
		 "preload = %s\n",
		 b->socket, spill ? b->tmp : "", spill ? "/spill" : "", b->tmp, b->lib);
	write_file(b->config, text);
}

/* Make the daemon read the config again. */
static void reload(struct bench *b)
{
	char *argv[] = {b->cli, "reload", NULL};
	pid_t pid = spawn(argv, &b->direct, -1);
	int st = wait_status(pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("toolrun reload failed");
}

static void start_daemon(struct bench *b)
{
	write_config(b, true);

	int log = open(b->daemon_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (log < 0)
		die("open %s: %s", b->daemon_log, strerror(errno));
	b->daemon = fork();
	if (b->daemon < 0)
		die("fork: %s", strerror(errno));
	if (b->daemon == 0) {
		char *argv[] = {b->daemon_bin, "--config", b->config, "-v", NULL};
		detach_stdio();
		dup2(log, 2);
		execve(argv[0], argv, b->direct.vars);
		_exit(127);
	}
	close(log);
	/* Up to 60 s: a bound for a daemon that never comes up, not a
	 * deadline for one that is slow to, on a loaded machine. */
	for (int i = 0; i < START_WAIT_MS / 25; i++) {
		if (access(b->socket, F_OK) == 0 && ping_ok(b))
			return;
		sleep_ms(25);
	}
	die("toolrund did not come up (its log: %s)", b->daemon_log);
}

static void start_shimd(struct bench *b)
{
	xsnprintf(b->shim_socket, sizeof(b->shim_socket), "%s/shim.sock", b->tmp);
	xsnprintf(b->shim_bin, sizeof(b->shim_bin), "%s/shim-bin", b->tmp);
	char script[PATH_MAX];
	xsnprintf(script, sizeof(script), "%s/make-shims.sh", b->shim_dir);
	char *mk[] = {"/bin/bash", script, b->shim_bin, "cat", NULL};
	int st = wait_status(spawn(mk, &b->direct, -1));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s failed", script);

	b->shimd = fork();
	if (b->shimd < 0)
		die("fork: %s", strerror(errno));
	if (b->shimd == 0) {
		char *argv[] = {b->shimd_bin, b->shim_socket, NULL};
		detach_stdio();
		execve(argv[0], argv, b->direct.vars);
		_exit(127);
	}
	for (int i = 0; i < START_WAIT_MS / 25; i++) {
		if (access(b->shim_socket, F_OK) == 0)
			return;
		sleep_ms(25);
	}
	die("shimd did not come up");
}

/* The floor's daemon with HOPS hops (1 or 2), listening on its socket. */
static void start_floord(struct bench *b, int hops)
{
	char *sock = b->floor_socket[hops - 1], arg[4];
	xsnprintf(sock, PATH_MAX, "%s/floor%d.sock", b->tmp, hops);
	xsnprintf(arg, sizeof(arg), "%d", hops);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = {b->floord_bin, "--hops", arg, sock, NULL};
		detach_stdio();
		execve(argv[0], argv, b->direct.vars);
		_exit(127);
	}
	b->floord[hops - 1] = pid;
	for (int i = 0; i < START_WAIT_MS / 25; i++) {
		if (access(sock, F_OK) == 0)
			return;
		sleep_ms(25);
	}
	die("floord --hops %d did not come up", hops);
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		wait_status(pid);
	}
}

/* The name and parent of process PID (a /proc entry's name), from
 * /proc/PID/stat; false if it is gone or not a process. */
static bool proc_stat(const char *pid, char *comm, size_t comm_size, int *ppid)
{
	char path[64], stat[512];
	if (pid[0] < '0' || pid[0] > '9')
		return false;
	xsnprintf(path, sizeof(path), "/proc/%s/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t len = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[len] = '\0';
	char *open_paren = strchr(stat, '('), *close_paren = strrchr(stat, ')');
	if (!open_paren || !close_paren || sscanf(close_paren + 2, "%*c %d", ppid) != 1)
		return false;
	*close_paren = '\0';
	xsnprintf(comm, comm_size, "%s", open_paren + 1);
	return true;
}

/* The daemon's own processes: the supervisor and its children that are
 * toolrund (the listener, the launcher), not the programs it runs. */
static int daemon_pids(const struct bench *b, pid_t *pids, int max)
{
	int n = 0;
	pids[n++] = b->daemon;
	DIR *d = opendir("/proc");
	struct dirent *de;
	if (!d)
		die("opendir /proc: %s", strerror(errno));
	while ((de = readdir(d)) && n < max) {
		char comm[128];
		int ppid;
		if (proc_stat(de->d_name, comm, sizeof(comm), &ppid) && ppid == b->daemon &&
		    strncmp(comm, "toolrund", 8) == 0)
			pids[n++] = atoi(de->d_name);
	}
	closedir(d);
	return n;
}

/* Resident memory of PID in KiB: VmRSS from status, Pss from
 * smaps_rollup (shared pages divided among their users). */
static long proc_kib(pid_t pid, const char *file, const char *key)
{
	char path[64], line[256];
	long v = -1;
	size_t klen = strlen(key);
	xsnprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

struct memory {
	long rss_kib, pss_kib;
	int processes;
	long rss_each[4];
};

static struct memory daemon_memory(const struct bench *b)
{
	pid_t pids[4];
	struct memory m = {0};
	m.processes = daemon_pids(b, pids, 4);
	for (int i = 0; i < m.processes; i++) {
		long rss = proc_kib(pids[i], "status", "VmRSS");
		long pss = proc_kib(pids[i], "smaps_rollup", "Pss");
		m.rss_each[i] = rss;
		m.rss_kib += rss > 0 ? rss : 0;
		m.pss_kib += pss > 0 ? pss : 0;
	}
	return m;
}

static json_object *memory_json(const struct memory *m)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "processes", json_object_new_int(m->processes));
	json_object_object_add(o, "rss_kib", json_object_new_int64(m->rss_kib));
	json_object_object_add(o, "pss_kib", json_object_new_int64(m->pss_kib));
	json_object *each = json_object_new_array();
	for (int i = 0; i < m->processes; i++)
		json_object_array_add(each, json_object_new_int64(m->rss_each[i]));
	json_object_object_add(o, "rss_kib_each", each);
	return o;
}

/* ---- the scenarios ----------------------------------------------------- */

static void check_output(struct bench *b, const char *who, const char *got, size_t total)
{
	if (total != b->small_len || memcmp(got, b->small_text, total) != 0) {
		fprintf(stderr, "toolrun-bench: %s: cat printed %zu bytes, not the file's %zu\n",
			who, total, b->small_len);
		b->failures++;
	}
}

/* P1 and P7: one intercepted call from bash, against the same call
 * directly, through the PATH-shim baseline, with the library loaded but
 * switched off (what loading it costs, apart from interception), and
 * through the floor with one hop and with two: LATENCY_WAYS ways in
 * rotation. */
static void bench_latency(struct bench *b, struct series *by_way)
{
	char line[PATH_MAX + 16], kept[8192];
	size_t total;
	struct env *envs[LATENCY_WAYS] = {&b->direct, &b->toolrun, &b->shim, &b->loaded,
					  &b->floor[0], &b->floor[1]};
	const char *names[LATENCY_WAYS] = {"direct", "toolrun", "shim", "library_off",
					   "floor_1hop", "floor_2hops"};
	int before = daemon_job_count(b);
	int rounds = b->sz.warmup_rounds + b->sz.latency_rounds;

	xsnprintf(line, sizeof(line), "cat %s", b->small);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < LATENCY_WAYS; k++) {
			int way = (r + k) % LATENCY_WAYS;
			double ms = bash_drained(b, line, envs[way], kept, sizeof(kept) - 1, &total);
			check_output(b, names[way], kept, total);
			if (r >= b->sz.warmup_rounds)
				series_add(&by_way[way], ms);
		}
	}
	expect_jobs(b, before, rounds, "P1");

	/* The samples, for the plot: one column per way, in ms. */
	char path[PATH_MAX];
	xsnprintf(path, sizeof(path), "%s/latency.dat", b->out_dir);
	FILE *f = fopen(path, "w");
	if (!f)
		die("open %s: %s", path, strerror(errno));
	fprintf(f, "# ms per call of bash -c 'cat small': direct toolrun shim floor_1hop "
		   "floor_2hops\n");
	for (int i = 0; i < by_way[0].n; i++)
		fprintf(f, "%.4f %.4f %.4f %.4f %.4f\n", by_way[0].ms[i], by_way[1].ms[i],
			by_way[2].ms[i], by_way[4].ms[i], by_way[5].ms[i]);
	if (fclose(f) != 0)
		die("write %s: %s", path, strerror(errno));

	struct stats s[LATENCY_WAYS];
	json_object *data = json_object_new_object();
	for (int w = 0; w < LATENCY_WAYS; w++) {
		s[w] = stats_of(&by_way[w]);
		json_object_object_add(data, names[w], stats_json(&s[w], "ms"));
	}
	char detail[320], target[128];
	double p1 = s[1].median / s[0].median;
	double floor1 = s[4].median / s[0].median, floor2 = s[5].median / s[0].median;
	json_object_object_add(data, "floor_1hop_ratio", json_object_new_double(floor1));
	json_object_object_add(data, "floor_2hops_ratio", json_object_new_double(floor2));
	xsnprintf(detail, sizeof(detail),
		 "median %.2f ms / %.2f ms (p90 %.2f / %.2f); the floor: 1 hop %.2f ms (x%.3f), "
		 "2 hops %.2f ms (x%.3f); the library loaded and off: %.2f ms (x%.3f)",
		 s[1].median, s[0].median, s[1].p90, s[0].p90, s[4].median, floor1, s[5].median,
		 floor2, s[3].median, s[3].median / s[0].median);
	xsnprintf(target, sizeof(target), "≤ %.3f, the floor + 0.15 (moonshot ≤ %.3f: %s)",
		  floor1 + 0.15, floor1 + 0.05, p1 <= floor1 + 0.05 ? "met" : "missed");
	report(b, "P1", "intercepted `cat small_file` from bash, wall time, toolrun / direct", p1,
	       target, p1 <= floor1 + 0.15, detail, json_object_get(data));
	for (int h = 0; h < FLOORS; h++) {
		struct stats *fl = &s[4 + h];
		xsnprintf(detail, sizeof(detail), "median %.2f ms / %.2f ms (p90 %.2f / %.2f)",
			  fl->median, s[0].median, fl->p90, s[0].p90);
		report(b, h ? "P1 floor2" : "P1 floor",
		       h ? "the floor, 2 hops (a relay before the runner), same call / direct"
			 : "the floor, 1 hop (one daemon process runs it), same call / direct",
		       fl->median / s[0].median, "", false, detail, stats_json(fl, "ms"));
	}
	double p7 = s[2].median / s[1].median;
	xsnprintf(detail, sizeof(detail), "median %.2f ms / %.2f ms (p90 %.2f / %.2f)",
		 s[2].median, s[1].median, s[2].p90, s[1].p90);
	report(b, "P7", "PATH-shim baseline (bash + socat) / toolrun", p7, "", false, detail, data);
}

/* P2: a program that is not listed, with the library loaded, with an
 * empty library loaded (what preloading any object costs), and with
 * none, in rotation. */
static void bench_unlisted(struct bench *b)
{
	static const char *const names[3] = {"preload", "empty_preload", "no_preload"};
	struct env *envs[3] = {&b->toolrun, &b->empty, &b->direct};
	struct series by_way[3] = {{0}};
	char *argv[] = {"/bin/true", NULL};
	int rounds = b->sz.warmup_rounds + b->sz.true_rounds;

	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 3; k++) {
			int way = (r + k) % 3;
			double ms = run_drained(b, argv, envs[way], NULL, 0, NULL);
			if (r >= b->sz.warmup_rounds)
				series_add(&by_way[way], ms);
		}
	}
	struct stats s[3];
	json_object *data = json_object_new_object();
	for (int w = 0; w < 3; w++) {
		s[w] = stats_of(&by_way[w]);
		json_object_object_add(data, names[w], stats_json(&s[w], "ms"));
		free(by_way[w].ms);
	}
	double ratio = s[0].median / s[2].median, empty = s[1].median / s[2].median;
	json_object_object_add(data, "empty_ratio", json_object_new_double(empty));
	json_object_object_add(data, "difference", json_object_new_double(ratio - empty));
	char detail[200], target[96];
	xsnprintf(detail, sizeof(detail),
		  "median %.3f ms / %.3f ms; an empty library: %.3f ms (x%.3f); difference %+.3f",
		  s[0].median, s[2].median, s[1].median, empty, ratio - empty);
	xsnprintf(target, sizeof(target), "≤ %.3f, the empty library + 0.03", empty + 0.03);
	report(b, "P2", "unlisted `/bin/true`, preload loaded / not loaded", ratio, target,
	       ratio <= empty + 0.03, detail, json_object_get(data));
	xsnprintf(detail, sizeof(detail), "median %.3f ms / %.3f ms", s[1].median, s[2].median);
	report(b, "P2 empty", "the same, an empty preloaded library (bench/floor/empty.c) / none",
	       empty, "", false, detail, data);
}

/* Run HAMMERS copies of LINE at once, each with its own drained pipe;
 * the wall time until all have ended, in ms. */
static double run_concurrent(struct bench *b, const char *line, struct env *env)
{
	pid_t pids[HAMMERS];
	struct pollfd pfd[HAMMERS];
	char buf[65536];
	char *argv[] = {"/bin/bash", "-c", (char *)line, NULL};
	int open_pipes = HAMMERS;

	double t0 = now_ms();
	for (int i = 0; i < HAMMERS; i++) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			die("pipe: %s", strerror(errno));
		pids[i] = spawn(argv, env, p[1]);
		close(p[1]);
		pfd[i] = (struct pollfd){.fd = p[0], .events = POLLIN};
	}
	while (open_pipes > 0) {
		if (poll(pfd, HAMMERS, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		for (int i = 0; i < HAMMERS; i++) {
			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			ssize_t n = read(pfd[i].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_pipes--;
			}
		}
	}
	for (int i = 0; i < HAMMERS; i++) {
		int st = wait_status(pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "toolrun-bench: a concurrent loop failed\n");
			b->failures++;
		}
	}
	return now_ms() - t0;
}

/* P3: throughput of 8 concurrent bash loops of intercepted commands,
 * through toolrun, through the floor (one hop) and directly, in
 * rotation. */
static void bench_throughput(struct bench *b)
{
	static const char *const names[3] = {"toolrun", "floor_1hop", "direct"};
	struct env *envs[3] = {&b->toolrun, &b->floor[0], &b->direct};
	char line[PATH_MAX + 128];
	struct series by_way[3] = {{0}};
	int before = daemon_job_count(b);
	int calls = HAMMERS * b->sz.loop_calls;

	/* A call that fails ends its loop with its status: the floor's are
	 * not in toolrund's log to be counted. */
	xsnprintf(line, sizeof(line), "for ((i = 0; i < %d; i++)); do cat %s || exit; done",
		 b->sz.loop_calls, b->small);
	for (int r = 0; r < b->sz.loop_rounds; r++) {
		for (int k = 0; k < 3; k++) {
			int way = (r + k) % 3;
			double ms = run_concurrent(b, line, envs[way]);
			series_add(&by_way[way], calls / (ms / 1e3)); /* calls per second */
		}
	}
	expect_jobs(b, before, calls * b->sz.loop_rounds, "P3");
	struct stats s[3];
	json_object *data = json_object_new_object();
	for (int w = 0; w < 3; w++) {
		s[w] = stats_of(&by_way[w]);
		json_object_object_add(data, names[w], stats_json(&s[w], "calls/s"));
		free(by_way[w].ms);
	}
	json_object_object_add(data, "loops", json_object_new_int(HAMMERS));
	json_object_object_add(data, "calls_per_loop", json_object_new_int(b->sz.loop_calls));
	double ratio = s[0].median / s[2].median, floor1 = s[1].median / s[2].median;
	json_object_object_add(data, "floor_1hop_ratio", json_object_new_double(floor1));
	char detail[200], target[128];
	xsnprintf(detail, sizeof(detail), "%.0f calls/s / %.0f calls/s; the floor (1 hop): "
		  "%.0f calls/s (x%.3f)", s[0].median, s[2].median, s[1].median, floor1);
	xsnprintf(target, sizeof(target), "≥ 0.80 (moonshot ≥ %.3f, the floor − 0.05: %s)",
		  floor1 - 0.05, ratio >= floor1 - 0.05 ? "met" : "missed");
	report(b, "P3", "throughput, 8 concurrent bash loops, toolrun / direct", ratio, target,
	       ratio >= 0.80, detail, json_object_get(data));
	xsnprintf(detail, sizeof(detail), "%.0f calls/s / %.0f calls/s", s[1].median,
		  s[2].median);
	report(b, "P3 floor", "the same through the floor (1 hop) / direct", floor1, "", false,
	       detail, data);
}

static void make_big_file(struct bench *b)
{
	char block[1 << 16];
	xsnprintf(b->big, sizeof(b->big), "%s/big", b->tmp);
	/* Lines of text, as a log or a source tree would give. */
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
	int fd = open(b->big, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("open %s: %s", b->big, strerror(errno));
	for (long long left = b->sz.big_bytes; left > 0; left -= (long long)sizeof(block))
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			die("write %s: %s", b->big, strerror(errno));
	if (close(fd) != 0)
		die("close %s: %s", b->big, strerror(errno));
}

/* What reaches the agent in P4 at most: max_bytes, and the marker's line
 * (its numbers and the spill file's path: well under 400 bytes). */
#define P4_KEPT_MAX (4000 + 400)

/* P4: a large output through an intercepted cat to the agent's pipe,
 * shaped to max_bytes and the rest drained, against a plain pipeline. */
static void bench_bulk(struct bench *b)
{
	char via_line[PATH_MAX + 16], direct_line[PATH_MAX + 64], kept[8192];
	struct series via = {0}, direct = {0};
	size_t total;
	int before = daemon_job_count(b);

	make_big_file(b);
	xsnprintf(via_line, sizeof(via_line), "cat %s", b->big);
	xsnprintf(direct_line, sizeof(direct_line), "cat %s | cat > /dev/null", b->big);
	/* One round of each first: the file into the page cache. */
	for (int r = -1; r < b->sz.big_rounds; r++) {
		for (int k = 0; k < 2; k++) {
			bool tr = (r + 1 + k) % 2 == 0;
			double ms;
			if (tr) {
				ms = bash_drained(b, via_line, &b->toolrun, kept, sizeof(kept) - 1, &total);
				/* The head and the tail, 2000 bytes each less the
				 * line the budget cuts (whole lines: 64 bytes at
				 * most here), and the marker's line between them. */
				const char *marker = strstr(kept, "\n...[toolrun cut ");
				if (total < 3800 || total > P4_KEPT_MAX || !marker || marker - kept < 1900) {
					fprintf(stderr, "toolrun-bench: P4: %zu bytes reached the agent, not 4000 cut around a marker\n",
						total);
					b->failures++;
				}
			} else {
				ms = bash_drained(b, direct_line, &b->direct, NULL, 0, &total);
			}
			if (r >= 0)
				series_add(tr ? &via : &direct, ms);
		}
	}
	expect_jobs(b, before, b->sz.big_rounds + 1, "P4");
	unlink(b->big);
	struct stats a = stats_of(&via), d = stats_of(&direct);
	json_object *data = json_object_new_object();
	json_object_object_add(data, "toolrun", stats_json(&a, "ms"));
	json_object_object_add(data, "direct", stats_json(&d, "ms"));
	json_object_object_add(data, "bytes", json_object_new_int64(b->sz.big_bytes));
	char detail[160];
	double mib = (double)b->sz.big_bytes / (1 << 20);
	xsnprintf(detail, sizeof(detail), "%.0f MiB: median %.0f ms / %.0f ms (%.0f / %.0f MiB/s)",
		 mib, a.median, d.median, mib / (a.median / 1e3), mib / (d.median / 1e3));
	double ratio = a.median / d.median;
	report(b, "P4", "1 GiB out of an intercepted `cat` (cut, drained) / through `cat \\| cat`",
	       ratio, "≤ 1.2", ratio <= 1.2, detail, data);
	free(via.ms);
	free(direct.ms);
}

/* P8, P9: a large output written by an agent command (a bash handed to
 * the daemon whole, as `docker exec BOX bash -c` is in the container),
 * shaped against the command's budget, against a plain pipeline; and
 * what keeping the whole of it costs (spill_max of it is written to the
 * spill file), against the same without a spill file. */
static void bench_command_bulk(struct bench *b)
{
	char via_line[PATH_MAX + 16], direct_line[PATH_MAX + 64], kept[8192];
	struct series spilled = {0}, unkept = {0}, direct = {0};
	size_t total;

	make_big_file(b);
	xsnprintf(via_line, sizeof(via_line), "cat %s", b->big);
	xsnprintf(direct_line, sizeof(direct_line), "cat %s | cat > /dev/null", b->big);
	for (int r = -1; r < b->sz.big_rounds; r++) {
		for (int k = 0; k < 3; k++) {
			int way = (r + 1 + k) % 3; /* 0 spilled, 1 not kept, 2 direct */
			double ms;
			if (way == 2) {
				ms = bash_drained(b, direct_line, &b->direct, NULL, 0, &total);
			} else {
				write_config(b, way == 0);
				reload(b);
				ms = bash_drained(b, via_line, &b->agent, kept, sizeof(kept) - 1, &total);
				bool marked = strstr(kept, way == 0 ? "; the whole stdout is in "
								    : "; the whole stdout is not kept") != NULL;
				if (total < 3800 || total > 4400 || !marked) {
					fprintf(stderr, "toolrun-bench: P8: %zu bytes reached the agent, "
							"not the budget and a marker\n", total);
					b->failures++;
				}
			}
			if (r >= 0)
				series_add(way == 0 ? &spilled : way == 1 ? &unkept : &direct, ms);
		}
	}
	write_config(b, true);
	reload(b);
	unlink(b->big);
	struct stats a = stats_of(&spilled), u = stats_of(&unkept), d = stats_of(&direct);
	json_object *data = json_object_new_object();
	json_object_object_add(data, "command_spilled", stats_json(&a, "ms"));
	json_object_object_add(data, "command_not_kept", stats_json(&u, "ms"));
	json_object_object_add(data, "direct", stats_json(&d, "ms"));
	json_object_object_add(data, "bytes", json_object_new_int64(b->sz.big_bytes));
	char detail[200];
	double mib = (double)b->sz.big_bytes / (1 << 20);
	xsnprintf(detail, sizeof(detail), "%.0f MiB: median %.0f ms / %.0f ms (%.0f / %.0f MiB/s)",
		 mib, a.median, d.median, mib / (a.median / 1e3), mib / (d.median / 1e3));
	report(b, "P8", "1 GiB out of an agent command, shaped by its budget, 64 MiB kept / through `cat \\| cat`",
	       a.median / d.median, "", false, detail, json_object_get(data));
	xsnprintf(detail, sizeof(detail), "median %.0f ms with the spill file / %.0f ms without",
		 a.median, u.median);
	report(b, "P9", "the spill file's cost: the same command, whole kept / not kept",
	       a.median / u.median, "", false, detail, data);
	free(spilled.ms);
	free(unkept.ms);
	free(direct.ms);
}

/* Programs the daemon's launcher runs right now, named NAME. */
static int programs_named(const struct bench *b, const char *name)
{
	pid_t pids[4];
	int n = daemon_pids(b, pids, 4), count = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	if (!d)
		die("opendir /proc: %s", strerror(errno));
	while ((de = readdir(d))) {
		char comm[128];
		int ppid;
		if (!proc_stat(de->d_name, comm, sizeof(comm), &ppid) || strcmp(comm, name) != 0)
			continue;
		for (int i = 1; i < n; i++)
			if (ppid == pids[i])
				count++;
	}
	closedir(d);
	return count;
}

/* P5: the daemon's resident memory, idle and holding many requests. */
static void bench_memory(struct bench *b, const struct memory *idle)
{
	int held = b->sz.held_requests;
	pid_t *clients = calloc((size_t)held, sizeof(pid_t));
	char *argv[] = {"/bin/bash", "-c", "sleep 3600", NULL};
	if (!clients)
		die("out of memory");

	for (int i = 0; i < held; i++)
		clients[i] = spawn(argv, &b->toolrun, -1);
	int running = 0;
	for (int i = 0; i < START_WAIT_MS / 20 && running < held; i++) {
		sleep_ms(20);
		running = programs_named(b, "sleep");
	}
	if (running != held) {
		fprintf(stderr, "toolrun-bench: P5: %d of %d requests running in the daemon\n",
			running, held);
		b->failures++;
	}
	struct memory busy = daemon_memory(b);
	for (int i = 0; i < held; i++)
		kill(clients[i], SIGTERM);
	for (int i = 0; i < held; i++)
		wait_status(clients[i]);
	free(clients);
	/* The programs go as their callers do. */
	for (int i = 0; i < 500 && programs_named(b, "sleep") > 0; i++)
		sleep_ms(10);

	json_object *data = json_object_new_object();
	json_object_object_add(data, "idle", memory_json(idle));
	json_object_object_add(data, "busy", memory_json(&busy));
	json_object_object_add(data, "requests", json_object_new_int(held));
	char detail[200];
	xsnprintf(detail, sizeof(detail),
		 "idle %.2f MiB (Pss %.2f), %d requests %.2f MiB (Pss %.2f), %d processes",
		 idle->rss_kib / 1024.0, idle->pss_kib / 1024.0, held, busy.rss_kib / 1024.0,
		 busy.pss_kib / 1024.0, busy.processes);
	bool met = idle->rss_kib <= 4096 && busy.rss_kib <= 65536;
	char result[64];
	xsnprintf(result, sizeof(result), "%.1f MiB / %.1f MiB", idle->rss_kib / 1024.0,
		 busy.rss_kib / 1024.0);
	report_result(b, "P5", "toolrund resident memory (RSS, all its processes), idle / busy",
		      result, (double)busy.rss_kib / (double)idle->rss_kib, "≤ 4 MiB / ≤ 64 MiB",
		      met, detail, data);
}

/* Start HAMMERS loops of LINE in the background, output to /dev/null. */
static void hammers_start(pid_t *pids, const char *line, struct env *env)
{
	char *argv[] = {"/bin/bash", "-c", (char *)line, NULL};
	for (int i = 0; i < HAMMERS; i++)
		pids[i] = spawn(argv, env, -1);
}

static void hammers_stop(pid_t *pids)
{
	for (int i = 0; i < HAMMERS; i++)
		kill(-pids[i], SIGKILL);
	for (int i = 0; i < HAMMERS; i++)
		wait_status(pids[i]);
}

/* Blocks of calls measured unloaded, then while HAMMERS loops run. */
static void load_blocks(struct bench *b, struct env *env, struct series *idle, struct series *loaded)
{
	char line[PATH_MAX + 16], hammer[PATH_MAX + 64], kept[8192];
	size_t total;
	pid_t pids[HAMMERS];

	xsnprintf(line, sizeof(line), "cat %s", b->small);
	xsnprintf(hammer, sizeof(hammer), "while :; do cat %s; done", b->small);
	for (int blk = 0; blk < b->sz.p6_blocks; blk++) {
		for (int i = 0; i < b->sz.p6_calls; i++) {
			series_add(idle, bash_drained(b, line, env, kept, sizeof(kept) - 1, &total));
			check_output(b, "P6", kept, total);
		}
		hammers_start(pids, hammer, env);
		sleep_ms(200);
		for (int i = 0; i < b->sz.p6_calls; i++) {
			series_add(loaded, bash_drained(b, line, env, kept, sizeof(kept) - 1, &total));
			check_output(b, "P6", kept, total);
		}
		hammers_stop(pids);
	}
}

/* P6: tail latency while the daemon is hammered, against unloaded; the
 * same for direct calls under direct load, to show the machine's part. */
static void bench_tail(struct bench *b)
{
	struct series ti = {0}, tl = {0}, di = {0}, dl = {0};
	load_blocks(b, &b->toolrun, &ti, &tl);
	load_blocks(b, &b->direct, &di, &dl);
	struct stats a = stats_of(&ti), c = stats_of(&tl), d = stats_of(&di), e = stats_of(&dl);
	json_object *data = json_object_new_object();
	json_object_object_add(data, "toolrun_unloaded", stats_json(&a, "ms"));
	json_object_object_add(data, "toolrun_loaded", stats_json(&c, "ms"));
	json_object_object_add(data, "direct_unloaded", stats_json(&d, "ms"));
	json_object_object_add(data, "direct_loaded", stats_json(&e, "ms"));
	json_object_object_add(data, "direct_ratio", json_object_new_double(e.p99 / d.p99));
	char detail[200];
	xsnprintf(detail, sizeof(detail), "p99 %.1f ms / %.1f ms (direct under direct load: %.1f / %.1f = %.2f)",
		 c.p99, a.p99, e.p99, d.p99, e.p99 / d.p99);
	double ratio = c.p99 / a.p99;
	report(b, "P6", "p99 latency with 8 callers hammering / unloaded", ratio, "≤ 3",
	       ratio <= 3, detail, data);
	free(ti.ms);
	free(tl.ms);
	free(di.ms);
	free(dl.ms);
}

/* ---- P10: commands in a session, from a connected client -------------- */

/* One connection to the daemon, protocol version 2 (docs/sessions.md). */
struct session_client {
	int fd;
	struct frame_reader rd;
	char id[64];
};

static void session_send(int fd, Toolrun__ClientMessage *m, int attach)
{
	size_t n = frame_size(&m->base);
	uint8_t *buf = malloc(n);
	if (!buf)
		die("out of memory");
	frame_pack(&m->base, attach >= 0 ? 1 : 0, buf);
	int r = frame_send(fd, buf, n, &attach, attach >= 0 ? 1 : 0);
	free(buf);
	if (r < 0)
		die("P10: send to toolrund: %s", strerror(-r));
}

/* The next SessionReply (the connection's Hello is passed over). */
static Toolrun__ServerMessage *session_receive(struct session_client *c)
{
	for (;;) {
		int r = frame_reader_read(&c->rd, c->fd);
		if (r == FRAME_READ_AGAIN) {
			struct pollfd p = {.fd = c->fd, .events = POLLIN};
			if (poll(&p, 1, START_WAIT_MS) == 0)
				die("P10: toolrund did not answer within %d s", START_WAIT_MS / 1000);
			continue;
		}
		if (r != FRAME_READ_READY)
			die("P10: toolrund closed the connection: %s",
			    r == FRAME_READ_EOF ? "end of stream" : strerror(-r));
		Toolrun__ServerMessage *sm =
			toolrun__server_message__unpack(NULL, c->rd.h.length, c->rd.payload);
		frame_reader_next(&c->rd);
		if (!sm)
			die("P10: an undecodable message from toolrund");
		if (sm->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_ERROR)
			die("P10: toolrund refused: %s", sm->error->message);
		if (sm->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_SESSION_REPLY) {
			if (sm->session_reply->error)
				die("P10: session call refused: %s", sm->session_reply->message);
			return sm;
		}
		toolrun__server_message__free_unpacked(sm, NULL);
	}
}

static Toolrun__ServerMessage *session_call(struct session_client *c, Toolrun__SessionCall *sc,
					    int attach)
{
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_SESSION_CALL;
	m.session_call = sc;
	session_send(c->fd, &m, attach);
	return session_receive(c);
}

/* Connect, say Hello (version 2), start a session in the benchmark's
 * directory with the direct runs' environment. */
static void session_open(struct bench *b, struct session_client *c)
{
	static uint8_t payload[FRAME_MAX_SERVER_PAYLOAD];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	*c = (struct session_client){
		.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
		.rd = {.max_payload = FRAME_MAX_SERVER_PAYLOAD, .payload = payload,
		       .payload_cap = sizeof(payload)},
	};
	xsnprintf(sa.sun_path, sizeof(sa.sun_path), "%s", b->socket);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("P10: connect %s: %s", b->socket, strerror(errno));

	Toolrun__Hello h = TOOLRUN__HELLO__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	h.protocol_version = TOOLRUN__VERSION__VERSION_2;
	h.software = "toolrun-bench";
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	m.hello = &h;
	session_send(c->fd, &m, -1);

	ProtobufCBinaryData env[MAX_ENV];
	size_t n = 0;
	for (int i = 0; i < b->direct.n; i++)
		if (i != b->direct.sink_slot)
			env[n++] = (ProtobufCBinaryData){strlen(b->direct.vars[i]),
							 (uint8_t *)b->direct.vars[i]};
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_NEW;
	sc.cwd = (ProtobufCBinaryData){strlen(b->tmp), (uint8_t *)b->tmp};
	sc.envp = env;
	sc.n_envp = n;
	int dir = open(b->tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		die("open %s: %s", b->tmp, strerror(errno));
	Toolrun__ServerMessage *sm = session_call(c, &sc, dir);
	close(dir);
	xsnprintf(c->id, sizeof(c->id), "%s", sm->session_reply->session);
	toolrun__server_message__free_unpacked(sm, NULL);
}

static void session_close(struct session_client *c)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_CLOSE;
	sc.session = c->id;
	toolrun__server_message__free_unpacked(session_call(c, &sc, -1), NULL);
	close(c->fd);
}

/* One command in the session, from the call's sending to its reply, in
 * ms; it must end with 0, having printed WANT (NULL: nothing). */
static double session_run(struct bench *b, struct session_client *c, const char *line,
			  const char *want)
{
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	sc.op = TOOLRUN__SESSION_OP__SESSION_OP_RUN;
	sc.session = c->id;
	sc.command = (ProtobufCBinaryData){strlen(line), (uint8_t *)line};
	sc.timeout_ms = 10000;
	double t0 = now_ms();
	Toolrun__ServerMessage *sm = session_call(c, &sc, -1);
	double ms = now_ms() - t0;
	const Toolrun__SessionReply *r = sm->session_reply;
	size_t want_len = want ? strlen(want) : 0;
	if (r->state != TOOLRUN__SESSION_STATE__SESSION_STATE_DONE || !r->exit ||
	    r->exit->status_case != TOOLRUN__EXIT__STATUS_CODE || r->exit->code != 0 || r->more ||
	    r->stdout.len != want_len || (want_len && memcmp(r->stdout.data, want, want_len)) ||
	    r->stderr.len) {
		fprintf(stderr, "toolrun-bench: P10: session command '%s': state %d, exit %d, "
				"%zu bytes out, %zu bytes err (%.*s)\n",
			line, (int)r->state, r->exit ? r->exit->code : -1, r->stdout.len,
			r->stderr.len, (int)(r->stderr.len < 200 ? r->stderr.len : 200),
			(const char *)r->stderr.data);
		b->failures++;
	}
	toolrun__server_message__free_unpacked(sm, NULL);
	return ms;
}

/* P10: one command in a session from a client already connected, against
 * the same command as `bash -c` started directly and with the library
 * preloaded (P1's two sides), three ways in rotation. */
static void bench_session(struct bench *b)
{
	static const char *const names[3] = {"session", "direct", "preload"};
	struct session_client c;
	char cat_line[PATH_MAX + 16], kept[8192];
	size_t total;
	int rounds = b->sz.warmup_rounds + b->sz.session_rounds;

	session_open(b, &c);
	xsnprintf(cat_line, sizeof(cat_line), "cat %s", b->small);
	for (int cmd = 0; cmd < 2; cmd++) {
		const char *line = cmd ? cat_line : "true";
		struct series by_way[3] = {{0}};
		int before = daemon_jobs_with(b, " tool=cat ");
		for (int r = 0; r < rounds; r++) {
			for (int k = 0; k < 3; k++) {
				int way = (r + k) % 3;
				double ms;
				if (way == 0) {
					ms = session_run(b, &c, line, cmd ? b->small_text : NULL);
				} else {
					ms = bash_drained(b, line, way == 1 ? &b->direct : &b->toolrun,
							  kept, sizeof(kept) - 1, &total);
					if (cmd)
						check_output(b, "P10", kept, total);
				}
				if (r >= b->sz.warmup_rounds)
					series_add(&by_way[way], ms);
			}
		}
		/* cat is listed: in the session and with the library, each
		 * call is a tool job of the daemon's (a session's command is a
		 * job too, a command= one). */
		expect_jobs_with(b, " tool=cat ", before, cmd ? 2 * rounds : 0, "P10");

		struct stats s[3];
		json_object *data = json_object_new_object();
		for (int w = 0; w < 3; w++) {
			s[w] = stats_of(&by_way[w]);
			json_object_object_add(data, names[w], stats_json(&s[w], "ms"));
			free(by_way[w].ms);
		}
		double over = s[0].median - s[1].median, ratio = s[0].median / s[1].median;
		json_object_object_add(data, "overhead_ms", json_object_new_double(over));
		char result[64], detail[256];
		xsnprintf(result, sizeof(result), "%+.2f ms (×%.2f)", over, ratio);
		xsnprintf(detail, sizeof(detail),
			  "median %.2f ms in the session / %.2f ms `bash -c` direct "
			  "(p90 %.2f / %.2f); `bash -c` with the library: %.2f ms",
			  s[0].median, s[1].median, s[0].p90, s[1].p90, s[2].median);
		report_result(b, cmd ? "P10b" : "P10a",
			      cmd ? "`cat small_file` in a session, connected client, - / × `bash -c` direct"
				  : "`true` in a session, connected client, - / × `bash -c` direct",
			      result, ratio, "≤ +1 ms", over <= 1.0, detail, data);
	}
	session_close(&c);
}

/* ---- set-up and output ------------------------------------------------- */

static void remove_tree(const char *path)
{
	char *argv[] = {"/bin/rm", "-rf", (char *)path, NULL};
	struct env e = {.vars = {NULL}, .sink_slot = -1};
	wait_status(spawn(argv, &e, -1));
}

static void write_plot(struct bench *b, const char *gp_script)
{
	char dat[PATH_MAX], png[PATH_MAX];
	xsnprintf(dat, sizeof(dat), "%s/latency.dat", b->out_dir);
	xsnprintf(png, sizeof(png), "%s/latency.png", b->out_dir);
	if (access("/usr/bin/gnuplot", X_OK) != 0) {
		fprintf(stderr, "toolrun-bench: gnuplot is not installed: no plot\n");
		b->failures++;
		return;
	}
	char dat_arg[PATH_MAX + 16], png_arg[PATH_MAX + 16];
	xsnprintf(dat_arg, sizeof(dat_arg), "dat='%s'", dat);
	xsnprintf(png_arg, sizeof(png_arg), "png='%s'", png);
	char *argv[] = {"/usr/bin/gnuplot", "-e", dat_arg, "-e", png_arg, (char *)gp_script, NULL};
	int st = wait_status(spawn(argv, &b->direct, -1));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "toolrun-bench: gnuplot %s failed\n", gp_script);
		b->failures++;
	}
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("open %s: %s", path, strerror(errno));
	char *text = malloc(65536);
	if (!text)
		die("out of memory");
	*len = fread(text, 1, 65535, f);
	text[*len] = '\0';
	fclose(f);
	return text;
}

/* Is one of the scenarios IDS (a space-separated list: a function runs
 * several) among --only's? */
static bool wanted(const struct bench *b, const char *ids)
{
	if (!b->only)
		return true;
	char list[256], want[64];
	xsnprintf(list, sizeof(list), ",%s,", b->only);
	for (const char *p = ids; *p;) {
		size_t n = strcspn(p, " ");
		xsnprintf(want, sizeof(want), ",%.*s,", (int)n, p);
		if (strstr(list, want))
			return true;
		p += n + (p[n] == ' ');
	}
	return false;
}

static void usage(void)
{
	fputs("usage: toolrun-bench --build DIR --shim-dir DIR --plot FILE --out DIR [--smoke]\n"
	      "                     [--only P1,P10,...]\n"
	      "  --build DIR     meson build directory (libtoolrun.so, toolrund, toolrun, shimd)\n"
	      "  --shim-dir DIR  bench/shim in the source tree (make-shims.sh)\n"
	      "  --plot FILE     the gnuplot script for the latency plot\n"
	      "  --out DIR       where latest.json, latest.md, latency.dat/.png go\n"
	      "  --smoke         a few runs of each scenario, to show each gives numbers\n"
	      "  --only LIST     only these scenarios (P1 and P7 run together, so do P8\n"
	      "                  and P9; the plot needs P1)\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"build", required_argument, NULL, 'b'},
		{"shim-dir", required_argument, NULL, 's'},
		{"plot", required_argument, NULL, 'p'},
		{"out", required_argument, NULL, 'o'},
		{"smoke", no_argument, NULL, 'S'},
		{"only", required_argument, NULL, 'O'},
		{NULL, 0, NULL, 0},
	};
	struct bench b = {.sz = full_sizes};
	const char *plot = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b': b.build = optarg; break;
		case 's': b.shim_dir = optarg; break;
		case 'p': plot = optarg; break;
		case 'o': b.out_dir = optarg; break;
		case 'S': b.smoke = true; b.sz = smoke_sizes; break;
		case 'O': b.only = optarg; break;
		default: usage();
		}
	}
	if (!b.build || !b.shim_dir || !b.out_dir || !plot || optind != argc)
		usage();
	if (mkdir(b.out_dir, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", b.out_dir, strerror(errno));

	/* 256 held requests: the daemon needs descriptors for each. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	signal(SIGPIPE, SIG_IGN);

	xsnprintf(b.lib, sizeof(b.lib), "%s/preload/libtoolrun.so", b.build);
	xsnprintf(b.daemon_bin, sizeof(b.daemon_bin), "%s/daemon/toolrund", b.build);
	xsnprintf(b.cli, sizeof(b.cli), "%s/cli/toolrun", b.build);
	xsnprintf(b.shimd_bin, sizeof(b.shimd_bin), "%s/bench/shim/shimd", b.build);
	xsnprintf(b.shim_decode, sizeof(b.shim_decode), "%s/bench/shim/shim-decode", b.build);
	xsnprintf(b.floord_bin, sizeof(b.floord_bin), "%s/bench/floor/floord", b.build);
	xsnprintf(b.floor_lib, sizeof(b.floor_lib), "%s/bench/floor/libfloor-preload.so", b.build);
	xsnprintf(b.empty_lib, sizeof(b.empty_lib), "%s/bench/floor/libempty-preload.so", b.build);
	const char *need[] = {b.lib, b.daemon_bin, b.cli, b.shimd_bin, b.shim_decode,
			      b.floord_bin, b.floor_lib, b.empty_lib};
	for (size_t i = 0; i < ARRAY_LEN(need); i++)
		if (access(need[i], R_OK) != 0)
			die("%s: %s (build first: meson compile -C BUILD)", need[i], strerror(errno));
	/* The daemon's `preload` must be absolute. */
	char lib_path[PATH_MAX];
	if (!realpath(b.lib, lib_path))
		die("%s: %s", b.lib, strerror(errno));
	xsnprintf(b.lib, sizeof(b.lib), "%s", lib_path);
	/* The other preloaded libraries, absolute as the first. */
	char *const other_libs[] = {b.floor_lib, b.empty_lib};
	for (size_t i = 0; i < ARRAY_LEN(other_libs); i++) {
		if (!realpath(other_libs[i], lib_path))
			die("%s: %s", other_libs[i], strerror(errno));
		xsnprintf(other_libs[i], PATH_MAX, "%s", lib_path);
	}

	xsnprintf(b.tmp, sizeof(b.tmp), "/tmp/toolrun-bench.XXXXXX");
	if (!mkdtemp(b.tmp))
		die("mkdtemp: %s", strerror(errno));
	char run_dir[PATH_MAX + 8];
	xsnprintf(run_dir, sizeof(run_dir), "%s/run", b.tmp);
	if (mkdir(run_dir, 0755) < 0)
		die("mkdir %s: %s", run_dir, strerror(errno));
	xsnprintf(b.small, sizeof(b.small), "%s/small", b.tmp);
	write_file(b.small, "root:x:0:0:root:/root:/bin/bash\n"
			    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
			    "bin:x:2:2:bin:/bin:/usr/sbin/nologin\n");
	b.small_text = read_all(b.small, &b.small_len);

	xsnprintf(b.config, sizeof(b.config), "%s/toolrun.conf", b.tmp);
	xsnprintf(b.socket, sizeof(b.socket), "%s/run/toolrun.sock", b.tmp);
	xsnprintf(b.daemon_log, sizeof(b.daemon_log), "%s/toolrund.log", b.tmp);
	env_init(&b.direct, &b);
	env_add_sink(&b.direct);
	start_daemon(&b);
	env_init(&b.toolrun, &b);
	env_add(&b.toolrun, "LD_PRELOAD=%s", b.lib);
	env_add_sink(&b.toolrun);
	env_init(&b.agent, &b);
	env_add(&b.agent, "LD_PRELOAD=%s", b.lib);
	env_init(&b.loaded, &b);
	env_add(&b.loaded, "LD_PRELOAD=%s", b.lib);
	env_add(&b.loaded, "TOOLRUN=off");
	env_add_sink(&b.loaded);
	start_shimd(&b);
	env_init(&b.shim, &b);
	free(b.shim.vars[0]);
	if (asprintf(&b.shim.vars[0], "PATH=%s:/usr/local/bin:/usr/bin:/bin", b.shim_bin) < 0)
		die("out of memory");
	env_add(&b.shim, "TOOLRUN_SHIM_SOCKET=%s", b.shim_socket);
	env_add(&b.shim, "TOOLRUN_SHIM_DECODE=%s", b.shim_decode);
	for (int h = 0; h < FLOORS; h++) {
		start_floord(&b, h + 1);
		env_init(&b.floor[h], &b);
		env_add(&b.floor[h], "LD_PRELOAD=%s", b.floor_lib);
		env_add(&b.floor[h], "FLOOR_SOCKET=%s", b.floor_socket[h]);
		env_add(&b.floor[h], "FLOOR_TOOLS=cat");
		env_add_sink(&b.floor[h]);
	}
	env_init(&b.empty, &b);
	env_add(&b.empty, "LD_PRELOAD=%s", b.empty_lib);
	env_add_sink(&b.empty);

	/* Idle: started, and served one ping, nothing else. */
	sleep_ms(200);
	struct memory idle = daemon_memory(&b);

	char md_path[PATH_MAX + 16];
	xsnprintf(md_path, sizeof(md_path), "%s/latest.md", b.out_dir);
	b.md = fopen(md_path, "w");
	if (!b.md)
		die("open %s: %s", md_path, strerror(errno));
	struct utsname u;
	uname(&u);
	time_t t = time(NULL);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&t));
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char command[320];
	if (b.only)
		xsnprintf(command, sizeof(command), "toolrun-bench%s --only %.256s",
			  b.smoke ? " --smoke" : "", b.only);
	else
		xsnprintf(command, sizeof(command), "%s",
			  b.smoke ? "meson test -C build --suite bench (smoke)"
				  : "meson test -C build --benchmark toolrun --verbose");

	b.results = json_object_new_object();
	json_object_object_add(b.results, "date", json_object_new_string(date));
	json_object *machine = json_object_new_object();
	json_object_object_add(machine, "nproc", json_object_new_int((int)cpus));
	json_object_object_add(machine, "kernel", json_object_new_string(u.release));
	json_object_object_add(machine, "arch", json_object_new_string(u.machine));
	json_object_object_add(b.results, "machine", machine);
	json_object_object_add(b.results, "command", json_object_new_string(command));
	json_object_object_add(b.results, "smoke", json_object_new_boolean(b.smoke));
	json_object_object_add(b.results, "figures", json_object_new_object());

	fprintf(b.md, "%s, %ld CPUs, Linux %s (%s), `%s`%s\n\n", date, cpus, u.release, u.machine,
		command, b.smoke ? " — a smoke run: too few samples to mean anything" : "");
	fputs("| | figure | result | target | | measured |\n|---|---|---|---|---|---|\n", b.md);

	struct series by_way[LATENCY_WAYS] = {{0}};
	if (wanted(&b, "P1 P7"))
		bench_latency(&b, by_way);
	if (wanted(&b, "P2"))
		bench_unlisted(&b);
	if (wanted(&b, "P3"))
		bench_throughput(&b);
	if (wanted(&b, "P4"))
		bench_bulk(&b);
	if (wanted(&b, "P8 P9"))
		bench_command_bulk(&b);
	if (wanted(&b, "P5"))
		bench_memory(&b, &idle);
	if (wanted(&b, "P6"))
		bench_tail(&b);
	if (wanted(&b, "P10 P10a P10b"))
		bench_session(&b);

	/* Idle again, after all that: what the daemon kept. */
	sleep_ms(200);
	struct memory after = daemon_memory(&b);
	json_object_object_add(b.results, "idle_after", memory_json(&after));
	fprintf(b.md, "\nThe daemon's memory once idle again, after every scenario: %.2f MiB RSS "
		      "(Pss %.2f MiB) in %d processes.\n",
		after.rss_kib / 1024.0, after.pss_kib / 1024.0, after.processes);
	fputs("\nThe floor (bench/floor/) is measured in the same rotations: P1's and P3's "
	      "targets are computed from it, P2's from the empty library. The real workloads "
	      "are separate benchmarks (bench/README.md): grep's tests ≤ 1.15 in "
	      "workloads.md (`--suite workloads`), each upstream suite ≤ 1.10 in "
	      "upstream-suites.md (`--suite upstream-suites`).\n", b.md);

	stop(b.shimd);
	for (int h = 0; h < FLOORS; h++)
		stop(b.floord[h]);
	stop(b.daemon);
	if (wanted(&b, "P1 P7"))
		write_plot(&b, plot);
	if (fclose(b.md) != 0)
		die("write %s: %s", md_path, strerror(errno));

	char json_path[PATH_MAX + 16];
	xsnprintf(json_path, sizeof(json_path), "%s/latest.json", b.out_dir);
	json_object_object_add(b.results, "failures", json_object_new_int(b.failures));
	if (json_object_to_file_ext(json_path, b.results, JSON_C_TO_STRING_PRETTY) < 0)
		die("write %s: %s", json_path, json_util_get_last_err());
	json_object_put(b.results);
	for (int w = 0; w < LATENCY_WAYS; w++)
		free(by_way[w].ms);
	env_free(&b.loaded);
	env_free(&b.direct);
	env_free(&b.toolrun);
	env_free(&b.shim);
	env_free(&b.agent);
	env_free(&b.empty);
	for (int h = 0; h < FLOORS; h++)
		env_free(&b.floor[h]);
	free(b.small_text);
	remove_tree(b.tmp);
	fprintf(stderr, "toolrun-bench: %s, %s/latest.md, %s/latency.png%s\n", json_path, b.out_dir,
		b.out_dir, b.failures ? "; SOME RUNS FAILED" : "");
	return b.failures ? 1 : 0;
}
