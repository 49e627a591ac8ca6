#!/usr/bin/env bats
# Arguments and environment carry any byte but NUL.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

@test "06-args-bytes: tabs, newlines, high bytes and empty arguments arrive intact" {
	line="$TR_PROBE args \$'a\\tb' \$'c\\nd' \$'\\xff\\xfe\\x80' '' ' ' \$'\\x01'"
	run --separate-stderr tr_bash "$line"
	via=$output
	[ "$status" -eq 0 ]
	run --separate-stderr plain_bash "$line"
	[ "$via" = "$output" ]
	[[ "$via" == *'a\x09b'* ]]
	[[ "$via" == *'c\x0ad'* ]]
	[[ "$via" == *'\xff\xfe\x80'* ]]
}

@test "06-args-env: environment values with newlines and high bytes arrive intact" {
	run --separate-stderr tr_bash "export V=\$'x\\ny\\xff'; $TR_PROBE env V | od -An -c | tr -s ' '"
	via=$output
	run --separate-stderr plain_bash "export V=\$'x\\ny\\xff'; $TR_PROBE env V | od -An -c | tr -s ' '"
	[ "$via" = "$output" ]
}

@test "06-args-grep-pattern: a grep pattern with a tab matches as it would directly" {
	printf 'a\tb\nab\n' >"$TR_DIR/tabs"
	run tr_bash "grep \$'a\\tb' $TR_DIR/tabs"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\tb')" ]
}
