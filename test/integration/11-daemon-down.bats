#!/usr/bin/env bats
# With the daemon gone: fallback = fail refuses clearly, at once when no
# daemon is there, after waiting when one is restarting; direct runs it.

load helpers

setup_file() {
	tr_start
	tr_kill_daemon
}

teardown_file() {
	tr_stop
}

@test "11-down-fail: no daemon: one toolrun line naming the socket, status 126" {
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ -z "$output" ]
	first=$(printf '%s\n' "$stderr" | head -n 1)
	[ "$first" = "toolrun: toolrund is not running: no socket at $TR_DIR/s.sock" ]
	# and the shell reports the failed exec with the client's errno
	[[ "$(printf '%s\n' "$stderr" | tail -n 1)" == *"cat: Connection refused" ]]
}

@test "11-down-clean-stop: a daemon stopped cleanly leaves neither socket nor lock" {
	[ ! -e "$TR_DIR/s.sock" ]
	[ ! -e "$TR_DIR/s.sock.lock" ]
}

@test "11-down-unlisted: unlisted programs still run" {
	run tr_bash 'echo fine'
	[ "$status" -eq 0 ]
	[ "$output" = fine ]
}

# Kill the daemon hard: its socket and lock file stay, as after a crash.
kill_hard() {
	tr_launch
	pid=$(cat "$TR_DIR/daemon.pid")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	[ -S "$TR_DIR/s.sock" ]
	[ -e "$TR_DIR/s.sock.lock" ]
}

@test "11-down-stale-socket: a daemon that does not come back: the wait ends with a clear line" {
	tr_write_config "$TOOLRUN_CONFIG" "wait_daemon = 1"
	kill_hard
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	first=$(printf '%s\n' "$stderr" | head -n 1)
	[ "$first" = "toolrun: toolrund is not answering at $TR_DIR/s.sock (Connection refused) after 1 s of waiting: it stopped or is restarting; its log says why" ]
	rm -f "$TR_DIR/s.sock" "$TR_DIR/s.sock.lock"
	tr_write_config "$TOOLRUN_CONFIG"
}

@test "11-down-restart: a command issued while the daemon restarts waits for it and runs" {
	tr_write_config "$TOOLRUN_CONFIG" "wait_daemon = 60"
	kill_hard
	# The daemon comes back while the command waits (toolrun-init's part).
	(sleep 1; tr_launch >/dev/null 2>&1) &
	run --separate-stderr tr_bash 'cat /etc/hostname'
	wait
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
	[ -z "$stderr" ]
	tr_kill_daemon
	tr_write_config "$TOOLRUN_CONFIG"
}

@test "11-down-direct: fallback = direct runs the program with a warning" {
	tr_write_config "$TOOLRUN_CONFIG" "fallback = direct"
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
	[ "$stderr" = "toolrun: toolrund is not running: no socket at $TR_DIR/s.sock; running /usr/bin/cat directly" ]
}
