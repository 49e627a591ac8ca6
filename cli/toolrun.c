/*
 * toolrun: talk to toolrund from the command line.
 *
 *   toolrun ping                     is the daemon serving? (exit 0 if so)
 *   toolrun reload                   make the daemon read its config again
 *                                    (exit 0; 2 if it refused the file)
 *   toolrun run PROGRAM [ARGS...]    run a program through the daemon
 *   toolrun status [--json] [--require config|full]
 *                                    what toolrund enforces now (status.c,
 *                                    docs/status.md; exit 0 ok, 1 a required
 *                                    protection missing, 3 unreachable)
 *   toolrun audit verify [FILE...]   check the audit log's hash chain
 *                                    (exit 0 intact, 1 broken, 2 unreadable)
 *   toolrun session VERB ...         persistent shells hosted by toolrund
 *                                    (session.c)
 *   toolrun mcp [OPTIONS]            an MCP server on stdin and stdout
 *                                    (mcp.c, docs/mcp.md)
 *   toolrun tags [OPTIONS] [FILE|-]  run the commands of a model's tagged
 *                                    text as it streams (tags.c)
 *
 * `run` sends PROGRAM as it is (no PATH search, no local checks): what
 * the daemon answers is what you see, including its refusals. The config
 * is read from $TOOLRUN_CONFIG or the default path.
 */
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "auditchain.h"
#include "cfgcache.h"
#include "client.h"
#include "config.h"
#include "connect.h"
#include "frame.h"
#include "mcp.h"
#include "session.h"
#include "status.h"
#include "tags.h"
#include "sink.h"
#include "toolrun.pb-c.h"
#include "util.h"
#include "wire.h"

extern char **environ;

static int usage(FILE *out, int code)
{
	fprintf(out, "usage: toolrun ping\n"
		     "       toolrun reload\n"
		     "       toolrun run PROGRAM [ARGS...]\n"
		     "       toolrun status [--json] [--require config|full]\n"
		     "       toolrun audit verify [FILE...]\n"
		     "       toolrun session new|run|read|write|interrupt|close|list ...\n"
		     "       toolrun mcp [--root DIR] [--tools toolrun|codex|all] [--session ID] ...\n"
		     "       toolrun tags [--root DIR] [--exec-enabled] [--json] [--passthrough]\n"
		     "                    [--timeout S] [--extensions LIST] [--index PATH]\n"
		     "                    [--session ID] [FILE|-]\n"
		     "\n"
		     "audit verify checks the audit log's hash chain: with one FILE, FILE and\n"
		     "its rotated files (FILE.N ... FILE.1) as one chain, oldest first; with\n"
		     "several, those files in the order given; with none, the file toolrund\n"
		     "writes (or the config's audit_log). Exit 0: intact; 1: a line does not\n"
		     "match (named as FILE:LINE); 2: a file cannot be read.\n");
	return code;
}

static struct config *load_config(void)
{
	struct config *cfg = calloc(1, sizeof(*cfg));
	char *scratch = malloc(CONFIG_MAX_FILE + 1);
	const char *file = cfgcache_file(environ, NULL);

	if (!cfg || !scratch) {
		fprintf(stderr, "toolrun: out of memory\n");
		exit(1);
	}
	if (config_load(cfg, file, scratch) < 0) {
		fprintf(stderr, "toolrun: %s\n", cfg->error);
		exit(2);
	}
	free(scratch);
	return cfg;
}

/*
 * One exchange: Hello and msg, then the answer of the kind expected.
 * wait_s bounds both the wait for a restarting daemon and for the answer.
 */
static Toolrun__ServerMessage *ask(const struct config *cfg, Toolrun__ClientMessage *msg,
				   Toolrun__ServerMessage__MsgCase expect, uint32_t wait_s,
				   const char **where)
{
	char why[512];
	bool unreached;
	int err;
	Toolrun__ServerMessage *sm =
		wire_ask(cfg, msg, expect, wait_s, where, &unreached, &err, why, sizeof(why));

	if (!sm)
		fprintf(stderr, "toolrun: %s\n", why);
	return sm;
}

static int ping(const struct config *cfg)
{
	Toolrun__Ping p = TOOLRUN__PING__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	const char *where = cfg->socket;

	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
	m.ping = &p;
	/* A health check answers at once: it does not wait for a restart. */
	Toolrun__ServerMessage *sm = ask(cfg, &m, TOOLRUN__SERVER_MESSAGE__MSG_PONG, 0, &where);
	if (!sm)
		return 1;
	printf("%s serving on %s: %u connection%s, %u running, %llu served, up %llu s\n",
	       sm->pong->software, where, sm->pong->connections,
	       sm->pong->connections == 1 ? "" : "s", sm->pong->running,
	       (unsigned long long)sm->pong->served, (unsigned long long)sm->pong->uptime_s);
	toolrun__server_message__free_unpacked(sm, NULL);
	return 0;
}

/* Exit 0 when the new config is in force, 2 when the file was refused. */
static int reload(const struct config *cfg)
{
	Toolrun__Reload r = TOOLRUN__RELOAD__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	const char *where = cfg->socket;

	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_RELOAD;
	m.reload = &r;
	Toolrun__ServerMessage *sm = ask(cfg, &m, TOOLRUN__SERVER_MESSAGE__MSG_RELOADED,
					 cfg->wait_daemon_s, &where);
	if (!sm)
		return 1;
	int code = sm->reloaded->ok ? 0 : 2;
	if (sm->reloaded->ok)
		printf("toolrund reloaded %s\n", sm->reloaded->message);
	else
		fprintf(stderr, "toolrun: toolrund kept its config: %s\n", sm->reloaded->message);
	toolrun__server_message__free_unpacked(sm, NULL);
	return code;
}

static int run(struct config *cfg, char **argv)
{
	struct client_call call = {
		.cfg = cfg,
		.tool = config_find_tool(cfg, argv[0]),
		.path = argv[0],
		.argv = argv,
		.envp = environ,
		.software = "toolrun " TOOLRUN_VERSION,
	};
	struct client_result res;

	/* A command of its own: its stdout and stderr are the caller's
	 * view, as a login shell's are (preload/sink.h). */
	sink_declare_own();
	call.envp = environ;
	client_run(&call, &res);
	if (res.outcome == CLIENT_UNREACHABLE) {
		fprintf(stderr, "toolrun: %s\n", res.reason);
		return 126;
	}
	client_exit_failure(argv[0], &res);
}

/* The audit log toolrund writes (Pong.audit_log), else the config's
 * audit_log; NULL after saying why. */
static char *audit_log_in_use(void)
{
	struct config *cfg = load_config();
	Toolrun__Ping p = TOOLRUN__PING__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	const char *where = cfg->socket;
	char *path = NULL;

	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
	m.ping = &p;
	Toolrun__ServerMessage *sm = ask(cfg, &m, TOOLRUN__SERVER_MESSAGE__MSG_PONG, 0, &where);
	if (sm && sm->pong->audit_log && sm->pong->audit_log[0])
		path = strdup(sm->pong->audit_log);
	else if (cfg->audit_log[0])
		path = strdup(cfg->audit_log);
	else
		fprintf(stderr, "toolrun: no audit log: toolrund names none, and audit_log "
				"is empty in %s\n", cfg->file);
	if (sm)
		toolrun__server_message__free_unpacked(sm, NULL);
	else if (path)
		fprintf(stderr, "toolrun: checking the config's audit_log, %s\n", path);
	free(cfg);
	return path;
}

/* Exit 0: intact; 1: broken; 2: a file cannot be read. */
static int audit_verify(char **files, int nfiles)
{
	const char **paths = NULL;
	size_t n = 0;
	char *own = NULL;

	if (nfiles == 0) {
		own = audit_log_in_use();
		if (!own)
			return 2;
		files = &own;
		nfiles = 1;
	}
	if (nfiles == 1) {
		/* FILE.N ... FILE.1, FILE: the rotated files that exist, up
		 * to the first missing one. */
		unsigned k = 0;
		struct stat st;
		char name[4096];
		while (k < 10000) {
			snprintf(name, sizeof(name), "%s.%u", files[0], k + 1);
			if (stat(name, &st) < 0)
				break;
			k++;
		}
		paths = calloc(k + 1, sizeof(*paths));
		for (unsigned i = 0; paths && i < k; i++) {
			snprintf(name, sizeof(name), "%s.%u", files[0], k - i);
			paths[i] = strdup(name);
			if (!paths[i]) {
				free(paths);
				paths = NULL;
			}
		}
		if (paths)
			paths[k] = files[0];
		n = k + 1;
	} else {
		paths = calloc((size_t)nfiles, sizeof(*paths));
		for (int i = 0; paths && i < nfiles; i++)
			paths[i] = files[i];
		n = (size_t)nfiles;
	}
	uint64_t *counts = calloc(n, sizeof(*counts));
	struct auditchain_report *rep = calloc(1, sizeof(*rep));
	if (!paths || !counts || !rep) {
		fprintf(stderr, "toolrun: out of memory\n");
		exit(2);
	}
	rep->file_lines = counts;
	int r = auditchain_verify(paths, n, rep);
	int code = 0;
	if (r < 0) {
		fprintf(stderr, "toolrun: %s\n", rep->error);
		code = 2;
	} else if (r == AUDITCHAIN_BROKEN) {
		printf("%s\n", rep->error);
		code = 1;
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%s: %llu line%s, chain intact\n", paths[i],
			       (unsigned long long)counts[i], counts[i] == 1 ? "" : "s");
	}
	if (nfiles == 1)
		for (size_t i = 0; i + 1 < n; i++)
			free((char *)paths[i]);
	free(paths);
	free(counts);
	free(rep);
	free(own);
	return code;
}

TOOLRUN_NOT_A_COMMAND;

int main(int argc, char **argv)
{
	/* The front ends hold their client's channel (an MCP client's pipe,
	 * the agent's stdout) and run that client's commands as this uid:
	 * through /proc/PID/fd, a command could write into the channel what
	 * the client takes for our answers. Undumpable, our fds, memory and
	 * environment take CAP_SYS_PTRACE to reach. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		fprintf(stderr, "toolrun: cannot make itself undumpable: %s\n",
			errno_text(errno));
		return 1;
	}
	if (argc < 2)
		return usage(stderr, 2);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		return usage(stdout, 0);
	if (strcmp(argv[1], "--version") == 0) {
		printf("toolrun %s\n", TOOLRUN_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "audit") == 0) {
		if (argc >= 3 && strcmp(argv[2], "verify") == 0)
			return audit_verify(argv + 3, argc - 3);
		return usage(stderr, 2);
	}
	struct config *cfg = load_config();
	if (strcmp(argv[1], "ping") == 0 && argc == 2)
		return ping(cfg);
	if (strcmp(argv[1], "reload") == 0 && argc == 2)
		return reload(cfg);
	if (strcmp(argv[1], "run") == 0 && argc >= 3)
		return run(cfg, argv + 2);
	if (strcmp(argv[1], "session") == 0)
		return session_main(cfg, argc - 2, argv + 2);
	if (strcmp(argv[1], "status") == 0)
		return status_main(cfg, argc - 1, argv + 1);
	if (strcmp(argv[1], "mcp") == 0)
		return mcp_main(cfg, argc - 1, argv + 1);
	if (strcmp(argv[1], "tags") == 0)
		return tags_main(cfg, argc - 1, argv + 1);
	return usage(stderr, 2);
}
