#!/usr/bin/env bats
# Signals sent to the caller reach the program.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

@test "15-signals-timeout: timeout(1) around a listed tool ends it with SIGTERM" {
	n=$(tr_job_count)
	run timeout 120 "$TR_BASH" 'timeout 1 tail -f /dev/null; echo $?'
	[ "$output" = 124 ]
	jobs_since "$n" | grep -q 'tool=tail .*signal=TERM'
}

@test "15-signals-kill-term: kill -TERM of a background job kills the program" {
	run timeout 120 "$TR_BASH" "$TR_PROBE pid >$TR_DIR/pid & until [ -s $TR_DIR/pid ]; do sleep 0.02; done; kill -TERM \$!; wait \$!; echo \$?; rm $TR_DIR/pid"
	[ "$output" = 143 ]
}

@test "15-signals-kill-int: SIGINT to the caller reaches the program and it dies of it" {
	# The caller is bash itself, which execs the probe and so becomes the
	# client; a background subshell interrupts it once the probe runs.
	run timeout 120 "$TR_BASH" "(until [ -s $TR_DIR/pid ]; do sleep 0.02; done; kill -INT \$\$) & exec $TR_PROBE pid >$TR_DIR/pid"
	rm -f "$TR_DIR/pid"
	[ "$status" -eq 130 ]
}

@test "15-signals-ignored: a signal the caller ignores is not forwarded, as exec keeps it ignored" {
	# bash starts background jobs with SIGINT ignored.
	line="$TR_PROBE pid >$TR_DIR/pid & until [ -s $TR_DIR/pid ]; do sleep 0.02; done; kill -INT \$!; sleep 0.3; kill -0 \$! && echo alive; kill -TERM \$!; wait \$!; echo \$?; rm $TR_DIR/pid"
	run timeout 120 "$TR_BASH" "$line"
	via=$output
	[ "$via" = "$(printf 'alive\n143')" ]
	run timeout 120 "$PLAIN_BASH" "$line"
	[ "$via" = "$output" ]
}

@test "15-signals-usr1: SIGUSR1 is forwarded too" {
	run --separate-stderr timeout 120 "$TR_BASH" "$TR_PROBE pid >$TR_DIR/pid & until [ -s $TR_DIR/pid ]; do sleep 0.02; done; kill -USR1 \$!; wait \$!; echo \$?; rm $TR_DIR/pid"
	[ "$output" = 138 ]
}

# catch SIG: the program, waiting for SIG, gets it when the caller does.
catch() {
	local sig=$1 num
	num=$(kill -l "$sig")
	run --separate-stderr timeout 120 "$TR_BASH" "$TR_PROBE catch $num >$TR_DIR/out & until grep -q ready $TR_DIR/out 2>/dev/null; do sleep 0.02; done; kill -$sig \$!; wait \$!; cat $TR_DIR/out; rm $TR_DIR/out"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'ready\ncaught %d' "$num")" ]
}

@test "15-signals-winch: SIGWINCH reaches the program" { catch WINCH; }
@test "15-signals-hup: SIGHUP reaches the program" { catch HUP; }
@test "15-signals-quit: SIGQUIT reaches the program" { catch QUIT; }
@test "15-signals-usr2: SIGUSR2 reaches the program" { catch USR2; }
@test "15-signals-alrm: SIGALRM reaches the program" { catch ALRM; }

@test "15-signals-ctrl-c: Ctrl-C at a terminal ends the program and its caller" {
	command -v script >/dev/null || skip "script(1) is not installed"
	# script(1) gives the command a terminal; ^C on it sends SIGINT to the
	# foreground group, where the caller stands in for the program.
	# ^C is typed once the program runs (its pid in a file), not after a
	# fixed time: on a loaded machine bash might not have started it yet.
	rm -f "$TR_DIR/ctrl-c.pid"
	run timeout 120 bash -c "(for i in \$(seq 1 1200); do [ -s '$TR_DIR/ctrl-c.pid' ] && break; sleep 0.05; done; printf '\\003') | script -qec \"'$TR_BASH' '$TR_PROBE pid >$TR_DIR/ctrl-c.pid'\" /dev/null"
	[ "$status" -eq 130 ]
	tr_log_settled
	grep -q "tool=$TR_PROBE .*signal=INT" "$TR_DIR/daemon.log"
}
