#!/usr/bin/env bats
# A stuck toolrund (its listener stopped with SIGSTOP) hangs no caller:
# a caller ends on its own deadline, or on the signal that asked it to
# end, with one line that says so. With toolrund serving, the program's
# own status still comes back, however long it takes to end.

load helpers

setup_file() {
	# A program that handles SIGTERM slowly (longer than the client's
	# grace for a signal), then exits 3.
	TRAP_TERM="$BATS_FILE_TMPDIR/trap-term"
	cat >"$TRAP_TERM" <<'EOF'
#!/bin/bash
trap 'sleep 3; exit 3' TERM
echo ready >"$1"
sleep 60 &
wait
EOF
	chmod +x "$TRAP_TERM"
	export TRAP_TERM
	# A program that says it runs, then ends with 7 once told to.
	WAIT_GO="$BATS_FILE_TMPDIR/wait-go"
	cat >"$WAIT_GO" <<'EOF'
#!/bin/bash
echo ready >"$1"
until [ -e "$2" ]; do sleep 0.05; done
exit 7
EOF
	chmod +x "$WAIT_GO"
	export WAIT_GO
	tr_start "tools = $TRAP_TERM $WAIT_GO" "[tool.tail]" "timeout = 1" \
		"[tool.cat]" "max_bytes = 0" "max_lines = 0"
}

teardown() {
	tr_resume_listener
	if [ -s "$TR_DIR/stopped-client" ]; then
		kill -CONT "$(cat "$TR_DIR/stopped-client")" 2>/dev/null || true
		rm -f "$TR_DIR/stopped-client"
	fi
	if [ -s "$TR_DIR/producer" ]; then
		kill "$(cat "$TR_DIR/producer")" 2>/dev/null || true
		rm -f "$TR_DIR/producer"
	fi
}

teardown_file() {
	tr_resume_listener
	tr_stop
}


# The client PID has Started: it let go of the program's stdin.
has_started() {
	[ ! -e "/proc/$1/fd/0" ]
}

# After a test that left toolrund a request, it serves the next one.
serves_again() {
	run timeout -k 5 60 "$TR_BASH" 'cat /etc/hostname'
	echo "status $status, output: $output" >&2
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "23-stuck-timeout: timeout(1) ends a caller whose toolrund is stopped" {
	tr_stop_listener
	SECONDS=0
	run --separate-stderr timeout -k 5 60 "$TR_BASH" \
		"timeout 2 $TR_PROBE pid </dev/null >/dev/null; echo \$?"
	elapsed=$SECONDS
	tr_resume_listener
	[ "$output" = 124 ]
	[ "$stderr" = "toolrun: probe: toolrund did not report the program's end within 2 s of SIGTERM and does not answer; ending on SIGTERM" ]
	# 2 s, the grace, a Ping unanswered: about 9 s. The bound is for a hang.
	((elapsed < 30))
	serves_again
}

@test "23-stuck-start: a call that toolrund never starts fails after a bound, as for a daemon away" {
	tr_stop_listener
	SECONDS=0
	# Not into run's pipe: the fds the request carries wait in the stopped
	# listener's socket, and with them the pipe's write end.
	run --separate-stderr timeout -k 5 60 "$TR_BASH" "cat /etc/hostname >$TR_DIR/out"
	elapsed=$SECONDS
	tr_resume_listener
	[ "$status" -eq 126 ]
	[ "${stderr_lines[0]}" = "toolrun: toolrund did not start the program within 10 s of the request and does not answer" ]
	# 10 s, a Ping unanswered: about 15 s. The bound is for a hang.
	((elapsed < 40))
	serves_again
}

@test "23-stuck-deadline: a caller past its tool's timeout ends on its own when toolrund stops answering" {
	# tail's timeout is 1 s, but its stdin is a pipe whose writer still
	# runs, so toolrund's clock waits: the client's first look (at 1 + 5 s)
	# finds toolrund answering, and it waits on. Then the listener stops.
	"$TR_BASH" "{ echo \$BASHPID >$TR_DIR/producer; exec sleep 120; } | { echo \$BASHPID >$TR_DIR/client; exec tail -f /dev/null; }; echo \$? >$TR_DIR/status" \
		>/dev/null 2>"$TR_DIR/stderr" &
	wait_for 60 test -s "$TR_DIR/client"
	client=$(cat "$TR_DIR/client")
	wait_for 60 has_started "$client"
	sleep 8
	! gone "$client"
	tr_stop_listener
	SECONDS=0
	wait_for 60 gone "$client"
	elapsed=$SECONDS
	kill "$(cat "$TR_DIR/producer")"
	wait_for 60 test -s "$TR_DIR/status"
	tr_resume_listener
	[ "$(cat "$TR_DIR/status")" = 124 ]
	[ "$(cat "$TR_DIR/stderr")" = "toolrun: tail: toolrund did not end the job within its timeout (1 s) + 5 s and does not answer; giving up" ]
	((elapsed < 30))
	serves_again
}

@test "23-stuck-answered: a tool's end reaches its caller while the listener is stopped" {
	# Its streams are not the agent's, so not shaped: the launcher tells
	# the caller Started and Exit itself (launcher.proto: Answer), and a
	# stopped or busy listener holds up no running tool's caller.
	rm -f "$TR_DIR/go-ready" "$TR_DIR/go" "$TR_DIR/status" "$TR_DIR/stderr"
	"$TR_BASH" "$WAIT_GO $TR_DIR/go-ready $TR_DIR/go >/dev/null 2>$TR_DIR/stderr; echo \$? >$TR_DIR/status" \
		>"$TR_DIR/agent-out" 2>&1 &
	caller=$!
	wait_for 60 test -s "$TR_DIR/go-ready"
	before=$(tr_job_count)
	tr_stop_listener
	touch "$TR_DIR/go"
	wait_for 60 test -s "$TR_DIR/status"
	# Told while the listener was still stopped.
	[ "$(awk '{print $3}' "/proc/$(cat "$TR_DIR/stopped")/stat")" = T ]
	[ "$(cat "$TR_DIR/status")" = 7 ]
	[ ! -s "$TR_DIR/stderr" ]
	wait "$caller"
	# Running again, the listener logs and audits the job as its caller
	# saw it end.
	tr_resume_listener
	[ "$(tr_job_count)" -gt "$before" ]
	jobs_since "$before" | grep -q "tool=$WAIT_GO .* exit=7 "
	"$TR_CLI" audit verify
	serves_again
}

# end_on SIG STATUS: toolrund stops while the program runs; the caller,
# sent SIG, ends on it as the program would have.
end_on() {
	local sig=$1 want=$2 listener
	listener=$(tr_listener_pid)
	echo "$listener" >"$TR_DIR/stopped"
	rm -f "$TR_DIR/pid"
	# The caller is bash itself, which execs the probe and so becomes the
	# client; once the program runs, the subshell stops the listener and
	# signals the caller.
	run --separate-stderr timeout -k 5 60 "$TR_BASH" \
		"(until [ -s $TR_DIR/pid ] && [ ! -e /proc/\$\$/fd/0 ]; do sleep 0.02; done; kill -STOP $listener; kill -$sig \$\$) & exec $TR_PROBE pid </dev/null >$TR_DIR/pid"
	tr_resume_listener
	[ "$status" -eq "$want" ]
	[ "$stderr" = "toolrun: probe: toolrund did not report the program's end within 2 s of SIG$sig and does not answer; ending on SIG$sig" ]
	# toolrund, running again, ends the program its caller left.
	wait_for 60 gone "$(cat "$TR_DIR/pid")"
	serves_again
}

@test "23-stuck-int: SIGINT ends a caller whose toolrund stopped: 130" { end_on INT 130; }
@test "23-stuck-hup: SIGHUP ends a caller whose toolrund stopped: 129" { end_on HUP 129; }

@test "23-stuck-healthy-trap: with toolrund serving, a program that handles SIGTERM gives its own status" {
	# It takes 3 s to end, past the client's grace for a signal: toolrund
	# answers the client's Ping, so the client waits for the real end.
	run --separate-stderr timeout -k 5 60 "$TR_BASH" \
		"$TRAP_TERM $TR_DIR/ready </dev/null & until [ -s $TR_DIR/ready ]; do sleep 0.02; done; kill -TERM \$!; wait \$!; echo \$?"
	rm -f "$TR_DIR/ready"
	[ "$output" = 3 ]
	[ "$stderr" = "" ]
}

@test "23-stuck-producer: a tool waiting on its producer past its timeout + 5 s is waited for" {
	# tail's timeout is 1 s; the client looks at 6 s, finds toolrund
	# answering, and gets the real end at 9 s.
	run --separate-stderr timeout -k 5 60 "$TR_BASH" '(sleep 9; echo done) | tail -1'
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	[ "$stderr" = "" ]
}

@test "23-stuck-client: a client stopped with its output unread delays no one else" {
	# cat's output is not limited: it all goes through the client, which
	# stops reading; toolrund holds what it can and pauses the job.
	"$TR_BASH" "yes 'a line of text' | { echo \$BASHPID >$TR_DIR/slow; exec cat; }" \
		>/dev/null 2>&1 </dev/null &
	bg=$!
	wait_for 60 test -s "$TR_DIR/slow"
	slow=$(cat "$TR_DIR/slow")
	wait_for 60 has_started "$slow"
	echo "$slow" >"$TR_DIR/stopped-client"
	kill -STOP "$slow"
	sleep 1
	serves_again
	kill -CONT "$slow"
	rm "$TR_DIR/stopped-client"
	kill -TERM "$slow"
	status=0
	wait "$bg" || status=$?
	[ "$status" -eq 143 ]
}
