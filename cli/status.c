/*
 * toolrun status [--json] [--require config|full] (status.h).
 *
 * toolrund answers Status with what it holds and applies (the listener's
 * live state and the launcher's); the credentials, capabilities,
 * no_new_privs and seccomp mode of its processes come from the kernel,
 * read here from /proc. The findings are checked against what the
 * loaded config asks for; --require makes a missing one the exit code.
 */
#include "status.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "jsontext.h"
#include "options.h"
#include "procfacts.h"
#include "toolrun.pb-c.h"
#include "util.h"
#include "wire.h"

/* What --require asks for. */
enum status_level {
	LEVEL_NONE,   /* report only */
	LEVEL_CONFIG, /* every protection the loaded config asks for */
	LEVEL_FULL,   /* that, and programs run as their callers */
};

struct status_options {
	bool json;
	enum status_level require;
};

/* One protection that is not in force. */
struct missing {
	const char *protection; /* "seccomp", "no_new_privs", "audit", ... */
	enum status_level level; /* the least level that requires it */
	char why[640];
};

#define MAX_MISSING 16
#define MAX_PROCESSES 3

/* Everything the output is made of. */
struct status {
	const Toolrun__StatusReply *r;
	struct proc_facts procs[MAX_PROCESSES];
	unsigned nprocs;
	struct missing missing[MAX_MISSING];
	unsigned nmissing;
};

enum { OPT_JSON = OPT_LONG_ONLY, OPT_REQUIRE, OPT_HELP };

/* take_option's result for --help: stop, and exit 0. */
#define HELP_SHOWN 100

static const struct option status_long_options[] = {
	{"json", no_argument, NULL, OPT_JSON},
	{"require", required_argument, NULL, OPT_REQUIRE},
	{"help", no_argument, NULL, OPT_HELP},
	{NULL, 0, NULL, 0},
};

static const char status_usage[] = "usage: toolrun status [--json] [--require config|full]\n";

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "toolrun status: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", status_usage);
	return STATUS_USAGE;
}

static int take_option(int opt, const char *value, void *ctx)
{
	struct status_options *o = ctx;

	switch (opt) {
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_REQUIRE:
		if (strcmp(value, "config") == 0)
			o->require = LEVEL_CONFIG;
		else if (strcmp(value, "full") == 0)
			o->require = LEVEL_FULL;
		else
			return usage_error("unknown level for --require: '%.200s' (config or full)",
					   value);
		return 0;
	case OPT_HELP:
		printf("%s", status_usage);
		return HELP_SHOWN;
	case 1:
		return usage_error("unexpected argument: %.200s", value);
	default:
		return usage_error("option %d: not handled", opt);
	}
}

/* ------------------------------------------------------------------ */
/* Findings                                                            */

static const char *role_name(Toolrun__DaemonRole role)
{
	switch (role) {
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_SUPERVISOR: return "supervisor";
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_LISTENER: return "listener";
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_LAUNCHER: return "launcher";
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_UNSPECIFIED:
	default: return "unknown";
	}
}

/* The comm toolrund gives each of its processes (prctl PR_SET_NAME; the
 * supervisor keeps its program's name). */
static const char *role_comm(Toolrun__DaemonRole role)
{
	switch (role) {
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_LISTENER: return "toolrund-listen";
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_LAUNCHER: return "toolrund-launch";
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_SUPERVISOR:
	case TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_UNSPECIFIED:
	default: return "toolrund";
	}
}

__attribute__((format(printf, 4, 5))) static void add_missing(struct status *s,
							      const char *protection,
							      enum status_level level,
							      const char *fmt, ...)
{
	va_list ap;

	if (s->nmissing == MAX_MISSING)
		return;
	struct missing *m = &s->missing[s->nmissing++];
	m->protection = protection;
	m->level = level;
	va_start(ap, fmt);
	vsnprintf(m->why, sizeof(m->why), fmt, ap);
	va_end(ap);
}

/* Read each process's /proc/PID/status; a pid that /proc names as some
 * other program (a /proc of another pid namespace, a pid reused) is
 * unknown, not taken for toolrund's. */
static void read_processes(struct status *s)
{
	for (size_t i = 0; i < s->r->n_processes && i < MAX_PROCESSES; i++) {
		const Toolrun__DaemonProcess *p = s->r->processes[i];
		struct proc_facts *f = &s->procs[s->nprocs++];
		const char *comm = role_comm(p->role);

		procfacts_read("/proc", p->pid, f);
		if (f->read && strncmp(f->name, comm, strlen(comm)) != 0) {
			char name[sizeof(f->name)];
			snprintf(name, sizeof(name), "%s", f->name);
			*f = (struct proc_facts){.no_new_privs = -1,
						 .seccomp = SECCOMP_MODE_UNKNOWN,
						 .seccomp_filters = -1};
			snprintf(f->why, sizeof(f->why),
				 "pid %d in this /proc is '%s', not toolrund's %s (another pid "
				 "namespace?)", (int)p->pid, name, role_name(p->role));
		}
	}
}

/* Every process of toolrund runs under seccomp and no_new_privs
 * (daemon/base/sandbox.h); the listener, which parses clients' bytes,
 * holds no capability. */
static void check_processes(struct status *s)
{
	for (unsigned i = 0; i < s->nprocs; i++) {
		const Toolrun__DaemonProcess *p = s->r->processes[i];
		const struct proc_facts *f = &s->procs[i];
		const char *role = role_name(p->role);

		if (f->seccomp != SECCOMP_MODE_FILTERS)
			add_missing(s, "seccomp", LEVEL_CONFIG,
				    "the %s (pid %d) is not under a seccomp filter: Seccomp %s%s%s",
				    role, (int)p->pid, procfacts_seccomp_name(f->seccomp),
				    f->why[0] ? ", " : "", f->why);
		if (f->no_new_privs != 1)
			add_missing(s, "no_new_privs", LEVEL_CONFIG,
				    "the %s (pid %d) does not have no_new_privs set: NoNewPrivs %s%s%s",
				    role, (int)p->pid, f->no_new_privs == 0 ? "0" : "unknown",
				    f->why[0] ? ", " : "", f->why);
		if (p->role == TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_LISTENER &&
		    (!f->has_caps || f->cap_effective || f->cap_permitted))
			add_missing(s, "capabilities", LEVEL_CONFIG,
				    "the listener (pid %d) %s", (int)p->pid,
				    f->has_caps ? "holds capabilities"
						: "may hold capabilities: /proc does not show them");
	}
	if (s->nprocs < MAX_PROCESSES)
		add_missing(s, "processes", LEVEL_CONFIG,
			    "toolrund named %u of its 3 processes", s->nprocs);
}

/* Listed tools are denied the network unless the config allows it. */
static bool network_denied_somewhere(const Toolrun__ProgramConfinement *p)
{
	return !p->tool_network_allowed || p->tools_own_network > p->tools_network_allowed;
}

static void check_programs(struct status *s)
{
	const Toolrun__ProgramConfinement *p = s->r->programs;

	if (!p) {
		add_missing(s, "programs", LEVEL_CONFIG, "toolrund did not say what programs get");
		return;
	}
	if (!p->seccomp_inherited)
		add_missing(s, "programs_seccomp", LEVEL_CONFIG,
			    "the launcher is not under seccomp: programs inherit no filter");
	if (!p->no_new_privs)
		add_missing(s, "programs_no_new_privs", LEVEL_CONFIG,
			    "the launcher does not have no_new_privs: programs do not inherit it");
	if (network_denied_somewhere(p) && !p->network_filter_ready)
		add_missing(s, "network", LEVEL_CONFIG,
			    "the config denies listed tools the network, but the launcher holds "
			    "no network filter to apply");
}

static void check_store(struct status *s)
{
	const Toolrun__SpillStatus *sp = s->r->spill;
	const Toolrun__AuditStatus *au = s->r->audit;

	if (sp && sp->configured[0] && !sp->held)
		add_missing(s, "spill", LEVEL_CONFIG, "spill_dir %s is not held: %s", sp->configured,
			    sp->reason[0] ? sp->reason : "no reason given");
	else if (sp && sp->configured[0] && !sp->exists)
		add_missing(s, "spill", LEVEL_CONFIG, "%s", sp->reason);
	if (au && au->configured[0] && !au->writable)
		add_missing(s, "audit", LEVEL_CONFIG, "audit_log %s is not written: %s",
			    au->configured, au->reason[0] ? au->reason : "no file is open");
	else if (au && au->configured[0] && au->reason[0])
		/* Its path may differ from audit_log's without a reason: the
		 * links of audit_log's directories resolved (auditlog.h). */
		add_missing(s, "audit", LEVEL_CONFIG,
			    "audit_log %s is not written (%s): records go to %s instead",
			    au->configured, au->reason, au->path);
}

static void check_identity(struct status *s)
{
	if (s->r->identity != TOOLRUN__IDENTITY_MODE__IDENTITY_MODE_FULL)
		add_missing(s, "identity", LEVEL_FULL,
			    "programs run as toolrund's uid %u, not as their callers: %s",
			    (unsigned)s->r->uid,
			    s->r->identity_reason[0] ? s->r->identity_reason : "no reason given");
}

static void find_missing(struct status *s)
{
	read_processes(s);
	check_processes(s);
	check_programs(s);
	check_store(s);
	check_identity(s);
}

/* Missing protections that the level requires. */
static unsigned missing_at(const struct status *s, enum status_level level)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->nmissing; i++)
		n += s->missing[i].level <= level;
	return n;
}

/* ------------------------------------------------------------------ */
/* Text                                                                */

#define LABEL "%-12s"

/* Every capability this kernel has (/proc/sys/kernel/cap_last_cap). */
static uint64_t all_caps(void)
{
	unsigned last = 40;
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");

	if (f) {
		if (fscanf(f, "%u", &last) != 1 || last > 63)
			last = 40;
		fclose(f);
	}
	return last == 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1;
}

/* The names of the capabilities in mask, comma-separated: "none", "all",
 * or "all but NAMES" when that is shorter. */
static void cap_list(uint64_t mask, char *buf, size_t len)
{
	size_t at = 0;
	uint64_t all = all_caps();

	if (mask == 0 || (mask & all) == all) {
		snprintf(buf, len, "%s", mask == 0 ? "none" : "all");
		return;
	}
	if (__builtin_popcountll(all & ~mask) < __builtin_popcountll(mask)) {
		at = (size_t)snprintf(buf, len, "all but ");
		mask = all & ~mask;
	}
	for (unsigned bit = 0; bit < 64 && at < len; bit++) {
		if (!(mask >> bit & 1))
			continue;
		const char *name = procfacts_cap_name(bit);
		const char *sep = at && buf[at - 1] != ' ' ? "," : "";
		int n = name ? snprintf(buf + at, len - at, "%s%s", sep, name)
			     : snprintf(buf + at, len - at, "%sCAP_%u", sep, bit);
		if (n < 0)
			break;
		at += (size_t)n;
	}
}

static void print_process(const Toolrun__DaemonProcess *p, const struct proc_facts *f)
{
	char eff[1024], prm[1024], bnd[1024];

	if (!f->read) {
		printf(LABEL "pid %d, unknown: %s\n", role_name(p->role), (int)p->pid, f->why);
		return;
	}
	printf(LABEL "pid %d", role_name(p->role), (int)p->pid);
	if (f->has_ids)
		printf("  uid %u gid %u", (unsigned)f->uid[1], (unsigned)f->gid[1]);
	printf("  seccomp %s  no_new_privs %s", procfacts_seccomp_name(f->seccomp),
	       f->no_new_privs < 0 ? "unknown" : f->no_new_privs ? "yes" : "no");
	if (f->has_caps) {
		cap_list(f->cap_effective, eff, sizeof(eff));
		cap_list(f->cap_permitted, prm, sizeof(prm));
		cap_list(f->cap_bounding, bnd, sizeof(bnd));
		printf("  caps effective %s, permitted %s, bounding %s", eff, prm, bnd);
	}
	if (f->why[0])
		printf("  (%s)", f->why);
	printf("\n");
}

/* "8589934592", or "unlimited". */
static const char *limit_text(uint64_t v, char *buf, size_t len)
{
	if (v == UINT64_MAX)
		return "unlimited";
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

static void print_programs(const Toolrun__ProgramConfinement *p)
{
	char num[32];

	if (!p)
		return;
	printf(LABEL "seccomp %s, no_new_privs %s (inherited from the launcher); capabilities %s\n",
	       "programs", p->seccomp_inherited ? "filter" : "none", p->no_new_privs ? "yes" : "no",
	       p->root_programs_keep_capabilities ? "none, but root's programs keep root's" : "none");
	printf(LABEL "%u listed; timeout %u s;", "tools", p->tools, p->tool_timeout_s);
	for (size_t i = 0; i < p->n_tool_rlimits; i++)
		printf(" %s %s", p->tool_rlimits[i]->name,
		       limit_text(p->tool_rlimits[i]->value, num, sizeof(num)));
	if (p->tools_own_limits)
		printf("; %u with limits of their own", p->tools_own_limits);
	printf("\n");
	printf(LABEL "tools %s by default (%u set their own, %u of them allow), filter %s; "
	       "commands and sessions allow\n", "network",
	       p->tool_network_allowed ? "allow" : "deny", p->tools_own_network,
	       p->tools_network_allowed, p->network_filter_ready ? "ready" : "missing");
	printf(LABEL "timeout %u s, no rlimits, network allowed\n", "commands",
	       p->command_timeout_s);
}

static void print_store(const Toolrun__StatusReply *r)
{
	const Toolrun__SpillStatus *sp = r->spill;
	const Toolrun__AuditStatus *au = r->audit;

	if (!sp || !sp->configured[0])
		printf(LABEL "none (no spill_dir)\n", "spill");
	else if (sp->held)
		printf(LABEL "%s, held%s%s%s\n", "spill", sp->dir, sp->exists ? "" : ", gone",
		       sp->fallback ? ", made beside spill_dir " : "",
		       sp->fallback ? sp->configured : "");
	else
		printf(LABEL "%s, not held: %s\n", "spill", sp->configured, sp->reason);
	if (!au || !au->configured[0])
		printf(LABEL "none (no audit_log)\n", "audit");
	else if (au->writable)
		printf(LABEL "%s, writable, %" PRIu64 " record%s since start, head %.16s\n",
		       "audit", au->path, au->records, au->records == 1 ? "" : "s",
		       au->chain_head);
	else
		printf(LABEL "%s, not writable: %s\n", "audit", au->configured, au->reason);
}

static void print_verdict(const struct status *s, enum status_level level)
{
	unsigned config = missing_at(s, LEVEL_CONFIG);
	bool full = s->r->identity == TOOLRUN__IDENTITY_MODE__IDENTITY_MODE_FULL;
	bool ok = missing_at(s, level == LEVEL_NONE ? LEVEL_CONFIG : level) == 0;

	for (unsigned i = 0; i < s->nmissing; i++)
		printf(LABEL "%s%s: %s\n", "missing", s->missing[i].protection,
		       s->missing[i].level == LEVEL_FULL ? " (for full)" : "", s->missing[i].why);
	printf(LABEL "%s%s: ", "verdict", ok ? "ok" : "NOT OK",
	       level == LEVEL_FULL ? " (--require full)" : level == LEVEL_CONFIG
								? " (--require config)"
								: "");
	if (config)
		printf("%u protection%s the config asks for %s missing", config,
		       config == 1 ? "" : "s", config == 1 ? "is" : "are");
	else
		printf("every protection the config asks for is in force");
	printf("; identity %s\n", full ? "full (programs run as their callers)"
				       : "single (programs run as toolrund's uid)");
}

static void print_text(const struct status *s, enum status_level level)
{
	const Toolrun__StatusReply *r = s->r;
	bool full = r->identity == TOOLRUN__IDENTITY_MODE__IDENTITY_MODE_FULL;

	printf(LABEL "%s, up %" PRIu64 " s\n", "toolrund", r->software, r->uptime_s);
	printf(LABEL "%s%s%s\n", "identity", full ? "full" : "single",
	       full ? "" : ": ", full ? "" : r->identity_reason);
	if (r->user_note[0])
		printf(LABEL "%s\n", "user", r->user_note);
	for (unsigned i = 0; i < s->nprocs; i++)
		print_process(r->processes[i], &s->procs[i]);
	print_programs(r->programs);
	printf(LABEL "%s%s\n", "socket", r->socket, r->socket_fallback ? " (a socket_fallback)" : "");
	printf(LABEL "%s sha256 %s\n", "config", r->config_file, r->config_sha256);
	printf(LABEL "%u running, %" PRIu64 " served; sessions %u open; connections %u\n", "jobs",
	       r->running_jobs, r->served, r->open_sessions, r->connections);
	print_store(r);
	print_verdict(s, level);
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */

static struct json_object *jstr(const char *s)
{
	return json_text((const uint8_t *)(s ? s : ""), s ? strlen(s) : 0);
}

static struct json_object *cap_array(uint64_t mask)
{
	struct json_object *a = json_object_new_array();

	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(mask >> bit & 1))
			continue;
		const char *name = procfacts_cap_name(bit);
		char other[16];
		if (!name) {
			snprintf(other, sizeof(other), "CAP_%u", bit);
			name = other;
		}
		json_object_array_add(a, json_object_new_string(name));
	}
	return a;
}

static struct json_object *json_process(const Toolrun__DaemonProcess *p,
					const struct proc_facts *f)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "role", json_object_new_string(role_name(p->role)));
	json_object_object_add(o, "pid", json_object_new_int(p->pid));
	json_object_object_add(o, "uid", f->has_ids ? json_object_new_int64(f->uid[1]) : NULL);
	json_object_object_add(o, "gid", f->has_ids ? json_object_new_int64(f->gid[1]) : NULL);
	json_object_object_add(o, "cap_effective", f->has_caps ? cap_array(f->cap_effective) : NULL);
	json_object_object_add(o, "cap_permitted", f->has_caps ? cap_array(f->cap_permitted) : NULL);
	json_object_object_add(o, "cap_bounding", f->has_caps ? cap_array(f->cap_bounding) : NULL);
	json_object_object_add(o, "no_new_privs", f->no_new_privs < 0 ? NULL
						  : json_object_new_boolean(f->no_new_privs));
	json_object_object_add(o, "seccomp",
			       json_object_new_string(procfacts_seccomp_name(f->seccomp)));
	json_object_object_add(o, "seccomp_filters", f->seccomp_filters < 0 ? NULL
						     : json_object_new_int(f->seccomp_filters));
	json_object_object_add(o, "unknown", jstr(f->why));
	return o;
}

static struct json_object *json_limit(uint64_t v)
{
	return v == UINT64_MAX ? json_object_new_string("unlimited") : json_object_new_int64((int64_t)v);
}

static struct json_object *json_programs(const Toolrun__ProgramConfinement *p)
{
	struct json_object *o = json_object_new_object(), *lim = json_object_new_object();

	json_object_object_add(o, "seccomp_inherited", json_object_new_boolean(p->seccomp_inherited));
	json_object_object_add(o, "no_new_privs", json_object_new_boolean(p->no_new_privs));
	json_object_object_add(o, "root_programs_keep_capabilities",
			       json_object_new_boolean(p->root_programs_keep_capabilities));
	json_object_object_add(o, "tools", json_object_new_int64(p->tools));
	json_object_object_add(o, "tool_timeout_s", json_object_new_int64(p->tool_timeout_s));
	json_object_object_add(o, "command_timeout_s", json_object_new_int64(p->command_timeout_s));
	for (size_t i = 0; i < p->n_tool_rlimits; i++)
		json_object_object_add(lim, p->tool_rlimits[i]->name,
				       json_limit(p->tool_rlimits[i]->value));
	json_object_object_add(o, "tool_rlimits", lim);
	json_object_object_add(o, "tools_own_limits", json_object_new_int64(p->tools_own_limits));
	return o;
}

static struct json_object *json_network(const Toolrun__ProgramConfinement *p)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "tools",
			       json_object_new_string(p->tool_network_allowed ? "allow" : "deny"));
	json_object_object_add(o, "tools_own_policy", json_object_new_int64(p->tools_own_network));
	json_object_object_add(o, "tools_allowed", json_object_new_int64(p->tools_network_allowed));
	json_object_object_add(o, "commands", json_object_new_string("allow"));
	json_object_object_add(o, "filter_ready", json_object_new_boolean(p->network_filter_ready));
	return o;
}

static struct json_object *json_identity(const Toolrun__StatusReply *r)
{
	struct json_object *o = json_object_new_object(), *served = json_object_new_array();
	bool full = r->identity == TOOLRUN__IDENTITY_MODE__IDENTITY_MODE_FULL;

	json_object_object_add(o, "mode", json_object_new_string(full ? "full" : "single"));
	json_object_object_add(o, "reason", jstr(full ? "" : r->identity_reason));
	json_object_object_add(o, "uid", json_object_new_int64(r->uid));
	json_object_object_add(o, "gid", json_object_new_int64(r->gid));
	json_object_object_add(o, "user", jstr(r->user));
	json_object_object_add(o, "user_note", jstr(r->user_note));
	for (size_t i = 0; i < r->n_served_uids; i++)
		json_object_array_add(served, json_object_new_int64(r->served_uids[i]));
	json_object_object_add(o, "served_uids", served);
	return o;
}

static struct json_object *json_spill(const Toolrun__SpillStatus *sp)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "configured", jstr(sp->configured));
	json_object_object_add(o, "dir", jstr(sp->dir));
	json_object_object_add(o, "held", json_object_new_boolean(sp->held));
	json_object_object_add(o, "exists", json_object_new_boolean(sp->exists));
	json_object_object_add(o, "fallback", json_object_new_boolean(sp->fallback));
	json_object_object_add(o, "reason", jstr(sp->reason));
	return o;
}

static struct json_object *json_audit(const Toolrun__AuditStatus *au)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "configured", jstr(au->configured));
	json_object_object_add(o, "path", jstr(au->path));
	json_object_object_add(o, "writable", json_object_new_boolean(au->writable));
	json_object_object_add(o, "records", json_object_new_int64((int64_t)au->records));
	json_object_object_add(o, "chain_head", jstr(au->chain_head));
	json_object_object_add(o, "reason", jstr(au->reason));
	return o;
}

/* {"KEY": {"NAME": n}} */
static struct json_object *json_count(const char *name, int64_t n)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, name, json_object_new_int64(n));
	return o;
}

static struct json_object *json_verdict(const struct status *s)
{
	struct json_object *o = json_object_new_object(), *list = json_object_new_array();

	json_object_object_add(o, "config", json_object_new_boolean(missing_at(s, LEVEL_CONFIG) == 0));
	json_object_object_add(o, "full", json_object_new_boolean(missing_at(s, LEVEL_FULL) == 0));
	for (unsigned i = 0; i < s->nmissing; i++) {
		struct json_object *m = json_object_new_object();
		json_object_object_add(m, "protection",
				       json_object_new_string(s->missing[i].protection));
		json_object_object_add(m, "level", json_object_new_string(
						   s->missing[i].level == LEVEL_FULL ? "full" : "config"));
		json_object_object_add(m, "why", jstr(s->missing[i].why));
		json_object_array_add(list, m);
	}
	json_object_object_add(o, "missing", list);
	return o;
}

static int print_json(const struct status *s)
{
	const Toolrun__StatusReply *r = s->r;
	struct json_object *o = json_object_new_object(), *procs = json_object_new_array();
	struct json_object *sock = json_object_new_object(), *cfg = json_object_new_object();
	Toolrun__SpillStatus no_spill = TOOLRUN__SPILL_STATUS__INIT;
	Toolrun__AuditStatus no_audit = TOOLRUN__AUDIT_STATUS__INIT;
	Toolrun__ProgramConfinement no_programs = TOOLRUN__PROGRAM_CONFINEMENT__INIT;
	const Toolrun__ProgramConfinement *p = r->programs ? r->programs : &no_programs;

	json_object_object_add(o, "software", jstr(r->software));
	json_object_object_add(o, "identity", json_identity(r));
	for (unsigned i = 0; i < s->nprocs; i++)
		json_object_array_add(procs, json_process(r->processes[i], &s->procs[i]));
	json_object_object_add(o, "processes", procs);
	json_object_object_add(o, "programs", json_programs(p));
	json_object_object_add(o, "network", json_network(p));
	json_object_object_add(sock, "path", jstr(r->socket));
	json_object_object_add(sock, "fallback", json_object_new_boolean(r->socket_fallback));
	json_object_object_add(o, "socket", sock);
	json_object_object_add(cfg, "path", jstr(r->config_file));
	json_object_object_add(cfg, "sha256", jstr(r->config_sha256));
	json_object_object_add(o, "config", cfg);
	struct json_object *jobs = json_count("running", r->running_jobs);
	json_object_object_add(jobs, "served", json_object_new_int64((int64_t)r->served));
	json_object_object_add(o, "jobs", jobs);
	json_object_object_add(o, "sessions", json_count("open", r->open_sessions));
	json_object_object_add(o, "connections", json_object_new_int64(r->connections));
	json_object_object_add(o, "uptime_s", json_object_new_int64((int64_t)r->uptime_s));
	json_object_object_add(o, "spill", json_spill(r->spill ? r->spill : &no_spill));
	json_object_object_add(o, "audit", json_audit(r->audit ? r->audit : &no_audit));
	json_object_object_add(o, "verdict", json_verdict(s));
	bool ok = json_print_line(o, stdout);
	json_object_put(o);
	if (!ok)
		fprintf(stderr, "toolrun status: out of memory\n");
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ */

static Toolrun__ServerMessage *ask_status(const struct config *cfg, const char **where)
{
	Toolrun__Status st = TOOLRUN__STATUS__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	char why[1024];
	bool unreached;
	int err;

	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_STATUS;
	m.status = &st;
	/* A probe answers at once: it does not wait for a restart. */
	Toolrun__ServerMessage *sm = wire_ask(cfg, &m, TOOLRUN__SERVER_MESSAGE__MSG_STATUS_REPLY, 0,
					      where, &unreached, &err, why, sizeof(why));
	if (!sm) {
		const char *name = strerrorname_np(err);
		/* connect_daemon's line names the sockets it tried. */
		fprintf(stderr, "toolrun status: %s%s%s%s (%s)\n", unreached ? "" : "toolrund at ",
			unreached ? "" : *where, unreached ? "" : ": ", why, name ? name : "?");
	}
	return sm;
}

int status_main(const struct config *cfg, int argc, char **argv)
{
	struct status_options o = {0};
	const char *refused, *where = cfg->socket;
	char shortname[4];
	int r = options_each(argc, argv, status_long_options, take_option, &o, &refused,
			     shortname, sizeof(shortname));

	if (r == OPTIONS_REFUSED)
		return usage_error("unknown option or missing value: %s", refused);
	if (r != 0)
		return r == HELP_SHOWN ? STATUS_OK : STATUS_USAGE;
	Toolrun__ServerMessage *sm = ask_status(cfg, &where);
	if (!sm)
		return STATUS_UNREACHABLE;
	struct status *s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "toolrun status: out of memory\n");
		toolrun__server_message__free_unpacked(sm, NULL);
		return STATUS_UNREACHABLE;
	}
	s->r = sm->status_reply;
	find_missing(s);
	if (o.json)
		r = print_json(s);
	else
		print_text(s, o.require);
	fflush(stdout);
	int code = STATUS_OK;
	if (o.require != LEVEL_NONE) {
		for (unsigned i = 0; i < s->nmissing; i++)
			if (s->missing[i].level <= o.require)
				fprintf(stderr, "toolrun status: missing %s: %s\n",
					s->missing[i].protection, s->missing[i].why);
		if (missing_at(s, o.require))
			code = STATUS_MISSING;
	}
	free(s);
	toolrun__server_message__free_unpacked(sm, NULL);
	return r < 0 && code == STATUS_OK ? STATUS_UNREACHABLE : code;
}
