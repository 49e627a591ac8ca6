/*
 * reply: the daemon's messages to a client, framed into its queue.
 *
 * Process: the listener.
 */
#ifndef TOOLRUN_REPLY_H
#define TOOLRUN_REPLY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "outq.h"
#include "util.h"
#include "answer.h"
#include "toolrun.pb-c.h"

/* Output messages carry at most this much (see toolrun.proto). */
#define REPLY_OUTPUT_MAX (64 * 1024)

/* version: the protocol version the client spoke in its Hello. */
MUST_CHECK int reply_hello(struct outq *q, uint32_t version);
/* timeout_s: the job's time limit (0: none), for the client's own deadline. */
MUST_CHECK int reply_started(struct outq *q, pid_t pid, uint32_t timeout_s);
MUST_CHECK int reply_output(struct outq *q, Toolrun__Stream stream, const uint8_t *p,
		 size_t n);
MUST_CHECK int reply_exit(struct outq *q, const struct exit_report *r);
MUST_CHECK int reply_session(struct outq *q, const Toolrun__SessionReply *r);
MUST_CHECK int reply_error(struct outq *q, Toolrun__ErrorCode code, const char *message);
MUST_CHECK int reply_pong(struct outq *q, const Toolrun__Pong *pong);
MUST_CHECK int reply_reloaded(struct outq *q, bool ok, const char *message);
MUST_CHECK int reply_status(struct outq *q, const Toolrun__StatusReply *status);

#endif
