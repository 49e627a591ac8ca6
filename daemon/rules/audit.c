/*
 * Audit records (audit.h).
 *
 * Process: the listener (pure functions; the launcher writes the records).
 */
#include "audit.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "jsontext.h"

static struct json_object *cstring(const char *s)
{
	return json_text((const uint8_t *)s, strlen(s));
}

const char *audit_signal_name(int signo, char *buf, size_t len)
{
	const char *abbrev = signo > 0 && signo < NSIG ? sigabbrev_np(signo) : NULL;

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else if (signo > SIGRTMIN && signo <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", signo - SIGRTMIN);
	else if (signo == SIGRTMIN)
		snprintf(buf, len, "SIGRTMIN");
	else
		snprintf(buf, len, "SIG%d", signo);
	return buf;
}

/* RFC 3339, UTC, milliseconds: 2026-11-23T06:00:10.123Z. */
static struct json_object *timestamp(int64_t ms)
{
	int64_t s = ms / 1000, frac = ms % 1000;
	struct tm tm;
	char buf[64];

	if (frac < 0) {
		frac += 1000;
		s--;
	}
	time_t t = (time_t)s;
	if (!gmtime_r(&t, &tm))
		return NULL;
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		 tm.tm_sec, (int)frac);
	return json_object_new_string(buf);
}

/* Milliseconds with three decimals: the microseconds measured, written
 * as such (12.345), not as a double's nearest binary value. */
static struct json_object *duration_ms(uint64_t us)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu.%03llu", (unsigned long long)(us / 1000),
		 (unsigned long long)(us % 1000));
	return json_object_new_double_s((double)us / 1000.0, buf);
}

/* Adds v to o as key; false (and v freed) if either failed. */
static bool add(struct json_object *o, const char *key, struct json_object *v)
{
	if (!v)
		return false;
	if (json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return false;
	}
	return true;
}

static struct json_object *stream(const struct audit_stream *s)
{
	struct json_object *o = json_object_new_object();
	bool ok = o != NULL;

	if (!ok)
		return NULL;
	if (!s->shaped) {
		ok = add(o, "shaped", json_object_new_boolean(0));
	} else {
		ok = add(o, "bytes", json_object_new_uint64(s->bytes)) &&
		     add(o, "lines", json_object_new_uint64(s->lines)) &&
		     add(o, "bytes_dropped", json_object_new_uint64(s->bytes_dropped)) &&
		     add(o, "lines_dropped", json_object_new_uint64(s->lines_dropped));
		if (ok && s->spill)
			ok = add(o, "spill", cstring(s->spill)) &&
			     add(o, "spill_partial", json_object_new_boolean(s->spill_partial));
	}
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *argv_array(const struct audit_record *r)
{
	struct json_object *a = json_object_new_array_ext((int)r->argc);

	if (!a)
		return NULL;
	for (size_t i = 0; i < r->argc; i++) {
		struct json_object *s = json_text(r->argv[i].data, r->argv[i].len);
		if (!s || json_object_array_add(a, s) < 0) {
			json_object_put(s);
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

/* How it ended: "exit", or "signal" (+ "core_dumped"), or "not_run". */
static bool outcome(struct json_object *o, const struct audit_record *r)
{
	char name[32];

	if (r->not_run)
		return add(o, "not_run", cstring(r->reason ? r->reason : "never ran"));
	if (!r->signaled)
		return add(o, "exit", json_object_new_int(r->exit_code));
	if (!add(o, "signal", json_object_new_string(audit_signal_name(r->signal, name,
									  sizeof(name)))))
		return false;
	return !r->core_dumped || add(o, "core_dumped", json_object_new_boolean(1));
}

/* What a session's shell, not toolrund, says of its command. */
static struct json_object *shell_facts(void)
{
	struct json_object *a = json_object_new_array();

	if (a && (json_object_array_add(a, json_object_new_string("exit")) < 0 ||
		  json_object_array_add(a, json_object_new_string("cwd")) < 0)) {
		json_object_put(a);
		return NULL;
	}
	return a;
}

/* The line for o (which it frees), or NULL. */
static char *finish(struct json_object *o, bool ok)
{
	char *line = NULL;

	if (ok) {
		const char *s = json_object_to_json_string_ext(
			o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		line = s ? strdup(s) : NULL;
	}
	json_object_put(o);
	return line;
}

char *audit_format_front(const struct audit_front *f)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	bool ok = add(o, "time", timestamp(f->start_ms)) &&
		  add(o, "kind", json_object_new_string("front")) &&
		  add(o, "uid", json_object_new_uint64(f->uid)) &&
		  add(o, "caller_pid", json_object_new_int(f->caller_pid)) &&
		  add(o, "front", cstring(f->front)) && add(o, "tool", cstring(f->tool)) &&
		  add(o, "target", json_text(f->target, f->target ? f->target_len : 0)) &&
		  add(o, "ok", json_object_new_boolean(f->ok)) &&
		  (f->ok || add(o, "error", cstring(f->error_code))) &&
		  add(o, "bytes", json_object_new_uint64(f->bytes)) &&
		  add(o, "duration_ms", duration_ms(f->duration_us));
	return finish(o, ok);
}

char *audit_format(const struct audit_record *r)
{
	struct json_object *o = json_object_new_object();
	const char *kind = r->kind ? r->kind : r->tool ? "tool" : "command";

	if (!o)
		return NULL;
	bool ok = add(o, "time", timestamp(r->start_ms)) &&
		  add(o, "kind", json_object_new_string(kind)) &&
		  add(o, "job", json_object_new_uint64(r->job)) &&
		  (!r->command_job ||
		   add(o, "command_job", json_object_new_uint64(r->command_job))) &&
		  add(o, "uid", json_object_new_uint64(r->uid)) &&
		  add(o, "caller_pid", json_object_new_int(r->caller_pid)) &&
		  add(o, "pid", json_object_new_int(r->pid)) &&
		  (!r->tool || add(o, "tool", cstring(r->tool))) &&
		  add(o, "cwd", json_text(r->cwd, r->cwd ? r->cwd_len : 0)) &&
		  add(o, "argv", argv_array(r)) &&
		  outcome(o, r) &&
		  (!r->shell_reported || add(o, "reported_by_shell", shell_facts())) &&
		  add(o, "timed_out", json_object_new_boolean(r->timed_out)) &&
		  add(o, "duration_ms", duration_ms(r->duration_us)) &&
		  add(o, "cpu_user_ms", duration_ms(r->user_us)) &&
		  add(o, "cpu_system_ms", duration_ms(r->system_us)) &&
		  add(o, "stdout", stream(&r->out[0])) &&
		  add(o, "stderr", stream(&r->out[1]));
	return finish(o, ok);
}
