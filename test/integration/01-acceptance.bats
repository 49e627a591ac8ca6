#!/usr/bin/env bats
# The seed's acceptance checks, through a real daemon and a real bash.

load helpers

setup_file() {
	tr_start
	make_lines "$TR_DIR/large_file.txt" 100000
}

teardown_file() {
	tr_stop
}

@test "01-acceptance-echo: echo hello prints hello" {
	run --separate-stderr tr_bash 'echo hello'
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	[ -z "$stderr" ]
}

@test "01-acceptance-pipeline: cat /etc/passwd | grep root runs both through the daemon" {
	n=$(tr_job_count)
	run --separate-stderr tr_bash 'cat /etc/passwd | grep root'
	[ "$status" -eq 0 ]
	[ "$output" = "$(grep root /etc/passwd)" ]
	jobs_since "$n" | grep -q ' tool=cat '
	jobs_since "$n" | grep -q ' tool=grep '
}

@test "01-acceptance-large: cat large_file.txt comes back truncated, with the marker" {
	f="$TR_DIR/large_file.txt"
	run --separate-stderr tr_bash "cat $f"
	[ "$status" -eq 0 ]
	kept=$(head -n 200 "$f")
	dropped=$(($(stat -c %s "$f") - $(head -n 200 "$f" | wc -c)))
	[ "$output" = "$kept
...[truncated: $dropped bytes, 99800 lines omitted]" ]
}

@test "01-acceptance-large-pipeline: only the agent-facing stage of cat large_file.txt | grep is cut" {
	f="$TR_DIR/large_file.txt"
	run --separate-stderr tr_bash "cat $f | grep -c 9"
	[ "$status" -eq 0 ]
	[ "$output" = "$(grep -c 9 "$f")" ]
}
