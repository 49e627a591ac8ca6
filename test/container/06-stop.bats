#!/usr/bin/env bats
# A clean stop: on `docker stop`, while commands run in the box, PID 1
# stops the daemon and exits 0 by itself (the engine's SIGKILL, after its
# grace period, would give 137), and nothing of the container is left
# running. The grace period is long (60 s), so that a slow machine cannot
# make the engine's SIGKILL win; how long the stop took is a TAP comment.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

@test "06-stop: docker stop is quick and clean, and leaves no stray process" {
	local id out="$BATS_TEST_TMPDIR/out" err="$BATS_TEST_TMPDIR/err"
	id=$(docker inspect --format '{{.Id}}' "$CT_BOX")
	# Busy: a command through toolrun, and one without it.
	docker exec -u 1000 "$CT_BOX" bash -lc 'tail -f words.txt' >"$out" 2>"$err" &
	local c1=$!
	docker exec -u 1000 "$CT_BOX" sleep 600 >/dev/null 2>&1 &
	local c2=$!
	ct_wait_for "$CT_WAIT" bash -c "docker exec -u 1000 '$CT_BOX' bash -c 'cat /proc/[0-9]*/comm' | grep -qx tail"

	local start
	start=$(ct_now)
	docker stop -t 60 "$CT_BOX" >/dev/null
	echo "# docker stop took $(ct_elapsed "$start" "$(ct_now)")s" >&3

	# PID 1 stopped the daemon and exited 0 by itself (not killed).
	[ "$(docker inspect --format '{{.State.Status}} {{.State.ExitCode}} {{.State.OOMKilled}} {{.State.Pid}}' "$CT_BOX")" = "exited 0 false 0" ]
	ct_log | grep -q 'toolrun-init\[1\] info: SIGTERM: stopping toolrund'
	ct_log | grep -q 'toolrund\[[0-9]*\] info: SIGTERM: stopping'
	ct_log | grep -q 'toolrun-init\[1\] info: stopped'
	[ "$(ct_log | grep -c 'did not stop within')" -eq 0 ]

	# The clients ended.
	ct_wait_for "$CT_WAIT" bash -c "! kill -0 $c1 2>/dev/null && ! kill -0 $c2 2>/dev/null"
	wait "$c1" || true
	wait "$c2" || true

	# Nothing on the host is in the container's cgroup any more.
	run bash -c "grep -l '$id' /proc/[0-9]*/cgroup 2>/dev/null"
	[ -z "$output" ]
}

@test "06-stop: the stopped box starts again and serves" {
	docker start "$CT_BOX" >/dev/null
	ct_wait_for "$CT_WAIT" docker exec -u 1000 "$CT_BOX" toolrun ping
	run docker exec -u 1000 "$CT_BOX" bash -lc 'cat words.txt | wc -l'
	[ "$output" = 4 ]
}

@test "06-stop: a wedged daemon does not hold docker stop: toolrun-init kills it after 1.5 s and exits 0" {
	local name pid start
	name=$(ct_start wedged)
	pid=$(ct_daemon_pid "$name")
	[ -n "$pid" ]
	docker exec -u 0 -e TOOLRUN=off "$name" bash -c "kill -STOP $pid"
	start=$(ct_now)
	docker stop -t 60 "$name" >/dev/null
	echo "# docker stop of a wedged daemon took $(ct_elapsed "$start" "$(ct_now)")s" >&3
	[ "$(docker inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$name")" = "exited 0" ]
	ct_log "$name" | grep -q "toolrund (pid $pid) did not stop within 1500 ms; killing it"
	docker rm -f "$name" >/dev/null
}
