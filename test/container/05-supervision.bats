#!/usr/bin/env bats
# Supervision: toolrun-init (PID 1) restarts a killed daemon within a
# second, logs the restart, and the commands caught mid-flight end with a
# clear error rather than a hang. It also reaps orphans.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

ct_ping() { docker exec -u 1000 "$CT_BOX" toolrun ping >/dev/null 2>&1; }

# ct_kill_daemon: kill -9 the serving toolrund (KILLED: its pid) and wait
# until a daemon answers again. How long that took is a comment in the
# TAP output, not a claim: the claim is the delay toolrun-init logs.
ct_kill_daemon() {
	KILLED=$(ct_daemon_pid)
	[ -n "$KILLED" ] || { echo "no toolrund found in the box" >&2; return 1; }
	local start
	start=$(ct_now)
	# As root in the box, which holds CAP_KILL (the agent cannot: the
	# daemon is another user's); not as an agent command, which runs under
	# the daemon it would kill.
	docker exec -u 0 -e TOOLRUN=off "$CT_BOX" kill -9 "$KILLED"
	ct_wait_for "$CT_WAIT" ct_ping
	echo "# toolrund $KILLED killed; a daemon answered after $(ct_elapsed "$start" "$(ct_now)")s" >&3
}

# ct_restart_delay PID: the delay in ms with which toolrun-init restarted
# the daemon PID, from its log line (0: at once).
ct_restart_delay() {
	local line
	ct_wait_for "$CT_WAIT" bash -c "docker logs '$CT_BOX' 2>&1 | grep -qE 'toolrun-init\[1\] warn: toolrund \(pid $1\) .*restarting'" || return 1
	line=$(ct_log | grep -E "toolrun-init\[1\] warn: toolrund \(pid $1\) .*restarting" | tail -n 1)
	if [[ $line =~ restarting\ in\ ([0-9]+)\ ms$ ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		echo 0
	fi
}

@test "05-supervision: the daemon is PID 1's child, and PID 1 is toolrun-init" {
	run docker exec -u 1000 "$CT_BOX" cat /proc/1/comm
	[ "$output" = toolrun-init ]
	[ -n "$(ct_daemon_pid)" ]
}

@test "05-supervision: kill -9 of the daemon: a new one is started within a second and answers" {
	ct_kill_daemon
	[ "$(ct_restart_delay "$KILLED")" -le 1000 ]
	local now
	now=$(ct_daemon_pid)
	[ -n "$now" ]
	[ "$now" != "$KILLED" ]
}

@test "05-supervision: the restart is logged with its cause" {
	ct_kill_daemon
	local cause="toolrun-init\[1\] warn: toolrund \(pid $KILLED\) was killed by signal 9 \(SIGKILL\)"
	ct_wait_for "$CT_WAIT" bash -c "docker logs '$CT_BOX' 2>&1 | grep -qE '$cause(; restarting| after [0-9]+ ms; restarting in [0-9]+ ms)\$'"
	ct_log | grep -q "toolrun-init\[1\] info: started /opt/toolrun/sbin/toolrund (pid $(ct_daemon_pid))"
}

@test "05-supervision: a daemon that exits by itself is restarted too" {
	local pid
	pid=$(ct_daemon_pid)
	docker exec -u 0 -e TOOLRUN=off "$CT_BOX" bash -c "kill -TERM $pid"
	ct_wait_for "$CT_WAIT" bash -c "docker logs '$CT_BOX' 2>&1 | grep -qE 'toolrund \(pid $pid\) exited with status 0(;| after)'"
	ct_wait_for "$CT_WAIT" ct_ping
	[ "$(ct_daemon_pid)" != "$pid" ]
}

@test "05-supervision: tools work again after the restart, served by the new daemon" {
	ct_kill_daemon
	local before pid
	pid=$(ct_daemon_pid)
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'cat words.txt | grep -c beta'
	[ "$status" -eq 0 ]
	[ "$output" = 2 ]
	# The new daemon's listener (the only one) served the job.
	local listener
	listener=$(ct_pids_named toolrund-listen)
	[ -n "$listener" ]
	ct_wait_job "$before" "toolrund\[$listener\] listener info: job [0-9]+ uid=1000 tool=grep "
}

@test "05-supervision: a command running during the kill ends with a one-line toolrun error" {
	local out="$BATS_TEST_TMPDIR/out" err="$BATS_TEST_TMPDIR/err" rc="$BATS_TEST_TMPDIR/rc"
	# tail -f runs until killed: it is mid-flight when the daemon dies.
	(
		code=0
		docker exec -u 1000 "$CT_BOX" bash -lc 'tail -f words.txt' >"$out" 2>"$err" || code=$?
		echo "$code" >"$rc"
	) &
	local client=$!
	ct_wait_for "$CT_WAIT" bash -c "docker exec -u 1000 -e TOOLRUN=off '$CT_BOX' bash -c 'cat /proc/[0-9]*/comm' | grep -qx tail"
	ct_kill_daemon
	# It ends by itself (tail -f never would).
	ct_wait_for "$CT_WAIT" test -s "$rc" || {
		echo "# the client did not end; stderr: $(cat "$err")" >&3
		docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c 'for d in /proc/[0-9]*; do echo "# ${d#/proc/} $(cat $d/comm) $(cut -d" " -f3-5 $d/stat)"; done' >&3
		ct_log | tail -n 8 | sed 's/^/# /' >&3
		return 1
	}
	wait "$client"
	[ "$(cat "$rc")" -ne 0 ]
	# The agent's command, which runs under the daemon, ends with it.
	[ "$(wc -l <"$err")" -eq 1 ]
	grep -E '^toolrun: bash: lost connection to toolrund' "$err"
	[ "$(cat "$out")" = $'alpha\nbeta\ngamma\nbeta' ]
	# The program did not outlive its daemon.
	ct_wait_for "$CT_WAIT" bash -c "[ -z \"\$(docker exec -u 1000 -e TOOLRUN=off '$CT_BOX' bash -c 'cat /proc/[0-9]*/comm' | grep -x tail)\" ]"
}

@test "05-supervision: a command started while the daemon restarts waits for it and runs" {
	KILLED=$(ct_daemon_pid)
	docker exec -u 0 -e TOOLRUN=off "$CT_BOX" bash -c "kill -9 $KILLED"
	# The dead daemon's socket is left; the client waits (wait_daemon)
	# for the one toolrun-init starts, instead of failing at once.
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'cat words.txt'
	[ "$status" -eq 0 ]
	[ "$output" = $'alpha\nbeta\ngamma\nbeta' ]
	[ -z "$stderr" ]
	[ "$(ct_daemon_pid)" != "$KILLED" ]
}

@test "05-supervision: repeated kills: each restart within a second (the backoff stays under 1 s)" {
	local i
	for i in 1 2 3 4 5; do
		ct_kill_daemon
		[ "$(ct_restart_delay "$KILLED")" -le 1000 ]
	done
	# Quick exits in a row were restarted after a growing delay.
	ct_log | grep -q 'restarting in [0-9]* ms'
	! ct_log | grep -E 'restarting in [0-9]+ ms' | grep -vE 'restarting in (100|200|400|800|1000) ms'
}

@test "05-supervision: PID 1 reaps orphans: no zombie is left" {
	# The exec'd shell exits at once; its children become PID 1's (not
	# an agent command's, whose orphans are the launcher's). Once they
	# have ended, none may be left as a zombie: wait for that state (an
	# unreaped orphan would stay a zombie for ever).
	docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c '(exec -a orphan-a sleep 0.2 &) ; (exec -a orphan-b sleep 0.3 &); exit 0'
	ct_no_orphans() {
		run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c '
			for d in /proc/[0-9]*; do
				read -r stat <"$d/stat" 2>/dev/null || continue
				set -- ${stat##*) }
				[ "$1" = Z ] && echo "zombie: $stat"
				read -r -d "" argv0 <"$d/cmdline" 2>/dev/null
				case $argv0 in orphan-*) echo "running: $stat" ;; esac
			done; true'
		[ -z "$output" ]
	}
	ct_wait_for "$CT_WAIT" ct_no_orphans || { echo "$output" >&2; return 1; }
}
