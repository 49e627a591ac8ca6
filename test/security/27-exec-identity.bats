#!/usr/bin/env bats
# What runs is what was checked. The launcher opens a tool's file itself,
# checks that it is the file the listener matched, and executes that very
# file: neither a path that names another file in the program's view
# (/proc/self/fd/N) nor a symlink flipped after the check runs another
# program under a tool's policy. A program listed by name is that tool
# only in trusted_dirs; elsewhere it is an unlisted program.

load helpers

RAWEXEC="$SEC_BIN/rawexec"

# The config: /usr/bin/true listed by path, cat and greet by name, with
# network for cat; trusted_dirs the default, plus $TR_DIR/trusted, or
# as the arguments say.
write_config() {
	{
		echo "socket = $TR_DIR/s.sock"
		echo "socket_fallback ="
		echo "audit_log = $TR_DIR/audit.jsonl"
		echo "spill_dir = $TR_DIR/spill"
		echo "tools = /usr/bin/true cat greet"
		echo "${1-trusted_dirs = /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin $TR_DIR/trusted}"
		echo "timeout = 20"
		echo "[tool.cat]"
		echo "network = allow"
	} >"$TOOLRUN_CONFIG"
}

setup_file() {
	TR_DIR=$(mktemp -d /tmp/trt.XXXXXX)
	export TR_DIR
	export TOOLRUN_CONFIG="$TR_DIR/toolrun.conf"
	export TR_MARK="trmark-$TR_DIR"
	mkdir "$TR_DIR/bin" "$TR_DIR/trusted"
	# Programs named like a listed tool, each saying who it is.
	printf '#!/bin/sh\necho "untrusted cat $*"\n' >"$TR_DIR/bin/cat"
	printf '#!/bin/sh\necho "greet 0=$0 args=$*"\n' >"$TR_DIR/trusted/greet"
	chmod 755 "$TR_DIR/bin/cat" "$TR_DIR/trusted/greet"
	echo "small file" >"$TR_DIR/small"
	write_config
	tr_write_wrappers
	tr_launch
}

teardown_file() {
	[ -z "${FLIPPER:-}" ] || kill "$FLIPPER" 2>/dev/null || true
	tr_stop
}

@test "01-proc-fd: a path naming another file in the program's view does not run it" {
	# /usr/bin/true is listed. The request names /proc/self/fd/60: in the
	# listener, the fds a request brings land below 60 and one of these
	# copies of true is its fd 60; in the program, fd 60 is id.
	local fds="" n
	for n in $(seq 3 59); do fds+="exec $n</usr/bin/true; "; done
	run --separate-stderr timeout 60 "$PLAIN_BASH" \
		"$fds exec 60</usr/bin/id; $RAWEXEC $TR_DIR/s.sock 1 /proc/self/fd/60"
	[ "$status" -eq 0 ]
	[[ "$output" != *uid=* ]]
	[ "${lines[0]}" = "not run: toolrund failed to run it: the path now names another file than the one checked: Permission denied" ]
	[ "${lines[1]}" = "0 run, 1 not run" ]
}

@test "02-symlink-race: a symlink flipped between the check and the exec never runs the other program" {
	# A link flipping, as fast as it can, between the listed true and id.
	python3 -c '
import os, sys
link, targets = sys.argv[1], sys.argv[2:]
while True:
    for t in targets:
        os.symlink(t, link + ".new")
        os.replace(link + ".new", link)
' "$TR_DIR/link" /usr/bin/true /usr/bin/id &
	FLIPPER=$!
	wait_for 10 test -L "$TR_DIR/link"
	run --separate-stderr timeout 240 "$PLAIN_BASH" "$RAWEXEC $TR_DIR/s.sock 400 $TR_DIR/link"
	kill "$FLIPPER"
	wait "$FLIPPER" || true
	FLIPPER=
	[ "$status" -eq 0 ]
	# id printed nothing; every request was answered: true ran, or the
	# link named id when the listener looked (not listed), or by the
	# time the launcher opened it (another file than the one checked).
	[[ "$output" != *uid=* ]]
	local other
	other=$(grep -v -e '^not run: not a tool listed in ' \
		-e '^not run: toolrund failed to run it: the path now names another file than the one checked: Permission denied$' \
		-e '^[0-9]* run, [0-9]* not run$' <<<"$output") || true
	[ -z "$other" ]
	[[ "${lines[-1]}" =~ ^[0-9]+" run, "[0-9]+" not run"$ ]]
	echo "# ${lines[-1]}" >&3
}

@test "03-untrusted-dir: a program named like a listed tool, outside trusted_dirs, is not that tool" {
	local n
	n=$(tr_job_count)
	# Through the library: it runs as any unlisted program, without a job.
	run --separate-stderr tr_bash "$TR_DIR/bin/cat x"
	[ "$status" -eq 0 ]
	[ "$output" = "untrusted cat x" ]
	[ "$(tr_job_count)" -eq "$n" ]
	# Asked directly, toolrund does not list it either.
	run --separate-stderr "$PLAIN_BASH" "$RAWEXEC $TR_DIR/s.sock 1 $TR_DIR/bin/cat x"
	[[ "${lines[0]}" == "not run: not a tool listed in $TOOLRUN_CONFIG as toolrund read it"* ]]
	# The cat of a trusted directory still is the tool, under any name.
	n=$(tr_job_count)
	mkdir "$TR_DIR/l"
	ln -s /usr/bin/cat "$TR_DIR/l/cat"
	run --separate-stderr tr_bash "cat $TR_DIR/small && $TR_DIR/l/cat $TR_DIR/small"
	[ "$status" -eq 0 ]
	[ "$output" = $'small file\nsmall file' ]
	[ "$(jobs_since "$n" | grep -c ' tool=cat ')" -eq 2 ]
}

@test "04-script: a script in a trusted directory runs as its tool, by the path it was found at" {
	[ "$(id -u)" -eq 0 ] || skip "a file of the caller's own is not its tool: needs a root caller"
	local n
	n=$(tr_job_count)
	run --separate-stderr tr_bash "PATH=$TR_DIR/trusted:\$PATH; greet a 'b c'; $TR_DIR/trusted/greet d"
	[ "$status" -eq 0 ]
	[ "$output" = $'greet 0='"$TR_DIR/trusted/greet"$' args=a b c\ngreet 0='"$TR_DIR/trusted/greet"' args=d' ]
	[ "$(jobs_since "$n" | grep -c ' tool=greet ')" -eq 2 ]
	# By another name of the same file, the interpreter is given the
	# path the script was matched at.
	run --separate-stderr "$PLAIN_BASH" "cd $TR_DIR/trusted && $RAWEXEC $TR_DIR/s.sock 1 ./greet e"
	[ "${lines[0]}" = "greet 0=$TR_DIR/trusted/greet args=e" ]
}

@test "05-trusted-dirs-empty: with trusted_dirs empty, a name matches anywhere, as before" {
	write_config "trusted_dirs ="
	"$TR_CLI" reload >/dev/null
	local n
	n=$(tr_job_count)
	run --separate-stderr tr_bash "$TR_DIR/bin/cat x"
	[ "$status" -eq 0 ]
	[ "$output" = "untrusted cat x" ]
	jobs_since "$n" | grep -q ' tool=cat '
}
