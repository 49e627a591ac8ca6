/*
 * The CLI's messages to and from toolrund (wire.h).
 */
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <unistd.h>

#include "connect.h"
#include "util.h"

int wire_send(int fd, Toolrun__ClientMessage *m, int attach)
{
	size_t n = frame_size(&m->base);
	uint8_t *buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	frame_pack(&m->base, attach >= 0 ? 1 : 0, buf);
	int r = frame_send(fd, buf, n, &attach, attach >= 0 ? 1 : 0);
	free(buf);
	return r;
}

int wire_hello(int fd, uint32_t version)
{
	Toolrun__Hello h = TOOLRUN__HELLO__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;

	h.protocol_version = version;
	h.software = (char *)"toolrun " TOOLRUN_VERSION;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	m.hello = &h;
	return wire_send(fd, &m, -1);
}

/* Wait until fd is readable, at most wait_s seconds. */
static bool readable_within(int fd, int wait_s)
{
	fd_set set;
	FD_ZERO(&set);
	FD_SET(fd, &set);
	struct timeval tv = {.tv_sec = wait_s};
	return select(fd + 1, &set, NULL, NULL, &tv) > 0;
}

Toolrun__ServerMessage *wire_receive(int fd, struct frame_reader *rd, int wait_s,
				     Toolrun__ServerMessage__MsgCase expect, char *why, size_t len)
{
	for (;;) {
		int r = frame_reader_read(rd, fd);
		if (r == FRAME_READ_AGAIN) {
			if (!readable_within(fd, wait_s)) {
				snprintf(why, len, "toolrund did not answer within %d s", wait_s);
				return NULL;
			}
			continue;
		}
		if (r != FRAME_READ_READY) {
			snprintf(why, len, "toolrund closed the connection: %s",
				r == FRAME_READ_EOF ? "end of stream" : errno_text(r));
			return NULL;
		}
		Toolrun__ServerMessage *sm =
			toolrun__server_message__unpack(NULL, rd->h.length, rd->payload);
		frame_reader_next(rd);
		if (!sm) {
			snprintf(why, len, "undecodable answer from toolrund");
			return NULL;
		}
		if (sm->msg_case == TOOLRUN__SERVER_MESSAGE__MSG_ERROR) {
			snprintf(why, len, "toolrund refused: %s", sm->error->message);
			toolrun__server_message__free_unpacked(sm, NULL);
			return NULL;
		}
		if (sm->msg_case == expect)
			return sm;
		if (sm->msg_case != TOOLRUN__SERVER_MESSAGE__MSG_HELLO) {
			snprintf(why, len, "unexpected answer from toolrund");
			toolrun__server_message__free_unpacked(sm, NULL);
			return NULL;
		}
		toolrun__server_message__free_unpacked(sm, NULL);
	}
}

Toolrun__ServerMessage *wire_ask(const struct config *cfg, Toolrun__ClientMessage *msg,
				 Toolrun__ServerMessage__MsgCase expect, uint32_t wait_s,
				 const char **where, bool *unreached, int *err, char *why,
				 size_t len)
{
	static uint8_t payload[FRAME_MAX_SERVER_PAYLOAD];

	*unreached = false;
	int fd = connect_daemon(cfg, wait_s, where, why, len);
	if (fd < 0) {
		*unreached = true;
		*err = -fd;
		return NULL;
	}
	int r = wire_hello(fd, TOOLRUN__VERSION__VERSION_1);
	if (r == 0)
		r = wire_send(fd, msg, -1);
	/* A daemon that refuses a peer says why, then closes: the reason
	 * may be waiting, unread. */
	if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
		snprintf(why, len, "cannot send to toolrund: %s", errno_text(r));
		*err = -r;
		close(fd);
		return NULL;
	}
	struct frame_reader rd = {
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.payload = payload,
		.payload_cap = sizeof(payload),
	};
	Toolrun__ServerMessage *sm =
		wire_receive(fd, &rd, wait_s ? (int)wait_s : 5, expect, why, len);
	*err = sm ? 0 : EPROTO;
	close(fd);
	return sm;
}
