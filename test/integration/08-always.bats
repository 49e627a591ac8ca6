#!/usr/bin/env bats
# truncate = always: every stream is shaped, as the seed did.

load helpers

setup_file() {
	tr_start "truncate = always"
	make_lines "$TR_DIR/big" 50000
}

teardown_file() {
	tr_stop
}

@test "08-always-pipeline: a pipeline stage is shaped" {
	run tr_bash "cat $TR_DIR/big | wc -l"
	[ "$output" = 201 ]
}

@test "08-always-file: a redirect to a file is shaped" {
	run tr_bash "cat $TR_DIR/big > $TR_DIR/copy"
	[ "$(wc -l < "$TR_DIR/copy")" -eq 201 ]
	[[ "$(tail -n 1 "$TR_DIR/copy")" == "...[truncated: "* ]]
}

@test "08-always-small: output under the limits is unchanged" {
	run tr_bash "head -n 3 $TR_DIR/big | cat"
	[ "$output" = "$(head -n 3 "$TR_DIR/big")" ]
}
