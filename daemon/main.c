/*
 * toolrund: runs the tools that libtoolrun.so hands over.
 *
 *   toolrund [--config FILE] [-n] [-v] [--version] [--help]
 *
 * Startup, in order: read and check the config (bad config: one line,
 * exit 2), resolve the user to run as and the uids to serve, claim the
 * socket, drop to that user, then supervise the launcher and the listener
 * (supervisor.c) until SIGTERM or SIGINT.
 *
 * Process: the supervisor (toolrund's first process, before it
 * supervises).
 */
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "control.h"
#include "supervisor.h"
#include "log.h"
#include "sock.h"
#include "util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: toolrund [--config FILE] [-n] [-v]\n"
		"  -c, --config FILE  read FILE (default: $TOOLRUN_CONFIG, then %s)\n"
		"  -n, --check        check the config and exit (0: valid, 2: not)\n"
		"  -v, --verbose      log every connection\n"
		"      --version      print the version\n",
		config_default_path);
}

/* A user name or number; its name, if it has one, is copied to canon
 * ("" if none): getpwnam's buffer is overwritten by the next lookup (each
 * name allow_uids lists), long before initgroups reads the name. */
static bool find_user(const char *name, uid_t *uid, gid_t *gid, char *canon, size_t len)
{
	struct passwd *pw = getpwnam(name);
	char *end;

	if (!pw) {
		errno = 0;
		unsigned long n = strtoul(name, &end, 10);
		if (*name && !*end && errno == 0 && n < (uid_t)-1)
			pw = getpwuid((uid_t)n);
		if (!pw && *name && !*end && errno == 0) {
			*uid = (uid_t)n;
			*gid = (gid_t)n;
			canon[0] = '\0';
			return true;
		}
	}
	if (!pw)
		return false;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	if (strlen(pw->pw_name) >= len)
		return false;
	strcpy(canon, pw->pw_name);
	return true;
}

/* allow_uids: names or numbers; by default, the uid toolrund runs as. */
static int resolve_allowed(struct supervisor *S, const struct config *cfg, uid_t self)
{
	const char *list = cfg->allow_uids_len ? config_text(cfg, cfg->allow_uids) : "";
	char word[64];

	S->nallowed = 0;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, " \t,");
		if (n && n < sizeof(word)) {
			uid_t uid;
			gid_t gid;
			char canon[LOGIN_NAME_MAX + 1];
			memcpy(word, p, n);
			word[n] = '\0';
			if (!find_user(word, &uid, &gid, canon, sizeof(canon))) {
				fprintf(stderr, "%s: allow_uids names no user: %s\n", cfg->file, word);
				return -1;
			}
			if (S->nallowed == MAX_ALLOWED_UIDS) {
				fprintf(stderr, "%s: allow_uids lists more than %d users\n",
					cfg->file, MAX_ALLOWED_UIDS);
				return -1;
			}
			S->allowed[S->nallowed++] = uid;
		}
		p += n;
		p += strspn(p, " \t,");
	}
	if (S->nallowed == 0)
		S->allowed[S->nallowed++] = self;
	return 0;
}

/*
 * Become the configured user for good: groups, gid, then uid. What root
 * had of CAPS_KEPT stays permitted (never effective here): the launcher
 * needs it to run each program as its caller (caps.h).
 */
static int drop_to(uid_t uid, gid_t gid, const char *name)
{
	int r;

	if ((name ? initgroups(name, gid) : setgroups(0, NULL)) < 0 ||
	    setgid(gid) < 0 || (r = caps_keep_across_drop()) < 0 || setuid(uid) < 0) {
		fprintf(stderr, "toolrund: cannot become uid %u: %s\n", (unsigned)uid,
			errno_text(errno));
		return -1;
	}
	if ((r = caps_after_drop()) < 0) {
		fprintf(stderr, "toolrund: cannot keep the capabilities to switch users: %s\n",
			errno_text(-r));
		return -1;
	}
	/* With nothing effective, root is out of reach. */
	if (uid != 0 && setuid(0) == 0) {
		fprintf(stderr, "toolrund: could take root back after dropping it\n");
		return -1;
	}
	return 0;
}

/* Programs may inherit many fds: allow as many as the hard limit. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * Listen at `socket`, or, when its directory cannot be made or used (a
 * read-only root, a tmpfs on /run, a directory of another user), at the
 * first socket_fallback that works: the library looks in the same order.
 * A socket already served by a running daemon is an error, not a reason
 * to move.
 */
static int listen_somewhere(struct listen_socket *sock, const struct config *cfg,
			    mode_t dir_mode, uid_t uid, gid_t gid)
{
	char err[512], first[512] = "";

	for (unsigned i = 0; i < config_socket_count(cfg); i++) {
		const char *path = config_socket_at(cfg, i);
		int r = sock_listen(sock, path, dir_mode, uid, gid, err, sizeof(err));
		if (r == 0) {
			if (i > 0)
				log_warn("listening at %s instead (%s)", path, first);
			return 0;
		}
		sock_close(sock);
		if (r == -EADDRINUSE || r == -ENAMETOOLONG) {
			fprintf(stderr, "toolrund: %s\n", err);
			return -1;
		}
		if (i == 0)
			snprintf(first, sizeof(first), "%s", err);
		else
			log_warn("cannot listen at %s either: %s", path, err);
	}
	fprintf(stderr, "toolrund: %s%s\n", first,
		cfg->nsocket_fallback ? ", nor at any socket_fallback" : "");
	return -1;
}

/* What a step of main returns when startup goes on; any other value is
 * the exit status to return with. */
#define GO_ON (-1)

/* Who toolrund runs as, and why it is not its configured user. */
struct identity {
	uid_t uid;
	gid_t gid;
	char user_name[LOGIN_NAME_MAX + 1]; /* for initgroups; "": no such name */
	char single[192];      /* why toolrund cannot be its `user`; "": it can */
	bool drop;             /* root now, the user once the socket is claimed */
};

static int parse_options(int argc, char **argv, const char **file, bool *check_only)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check", no_argument, NULL, 'n'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int opt;

	*file = getenv("TOOLRUN_CONFIG");
	*check_only = false;
	if (!*file || !**file)
		*file = config_default_path;
	while ((opt = getopt_long(argc, argv, "c:nvh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': *file = optarg; break;
		case 'n': *check_only = true; break;
		case 'v': log_set_level(LOG_DEBUG); break;
		case 'V': printf("toolrund %s\n", TOOLRUN_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "toolrund: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return GO_ON;
}

/* Read and check the config into *out; with -n, say so and stop there. */
static int load_config(const char *file, bool check_only, struct config **out)
{
	struct config *cfg = malloc(sizeof(*cfg));
	char *scratch = malloc(CONFIG_MAX_FILE + 1);
	if (!cfg || !scratch) {
		fprintf(stderr, "toolrund: out of memory\n");
		free(cfg);
		free(scratch);
		return 1;
	}
	int loaded = control_load_config(cfg, file, scratch);
	free(scratch);
	if (loaded < 0) {
		fprintf(stderr, "%s\n", cfg->error);
		free(cfg);
		return 2;
	}
	if (check_only) {
		printf("%s: ok (%u tools, socket %s)\n", file, cfg->ntools, cfg->socket);
		free(cfg);
		return 0;
	}
	*out = cfg;
	return GO_ON;
}

static int harden_process(void)
{
	/* Nobody else of our uid may read our memory or attach to us (a
	 * program of a daemon that runs as its caller, in single identity;
	 * the agent, where it is the daemon's user): /proc/PID/mem, environ
	 * and ptrace then take CAP_SYS_PTRACE. Programs are dumpable again
	 * after their execve. */
	if (prctl(PR_SET_DUMPABLE, 0) < 0) {
		fprintf(stderr, "toolrund: cannot make itself undumpable: %s\n", errno_text(errno));
		return 1;
	}

	/* Signals arrive through signalfds (supervisor, listener); a client
	 * that goes away must not kill us with SIGPIPE. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	return GO_ON;
}

/* Who to run as: the configured user, when toolrund can become it and
 * still run programs as their callers; else itself. */
static void choose_identity(const struct config *cfg, struct identity *id)
{
	*id = (struct identity){.uid = geteuid(), .gid = getegid()};
	if (!cfg->user[0])
		return;
	uid_t want;
	gid_t want_gid;
	char names[96];
	uint64_t missing = caps_missing();
	/* An image's config serves images without that account too
	 * (toolrun added to any image): there is no one to become. */
	if (!find_user(cfg->user, &want, &want_gid, id->user_name, sizeof(id->user_name)))
		snprintf(id->single, sizeof(id->single), "no user %s exists here (/etc/passwd)",
			 cfg->user);
	else if (id->uid == want)
		; /* started as its user */
	else if (id->uid != 0)
		snprintf(id->single, sizeof(id->single), "it was started as uid %u, not as root",
			 (unsigned)id->uid);
	else if (missing)
		snprintf(id->single, sizeof(id->single), "it was started as root without %s",
			 caps_names(missing, names, sizeof(names)));
	else {
		id->drop = true;
		id->uid = want;
		id->gid = want_gid;
	}
}

/* Whom to serve: allow_uids, and toolrund's own uid when it could not
 * become its user. */
static int choose_served(struct supervisor *S, const struct identity *id)
{
	if (resolve_allowed(S, S->cfg, id->uid) < 0)
		return 2;
	/* Not its user: it serves itself, as a daemon without a `user` does. */
	if (id->single[0] && uid_index(S->allowed, S->nallowed, id->uid) < 0 &&
	    S->nallowed < MAX_ALLOWED_UIDS)
		S->allowed[S->nallowed++] = id->uid;
	return GO_ON;
}

/* Whether a uid other than toolrund's own is served. */
static bool serves_others(const struct supervisor *S, uid_t self)
{
	return S->nallowed > 1 || S->allowed[0] != self;
}

/* Claim the socket while toolrund may still make its directory anywhere,
 * then become the user for good. */
static int claim_socket_and_drop(struct supervisor *S, struct listen_socket *sock,
				 const struct identity *id)
{
	/* Serving only ourselves, the directory can be ours alone. */
	mode_t dir_mode = serves_others(S, id->uid) ? 0755 : 0700;

	if (listen_somewhere(sock, S->cfg, dir_mode, id->uid, id->gid) < 0)
		return 1;
	if (id->drop && drop_to(id->uid, id->gid, id->user_name[0] ? id->user_name : NULL) < 0) {
		sock_close(sock);
		return 1;
	}
	S->sock = sock;
	S->socket_fallback = strcmp(sock->path, S->cfg->socket) != 0;
	S->dir_mode = dir_mode;
	S->uid = id->uid;
	S->gid = id->gid;
	S->can_switch = caps_can_switch();
	return GO_ON;
}

/* Whom programs run as, and why not as their callers (StatusReply's
 * identity_reason and user_note), in the words of log_startup's warnings. */
static void describe_identity(struct supervisor *S, const struct identity *id)
{
	char names[96];

	S->identity_reason[0] = S->user_note[0] = '\0';
	if (S->can_switch && id->single[0])
		snprintf(S->user_note, sizeof(S->user_note),
			 "user = %s, but toolrund cannot become it: %s; it stays root, and still "
			 "runs each program as its caller", S->cfg->user, id->single);
	else if (!S->can_switch && id->single[0])
		snprintf(S->identity_reason, sizeof(S->identity_reason),
			 "user = %s, but toolrund cannot become it: %s", S->cfg->user, id->single);
	else if (!S->can_switch)
		snprintf(S->identity_reason, sizeof(S->identity_reason),
			 "toolrund runs as uid %u without %s", (unsigned)id->uid,
			 caps_names(caps_missing(), names, sizeof(names)));
}

/* Say how toolrund serves, and warn when it serves less than its config
 * asked for. */
static void log_startup(const struct supervisor *S, const struct identity *id,
			const char *file)
{
	const struct config *cfg = S->cfg;
	uid_t uid = id->uid;

	log_info("toolrund %s: config %s, uid %u, socket %s", TOOLRUN_VERSION, file,
		 (unsigned)getuid(), S->sock->path);
	char served[48] = "root";
	if (uid != 0)
		snprintf(served, sizeof(served), "uid %u and root", (unsigned)uid);
	if (id->single[0] && S->can_switch)
		log_warn("user = %s, but toolrund cannot become it: %s. It stays root, and "
			 "still runs each program as its caller", cfg->user, id->single);
	else if (id->single[0])
		log_warn("user = %s, but toolrund cannot become it: %s. It runs as uid %u in "
			 "single identity: every program runs as uid %u, which can signal and "
			 "read toolrund, and it serves only %s. To run as %s, start it as "
			 "root with CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_CHOWN "
			 "(container/run.sh does)",
			 cfg->user, id->single, (unsigned)uid, (unsigned)uid, served, cfg->user);
	else if (!S->can_switch && serves_others(S, uid))
		log_warn("toolrund runs as uid %u without CAP_SETUID, CAP_SETGID, CAP_KILL and "
			 "CAP_CHOWN: it cannot run programs as their callers, so it serves only "
			 "uid %u (and root, whose programs run as uid %u); start it as root with "
			 "`user` set, or grant it those capabilities",
			 (unsigned)uid, (unsigned)uid, (unsigned)uid);
}

TOOLRUN_NOT_A_COMMAND;

int main(int argc, char **argv)
{
	const char *file;
	bool check_only;
	struct config *cfg = NULL;
	struct identity id;
	struct supervisor S = {0};
	struct listen_socket sock;

	int code = parse_options(argc, argv, &file, &check_only);
	if (code == GO_ON)
		code = load_config(file, check_only, &cfg);
	if (code == GO_ON)
		code = harden_process();
	if (code == GO_ON) {
		choose_identity(cfg, &id);
		S.cfg = cfg;
		code = choose_served(&S, &id);
	}
	if (code == GO_ON)
		code = claim_socket_and_drop(&S, &sock, &id);
	if (code != GO_ON) {
		free(cfg);
		return code;
	}
	log_startup(&S, &id, file);
	describe_identity(&S, &id);
	code = supervisor_run(&S);
	if (S.cfg_owned)
		free(S.cfg);
	free(cfg);
	/* _exit, as the launcher does: a sanitizer build checks for leaks in
	 * exit(), with ptrace, which the supervisor's filter denies. */
	fflush(NULL);
	_exit(code);
}
