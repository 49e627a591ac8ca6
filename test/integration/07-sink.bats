#!/usr/bin/env bats
# truncate = sink: only output that reaches the agent is shaped.

load helpers

setup_file() {
	tr_start "truncate = sink"
	make_lines "$TR_DIR/big" 50000
}

teardown_file() {
	tr_stop
}

@test "07-sink-pipeline: a pipeline stage gets every byte" {
	run tr_bash "cat $TR_DIR/big | wc -c"
	[ "$status" -eq 0 ]
	[ "$output" = "$(stat -c %s "$TR_DIR/big")" ]
}

@test "07-sink-file: a redirect to a file copies every byte" {
	run tr_bash "cat $TR_DIR/big > $TR_DIR/copy"
	[ "$status" -eq 0 ]
	cmp "$TR_DIR/big" "$TR_DIR/copy"
}

@test "07-sink-append: >> appends every byte" {
	: >"$TR_DIR/appended"
	run tr_bash "cat $TR_DIR/big >> $TR_DIR/appended; cat $TR_DIR/big >> $TR_DIR/appended"
	[ "$(stat -c %s "$TR_DIR/appended")" -eq $((2 * $(stat -c %s "$TR_DIR/big"))) ]
}

@test "07-sink-substitution: a command substitution gets every byte" {
	run tr_bash "x=\$(cat $TR_DIR/big); echo \${#x}"
	[ "$output" = "$(($(stat -c %s "$TR_DIR/big") - 1))" ]
}

@test "07-sink-devnull: output to /dev/null goes straight there" {
	n=$(tr_job_count)
	run tr_bash "cat $TR_DIR/big > /dev/null"
	[ "$status" -eq 0 ]
	jobs_since "$n" | grep -q 'tool=cat .*stdout=direct'
}

@test "07-sink-agent-stdout: the agent's stdout is shaped" {
	run --separate-stderr tr_bash "cat $TR_DIR/big"
	[ "${#lines[@]}" -eq 201 ]
	[[ "${lines[200]}" == "...[truncated: "*" bytes, 49800 lines omitted]" ]]
}

@test "07-sink-agent-stderr: the agent's stderr is shaped too" {
	run --separate-stderr tr_bash "cat $TR_DIR/big >&2"
	[ -z "$output" ]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 201 ]
	[[ "$stderr" == *"...[truncated: "*" bytes, 49800 lines omitted]" ]]
}

@test "07-sink-last-stage: in a pipeline only the last stage reaches the agent" {
	n=$(tr_job_count)
	run tr_bash "cat $TR_DIR/big | sort | head -n 1000"
	[ "${#lines[@]}" -eq 201 ]
	jobs_since "$n" | grep -q 'tool=cat .*stdout=direct'
	jobs_since "$n" | grep -q 'tool=sort .*stdout=direct'
	jobs_since "$n" | grep -q 'tool=head .*stdout=[0-9]*B/1000L-dropped:[0-9]*B/800L'
}

@test "07-sink-bytes-first: the byte limit applies before the line limit" {
	printf '%05000d\n' 0 >"$TR_DIR/long-line"
	run tr_bash "cat $TR_DIR/long-line"
	[ "${#lines[0]}" -eq 4000 ]
	[ "${lines[1]}" = "...[truncated: 1001 bytes, 0 lines omitted]" ]
}

# A bash that has the library from its first instruction, as every
# `docker exec BOX bash -c ...` in the image has it (ENV LD_PRELOAD), and
# no profile: an agent command, whose streams are toolrund's pipes,
# declared as the agent's.
preloaded_bash() {
	env -u BASH_ENV -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR \
		LD_PRELOAD="$TR_LIB" TR_MARK="$TR_MARK" bash -c "$1" | cat
}

@test "07-sink-declared-by-library: bash -c with the library: its stdout is the agent's, nothing else" {
	run preloaded_bash "echo \"\$TOOLRUN_AGENT_STDOUT\"; cat $TR_DIR/big | wc -l; cat $TR_DIR/big"
	[[ "${lines[0]}" =~ ^[0-9]+:[0-9]+$ ]]
	[ "${lines[1]}" = 50000 ]
	[ "${lines[2]}" = "line 1" ]
	# One cut, by the command's budget, in the middle of cat's output.
	[ "$(grep -c '^\.\.\.\[toolrun cut ' <<<"$output")" -eq 1 ]
	[ "${lines[-1]}" = "line 50000" ]
}

@test "07-sink-data-never-cut: output that flows on into a program is never cut, nor marked" {
	# A substitution, then a pipe: neither is the agent's stream.
	run preloaded_bash "x=\$(seq 300 | sed s/x/y/); echo \"\$x\" | tail -n 2"
	[ "$output" = $'299\n300' ]
}

@test "07-sink-declared-none: a stream declared empty is not the agent's: nothing is cut" {
	run preloaded_bash "TOOLRUN_AGENT_STDOUT= TOOLRUN_AGENT_STDERR= cat $TR_DIR/big"
	[ "${#lines[@]}" -eq 50000 ]
}
