#!/usr/bin/env bats
# truncate = always: every stream is shaped, as the seed did.

load helpers

setup_file() {
	tr_start "truncate = always" "spill_dir = $BATS_FILE_TMPDIR/spill"
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
	[ "$(head -n 100 "$TR_DIR/copy")" = "$(head -n 100 "$TR_DIR/big")" ]
	[ "$(tail -n 100 "$TR_DIR/copy")" = "$(tail -n 100 "$TR_DIR/big")" ]
	dropped=$(($(stat -c %s "$TR_DIR/big") - $(stat -c %s "$TR_DIR/copy") + $(sed -n 101p "$TR_DIR/copy" | wc -c)))
	[[ "$(sed -n 101p "$TR_DIR/copy")" == "...[toolrun cut 49800 lines ($dropped bytes) of cat's stdout here: lines 101-49900 of 50000; the whole stdout is in $BATS_FILE_TMPDIR/spill/$(id -u)/"*"-stdout.log]" ]]
}

@test "08-always-small: output under the limits is unchanged" {
	run tr_bash "head -n 3 $TR_DIR/big | cat"
	[ "$output" = "$(head -n 3 "$TR_DIR/big")" ]
}
