#!/usr/bin/env bats
# toolrun status in full identity (docs/status.md): a toolrund started as
# root that runs as nobody reports that programs run as their callers, its
# three processes as nobody with the capabilities each really holds, and
# passes --require full. The single-identity side is
# test/integration/30-status.bats.

load helpers
source "$BATS_TEST_DIRNAME/../integration/sessions.bash"

setup_file() {
	tr_start_nobody
}

teardown_file() {
	tr_stop
}

setup() {
	file_skipped
}

@test "31-status-identity: full identity, no reason, toolrund as its user" {
	run --separate-stderr status --json
	[ "$status" -eq 0 ]
	[ "$(jf identity.mode)" = full ]
	[ "$(jf identity.reason)" = "" ]
	[ "$(jf identity.user)" = nobody ]
	[ "$(jf identity.uid)" = "$NOBODY_UID" ]
	[ "$(jf verdict.config)" = true ]
	[ "$(jf verdict.full)" = true ]
	[ "$(jf verdict.missing)" = "[]" ]
}

@test "31-status-processes: each process as nobody, with the capabilities it really holds" {
	run --separate-stderr status --json
	[ "$status" -eq 0 ]
	status_names_daemon "$(tr_daemon_pid)"
	for i in 0 1 2; do
		pid=$(jf processes.$i.pid)
		[ "$(jf processes.$i.uid)" = "$NOBODY_UID" ]
		[ "$(jf processes.$i.seccomp)" = filter ]
		[ "$(proc_status "$pid" Seccomp)" = 2 ]
		[ "$(jf processes.$i.no_new_privs)" = true ]
	done
	# The supervisor keeps the four permitted, not effective; the
	# launcher uses them; the listener holds none.
	[ "$(jf processes.0.cap_effective)" = "[]" ]
	[ "$(jf processes.0.cap_permitted)" = '["CAP_CHOWN", "CAP_KILL", "CAP_SETGID", "CAP_SETUID"]' ]
	[ "$(jf processes.2.cap_effective)" = '["CAP_CHOWN", "CAP_KILL", "CAP_SETGID", "CAP_SETUID"]' ]
	[ "$(jf processes.1.cap_effective)" = "[]" ]
	[ "$(jf processes.1.cap_permitted)" = "[]" ]
	# The launcher is nobody: it clears its capabilities in every program.
	[ "$(jf programs.root_programs_keep_capabilities)" = false ]
	[ "$(jf config.sha256)" = "$(sha256sum <"$TOOLRUN_CONFIG" | cut -d' ' -f1)" ]
	[ "$(jf socket.path)" = "$TR_SOCKET" ]
}

@test "31-status-require: --require full and --require config pass" {
	run --separate-stderr status --require full
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "${lines[1]}" == "identity    full" ]]
	[[ "${lines[-1]}" == "verdict     ok (--require full): every protection the config asks for is in force; identity full"* ]]
	run --separate-stderr status --require config
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "31-status-counts: a session and its running command are counted" {
	new_session
	run --separate-stderr session run "$sid" --timeout 0 -- 'sleep 60'
	wait_for 60 status_counts 1 1
	run session kill "$sid"
	wait_for 60 status_counts 0 1
	session close "$sid" >/dev/null
	wait_for 60 status_counts 0 0
}
