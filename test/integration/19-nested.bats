#!/usr/bin/env bats
# Programs that toolrund runs keep interception for what they start:
# find -exec, make's recipes, xargs, shells at any depth. Each nested tool
# is a job of its own, and the program still sees an environment without
# toolrun's variables.

load helpers

setup_file() {
	tr_start "spill_dir = $BATS_FILE_TMPDIR/spill"
	printf 'a\nb\n' >"$TR_DIR/ab"
	make_lines "$TR_DIR/big" 5000
}

teardown_file() {
	tr_stop
}

@test "19-nested-find-exec: find -exec cat: both find and cat go through the daemon" {
	n=$(tr_job_count)
	run --separate-stderr tr_bash "find $TR_DIR/ab -exec cat {} \\;"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb')" ]
	jobs_since "$n" | grep -q ' tool=find '
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "19-nested-env: a nested program sees no toolrun variable" {
	run tr_bash "find $TR_DIR/ab -exec $TR_PROBE env LD_PRELOAD TOOLRUN_CONFIG TOOLRUN_NESTED TR_MARK \\;"
	[ "${lines[0]}" = "LD_PRELOAD unset" ]
	[ "${lines[1]}" = "TOOLRUN_CONFIG unset" ]
	[ "${lines[2]}" = "TOOLRUN_NESTED unset" ]
	[ "${lines[3]}" = "TR_MARK=$TR_MARK" ]
}

@test "19-nested-shaped-once: nested output is shaped once, where it reaches the agent" {
	n=$(tr_job_count)
	run --separate-stderr tr_bash "find $TR_DIR/big -exec cat {} \\;"
	# find's stream, cat's lines in it, cut once: one marker.
	[ "${#lines[@]}" -eq 201 ]
	[ "$(grep -c '^\.\.\.\[toolrun cut ' <<<"$output")" -eq 1 ]
	[ "${lines[99]}" = "line 100" ]
	dropped=$(($(stat -c %s "$TR_DIR/big") - $(head -n 100 "$TR_DIR/big" | wc -c) - $(tail -n 100 "$TR_DIR/big" | wc -c)))
	[[ "${lines[100]}" == "...[toolrun cut 4800 lines ($dropped bytes) of find's stdout here: lines 101-4900 of 5000; the whole stdout is in $BATS_FILE_TMPDIR/spill/$(id -u)/"*"-stdout.log]" ]]
	[ "${lines[101]}" = "line 4901" ]
	[ "${lines[200]}" = "line 5000" ]
	cmp "$(spill_path_in "${lines[100]}")" "$TR_DIR/big"
	jobs_since "$n" | grep -q ' tool=cat .*stdout=direct'
	jobs_since "$n" | grep -q ' tool=find .*stdout=[0-9]*B/5000L'
}

@test "19-nested-depth: a shell under a listed program under a shell" {
	n=$(tr_job_count)
	run tr_bash "find $TR_DIR/ab -exec sh -c 'bash -c \"wc -l < \$1\"' sh {} \\;"
	[ "$output" = 2 ]
	jobs_since "$n" | grep -q ' tool=wc '
}

@test "19-nested-make: make runs its recipes' tools through the daemon" {
	command -v make >/dev/null || skip "make is not installed"
	printf 'all:\n\tcat ab\n\tgrep -c b ab\n' >"$TR_DIR/Makefile"
	n=$(tr_job_count)
	run --separate-stderr tr_bash "cd $TR_DIR && make -s"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb\n1')" ]
	jobs_since "$n" | grep -q ' tool=cat '
	jobs_since "$n" | grep -q ' tool=grep '
}

@test "19-nested-env-i: env -i below a listed program still reaches the daemon" {
	n=$(tr_job_count)
	run tr_bash "find $TR_DIR/ab -exec env -i /usr/bin/cat {} \\;"
	[ "$output" = "$(printf 'a\nb')" ]
	jobs_since "$n" | grep -q ' tool=cat '
}
