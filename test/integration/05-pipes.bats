#!/usr/bin/env bats
# Pipelines end when their reader ends, as they do without toolrun. The
# bounds are generous: they catch a hang, not a slow machine.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

@test "05-pipes-yes-head: yes | head -1 returns" {
	run --separate-stderr timeout 120 "$TR_BASH" 'yes | head -1'
	[ "$status" -eq 0 ]
	[ "$output" = y ]
}

@test "05-pipes-zero-head: cat /dev/zero | head -c 10 returns ten bytes" {
	run timeout 120 "$TR_BASH" 'cat /dev/zero | head -c 10 | wc -c'
	[ "$status" -eq 0 ]
	[ "$output" = 10 ]
}

@test "05-pipes-reader-gone: the agent's reader closing ends a shaped cat with SIGPIPE" {
	run timeout 120 bash -c "'$TR_BASH' 'cat /dev/zero' | head -c 10 >/dev/null; echo \${PIPESTATUS[0]}"
	[ "$status" -eq 0 ]
	[ "$output" = 141 ]
}
