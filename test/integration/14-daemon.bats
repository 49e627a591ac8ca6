#!/usr/bin/env bats
# The daemon's own behaviour: one per socket, stale sockets replaced,
# clients that vanish or stall, many clients at once, a clean stop.

load helpers

setup_file() {
	tr_start "[tool.cat]" "max_bytes = 0" "max_lines = 0"
	make_lines "$TR_DIR/big" 200000
}

teardown_file() {
	tr_stop
}

wait_gone() {
	local pid=$1 i
	for i in $(seq 1 100); do
		[ -d "/proc/$pid" ] || return 0
		sleep 0.05
	done
	return 1
}

@test "14-daemon-single: a second toolrund on the same socket refuses to start" {
	run --separate-stderr "$TR_DAEMON" --config "$TOOLRUN_CONFIG"
	[ "$status" -eq 1 ]
	[ "$stderr" = "toolrund: $TR_DIR/s.sock is served by a running toolrund ($TR_DIR/s.sock.lock is locked)" ]
	"$TR_CLI" ping >/dev/null
}

@test "14-daemon-stale: a daemon killed with SIGKILL leaves a socket the next one replaces" {
	pid=$(cat "$TR_DIR/daemon.pid")
	kill -KILL "$pid"
	wait_gone "$pid"
	[ -S "$TR_DIR/s.sock" ]
	run "$TR_CLI" ping
	[ "$status" -ne 0 ]
	tr_launch
	run "$TR_CLI" ping
	[ "$status" -eq 0 ]
}

@test "14-daemon-client-killed: a client killed mid-flight takes its program with it" {
	"$TR_BASH" "$TR_PROBE pid" >"$TR_DIR/probe.pid" &
	client=$!
	for i in $(seq 1 100); do [ -s "$TR_DIR/probe.pid" ] && break; sleep 0.05; done
	prog=$(cat "$TR_DIR/probe.pid")
	[ -d "/proc/$prog" ]
	kill -KILL "$client"
	wait "$client" || true
	wait_gone "$prog"
	grep -q "pid=$prog .*client-gone" "$TR_DIR/daemon.log"
}

@test "14-daemon-slow-reader: a client that does not read delays nobody else" {
	"$TR_BASH" "cat $TR_DIR/big" | (sleep 6; cat >/dev/null) &
	slow=$!
	sleep 0.5
	run timeout 5 "$TR_BASH" 'grep -c root /etc/passwd'
	[ "$status" -eq 0 ]
	[ "$output" = "$(grep -c root /etc/passwd)" ]
	wait "$slow"
}

@test "14-daemon-idle-client: a connected client that sends nothing delays nobody else" {
	"$TR_RAWFRAME" "$TR_DIR/s.sock" idle >/dev/null &
	idle=$!
	sleep 0.2
	run timeout 5 "$TR_BASH" 'wc -l < /etc/passwd'
	[ "$status" -eq 0 ]
	wait "$idle"
}

@test "14-daemon-concurrent: 32 clients at once all get their answer" {
	for i in $(seq 1 32); do
		"$TR_BASH" "$TR_PROBE args $i | tail -n 1" >"$TR_DIR/out.$i" &
	done
	wait
	for i in $(seq 1 32); do
		[ "$(cat "$TR_DIR/out.$i")" = "$i" ]
	done
}

@test "14-daemon-stop: SIGTERM ends running programs, tells their clients, removes the socket" {
	"$TR_BASH" "$TR_PROBE pid" >"$TR_DIR/probe2.pid" 2>"$TR_DIR/client.err" &
	client=$!
	for i in $(seq 1 100); do [ -s "$TR_DIR/probe2.pid" ] && break; sleep 0.05; done
	prog=$(cat "$TR_DIR/probe2.pid")
	kill -TERM "$(cat "$TR_DIR/daemon.pid")"
	status=0
	wait "$client" || status=$?
	[ "$status" -eq 1 ]
	[ "$(cat "$TR_DIR/client.err")" = "toolrun: probe: lost connection to toolrund: the daemon closed the connection" ]
	wait_gone "$prog"
	for i in $(seq 1 100); do [ -e "$TR_DIR/s.sock" ] || break; sleep 0.05; done
	[ ! -e "$TR_DIR/s.sock" ]
	tr_launch
}

@test "14-daemon-other-uid: a uid the daemon does not serve is told so in one line" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch uid"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	chmod 755 "$TR_DIR"
	n=$(tr_job_count)
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		env LD_PRELOAD="$TR_LIB" TOOLRUN_CONFIG="$TOOLRUN_CONFIG" bash -c 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ "${stderr%%$'\n'*}" = "toolrun: toolrund refused the request: uid 65534 is not served by this toolrund (it serves uid 0)" ]
	[ "$(tr_job_count)" -eq "$n" ]
	grep -q 'uid 65534 is not served' "$TR_DIR/daemon.log"
}
