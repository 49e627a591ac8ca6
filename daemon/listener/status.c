/*
 * A client's Status, answered (status.h).
 *
 * Process: the listener.
 */
#include "status.h"

#include <string.h>

/* The config's key for each resource limit a listed tool gets. */
static const char *const rlimit_keys[POLICY_RLIMIT_COUNT] = {
	[POLICY_RLIMIT_AS] = "rlimit_as",
	[POLICY_RLIMIT_NPROC] = "rlimit_nproc",
	[POLICY_RLIMIT_FSIZE] = "rlimit_fsize",
	[POLICY_RLIMIT_NOFILE] = "rlimit_nofile",
	[POLICY_RLIMIT_CPU] = "rlimit_cpu",
};

static void add_process(struct status_reply *out, Toolrun__DaemonRole role, pid_t pid)
{
	size_t i = out->r.n_processes++;

	toolrun__daemon_process__init(&out->procs[i]);
	out->procs[i].role = role;
	out->procs[i].pid = pid;
	out->proc_ptrs[i] = &out->procs[i];
}

/* What listed tools get from the config served now, and what the
 * launcher applies to every program. */
static void build_programs(struct status_reply *out, const struct config *cfg,
			   const Toolrun__Launcher__LauncherState *st)
{
	Toolrun__ProgramConfinement *p = &out->programs;

	toolrun__program_confinement__init(p);
	p->seccomp_inherited = st->seccomp_inherited;
	p->no_new_privs = st->no_new_privs;
	p->network_filter_ready = st->network_filter_ready;
	p->root_programs_keep_capabilities = st->runs_as_root;
	p->tool_network_allowed = cfg->defaults.network == NETWORK_ALLOW;
	for (unsigned t = 0; t < cfg->ntools; t++) {
		const struct tool *tool = &cfg->tools[t];
		if (tool->set & LIMIT_SET_NETWORK) {
			p->tools_own_network++;
			p->tools_network_allowed += tool->own.network == NETWORK_ALLOW;
		}
		if (tool->set)
			p->tools_own_limits++;
	}
	for (int r = 0; r < POLICY_RLIMIT_COUNT; r++) {
		toolrun__named_limit__init(&out->limits[r]);
		out->limits[r].name = (char *)rlimit_keys[r];
		out->limits[r].value = cfg->defaults.rlimit[r];
		out->limit_ptrs[r] = &out->limits[r];
	}
	p->n_tool_rlimits = POLICY_RLIMIT_COUNT;
	p->tool_rlimits = out->limit_ptrs;
	p->tool_timeout_s = cfg->defaults.timeout_s;
	p->command_timeout_s = cfg->command_timeout_s;
	p->tools = cfg->ntools;
}

void status_build(struct status_reply *out, const struct status_sources *src,
		  const Toolrun__Launcher__LauncherState *st)
{
	const struct daemon_facts *f = src->facts;
	Toolrun__StatusReply *r = &out->r;

	toolrun__status_reply__init(r);
	r->software = (char *)"toolrund " TOOLRUN_VERSION;
	r->identity = f->full_identity ? TOOLRUN__IDENTITY_MODE__IDENTITY_MODE_FULL
				       : TOOLRUN__IDENTITY_MODE__IDENTITY_MODE_SINGLE;
	r->identity_reason = (char *)(f->full_identity ? "" : f->identity_reason);
	r->user = (char *)src->cfg->user;
	r->user_note = (char *)f->user_note;
	r->uid = f->uid;
	r->gid = f->gid;
	for (unsigned i = 0; i < src->nserved && i < MAX_ALLOWED_UIDS; i++)
		out->served[i] = src->served[i];
	r->n_served_uids = src->nserved;
	r->served_uids = out->served;
	r->processes = out->proc_ptrs;
	add_process(out, TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_SUPERVISOR, f->supervisor);
	add_process(out, TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_LISTENER, f->listener);
	add_process(out, TOOLRUN__DAEMON_ROLE__DAEMON_ROLE_LAUNCHER, f->launcher);
	r->socket = (char *)src->socket;
	r->socket_fallback = f->socket_fallback;
	r->config_file = (char *)src->cfg->file;
	r->config_sha256 = (char *)src->cfg->sha256;
	r->running_jobs = src->running_jobs;
	r->open_sessions = src->open_sessions;
	r->connections = src->connections;
	r->served = src->served_requests;
	r->uptime_s = src->uptime_s;
	build_programs(out, src->cfg, st);
	r->programs = &out->programs;
	/* The launcher's own, copied so that a missing one reads as empty. */
	toolrun__spill_status__init(&out->spill);
	toolrun__audit_status__init(&out->audit);
	if (st->spill)
		out->spill = *st->spill;
	if (st->audit)
		out->audit = *st->audit;
	r->spill = &out->spill;
	r->audit = &out->audit;
}
