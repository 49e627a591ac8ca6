#!/usr/bin/env bats
# Sessions in the box (docs/sessions.md): a shell that toolrund keeps
# between `docker exec` calls, run as the uid that made it and seen by
# that uid alone.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

# sess UID ARGS...: `toolrun session ARGS...` in the box as UID, one
# `docker exec` of its own.
sess() {
	local uid=$1
	shift
	docker exec -u "$uid" "$CT_BOX" toolrun session "$@"
}

# A new session of the agent's (1000), in /workspace; prints its id.
new_session() {
	local id
	id=$(sess 1000 new --cwd /workspace) || return 1
	[ -n "$id" ] || return 1
	echo "$id"
}

# End a session at the end of a test: its answer says closed.
close_session() {
	local out
	out=$(sess 1000 close "$1" --json)
	[[ $out == *'"state":"closed"'* ]]
}

@test "13-sessions: state set in one docker exec is there in the next" {
	id=$(new_session)
	run --separate-stderr sess 1000 run "$id" -- 'cd /tmp && export MODE=fast && greet() { echo "hello $1"; }; count=41'
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run --separate-stderr sess 1000 run "$id" -- 'echo $MODE; pwd; greet box; echo $((count + 1))'
	[ "$status" -eq 0 ]
	[ "$output" = $'fast\n/tmp\nhello box\n42' ]
	# A third exec: still the same shell.
	run --separate-stderr sess 1000 run "$id" -- 'pwd'
	[ "$output" = /tmp ]
	close_session "$id"
}

@test "13-sessions: a command's status and streams come back apart" {
	id=$(new_session)
	run --separate-stderr sess 1000 run "$id" -- 'echo out; echo err >&2; exit_with() { return $1; }; exit_with 3'
	[ "$status" -eq 3 ]
	[ "$output" = out ]
	[ "$stderr" = err ]
	close_session "$id"
}

@test "13-sessions: the session's bash runs as uid 1000" {
	id=$(new_session)
	run --separate-stderr sess 1000 run "$id" -- 'id -u; id -g; echo $PWD'
	[ "$status" -eq 0 ]
	[ "$output" = $'1000\n1000\n/workspace' ]
	# Its bash's pid, as the list gives it, is a process of uid 1000.
	run --separate-stderr sess 1000 list --json
	[ "$status" -eq 0 ]
	pid=$(python3 -c 'import json, sys
for s in json.load(sys.stdin)["sessions"]:
    if s["session"] == sys.argv[1]:
        print(s["pid"])' "$id" <<<"$output")
	[ -n "$pid" ]
	run docker exec -u 1000 -e TOOLRUN=off -e LD_PRELOAD= "$CT_BOX" stat -c %u "/proc/$pid"
	[ "$output" = 1000 ]
	close_session "$id"
}

@test "13-sessions: a listed tool in a session goes through toolrund" {
	id=$(new_session)
	before=$(ct_job_count)
	run --separate-stderr sess 1000 run "$id" -- 'cat words.txt'
	[ "$status" -eq 0 ]
	[ "$output" = $'alpha\nbeta\ngamma\nbeta' ]
	ct_wait_job "$before" ' uid=1000 tool=cat .* exit=0 ' >/dev/null
	close_session "$id"
}

@test "13-sessions: another uid neither lists nor reaches uid 1000's session" {
	id=$(new_session)
	run --separate-stderr sess 1000 list
	[ "$status" -eq 0 ]
	[[ $output == *"$id"* ]]
	# root is allowed in the box (allow_uids), with sessions of its own.
	run --separate-stderr sess 0 list --json
	[ "$status" -eq 0 ]
	[[ $output == '{"sessions":'* ]]
	[[ $output != *"$id"* ]]
	run --separate-stderr sess 0 run "$id" --json -- 'id -u'
	[ "$status" -eq 125 ]
	[[ $output == *'"error":"not_found"'* ]]
	run --separate-stderr sess 0 close "$id" --json
	[ "$status" -eq 125 ]
	[[ $output == *'"error":"not_found"'* ]]
	# Untouched: its owner still uses it.
	run --separate-stderr sess 1000 run "$id" -- 'echo still here'
	[ "$status" -eq 0 ]
	[ "$output" = "still here" ]
	close_session "$id"
}

@test "13-sessions: after close the id is gone" {
	id=$(new_session)
	run --separate-stderr sess 1000 close "$id" --json
	[[ $output == *'"state":"closed"'* ]]
	# docs/sessions.md: close exits 0.
	[ "$status" -eq 0 ]
	run --separate-stderr sess 1000 run "$id" -- true
	[ "$status" -eq 125 ]
	run --separate-stderr sess 1000 list
	[[ $output != *"$id"* ]]
}
