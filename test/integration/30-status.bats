#!/usr/bin/env bats
# toolrun status in single identity (docs/status.md): a toolrund that
# cannot switch users, as the integration suite runs it, reports so and
# why, its three processes as the kernel shows them, the config it loaded,
# live counts, its spill store and audit log; --require fails closed on
# what is missing. The full-identity side is test/security/31-status.bats.
#
# The config names a `user` that does not exist, so that toolrund warns
# why it cannot become it; run as root, toolrund starts without the
# capabilities to switch users (setpriv), as it would be as any other uid.

load helpers
load sessions

NO_USER=toolrun-t-nosuchuser

setup_file() {
	TR_DAEMON_REAL=$TR_DAEMON
	TR_WRAP_DIR=$(mktemp -d /tmp/trw.XXXXXX)
	export TR_WRAP_DIR
	TR_DAEMON="$TR_WRAP_DIR/toolrund"
	if [ "$(id -u)" -eq 0 ]; then
		printf '#!/bin/sh\nexec setpriv --bounding-set -setuid,-setgid,-kill,-chown --inh-caps=-all %s "$@"\n' \
			"$TR_DAEMON_REAL" >"$TR_DAEMON"
	else
		printf '#!/bin/sh\nexec %s "$@"\n' "$TR_DAEMON_REAL" >"$TR_DAEMON"
	fi
	chmod 755 "$TR_DAEMON"
	export TR_DAEMON
	tr_start "user = $NO_USER"
}

teardown_file() {
	tr_stop
	rm -rf "$TR_WRAP_DIR"
}

@test "30-status-identity: single identity, with the reason toolrund's warning gives" {
	run --separate-stderr status --json
	[ "$status" -eq 0 ]
	[ "$(jf identity.mode)" = single ]
	reason=$(jf identity.reason)
	[ "$reason" = "user = $NO_USER, but toolrund cannot become it: no user $NO_USER exists here (/etc/passwd)" ]
	grep -qF "warn: $reason. It runs as uid $(id -u) in single identity" "$TR_DIR/daemon.log"
	[ "$(jf identity.uid)" = "$(id -u)" ]
	[ "$(jf identity.user)" = "$NO_USER" ]
	[ "$(jf verdict.config)" = true ]
	[ "$(jf verdict.full)" = false ]
}

@test "30-status-processes: the supervisor, listener and launcher, as the kernel shows them" {
	run --separate-stderr status --json
	[ "$status" -eq 0 ]
	status_names_daemon "$(cat "$TR_DIR/daemon.pid")"
	for i in 0 1 2; do
		pid=$(jf processes.$i.pid)
		[ "$(jf processes.$i.uid)" = "$(id -u)" ]
		[ "$(jf processes.$i.seccomp)" = filter ]
		[ "$(jf processes.$i.no_new_privs)" = true ]
		[ "$(jf processes.$i.unknown)" = "" ]
		# What the kernel says, name for name.
		[ "$(sed -n 's/^Seccomp:\t//p' "/proc/$pid/status")" = 2 ]
	done
	# The listener, which parses every client's bytes, holds nothing.
	[ "$(jf processes.1.cap_effective)" = "[]" ]
	[ "$(jf processes.1.cap_permitted)" = "[]" ]
	[ "$(jf programs.seccomp_inherited)" = true ]
	[ "$(jf programs.no_new_privs)" = true ]
	# A launcher that is root leaves root's programs root's capabilities.
	keep=false
	[ "$(id -u)" -ne 0 ] || keep=true
	[ "$(jf programs.root_programs_keep_capabilities)" = "$keep" ]
	[ "$(jf network.tools)" = deny ]
	[ "$(jf network.filter_ready)" = true ]
}

@test "30-status-config: the socket in use and the SHA-256 of the config toolrund loaded" {
	run --separate-stderr status --json
	[ "$status" -eq 0 ]
	[ "$(jf socket.path)" = "$TR_DIR/s.sock" ]
	[ "$(jf socket.fallback)" = false ]
	[ "$(jf config.path)" = "$TOOLRUN_CONFIG" ]
	[ "$(jf config.sha256)" = "$(sha256sum <"$TOOLRUN_CONFIG" | cut -d' ' -f1)" ]
	[ "$(jf spill.configured)" = "$TR_DIR/spill" ]
	[ "$(jf spill.dir)" = "$TR_DIR/spill" ]
	[ "$(jf spill.held)" = true ]
	[ "$(jf spill.exists)" = true ]
	[ "$(jf audit.path)" = "$TR_DIR/audit.jsonl" ]
	[ "$(jf audit.writable)" = true ]
	# A reload that changes the file: the hash of what it reads now.
	echo "# changed" >>"$TOOLRUN_CONFIG"
	"$TR_CLI" reload >/dev/null
	run --separate-stderr status --json
	[ "$(jf config.sha256)" = "$(sha256sum <"$TOOLRUN_CONFIG" | cut -d' ' -f1)" ]
}

@test "30-status-counts: running jobs and open sessions as they come and go" {
	run --separate-stderr status --json
	[ "$(jf jobs.running)" = 0 ]
	[ "$(jf sessions.open)" = 0 ]
	records=$(jf audit.records)
	new_session
	run --separate-stderr session run "$sid" --timeout 0 -- 'sleep 60'
	wait_for 60 status_counts 1 1
	run session kill "$sid"
	wait_for 60 status_counts 0 1
	session close "$sid" >/dev/null
	wait_for 60 status_counts 0 0
	# Each job is audited: the count grew.
	run --separate-stderr status --json
	[ "$(jf audit.records)" -gt "$records" ]
}

@test "30-status-require: --require full fails in single identity, naming it; config passes" {
	run --separate-stderr status --require full
	[ "$status" -eq 1 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "${stderr_lines[0]}" == "toolrun status: missing identity: programs run as toolrund's uid $(id -u), not as their callers: user = $NO_USER, but toolrund cannot become it"* ]]
	[[ "${lines[-1]}" == "verdict     NOT OK (--require full): "* ]]
	run --separate-stderr status --require config
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "${lines[-1]}" == "verdict     ok (--require config): every protection the config asks for is in force; identity single"* ]]
}

@test "30-status-text: short aligned lines, the identity and its reason, a verdict last" {
	run --separate-stderr status
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" == "identity    single: user = $NO_USER, but toolrund cannot become it"* ]]
	[[ "${lines[2]}" == "supervisor  pid $(cat "$TR_DIR/daemon.pid")  uid $(id -u) "*"seccomp filter  no_new_privs yes"* ]]
	printf '%s\n' "${lines[@]}" | grep -qx "config      $TOOLRUN_CONFIG sha256 $(sha256sum <"$TOOLRUN_CONFIG" | cut -d' ' -f1)"
	[[ "${lines[-1]}" == "verdict     ok: every protection the config asks for is in force; identity single"* ]]
}

@test "30-status-usage: an unknown level or argument is a usage error" {
	run --separate-stderr status --require strict
	[ "$status" -eq 2 ]
	[ "${stderr_lines[0]}" = "toolrun status: unknown level for --require: 'strict' (config or full)" ]
	run --separate-stderr status extra
	[ "$status" -eq 2 ]
	[ "${stderr_lines[0]}" = "toolrun status: unexpected argument: extra" ]
	run --separate-stderr status --require
	[ "$status" -eq 2 ]
}

# Last: these restart the daemon.
@test "30-status-audit-shared: in single identity a directory others may write holds the audit log; a link among its directories is resolved" {
	tr_kill_daemon
	# Root's 0777, as a Kubernetes emptyDir: refused in full identity
	# (security 32-audit-dir), accepted here, where the programs run as
	# the log's owner anyway.
	mkdir -m 0777 "$TR_DIR/open"
	chmod 0777 "$TR_DIR/open"
	ln -s open "$TR_DIR/via"
	tr_write_config "$TOOLRUN_CONFIG" "user = $NO_USER" "audit_log = $TR_DIR/via/a/audit.jsonl"
	# helpers.bash, loaded for each test, names the real toolrund.
	TR_DAEMON="$TR_WRAP_DIR/toolrund" tr_launch
	run --separate-stderr status --json
	[ "$status" -eq 0 ]
	[ "$(jf identity.mode)" = single ]
	[ "$(jf audit.configured)" = "$TR_DIR/via/a/audit.jsonl" ]
	[ "$(jf audit.path)" = "$(realpath "$TR_DIR")/open/a/audit.jsonl" ]
	[ "$(jf audit.writable)" = true ]
	[ "$(jf audit.reason)" = "" ]
	run --separate-stderr status --require config
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ -f "$TR_DIR/open/a/audit.jsonl" ]
}

@test "30-status-missing: an audit log and spill store the daemon could not set up fail --require config" {
	tr_kill_daemon
	# /proc takes no new directory, not even root's. The socket falls
	# back too, and the audit log with it: records are kept, but not
	# where the config says.
	tr_write_config "$TOOLRUN_CONFIG" "user = $NO_USER" \
		"audit_log = /proc/toolrun-t-none/audit.jsonl" "spill_dir = /proc/toolrun-t-none/spill"
	sed -i -e "s|^socket = .*|socket = /proc/toolrun-t-none/s.sock|" \
		-e "s|^socket_fallback =.*|socket_fallback = $TR_DIR/fb/s.sock|" "$TOOLRUN_CONFIG"
	TR_DAEMON="$TR_WRAP_DIR/toolrund" TR_SOCKET="$TR_DIR/fb/s.sock" tr_launch
	run --separate-stderr status --json
	[ "$status" -eq 0 ]
	[ "$(jf socket.path)" = "$TR_DIR/fb/s.sock" ]
	[ "$(jf socket.fallback)" = true ]
	[ "$(jf identity.mode)" = single ]
	[ "$(jf spill.held)" = false ]
	[[ "$(jf spill.reason)" == "spill_dir /proc/toolrun-t-none/spill: "* ]]
	[ "$(jf audit.configured)" = /proc/toolrun-t-none/audit.jsonl ]
	[ "$(jf audit.path)" = "$TR_DIR/fb/audit.jsonl" ]
	[ "$(jf verdict.config)" = false ]
	run --separate-stderr status --require config
	[ "$status" -eq 1 ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == "toolrun status: missing spill: spill_dir /proc/toolrun-t-none/spill is not held: "* ]]
	[[ "${stderr_lines[1]}" == "toolrun status: missing audit: audit_log /proc/toolrun-t-none/audit.jsonl is not written ("*"): records go to $TR_DIR/fb/audit.jsonl instead" ]]
}

@test "30-status-down: no daemon is exit 3, one line naming the socket and the errno" {
	tr_kill_daemon
	run --separate-stderr status --require config
	[ "$status" -eq 3 ]
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "${stderr_lines[0]}" == "toolrun status: "*"$TR_DIR/fb/s.sock"*"(ECONNREFUSED)" ]]
}
