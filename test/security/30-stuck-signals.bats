#!/usr/bin/env bats
# A caller whose toolrund reads nothing (its listener stopped with
# SIGSTOP) still ends on SIGTERM, SIGINT or SIGHUP, as README says: 2 s
# after it forwarded the signal, then a Ping unanswered for 5 s, it says
# so in one line and dies of that signal. Here the socket to toolrund is
# full, so that nothing more can be sent on it: before Started, a request
# larger than the socket takes; after it, the signals forwarded. A client
# that waited for room there would end only by SIGKILL.

load helpers

setup_file() {
	tr_start
}

teardown() {
	tr_resume_listener
}

teardown_file() {
	tr_resume_listener
	tr_stop
}


# Bytes a socket may hold unsent by default: what fills it.
socket_buffer() {
	cat /proc/sys/net/core/wmem_default
}

# After a test that left toolrund a request, it serves the next one.
serves_again() {
	run timeout -k 5 60 "$TR_BASH" 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
}

# ends_before_start SIG: a listed tool whose request is three times what
# the socket holds, under `timeout -s SIG -k 30 3`.
ends_before_start() {
	local sig=$1 n
	# Each argument is about 30 bytes on the wire.
	n=$(($(socket_buffer) * 3 / 30))
	tr_stop_listener
	# Its stdout is a file: the fds a request carries wait in the stopped
	# listener's socket, and a pipe's reader would wait with them.
	run --separate-stderr timeout -k 60 120 "$TR_BASH" \
		"timeout -s $sig -k 30 3 cat \$(seq -f '$TR_DIR/none/%09g' 1 $n) >$TR_DIR/out; echo \$?"
	tr_resume_listener
	# 124: timeout(1)'s status when its signal ended the program; with
	# its SIGKILL it would be 137.
	[ "$output" = 124 ]
	[ "$stderr" = "toolrun: cat: toolrund did not report the program's end within 2 s of SIG$sig and does not answer; ending on SIG$sig" ]
	serves_again
}

@test "30-stuck-signals 01: a request toolrund does not read: SIGTERM ends the caller" {
	ends_before_start TERM
}

@test "30-stuck-signals 02: a request toolrund does not read: SIGINT ends the caller" {
	ends_before_start INT
}

@test "30-stuck-signals 03: after Started, with the socket full of forwarded signals: SIGTERM ends the caller" {
	local client program i
	rm -f "$TR_DIR/client"
	# bash execs the probe, and so becomes its client.
	timeout -k 30 5 "$TR_BASH" "echo \$\$ >$TR_DIR/client; exec $TR_PROBE pid </dev/null >$TR_DIR/program" \
		>"$TR_DIR/status03" 2>"$TR_DIR/stderr03" &
	local timeout_pid=$!
	wait_for 60 test -s "$TR_DIR/program"
	client=$(cat "$TR_DIR/client")
	tr_stop_listener
	# Each SIGWINCH the client forwards is a frame on the stopped
	# listener's socket (the program ignores it); far more than it holds.
	for ((i = 0; i < 20000; i++)); do
		kill -WINCH "$client" 2>/dev/null || break
	done
	local status=0
	wait "$timeout_pid" || status=$?
	tr_resume_listener
	[ "$status" -eq 124 ]
	[ "$(cat "$TR_DIR/stderr03")" = "toolrun: probe: toolrund did not report the program's end within 2 s of SIGTERM and does not answer; ending on SIGTERM" ]
	# toolrund, running again, ends the program its caller left.
	wait_for 60 gone "$(cat "$TR_DIR/program")"
	serves_again
}
