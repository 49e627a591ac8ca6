/*
 * toolrun: talk to toolrund from the command line.
 *
 *   toolrun ping                     is the daemon serving? (exit 0 if so)
 *   toolrun run PROGRAM [ARGS...]    run a program through the daemon
 *
 * `run` sends PROGRAM as it is (no PATH search, no local checks): what
 * the daemon answers is what you see, including its refusals. The config
 * is read from $TOOLRUN_CONFIG or the default path.
 */
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cfgcache.h"
#include "client.h"
#include "config.h"
#include "frame.h"
#include "toolrun.pb-c.h"
#include "trust.h"
#include "util.h"

extern char **environ;

static int usage(FILE *out, int code)
{
	fprintf(out, "usage: toolrun ping\n"
		     "       toolrun run PROGRAM [ARGS...]\n");
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

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int send_msg(int fd, Toolrun__ClientMessage *m)
{
	uint8_t buf[256];
	size_t n = frame_pack(&m->base, 0, buf);
	return frame_send(fd, buf, n, NULL, 0);
}

static int ping(const struct config *cfg)
{
	char why[512];
	if (trust_socket_path(cfg, why, sizeof(why)) < 0) {
		fprintf(stderr, "toolrun: %s\n", why);
		return 1;
	}
	int fd = connect_to(cfg->socket);
	if (fd < 0) {
		fprintf(stderr, "toolrun: cannot reach toolrund at %s: %s\n",
			cfg->socket, errno_text(fd));
		return 1;
	}
	if (trust_peer(cfg, fd, why, sizeof(why)) < 0) {
		fprintf(stderr, "toolrun: %s\n", why);
		close(fd);
		return 1;
	}
	Toolrun__Hello h = TOOLRUN__HELLO__INIT;
	Toolrun__Ping p = TOOLRUN__PING__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	h.protocol_version = TOOLRUN__VERSION__VERSION_CURRENT;
	h.software = (char *)"toolrun " TOOLRUN_VERSION;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	m.hello = &h;
	int r = send_msg(fd, &m);
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_PING;
	m.ping = &p;
	if (r == 0)
		r = send_msg(fd, &m);
	/* A daemon that refuses a peer says why, then closes: the reason
	 * may be waiting, unread. */
	if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
		fprintf(stderr, "toolrun: cannot send to toolrund: %s\n", errno_text(r));
		return 1;
	}

	static uint8_t payload[FRAME_MAX_SERVER_PAYLOAD];
	struct frame_reader rd = {
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.payload = payload,
		.payload_cap = sizeof(payload),
	};
	for (;;) {
		r = frame_reader_read(&rd, fd);
		if (r == FRAME_READ_AGAIN) {
			fd_set set;
			FD_ZERO(&set);
			FD_SET(fd, &set);
			struct timeval tv = {.tv_sec = 5};
			if (select(fd + 1, &set, NULL, NULL, &tv) <= 0) {
				fprintf(stderr, "toolrun: toolrund did not answer within 5 s\n");
				return 1;
			}
			continue;
		}
		if (r != FRAME_READ_READY) {
			fprintf(stderr, "toolrun: toolrund closed the connection: %s\n",
				r == FRAME_READ_EOF ? "end of stream" : errno_text(r));
			return 1;
		}
		Toolrun__ServerMessage *sm =
			toolrun__server_message__unpack(NULL, rd.h.length, rd.payload);
		frame_reader_next(&rd);
		if (!sm) {
			fprintf(stderr, "toolrun: undecodable answer from toolrund\n");
			return 1;
		}
		if (sm->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_PONG) {
			printf("%s serving on %s: %u connections, %u running, %llu served, up %llu s\n",
			       sm->pong->software, cfg->socket, sm->pong->connections,
			       sm->pong->running, (unsigned long long)sm->pong->served,
			       (unsigned long long)sm->pong->uptime_s);
			toolrun__server_message__free_unpacked(sm, NULL);
			return 0;
		}
		if (sm->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_ERROR) {
			fprintf(stderr, "toolrun: toolrund refused: %s\n", sm->error->message);
			toolrun__server_message__free_unpacked(sm, NULL);
			return 1;
		}
		toolrun__server_message__free_unpacked(sm, NULL);
	}
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

	client_run(&call, &res);
	if (res.outcome == CLIENT_UNREACHABLE) {
		fprintf(stderr, "toolrun: %s\n", res.reason);
		return 126;
	}
	client_exit_failure(argv[0], &res);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr, 2);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		return usage(stdout, 0);
	if (strcmp(argv[1], "--version") == 0) {
		printf("toolrun %s\n", TOOLRUN_VERSION);
		return 0;
	}
	struct config *cfg = load_config();
	if (strcmp(argv[1], "ping") == 0 && argc == 2)
		return ping(cfg);
	if (strcmp(argv[1], "run") == 0 && argc >= 3)
		return run(cfg, argv + 2);
	return usage(stderr, 2);
}
