#!/usr/bin/env bats
# truncate = sink: only output that reaches the agent is shaped.

load helpers

setup_file() {
	tr_start "truncate = sink" "spill_dir = $BATS_FILE_TMPDIR/spill"
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

# big_marker WHOSE STREAM: the marker for big cut to its first and last
# 100 lines, up to the name of the spill file ("cat's stdout" stdout).
big_marker() {
	local dropped
	dropped=$(($(stat -c %s "$TR_DIR/big") - $(head -n 100 "$TR_DIR/big" | wc -c) \
		- $(tail -n 100 "$TR_DIR/big" | wc -c)))
	echo "...[toolrun cut 49800 lines ($dropped bytes) of $1 here: lines 101-49900 of 50000; the whole $2 is in $BATS_FILE_TMPDIR/spill/$(id -u)/"
}

@test "07-sink-agent-stdout: the agent's stdout is shaped" {
	run --separate-stderr tr_bash "cat $TR_DIR/big"
	[ "${#lines[@]}" -eq 201 ]
	[ "${lines[0]}" = "line 1" ]
	[ "${lines[99]}" = "line 100" ]
	[[ "${lines[100]}" == "$(big_marker "cat's stdout" stdout)"*"-stdout.log]" ]]
	[ "${lines[101]}" = "line 49901" ]
	[ "${lines[200]}" = "line 50000" ]
}

@test "07-sink-agent-stderr: the agent's stderr is shaped too" {
	# cat's stdout and stderr are then one pipe: its "output".
	run --separate-stderr tr_bash "cat $TR_DIR/big >&2"
	[ -z "$output" ]
	mapfile -t err <<<"$stderr"
	[ "${#err[@]}" -eq 201 ]
	[ "${err[0]}" = "line 1" ]
	[[ "${err[100]}" == "$(big_marker "cat's output" output)"*"-stdout.log]" ]]
	[ "${err[200]}" = "line 50000" ]
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
	# One line of 5001 bytes: its first and last 2000 bytes are kept.
	printf '%05000d\n' 0 >"$TR_DIR/long-line"
	run --separate-stderr tr_bash "cat $TR_DIR/long-line"
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "$(head -c 2000 "$TR_DIR/long-line")" ]
	[[ "${lines[1]}" == "...[toolrun cut 1001 bytes of cat's stdout here: bytes 2001-3001 of 5001, inside line 1; the whole stdout is in $BATS_FILE_TMPDIR/spill/$(id -u)/"*"-stdout.log]" ]]
	[ "${lines[2]}" = "$(head -c 1999 "$TR_DIR/long-line")" ]
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
	# Declared empty from the start: the shell is no agent command either.
	run bash -c "env -u BASH_ENV TOOLRUN_AGENT_STDOUT= TOOLRUN_AGENT_STDERR= \
		LD_PRELOAD='$TR_LIB' TR_MARK='$TR_MARK' bash -c 'cat $TR_DIR/big' | cat"
	[ "${#lines[@]}" -eq 50000 ]
}
