#!/usr/bin/env bats
# The audit log's directories (docs/security.md, "The audit log"): every
# directory above audit_log must be root's or toolrund's, and writable by
# nobody else unless sticky. Else whoever may rename its entries could
# move the log aside and put a forged one at its path, as an agent could
# under a Kubernetes emptyDir (root, 0777, not sticky). A toolrund that
# starts as root and runs as nobody refuses such a directory, says which
# and why, and status reports the audit log missing.

load helpers
source "$BATS_TEST_DIRNAME/../integration/sessions.bash" # jf

setup() {
	AUD=$(mktemp -d /tmp/tra.XXXXXX)
	chmod 755 "$AUD"
	mkdir "$AUD/logs"
	LOG="$AUD/logs/audit.jsonl"
}

teardown() {
	tr_stop
	rm -rf "$AUD"
}

# Start toolrund with audit_log in $AUD/logs, that directory set to mode
# $1 and owner $2.
start_with_log_dir() {
	chmod "$1" "$AUD/logs"
	chown "$2" "$AUD/logs"
	tr_start_nobody "audit_log = $LOG"
	file_skipped
}

# The launcher has opened its audit log, or said why not.
launcher_opened_log() {
	local out
	out=$("$TR_CLI" status --json) || true
	[ -n "$(jf audit.configured "$out")" ]
}

# Refused: no file there, the daemon's log and status name the directory.
expect_refused() {
	local why=$1
	wait_for 60 launcher_opened_log
	[ ! -e "$LOG" ]
	grep -F "no audit log: $why" "$TR_DIR/daemon.log"
	run --separate-stderr "$TR_CLI" status --require config
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"missing audit: audit_log $LOG is not written: $why"* ]]
	run --separate-stderr "$TR_CLI" status --json
	[ "$(jf audit.writable)" = false ]
	[ "$(jf audit.reason)" = "$why" ]
}

@test "32-audit-dir-open: a root-owned directory writable by others, not sticky, is refused" {
	start_with_log_dir 0777 root
	expect_refused "$AUD/logs is writable by others without the sticky bit (mode 0777): anyone could replace the log"
}

@test "32-audit-dir-sticky: the same directory with the sticky bit holds the log" {
	start_with_log_dir 1777 root
	run --separate-stderr "$TR_CLI" status --require config
	[ "$status" -eq 0 ]
	run --separate-stderr "$TR_CLI" status --json
	[ "$(jf audit.path)" = "$LOG" ]
	[ "$(jf audit.writable)" = true ]
	[ "$(jf audit.reason)" = "" ]
	tr_bash -c 'cat </dev/null'
	wait_for 60 test -s "$LOG"
	[ "$(stat -c %u "$LOG")" = "$NOBODY_UID" ]
}

@test "32-audit-dir-owner: a directory of another user, 0755, is refused" {
	ensure_test_users || skip "cannot make the test users"
	start_with_log_dir 0755 "$TR_CALLER"
	expect_refused "$AUD/logs belongs to uid $CALLER_UID (mode 0755), neither root nor toolrund's uid $NOBODY_UID: its owner could replace the log"
}
