#include "rawclient.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int rawclient_send(int sock, Toolrun__ClientMessage *m, const int *fds, unsigned nfds,
		   uint16_t nfds_claimed)
{
	size_t len = frame_size(&m->base);
	uint8_t *buf = malloc(len);

	if (!buf)
		return -1;
	frame_pack(&m->base, nfds_claimed, buf);
	int r = frame_send(sock, buf, len, fds, nfds);
	free(buf);
	return r < 0 ? -1 : 0;
}

int rawclient_hello(int sock, uint32_t version, const char *software)
{
	Toolrun__Hello h = TOOLRUN__HELLO__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;

	h.protocol_version = version;
	h.software = (char *)software;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_HELLO;
	m.hello = &h;
	return rawclient_send(sock, &m, NULL, 0, 0);
}

void rawclient_print_replies(int sock, void (*print)(const Toolrun__ServerMessage *m))
{
	static uint8_t payload[FRAME_MAX_SERVER_PAYLOAD];
	struct frame_reader rd = {
		.max_payload = FRAME_MAX_SERVER_PAYLOAD,
		.payload = payload,
		.payload_cap = sizeof(payload),
	};

	for (;;) {
		int r = frame_reader_read(&rd, sock);
		if (r == FRAME_READ_AGAIN) {
			struct pollfd p = {.fd = sock, .events = POLLIN};
			if (poll(&p, 1, 60 * 1000) <= 0) {
				printf("open\n");
				return;
			}
			continue;
		}
		if (r == FRAME_READ_EOF || r == -ECONNRESET) {
			printf("closed\n");
			return;
		}
		if (r < 0) {
			printf("bad reply: %s\n", strerror(-r));
			return;
		}
		Toolrun__ServerMessage *m =
			toolrun__server_message__unpack(NULL, rd.h.length, rd.payload);
		frame_reader_next(&rd);
		if (!m) {
			printf("undecodable reply\n");
			return;
		}
		print(m);
		toolrun__server_message__free_unpacked(m, NULL);
		fflush(stdout);
	}
}
