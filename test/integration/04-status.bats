#!/usr/bin/env bats
# Exit statuses: the program's own, and the daemon's 124, 126 and 127.

load helpers

setup_file() {
	tr_start "[tool.tail]" "timeout = 1"
	printf 'x\n' >"$TR_DIR/cat" # a "cat" that is not executable
	mkdir -p "$TR_DIR/bin"
}

teardown_file() {
	tr_stop
}

@test "04-status-0: grep that matches exits 0" {
	run tr_bash 'grep -q root /etc/passwd'
	[ "$status" -eq 0 ]
}

@test "04-status-1: grep that does not match exits 1" {
	run tr_bash 'grep -q no-such-line-anywhere /etc/passwd'
	[ "$status" -eq 1 ]
}

@test "04-status-2: grep on a missing file exits 2 with grep's message" {
	run --separate-stderr tr_bash 'grep x /nonexistent'
	[ "$status" -eq 2 ]
	[ "$stderr" = "grep: /nonexistent: No such file or directory" ]
}

@test "04-status-3-and-255: any exit code comes back as it was" {
	run tr_bash "$TR_PROBE exit 3"
	[ "$status" -eq 3 ]
	run tr_bash "$TR_PROBE exit 255"
	[ "$status" -eq 255 ]
}

@test "04-status-124: a program past its timeout is killed, 124 and a notice" {
	run --separate-stderr timeout 120 "$TR_BASH" 'tail -f /dev/null'
	[ "$status" -eq 124 ]
	[ "$stderr" = "toolrun: tail: timed out after 1 s" ]
	tr_log_settled
	grep -q 'tool=tail .* exit=124 timeout' "$TR_DIR/daemon.log"
}

@test "04-status-126-daemon: the daemon cannot execute it: 126 and the reason" {
	run --separate-stderr "$TR_CLI" run "$TR_DIR/cat"
	[ "$status" -eq 126 ]
	[ "$stderr" = "toolrun: cat: Permission denied" ]
}

@test "04-status-126-shell: a listed name that is not executable fails as it would directly" {
	run --separate-stderr tr_bash "$TR_DIR/cat"
	direct_status=$status
	direct_err=$stderr
	run --separate-stderr plain_bash "$TR_DIR/cat"
	[ "$status" -eq 126 ]
	[ "$direct_status" -eq "$status" ]
	[ "$direct_err" = "$stderr" ]
}

@test "04-status-127-daemon: the daemon cannot find it: 127, command not found" {
	run --separate-stderr "$TR_CLI" run "$TR_DIR/nowhere/cat"
	[ "$status" -eq 127 ]
	[ "$stderr" = "toolrun: cat: command not found" ]
}

@test "04-status-127-shell: a missing command fails as it would directly" {
	run --separate-stderr tr_bash "PATH=$TR_DIR/bin cat"
	[ "$status" -eq 127 ]
	[ "$stderr" = "bash: line 1: cat: command not found" ]
}

@test "04-status-signal: a program killed by SIGSEGV makes its caller die the same way" {
	run --separate-stderr tr_bash "$TR_PROBE kill 11; echo status=\$?"
	[ "$output" = "status=139" ]
	[[ "$stderr" == *"Segmentation fault"* ]]
	run tr_bash "$TR_PROBE kill 15"
	[ "$status" -eq 143 ]
}

@test "04-status-not-listed: the daemon refuses a program its config does not list" {
	run --separate-stderr "$TR_CLI" run /bin/echo hi
	[ "$status" -eq 126 ]
	[[ "$stderr" =~ ^"toolrun: echo: not a tool listed in $TOOLRUN_CONFIG as toolrund read it (at "[0-9:]+" UTC); if the file lists it now, run 'toolrun reload'"$ ]]
	[ -z "$output" ]
}
