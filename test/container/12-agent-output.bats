#!/usr/bin/env bats
# The agent's output contract, through a real `docker exec` with the
# shipped config: one budget for everything a command writes, head and
# tail, the whole output kept in the box, timeouts an agent can live with,
# and an audit log whose chain names a line changed afterwards.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

marker_of() {
	grep -m 1 '^\.\.\.\[toolrun cut ' <<<"$1" || true
}

spill_of() {
	sed -n 's/.*the whole [a-z]* is in \(\/tmp\/toolrun-output\/[^] ]*\).*/\1/p' <<<"$1" | head -n 1
}

@test "12-agent-output: seq 1 1000000 delivers the budget and one marker" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'seq 1 1000000'
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	# The shipped budget: 4000 bytes, 200 lines, plus the marker line.
	[ "${#lines[@]}" -eq 201 ]
	marker=$(marker_of "$output")
	[ "${#output}" -le $((4000 + ${#marker} + 1)) ]
	[ "${lines[0]}" = 1 ]
	[ "${lines[200]}" = 1000000 ]
	[[ "$marker" == *"lines 101-999900 of 1000000"* ]]
}

@test "12-agent-output: the whole output is in the file the marker names" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'seq 1 1000000'
	path=$(spill_of "$(marker_of "$output")")
	[ -n "$path" ]
	run docker exec -u 1000 "$CT_BOX" bash -lc "sed -n '500000p' $path; wc -l < $path; stat -c %a $path"
	[ "${lines[0]}" = 500000 ]
	[ "${lines[1]}" = 1000000 ]
	[ "${lines[2]}" = 600 ]
}

@test "12-agent-output: cat of a long build log keeps the error at its end" {
	docker exec -u 1000 "$CT_BOX" bash -lc 'for i in $(seq 1 3000); do echo "CC src/file$i.o"; done > build.log; echo "src/last.c:12: error: expected ;" >> build.log'
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'cat build.log'
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "src/last.c:12: error: expected ;" ]
	[ "${lines[0]}" = "CC src/file1.o" ]
}

@test "12-agent-output: a waiting tail survives its timeout while the build runs" {
	# The shipped tool timeout is 30 s: the producer takes longer.
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc '(sleep 40; echo "BUILD FAILED") 2>&1 | tail -5'
	[ "$status" -eq 0 ]
	[ "$output" = "BUILD FAILED" ]
}

@test "12-agent-output: binary output is one line with its SHA-256, the whole kept" {
	local sum
	sum=$(docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c 'head -c 100000 /usr/bin/bash | sha256sum')
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'head -c 100000 /usr/bin/bash'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "[toolrun: binary stdout, 100000 bytes, ELF, sha256 ${sum%% *}; the whole stdout is in /tmp/toolrun-output/1000/"*"-stdout.log]" ]]
}

@test "12-agent-output: command_timeout ends the whole command with 124 and one line" {
	# The shipped 300 s, shortened in a copy mounted into a box of its own.
	local conf="$BATS_TEST_TMPDIR/toolrun.conf" box
	docker run --rm --entrypoint cat "$CT_IMAGE" /etc/toolrun/toolrun.conf |
		sed -E 's/^command_timeout *=.*/command_timeout = 3/' >"$conf"
	chmod 0644 "$conf"
	grep -qx 'command_timeout = 3' "$conf"
	box=$(ct_start timeout --config "$conf")
	# Also what left the command's session and parent (setsid -f).
	run --separate-stderr docker exec -u 1000 "$box" bash -lc 'echo started; sleep 600 & setsid -f sleep 600; sleep 600; echo never'
	[ "$status" -eq 124 ]
	[ "$output" = started ]
	[ "$stderr" = "toolrun: the command timed out after 3 s (command_timeout) and was killed, with the 3 other processes running below it; for longer work, use a session (toolrun session: no command timeout) or run it in the background (nohup CMD > FILE 2>&1 &) and read FILE later" ]
	# Nothing of it is left (once reaped).
	no_sleep() {
		[ -z "$(docker exec -u 1000 -e TOOLRUN=off "$box" bash -c \
			'for d in /proc/[0-9]*; do read -r c <$d/comm 2>/dev/null && [ "$c" = sleep ] && echo "$d"; done; true')" ]
	}
	ct_wait_for "$CT_WAIT" no_sleep
}

@test "12-agent-output: the audit log has the commands, and verify names a changed line" {
	# The log is toolrund's (user toolrun, 999, mode 0600): the agent can
	# neither read nor change it; its operator reads it as that user.
	docker exec -u 1000 "$CT_BOX" bash -lc 'echo audited-command-marker'
	# A later line, whose hash chains over the marker's.
	docker exec -u 1000 "$CT_BOX" bash -lc 'true'
	run docker exec -u 999 -e TOOLRUN=off "$CT_BOX" bash -lc 'toolrun audit verify'
	[ "$status" -eq 0 ]
	[[ "$output" == *"chain intact"* ]]
	run docker exec -u 999 -e TOOLRUN=off "$CT_BOX" bash -c 'grep -c "\"kind\":\"command\"" /run/toolrun/audit/audit.jsonl'
	[ "$output" -ge 1 ]
	# Change one earlier line as someone who got that user hiding a command would.
	n=$(docker exec -u 999 -e TOOLRUN=off "$CT_BOX" bash -c 'grep -n audited-command-marker /run/toolrun/audit/audit.jsonl | head -n 1 | cut -d: -f1')
	[ -n "$n" ]
	docker exec -u 999 -e TOOLRUN=off "$CT_BOX" bash -c "TOOLRUN=off sed -i '${n}s/audited-command-marker/something-harmless/' /run/toolrun/audit/audit.jsonl"
	run docker exec -u 999 -e TOOLRUN=off "$CT_BOX" toolrun audit verify /run/toolrun/audit/audit.jsonl
	[ "$status" -eq 1 ]
	[[ "$output" == *"audit.jsonl:$n: changed"* ]]
}
