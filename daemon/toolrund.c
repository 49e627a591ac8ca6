/*
 * toolrund: runs the tools that libtoolrun.so hands over.
 *
 *   toolrund [--config FILE] [-n] [-v] [--version] [--help]
 *
 * Startup, in order: read and check the config (bad config: one line,
 * exit 2), claim the socket, fork the launcher, then serve as the
 * listener until SIGTERM or SIGINT.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config.h"
#include "launcher.h"
#include "listener.h"
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

/* Programs may inherit many fds: allow as many as the hard limit. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check", no_argument, NULL, 'n'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *file = getenv("TOOLRUN_CONFIG");
	bool check_only = false;
	int opt;

	if (!file || !*file)
		file = config_default_path;
	while ((opt = getopt_long(argc, argv, "c:nvh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': file = optarg; break;
		case 'n': check_only = true; break;
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

	struct config *cfg = malloc(sizeof(*cfg));
	char *scratch = malloc(CONFIG_MAX_FILE + 1);
	if (!cfg || !scratch) {
		fprintf(stderr, "toolrund: out of memory\n");
		free(cfg);
		free(scratch);
		return 1;
	}
	int loaded = config_load(cfg, file, scratch);
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

	/* Signals arrive through the listener's signalfd; a client that goes
	 * away must not kill us with SIGPIPE. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();

	struct listen_socket sock;
	char err[512];
	if (sock_listen(&sock, cfg->socket, err, sizeof(err)) < 0) {
		fprintf(stderr, "toolrund: %s\n", err);
		sock_close(&sock);
		free(cfg);
		return 1;
	}

	struct listener *L = calloc(1, sizeof(*L));
	if (!L) {
		fprintf(stderr, "toolrund: out of memory\n");
		sock_close(&sock);
		free(cfg);
		return 1;
	}
	L->cfg = cfg;
	L->sock = &sock;
	const int launcher_closes[] = {sock.fd, sock.lock_fd, -1};
	int r = launcher_start(&L->launcher, launcher_closes);
	if (r < 0) {
		fprintf(stderr, "toolrund: cannot start the launcher: %s\n", errno_text(r));
		sock_close(&sock);
		free(L);
		free(cfg);
		return 1;
	}
	log_info("toolrund %s: config %s, launcher pid %d", TOOLRUN_VERSION, file,
		 (int)L->launcher.pid);
	int code = listener_run(L);
	free(L);
	free(cfg);
	return code;
}
