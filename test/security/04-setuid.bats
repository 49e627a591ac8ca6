#!/usr/bin/env bats
# A daemon started as root that drops to nobody: its programs run as
# nobody, without capabilities, and a setuid-root program does not give
# them root back (no_new_privs).

load helpers

setup_file() {
	tr_start_nobody "tools = escape" || return
	[ -z "$TR_FILE_SKIP" ] || return 0
	# A setuid-root copy of the program, on a file system that honours
	# setuid bits, in a directory nobody can reach.
	local base
	for base in "$TR_DIR" /var/tmp; do
		findmnt -n -o OPTIONS -T "$base" | grep -qw nosuid && continue
		SUID_DIR=$(mktemp -d "$base/trsuid.XXXXXX")
		chmod 755 "$SUID_DIR"
		cp "$ESCAPE" "$SUID_DIR/escape"
		chown root:root "$SUID_DIR/escape"
		chmod 4755 "$SUID_DIR/escape"
		export SUID_DIR
		break
	done
}

teardown_file() {
	[ -z "${SUID_DIR:-}" ] || rm -rf "$SUID_DIR"
	tr_stop
}

setup() {
	file_skipped
}

@test "01-user: a root caller's program runs as nobody, with no capabilities" {
	run plain_bash "cd / && $ESCAPE ids && cat /proc/self/status | grep -E '^CapEff:'"
	[ "${lines[0]}" = "uid=0 euid=0" ]
	[ "${lines[1]}" != $'CapEff:\t0000000000000000' ]
	run tr_bash "cd / && $ESCAPE ids && cat /proc/self/status | grep -E '^Cap(Prm|Eff):'"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "uid=$NOBODY_UID euid=$NOBODY_UID" ]
	[ "${lines[1]}" = $'CapPrm:\t0000000000000000' ]
	[ "${lines[2]}" = $'CapEff:\t0000000000000000' ]
}

@test "02-setuid: a setuid-root program does not raise a program's privileges" {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	[ -n "${SUID_DIR:-}" ] || skip "/tmp and /var/tmp are both mounted nosuid"
	# Directly, as nobody, the setuid bit works.
	run setpriv --reuid="$NOBODY_UID" --regid="$NOBODY_GID" --clear-groups "$SUID_DIR/escape" ids
	[ "$status" -eq 0 ]
	[ "$output" = "uid=$NOBODY_UID euid=0" ]
	n=$(tr_job_count)
	run tr_bash "cd / && $SUID_DIR/escape ids"
	[ "$status" -eq 0 ]
	[ "$output" = "uid=$NOBODY_UID euid=$NOBODY_UID" ]
	jobs_since "$n" | grep -q ' tool=escape '
}
