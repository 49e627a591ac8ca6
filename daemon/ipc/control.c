/*
 * The supervisor's channel to the listener (control.h).
 *
 * Processes: the supervisor and the listener, one at each end.
 */
#include "control.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "outq.h"
#include "util.h"

struct frame_reader control_reader(int *fds)
{
	return (struct frame_reader){
		.max_payload = CONTROL_MAX_PAYLOAD,
		.grow = frame_grow_heap,
		.fds = fds,
	};
}

static int send_to_listener(int fd, Toolrun__Control__ToListener *m,
			    const int *fds, unsigned nfds)
{
	size_t n = frame_size(&m->base);
	uint8_t *buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	frame_pack(&m->base, (uint16_t)nfds, buf);
	int r = frame_send(fd, buf, n, fds, nfds);
	free(buf);
	return r;
}

int control_send_config(int fd, const struct config *cfg, const char *summary)
{
	Toolrun__Control__Config c = TOOLRUN__CONTROL__CONFIG__INIT;
	Toolrun__Control__ToListener m = TOOLRUN__CONTROL__TO_LISTENER__INIT;

	c.image.data = (uint8_t *)cfg;
	c.image.len = sizeof(*cfg);
	c.summary = (char *)summary;
	m.msg_case = TOOLRUN__CONTROL__TO_LISTENER__MSG_CONFIG;
	m.config = &c;
	return send_to_listener(fd, &m, NULL, 0);
}

int control_send_socket(int fd, int listen_fd, const char *path)
{
	Toolrun__Control__Socket s = TOOLRUN__CONTROL__SOCKET__INIT;
	Toolrun__Control__ToListener m = TOOLRUN__CONTROL__TO_LISTENER__INIT;

	s.path = (char *)path;
	m.msg_case = TOOLRUN__CONTROL__TO_LISTENER__MSG_SOCKET;
	m.socket = &s;
	return send_to_listener(fd, &m, &listen_fd, 1);
}

int control_send_reload_refused(int fd, const char *message)
{
	Toolrun__Control__ReloadRefused r = TOOLRUN__CONTROL__RELOAD_REFUSED__INIT;
	Toolrun__Control__ToListener m = TOOLRUN__CONTROL__TO_LISTENER__INIT;

	r.message = (char *)message;
	m.msg_case = TOOLRUN__CONTROL__TO_LISTENER__MSG_RELOAD_REFUSED;
	m.reload_refused = &r;
	return send_to_listener(fd, &m, NULL, 0);
}

int control_send_reload(int fd)
{
	Toolrun__Control__Reload r = TOOLRUN__CONTROL__RELOAD__INIT;
	Toolrun__Control__FromListener m = TOOLRUN__CONTROL__FROM_LISTENER__INIT;
	uint8_t buf[64];

	m.msg_case = TOOLRUN__CONTROL__FROM_LISTENER__MSG_RELOAD;
	m.reload = &r;
	size_t n = frame_pack(&m.base, 0, buf);
	return frame_send(fd, buf, n, NULL, 0);
}

int control_load_config(struct config *cfg, const char *file, char *scratch)
{
	int r = config_load(cfg, file, scratch);

	/* Loaded, scratch holds the file's bytes, NUL-terminated, with no
	 * NUL among them (config_load refuses one). */
	if (r == 0)
		digest_sha256_hex(scratch, strlen(scratch), cfg->sha256);
	return r;
}

struct config *control_config(const Toolrun__Control__Config *m)
{
	if (m->image.len != sizeof(struct config))
		return NULL;
	struct config *cfg = malloc(sizeof(*cfg));
	if (cfg)
		memcpy(cfg, m->image.data, sizeof(*cfg));
	return cfg;
}
