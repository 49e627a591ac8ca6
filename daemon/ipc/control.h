/*
 * The channel between the supervisor and the listener (control.proto):
 * the supervisor sends a new config or a new listening socket, the
 * listener asks for a reload on a client's behalf.
 *
 * Peers:
 *   supervisor  ─ Config, Socket (+fd), ReloadRefused ─►  listener
 *   supervisor  ◄─ Reload ──────────────────────────────  listener
 *
 * Messages are small and rare: each side sends with a blocking
 * frame_send and reads whole frames with a frame_reader.
 *
 * Processes: the supervisor and the listener, one at each end.
 */
#ifndef TOOLRUN_CONTROL_H
#define TOOLRUN_CONTROL_H

#include "config.h"
#include "control.pb-c.h"
#include "frame.h"

/* The largest control frame: a Config carries a struct config. */
#define CONTROL_MAX_PAYLOAD (sizeof(struct config) + 4096)

/* Each returns 0 or -errno. */
int control_send_config(int fd, const struct config *cfg, const char *summary);
int control_send_socket(int fd, int listen_fd, const char *path);
int control_send_reload_refused(int fd, const char *message);
int control_send_reload(int fd);

/* config_load, and the SHA-256 of the bytes it parsed in cfg->sha256:
 * how toolrund reads its config (at its start and on a reload), so that
 * a client's Status can name what it serves with. */
int control_load_config(struct config *cfg, const char *file, char *scratch);

/* A reader for one end of the channel: payload on the heap, fds into
 * fds (room for FRAME_MAX_FDS, as frame.h asks). */
struct frame_reader control_reader(int *fds);

/* The config a Config message carries, copied into a new allocation;
 * NULL if the image is not a struct config of this binary. */
struct config *control_config(const Toolrun__Control__Config *m);

#endif
