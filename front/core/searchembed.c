/*
 * The embedding command (searchint.h, docs/search.md): the user's own
 * scorer, run with /bin/sh -c on the best bm25 candidates, one JSON line
 * each on its stdin, one number each on its stdout; the candidates are
 * then ordered by its scores.
 */
#include "searchint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "util.h"

/* An embedding command that runs longer than this is killed. */
#define EMBED_TIMEOUT_MS 60000
/* Output kept from an embedding command: a number per candidate. */
#define EMBED_MAX_OUTPUT (64 * 1024)

/* What the command reads: a JSON object per candidate, a line each. */
static char *embed_input(const char *query, const struct candidates *cs, size_t *len)
{
	size_t cap = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &cap);
	if (!f)
		return NULL;
	for (size_t i = 0; i < cs->n; i++) {
		json_object *o = json_object_new_object();
		if (!o)
			break;
		json_object_object_add(o, "query", json_object_new_string(query));
		json_object_object_add(o, "path", json_object_new_string(cs->c[i].hit.path));
		json_object_object_add(o, "line", json_object_new_int64((int64_t)cs->c[i].hit.line));
		json_object_object_add(o, "text", json_object_new_string(cs->c[i].text));
		fprintf(f, "%s\n",
			json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = cap;
	return buf;
}

/* A running embedding command: its pid, its stdin and stdout. */
struct child {
	pid_t pid;
	int in, out;
};

/* /bin/sh -c command, in a process group of its own (to be killed whole
 * on a timeout), stdin a socket so that a command that does not read it
 * costs an EPIPE, not a SIGPIPE (send's MSG_NOSIGNAL). */
static int spawn_embed(const char *command, struct child *ch)
{
	int sv[2], pv[2];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (pipe2(pv, O_CLOEXEC) < 0) {
		int err = -errno;
		close(sv[0]), close(sv[1]);
		return err;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pv[1], STDOUT_FILENO);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	char *argv[] = {"sh", "-c", (char *)command, NULL};
	int r = posix_spawn(&ch->pid, "/bin/sh", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]), close(pv[1]);
	if (r != 0) {
		close(sv[0]), close(pv[0]);
		return -r;
	}
	ch->in = sv[0];
	ch->out = pv[0];
	return 0;
}

/* Send what the command's stdin takes now; it is closed once all is
 * sent, or when the command stopped reading. */
static void feed_some(struct child *ch, const char *in, size_t in_len, size_t *sent)
{
	ssize_t n = send(ch->in, in + *sent, MIN(in_len - *sent, (size_t)65536),
			 MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n > 0)
		*sent += (size_t)n;
	if ((n < 0 && errno != EAGAIN && errno != EINTR) || *sent == in_len)
		close_fd(&ch->in); /* all sent, or it stopped reading */
}

/* Read what the command printed; its stdout is closed at its end. More
 * than EMBED_MAX_OUTPUT is -EFBIG. */
static int gather_some(struct child *ch, char *out, size_t *got)
{
	ssize_t n = read(ch->out, out + *got, EMBED_MAX_OUTPUT - *got);
	if (n > 0)
		*got += (size_t)n;
	else if (n == 0 || errno != EINTR)
		close_fd(&ch->out);
	return *got == EMBED_MAX_OUTPUT ? -EFBIG : 0;
}

/* Feed input and gather output at once (either may fill a pipe first),
 * until the command closes its stdout or the time is up. */
static int exchange(struct child *ch, const char *in, size_t in_len, char *out, size_t *out_len)
{
	size_t sent = 0, got = 0;
	int64_t deadline = monotonic_ms() + EMBED_TIMEOUT_MS;

	while (ch->out >= 0) {
		struct pollfd pf[2] = {{.fd = ch->out, .events = POLLIN},
				       {.fd = ch->in, .events = POLLOUT}};
		int64_t left = deadline - monotonic_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(pf, ch->in >= 0 ? 2 : 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		if (ch->in >= 0 && pf[1].revents)
			feed_some(ch, in, in_len, &sent);
		if (pf[0].revents && gather_some(ch, out, &got) < 0)
			return -EFBIG;
	}
	*out_len = got;
	return 0;
}

/* One finite number per line, as many lines as candidates. */
static int parse_scores(char *out, size_t len, struct candidates *cs)
{
	size_t i = 0;
	out[len] = '\0';
	for (char *line = out, *next; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? (*next = '\0', next + 1) : line + strlen(line);
		char *end;
		errno = 0;
		double v = strtod(line, &end);
		while (*end == ' ' || *end == '\t' || *end == '\r')
			end++;
		if (i >= cs->n || end == line || *end || errno || !isfinite(v))
			return -1;
		cs->c[i++].embed_score = v;
	}
	return i == cs->n ? 0 : -1;
}

static int by_embed_score(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	if (x->embed_score != y->embed_score)
		return x->embed_score > y->embed_score ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Run the command with `in` on its stdin, its stdout into out (up to
 * EMBED_MAX_OUTPUT), and wait for its end: *status is waitpid's; a
 * command that cannot be run or exchanged with is killed, its error
 * returned. */
static int run_embed(const char *command, const char *in, size_t in_len, char *out,
		     size_t *out_len, int *status)
{
	struct child ch = {.in = -1, .out = -1};
	int r = spawn_embed(command, &ch);

	if (r < 0)
		return r;
	r = exchange(&ch, in, in_len, out, out_len);
	if (r < 0)
		kill(-ch.pid, SIGKILL);
	close_fd(&ch.in), close_fd(&ch.out);
	while (waitpid(ch.pid, status, 0) < 0 && errno == EINTR)
		;
	return r;
}

/* Why the command's answer cannot be used: r its run's error, status
 * its end. */
static int embed_failure(const char *command, int r, int status, size_t ncandidates,
			 struct front_error *e)
{
	if (r < 0)
		return front_fail(e, FRONT_EXECUTION, "EMBED_FAILED", "embed command `%s`: %s",
				  command, strerror(-r));
	if (!WIFEXITED(status))
		return front_fail(e, FRONT_EXECUTION, "EMBED_FAILED",
				  "embed command `%s` was killed by signal %d", command,
				  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (WEXITSTATUS(status) != 0)
		return front_fail(e, FRONT_EXECUTION, "EMBED_FAILED",
				  "embed command `%s` exited with status %d", command,
				  WEXITSTATUS(status));
	return front_fail(e, FRONT_EXECUTION, "EMBED_FAILED",
			  "embed command `%s` (exit status 0) did not print one number per line "
			  "for each of the %zu candidates",
			  command, ncandidates);
}

int search_embed_rerank(const char *command, const char *query, struct candidates *cs,
			struct front_error *e)
{
	size_t in_len = 0, out_len = 0;
	int status = 0;

	if (cs->n == 0)
		return 0;
	char *in = embed_input(query, cs, &in_len);
	char *out = malloc(EMBED_MAX_OUTPUT + 1);
	if (!in || !out) {
		free(in), free(out);
		return search_no_memory(e);
	}
	int r = run_embed(command, in, in_len, out, &out_len, &status);
	free(in);
	bool scored = r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		      parse_scores(out, out_len, cs) == 0;
	free(out);
	if (!scored)
		return embed_failure(command, r, status, cs->n, e);
	for (size_t i = 0; i < cs->n; i++)
		cs->c[i].hit.score = cs->c[i].embed_score;
	qsort(cs->c, cs->n, sizeof(*cs->c), by_embed_score);
	return 0;
}
