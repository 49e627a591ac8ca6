#!/usr/bin/env bats
# stdout and stderr stay apart; joined, they keep their order.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

@test "03-streams-apart: ls prints its listing on stdout and its error on stderr" {
	run --separate-stderr tr_bash 'ls /etc/hostname /nonexistent'
	[ "$status" -eq 2 ]
	[ "$output" = /etc/hostname ]
	[ "$stderr" = "ls: cannot access '/nonexistent': No such file or directory" ]
}

@test "03-streams-probe: alternating writes land on their own streams" {
	run --separate-stderr tr_bash "$TR_PROBE both 6"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'line 0\nline 2\nline 4')" ]
	[ "$stderr" = "$(printf 'line 1\nline 3\nline 5')" ]
}

@test "03-streams-joined: 2>&1 keeps the program's order" {
	run --separate-stderr tr_bash "$TR_PROBE both 40 2>&1"
	[ "$status" -eq 0 ]
	[ "$output" = "$(seq -f 'line %g' 0 39)" ]
}

@test "03-streams-stderr-to-file: stderr redirected to a file gets every byte" {
	run --separate-stderr tr_bash "ls /nonexistent 2>$TR_DIR/err; cat $TR_DIR/err"
	[ "$output" = "ls: cannot access '/nonexistent': No such file or directory" ]
}
