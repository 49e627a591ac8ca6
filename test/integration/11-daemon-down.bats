#!/usr/bin/env bats
# With the daemon gone: fallback = fail refuses clearly; direct runs it.

load helpers

setup_file() {
	tr_start
	tr_kill_daemon
}

teardown_file() {
	tr_stop
}

@test "11-down-fail: a listed program fails with one toolrun line and status 126" {
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ -z "$output" ]
	first=$(printf '%s\n' "$stderr" | head -n 1)
	[ "$first" = "toolrun: cannot reach toolrund at $TR_DIR/s.sock: No such file or directory" ]
	# and the shell reports the refused exec as it would any EACCES
	[[ "$(printf '%s\n' "$stderr" | tail -n 1)" == *"Permission denied" ]]
}

@test "11-down-unlisted: unlisted programs still run" {
	run tr_bash 'echo fine'
	[ "$status" -eq 0 ]
	[ "$output" = fine ]
}

@test "11-down-stale-socket: the socket of a killed daemon gives connection refused" {
	tr_launch
	pid=$(cat "$TR_DIR/daemon.pid")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	[ -S "$TR_DIR/s.sock" ]
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[[ "$stderr" == "toolrun: cannot reach toolrund at $TR_DIR/s.sock: Connection refused"* ]]
	rm -f "$TR_DIR/s.sock"
}

@test "11-down-direct: fallback = direct runs the program with a warning" {
	tr_write_config "$TOOLRUN_CONFIG" "fallback = direct"
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
	[ "$stderr" = "toolrun: cannot reach toolrund at $TR_DIR/s.sock: No such file or directory; running /usr/bin/cat directly" ]
}
