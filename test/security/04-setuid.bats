#!/usr/bin/env bats
# A daemon started as root that drops to nobody: its programs run as
# their caller, without capabilities, and a setuid-root program does not
# give them root (no_new_privs).

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

@test "01-user: a caller's program runs as that caller (uid, gid, groups), with no capabilities" {
	n=$(tr_job_count)
	run tr_bash "cd / && $ESCAPE ids && cat /proc/self/status | grep -E '^(Uid|Gid|Groups|CapPrm|CapEff):'"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "uid=$CALLER_UID euid=$CALLER_UID" ]
	[ "${lines[1]}" = "$(printf 'Uid:\t%s\t%s\t%s\t%s' $CALLER_UID $CALLER_UID $CALLER_UID $CALLER_UID)" ]
	[ "${lines[2]}" = "$(printf 'Gid:\t%s\t%s\t%s\t%s' $CALLER_GID $CALLER_GID $CALLER_GID $CALLER_GID)" ]
	[ "${lines[3]}" = "$(printf 'Groups:\t%s ' $(id -G "$TR_CALLER"))" ]
	[ "${lines[4]}" = $'CapPrm:\t0000000000000000' ]
	[ "${lines[5]}" = $'CapEff:\t0000000000000000' ]
	# Both ran in the daemon, which runs as nobody.
	[ "$(jobs_since "$n" | grep -c -e ' tool=escape ' -e ' tool=cat ')" -eq 2 ]
	[ "$(stat -c %u "/proc/$(tr_daemon_pid)")" = "$NOBODY_UID" ]
}

@test "02-setuid: a setuid-root program does not raise a program's privileges" {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	[ -n "${SUID_DIR:-}" ] || skip "/tmp and /var/tmp are both mounted nosuid"
	# Directly, as the caller, the setuid bit works.
	run setpriv --reuid="$CALLER_UID" --regid="$CALLER_GID" --init-groups "$SUID_DIR/escape" ids
	[ "$status" -eq 0 ]
	[ "$output" = "uid=$CALLER_UID euid=0" ]
	n=$(tr_job_count)
	run tr_bash "cd / && $SUID_DIR/escape ids"
	[ "$status" -eq 0 ]
	[ "$output" = "uid=$CALLER_UID euid=$CALLER_UID" ]
	jobs_since "$n" | grep -q ' tool=escape '
}
