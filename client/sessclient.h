/*
 * A client of toolrund's sessions (protocol version 2: SessionCall,
 * SessionReply), shared by `toolrun session`, `toolrun mcp` and `toolrun
 * tags`: one connection, calls one at a time, replies in parts gathered,
 * and the JSON every front end shows for a reply (docs/sessions.md).
 */
#ifndef TOOLRUN_CLIENT_SESSCLIENT_H
#define TOOLRUN_CLIENT_SESSCLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "config.h"
#include "frame.h"
#include "toolrun.pb-c.h"

/* The longest wait a call may ask for (toolrun.proto). */
#define SESS_MAX_TIMEOUT_MS 3600000u
/* The highest signal a KILL may send (SessionCall.signal). */
#define SESS_MAX_SIGNAL 64

struct sess_client {
	int fd;
	struct frame_reader rd;
	uint8_t *payload; /* FRAME_MAX_SERVER_PAYLOAD bytes */
	uint32_t pending_timeout_ms; /* of the call sent and not yet answered */
};

/* What one call gave: the reply of its last part, whose stdout and
 * stderr hold the output of every part. */
struct sess_answer {
	Toolrun__ServerMessage *sm;
	Toolrun__SessionReply *reply;
	ProtobufCBinaryData out, err; /* gathered (owned), or empty */
	ProtobufCBinaryData own_out, own_err; /* the last part's, put back on free */
};

/* Connect and say Hello. 0, or -1 with why. */
int sess_client_open(struct sess_client *c, const struct config *cfg, char *why, size_t len);
void sess_client_close(struct sess_client *c);

/* One call (attach: an fd for its frame, or -1), then its answer. */
int sess_client_call(struct sess_client *c, Toolrun__SessionCall *sc, int attach,
		     struct sess_answer *a, char *why, size_t len);
/* The same in two steps, for a caller that polls c->fd in between. */
int sess_client_send(struct sess_client *c, Toolrun__SessionCall *sc, int attach, char *why,
		     size_t len);
int sess_client_receive(struct sess_client *c, struct sess_answer *a, char *why, size_t len);
void sess_answer_free(struct sess_answer *a);

/* A front end's call that runs no program (read_file, <open>, search,
 * ...), for toolrund's audit log: one line of kind "front", with the
 * caller's uid and pid as toolrund sees them (docs/audit.md). */
struct front_record {
	const char *front;  /* "mcp" or "tags" */
	const char *tool;   /* "read_file", "open", "search", ... */
	const char *target; /* the path or the query, as given */
	bool ok;
	const char *error_code; /* NULL when ok; else front_error.code */
	uint64_t bytes;         /* read, written or returned */
	uint64_t duration_us;
};

/* Send the record; toolrund does not answer it. 0, or -1 with why. */
int sess_client_record(struct sess_client *c, const struct front_record *r, char *why,
		       size_t len);

/* "1.5" seconds as milliseconds, from 0 to SESS_MAX_TIMEOUT_MS: the
 * --timeout of the CLI's verbs. */
bool sess_parse_seconds(const char *s, uint32_t *ms);

/* A signal as `kill -s` takes it: "TERM", "SIGTERM" (any case) or a
 * number from 1 to 64 (real-time signals by number only). */
bool sess_parse_signal(const char *s, int *signo);

/* "idle", "running", "waiting_input", "done", "closed". */
const char *sess_state_name(Toolrun__SessionState s);
/* "bad_message", "not_found", "busy", "internal", "error". */
const char *sess_error_name(Toolrun__ErrorCode c);

/* A reply as JSON: session, state, command_number, stdout, stderr,
 * exit_code, signal, duration_ms, {stdout,stderr}_dropped_{bytes,lines},
 * {stdout,stderr}_spill, message; or session, error and message. */
struct json_object *sess_reply_json(const Toolrun__SessionReply *r);
/* One session of a LIST reply. */
struct json_object *sess_info_json(const Toolrun__SessionInfo *s);

/* The exit status for a command's reply: its code, 128+N for signal N,
 * 124 while it runs or waits for input, 125 for a closed session. */
int sess_command_status(const Toolrun__SessionReply *r);

/* The end of a command's text result repeats what shaping cut, since a
 * model reading a long result misses a notice in its middle: "cut:
 * stdout lines 101-99900 of 100000 (at the marker above); the whole
 * stdout is in PATH", a clause per stream cut, the range and the place
 * as the marker says them (daemon/rules/shape.c) when this reply holds it,
 * else the counts of Exit's StreamStats. "" when nothing was cut, or
 * while the command runs (a cut is known only at its end). */
void sess_cut_line(const Toolrun__SessionReply *r, char *s, size_t len);
/* Room for that line: two clauses, each with a marker's words. */
#define SESS_CUT_LINE_MAX (4 * CONFIG_PATH_MAX + 1024)

#endif
