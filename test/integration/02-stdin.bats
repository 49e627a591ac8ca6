#!/usr/bin/env bats
# The caller's stdin reaches the program: pipes, redirects, here-docs.

load helpers

setup_file() {
	tr_start
	printf 'alpha\nbeta\ngamma\n' >"$TR_DIR/words"
}

teardown_file() {
	tr_stop
}

@test "02-stdin-pipe: a pipe into grep" {
	run --separate-stderr tr_bash "printf 'a\nb\nc\n' | grep b"
	[ "$status" -eq 0 ]
	[ "$output" = b ]
}

@test "02-stdin-redirect: a file redirected into sort" {
	run --separate-stderr tr_bash "sort -r < $TR_DIR/words"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'gamma\nbeta\nalpha')" ]
}

@test "02-stdin-heredoc: a here-document into wc" {
	run --separate-stderr tr_bash 'wc -l <<EOF
one
two
EOF'
	[ "$status" -eq 0 ]
	[ "$output" = 2 ]
}

@test "02-stdin-herestring: a here-string into sed" {
	run --separate-stderr tr_bash "sed s/x/y/g <<< xox"
	[ "$status" -eq 0 ]
	[ "$output" = yoy ]
}

@test "02-stdin-outer: the outer process's stdin, as docker exec -i gives it" {
	run bash -c "printf 'one\ntwo\n' | env -u LD_PRELOAD BASH_ENV='$TR_SNIPPET' TR_MARK='$TR_MARK' bash -c 'cat'"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'one\ntwo')" ]
}

@test "02-stdin-pipeline: cat | grep in a pipeline: grep gets cat's whole output" {
	run --separate-stderr tr_bash "cat $TR_DIR/words | grep -c a"
	[ "$status" -eq 0 ]
	[ "$output" = 3 ]
}
