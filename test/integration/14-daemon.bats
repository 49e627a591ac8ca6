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
	wait_for 60 gone "$1"
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
	wait_for 60 test -s "$TR_DIR/probe.pid"
	prog=$(cat "$TR_DIR/probe.pid")
	[ -d "/proc/$prog" ]
	kill -KILL "$client"
	wait "$client" || true
	wait_gone "$prog"
	# The job's line is logged once the launcher has reaped the program
	# and the listener has heard of it: after the program is gone.
	wait_for 30 grep -q "pid=$prog .*client-gone" "$TR_DIR/daemon.log"
}

@test "14-daemon-slow-reader: a client that does not read delays nobody else" {
	# The reader reads nothing until the file go exists: the program's
	# output (2 MB) backs up through the client to the daemon.
	rm -f "$TR_DIR/go"
	n=$(tr_job_count)
	# (At most 60 s, should the test fail before it makes go.)
	"$TR_BASH" "cat $TR_DIR/big" 3>&- | (
		for i in $(seq 1 1200); do [ -e "$TR_DIR/go" ] && break; sleep 0.05; done
		cat >/dev/null
	) 3>&- &
	slow=$!
	# The program has started (it ends only if the machine's socket
	# buffers take all of it).
	slow_cat_started() {
		local launcher
		launcher=$(pgrep -P "$(tr_daemon_pid)" -x toolrund-launch)
		{ [ -n "$launcher" ] && [ -n "$(pgrep -P "$launcher" -f "^cat $TR_DIR/big\$")" ]; } ||
			jobs_since "$n" | grep -q ' tool=cat '
	}
	wait_for 60 slow_cat_started
	# Another request is answered while that reader still holds back:
	# were the daemon stuck on it, this would wait for ever.
	run timeout 60 "$TR_BASH" 'grep -c root /etc/passwd'
	[ "$status" -eq 0 ]
	[ "$output" = "$(grep -c root /etc/passwd)" ]
	kill -0 "$slow"
	touch "$TR_DIR/go"
	wait "$slow"
}

@test "14-daemon-idle-client: a connected client that sends nothing delays nobody else" {
	# The idle client holds its connection until its stdin ends, when
	# the file go exists (at most 60 s, should the test fail before).
	rm -f "$TR_DIR/go"
	(for i in $(seq 1 1200); do [ -e "$TR_DIR/go" ] && break; sleep 0.05; done) 3>&- |
		"$TR_RAWFRAME" "$TR_DIR/s.sock" idle >"$TR_DIR/idle.out" 3>&- &
	idle=$!
	wait_for 60 grep -qx connected "$TR_DIR/idle.out"
	run timeout 60 "$TR_BASH" 'wc -l < /etc/passwd'
	[ "$status" -eq 0 ]
	# Answered while the idle client was still connected, sending nothing.
	kill -0 "$idle"
	touch "$TR_DIR/go"
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
	wait_for 60 test -s "$TR_DIR/probe2.pid"
	prog=$(cat "$TR_DIR/probe2.pid")
	kill -TERM "$(cat "$TR_DIR/daemon.pid")"
	status=0
	wait "$client" || status=$?
	[ "$status" -eq 1 ]
	[ "$(cat "$TR_DIR/client.err")" = "toolrun: probe: lost connection to toolrund: the daemon closed the connection" ]
	wait_gone "$prog"
	wait_for 60 test ! -e "$TR_DIR/s.sock"
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
