/*
 * toolrun session: persistent shells hosted by toolrund, from the command
 * line (protocol version 2: SessionCall, SessionReply).
 *
 *   new [--tty] [--cwd DIR] [--env NAME=VALUE]...   start one; prints its id
 *   run ID [--timeout S] -- COMMAND...              run a command in it
 *   read ID [--timeout S]                           more of the running command
 *   write ID [-n] [--eof] [--timeout S] [TEXT]      input for the running command
 *   interrupt ID [--timeout S]                      Ctrl-C for it
 *   kill ID [--signal SIG] [--timeout S]            kill it, keep the shell
 *   close ID                                        end the session
 *   list                                            the caller's sessions
 *
 * A value may be joined to its option (--timeout=5).
 *
 * Every one takes --json: one JSON object on stdout, whose fields
 * docs/sessions.md lists. Without it, a command's stdout and stderr go to
 * ours, and a line on stderr says what to do while it still runs.
 *
 * Exit status: the command's when it finished (128+N for signal N), 124
 * while it still runs or waits for input, 125 when toolrund refused the
 * call or cannot be reached, 2 for a usage error, 0 otherwise (close: 0
 * once the session has ended).
 */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "jsontext.h"
#include "options.h"
#include "sessclient.h"
#include "toolrun.pb-c.h"
#include "util.h"

extern char **environ;

#define EXIT_STILL_RUNNING 124
#define EXIT_REFUSED 125
#define EXIT_USAGE 2

struct session_args {
	const char *verb;
	const char *id;
	bool json;
	bool tty;
	bool eof;
	bool no_newline;
	bool has_timeout;
	uint32_t timeout_ms;
	int signal;          /* --signal; 0 until given */
	const char *cwd;
	char here[PATH_MAX]; /* our working directory, without --cwd */
	char **env;          /* --env entries */
	unsigned nenv;
	char **rest;         /* what follows the options */
	int nrest;
};

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "toolrun session: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: toolrun session new [--tty] [--cwd DIR] [--env NAME=VALUE]...\n"
			"       toolrun session run ID [--timeout S] -- COMMAND...\n"
			"       toolrun session read ID [--timeout S]\n"
			"       toolrun session write ID [-n] [--eof] [--timeout S] [TEXT]\n"
			"       toolrun session interrupt ID [--timeout S]\n"
			"       toolrun session kill ID [--signal SIG] [--timeout S]\n"
			"       toolrun session close ID\n"
			"       toolrun session list\n"
			"each with --json for one JSON object on stdout (docs/sessions.md)\n");
	return EXIT_USAGE;
}

static bool verb_takes_id(const char *verb)
{
	return strcmp(verb, "new") != 0 && strcmp(verb, "list") != 0;
}

enum session_option {
	OPT_JSON = OPT_LONG_ONLY,
	OPT_TTY,
	OPT_EOF,
	OPT_TIMEOUT,
	OPT_SIGNAL,
	OPT_CWD,
	OPT_ENV,
};

static const struct option session_options[] = {
	{"json", no_argument, NULL, OPT_JSON},
	{"tty", no_argument, NULL, OPT_TTY},
	{"eof", no_argument, NULL, OPT_EOF},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"signal", required_argument, NULL, OPT_SIGNAL},
	{"cwd", required_argument, NULL, OPT_CWD},
	{"env", required_argument, NULL, OPT_ENV},
	{NULL, 0, NULL, 0},
};

static int take_option(int opt, char *value, struct session_args *a)
{
	switch (opt) {
	case OPT_JSON:
		a->json = true;
		return 0;
	case OPT_TTY:
		a->tty = true;
		return 0;
	case OPT_EOF:
		a->eof = true;
		return 0;
	case 'n':
		a->no_newline = true;
		return 0;
	case OPT_TIMEOUT:
		if (!sess_parse_seconds(value, &a->timeout_ms))
			return usage_error("--timeout %s: not a number of seconds from 0 to 3600",
					   value);
		a->has_timeout = true;
		return 0;
	case OPT_SIGNAL:
		if (!sess_parse_signal(value, &a->signal))
			return usage_error("--signal %s: not a signal (TERM, SIGTERM or a "
					   "number from 1 to %d)", value, SESS_MAX_SIGNAL);
		return 0;
	case OPT_CWD:
		a->cwd = value;
		return 0;
	case OPT_ENV:
		if (!strchr(value, '=') || value[0] == '=')
			return usage_error("--env %s: not NAME=VALUE", value);
		a->env[a->nenv++] = value;
		return 0;
	default:
		return usage_error("option %d: not handled", opt);
	}
}

/* Options may come in any order before "--" (run) or the TEXT (write).
 * getopt_long returns the words that are not options in order (the "-"
 * at the head of optstring): the first is the ID of a verb that takes
 * one, the next begins what follows the options; "--" ends them too. */
static int parse_args(int argc, char **argv, struct session_args *a)
{
	a->verb = argv[0];
	a->env = calloc((size_t)argc, sizeof(char *));
	if (!a->env)
		return usage_error("%s", "out of memory");
	int opt;
	char shortname[4];
	opterr = 0;
	optind = 0;
	while ((opt = getopt_long(argc, argv, "-:n", session_options, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return usage_error("unknown option or missing value: %s",
					   option_refused(argv, shortname, sizeof(shortname)));
		if (opt != 1) {
			int r = take_option(opt, optarg, a);
			if (r != 0)
				return r;
		} else if (verb_takes_id(a->verb) && !a->id) {
			a->id = optarg;
		} else {
			optind--;
			break;
		}
	}
	a->rest = argv + optind;
	a->nrest = argc - optind;
	if (verb_takes_id(a->verb) && !a->id)
		return usage_error("%s: which session? (an id from 'toolrun session new')", a->verb);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Answers                                                             */

/* One line, valid UTF-8 whatever bytes a message or an id held. */
static void print_json(struct json_object *o)
{
	json_print_line(o, stdout);
	json_object_put(o);
}

/* What the person at the terminal reads after the output; whether it
 * printed a line. */
static bool say_state(const Toolrun__SessionReply *r, const struct session_args *a)
{
	const char *id = r->session;
	bool closing = strcmp(a->verb, "close") == 0;

	switch (r->state) {
	case TOOLRUN__SESSION_STATE__SESSION_STATE_RUNNING:
		if (strcmp(a->verb, "interrupt") == 0)
			fprintf(stderr, "toolrun: session %s: the command is still running after "
					"the interrupt (it may ignore SIGINT); 'toolrun session kill "
					"%s' kills it\n", id, id);
		else
			fprintf(stderr, "toolrun: session %s: the command is still running; "
					"'toolrun session read %s --timeout S' waits up to S seconds "
					"for more\n", id, id);
		return true;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_WAITING_INPUT:
		fprintf(stderr, "toolrun: session %s: the command is waiting for input; "
				"'toolrun session write %s TEXT' sends a line\n", id, id);
		return true;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED:
		if (!closing)
			fprintf(stderr, "toolrun: session %s: closed: %s\n", id, r->message);
		return !closing;
	case TOOLRUN__SESSION_STATE__SESSION_STATE_IDLE:
		if (!closing)
			fprintf(stderr, "toolrun: session %s: no command is running\n", id);
		return !closing;
	default:
		return false;
	}
}

/* The last line: what shaping cut, repeated from the marker in the
 * middle of the output, where a model misses it; on a line of its own
 * when the output ends inside one (and no line of ours followed it). */
static void say_cut(const Toolrun__SessionReply *r, bool after_state)
{
	char cut[SESS_CUT_LINE_MAX];
	const ProtobufCBinaryData *last = r->stderr.len ? &r->stderr : &r->stdout;
	bool mid_line = !after_state && last->len && last->data[last->len - 1] != '\n';

	sess_cut_line(r, cut, sizeof(cut));
	if (cut[0])
		fprintf(stderr, "%stoolrun: session %s: %s\n", mid_line ? "\n" : "", r->session,
			cut);
}

static int show_reply(const Toolrun__SessionReply *r, const struct session_args *a)
{
	if (r->error) {
		if (a->json)
			print_json(sess_reply_json(r));
		else
			fprintf(stderr, "toolrun: session %s: %s\n", r->session[0] ? r->session : "-",
				r->message);
		return EXIT_REFUSED;
	}
	if (a->json) {
		print_json(sess_reply_json(r));
	} else {
		write_all(STDOUT_FILENO, r->stdout.data, r->stdout.len);
		write_all(STDERR_FILENO, r->stderr.data, r->stderr.len);
		say_cut(r, say_state(r, a));
	}
	/* close did what it was asked, whatever the command it ended. */
	if (strcmp(a->verb, "close") == 0)
		return r->state == TOOLRUN__SESSION_STATE__SESSION_STATE_CLOSED ? 0 : EXIT_REFUSED;
	return sess_command_status(r);
}

/* ------------------------------------------------------------------ */
/* The verbs                                                           */

/* The environment a new session starts with: ours, then --env. */
static ProtobufCBinaryData *session_env(const struct session_args *a, size_t *n)
{
	size_t count = 0;
	while (environ[count])
		count++;
	ProtobufCBinaryData *env = calloc(count + a->nenv + 1, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < count; i++) {
		const char *eq = strchr(environ[i], '=');
		bool overridden = false;
		for (unsigned j = 0; eq && j < a->nenv; j++)
			overridden |= strncmp(a->env[j], environ[i], (size_t)(eq - environ[i] + 1)) == 0;
		if (!overridden)
			env[k++] = (ProtobufCBinaryData){strlen(environ[i]), (uint8_t *)environ[i]};
	}
	for (unsigned j = 0; j < a->nenv; j++)
		env[k++] = (ProtobufCBinaryData){strlen(a->env[j]), (uint8_t *)a->env[j]};
	*n = k;
	return env;
}

static int show_new(const Toolrun__SessionReply *r, const struct session_args *a)
{
	if (r->error)
		return show_reply(r, a);
	if (a->json) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "session", json_object_new_string(r->session));
		json_object_object_add(o, "pid", json_object_new_int(r->pid));
		json_object_object_add(o, "tty", json_object_new_boolean(a->tty));
		print_json(o);
	} else {
		printf("%s\n", r->session);
	}
	return 0;
}

static int show_list(const Toolrun__SessionReply *r, const struct session_args *a)
{
	if (r->error)
		return show_reply(r, a);
	if (a->json) {
		struct json_object *o = json_object_new_object(), *list = json_object_new_array();
		for (size_t i = 0; i < r->n_sessions; i++)
			json_object_array_add(list, sess_info_json(r->sessions[i]));
		json_object_object_add(o, "sessions", list);
		print_json(o);
		return 0;
	}
	for (size_t i = 0; i < r->n_sessions; i++) {
		const Toolrun__SessionInfo *s = r->sessions[i];
		printf("%s\t%s\t%s\tpid %d\t%llu commands\tidle %llu s\t%.*s\n", s->session,
		       s->tty ? "tty" : "pipes", sess_state_name(s->state), s->pid,
		       (unsigned long long)s->commands, (unsigned long long)(s->idle_ms / 1000),
		       (int)s->cwd.len, s->cwd.data ? (const char *)s->cwd.data : "");
	}
	return 0;
}

/* Words joined by spaces, as `bash -c "$*"` reads them, with tail after
 * them ("" or "\n"). */
static char *join_words(char **w, int n, const char *tail)
{
	size_t len = strlen(tail) + 1;
	for (int i = 0; i < n; i++)
		len += strlen(w[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (int i = 0; i < n; i++)
		p = stpcpy(stpcpy(p, i ? " " : ""), w[i]);
	stpcpy(p, tail);
	return s;
}

static int fill_call(struct session_args *a, Toolrun__SessionCall *sc, char **owned,
		     ProtobufCBinaryData **env)
{
	static const struct {
		const char *verb;
		Toolrun__SessionOp op;
		uint32_t default_ms;
	} verbs[] = {
		{"new", TOOLRUN__SESSION_OP__SESSION_OP_NEW, 0},
		{"run", TOOLRUN__SESSION_OP__SESSION_OP_RUN, 30000},
		{"read", TOOLRUN__SESSION_OP__SESSION_OP_READ, 0},
		{"write", TOOLRUN__SESSION_OP__SESSION_OP_WRITE, 1000},
		{"interrupt", TOOLRUN__SESSION_OP__SESSION_OP_INTERRUPT, 1000},
		{"kill", TOOLRUN__SESSION_OP__SESSION_OP_KILL, 1000},
		{"close", TOOLRUN__SESSION_OP__SESSION_OP_CLOSE, 0},
		{"list", TOOLRUN__SESSION_OP__SESSION_OP_LIST, 0},
	};
	size_t v = 0;
	while (v < ARRAY_SIZE(verbs) && strcmp(verbs[v].verb, a->verb) != 0)
		v++;
	if (v == ARRAY_SIZE(verbs))
		return usage_error("unknown verb: %s", a->verb);
	sc->op = verbs[v].op;
	sc->session = (char *)(a->id ? a->id : "");
	sc->timeout_ms = a->has_timeout ? a->timeout_ms : verbs[v].default_ms;
	if (a->signal && sc->op != TOOLRUN__SESSION_OP__SESSION_OP_KILL)
		return usage_error("%s: --signal is for kill only", a->verb);
	if (sc->op == TOOLRUN__SESSION_OP__SESSION_OP_KILL)
		sc->signal = a->signal ? a->signal : SIGKILL;
	if (sc->op == TOOLRUN__SESSION_OP__SESSION_OP_RUN) {
		if (a->nrest == 0)
			return usage_error("%s", "run: no command (put it after --)");
		*owned = join_words(a->rest, a->nrest, "");
		if (!*owned)
			return usage_error("%s", "out of memory");
		sc->command = (ProtobufCBinaryData){strlen(*owned), (uint8_t *)*owned};
	} else if (sc->op == TOOLRUN__SESSION_OP__SESSION_OP_WRITE) {
		if (a->nrest == 0 && !a->eof)
			return usage_error("%s", "write: no TEXT and no --eof");
		*owned = join_words(a->rest, a->nrest, a->nrest && !a->no_newline ? "\n" : "");
		if (!*owned)
			return usage_error("%s", "out of memory");
		sc->input = (ProtobufCBinaryData){strlen(*owned), (uint8_t *)*owned};
		sc->eof = a->eof;
	} else if (a->nrest > 0) {
		return usage_error("%s: unexpected argument", a->rest[0]);
	}
	if (sc->op == TOOLRUN__SESSION_OP__SESSION_OP_NEW) {
		const char *cwd = a->cwd ? a->cwd : getcwd(a->here, sizeof(a->here));
		if (cwd && cwd[0] != '/')
			return usage_error("--cwd %s: not an absolute path", cwd);
		sc->cwd = (ProtobufCBinaryData){cwd ? strlen(cwd) : 0, (uint8_t *)cwd};
		sc->tty = a->tty;
		*env = session_env(a, &sc->n_envp);
		sc->envp = *env;
	}
	return 0;
}

static int show_answer(const Toolrun__SessionReply *reply, const struct session_args *a,
		       Toolrun__SessionOp op)
{
	if (op == TOOLRUN__SESSION_OP__SESSION_OP_NEW)
		return show_new(reply, a);
	if (op == TOOLRUN__SESSION_OP__SESSION_OP_LIST)
		return show_list(reply, a);
	return show_reply(reply, a);
}

/* The call, on a connection of its own. */
static int call_once(const struct config *cfg, Toolrun__SessionCall *sc, int attach,
		     const struct session_args *a)
{
	struct sess_client c;
	struct sess_answer ans;
	char why[512];
	int r = EXIT_REFUSED;

	if (sess_client_open(&c, cfg, why, sizeof(why)) < 0) {
		fprintf(stderr, "toolrun: %s\n", why);
		return EXIT_REFUSED;
	}
	if (sess_client_call(&c, sc, attach, &ans, why, sizeof(why)) < 0) {
		fprintf(stderr, "toolrun: %s\n", why);
	} else {
		r = show_answer(ans.reply, a, sc->op);
		sess_answer_free(&ans);
	}
	sess_client_close(&c);
	return r;
}

int session_main(const struct config *cfg, int argc, char **argv)
{
	struct session_args a = {0};
	Toolrun__SessionCall sc = TOOLRUN__SESSION_CALL__INIT;
	char *owned = NULL;
	ProtobufCBinaryData *env = NULL;

	if (argc < 1)
		return usage_error("%s", "which verb?");
	int r = parse_args(argc, argv, &a);
	if (r == 0)
		r = fill_call(&a, &sc, &owned, &env);
	if (r != 0)
		return r;
	int cwd_fd = -1;
	if (sc.op == TOOLRUN__SESSION_OP__SESSION_OP_NEW) {
		cwd_fd = open((const char *)sc.cwd.data, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cwd_fd < 0) {
			fprintf(stderr, "toolrun: session: working directory %.*s: %s\n",
				(int)sc.cwd.len, (const char *)sc.cwd.data, errno_text(errno));
			return EXIT_REFUSED;
		}
	}
	r = call_once(cfg, &sc, cwd_fd, &a);
	if (cwd_fd >= 0)
		close(cwd_fd);
	free(owned);
	free(env);
	free(a.env);
	return r;
}
