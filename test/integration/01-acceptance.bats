#!/usr/bin/env bats
# The seed's acceptance checks, through a real daemon and a real bash.

load helpers

setup_file() {
	tr_start "spill_dir = $BATS_FILE_TMPDIR/spill"
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

@test "01-acceptance-large: cat large_file.txt comes back as its head and tail, with the marker between" {
	f="$TR_DIR/large_file.txt"
	run --separate-stderr tr_bash "cat $f"
	[ "$status" -eq 0 ]
	# Half of max_lines = 200 each side: the line budget binds first.
	head=$(head -n 100 "$f")
	tail=$(tail -n 100 "$f")
	dropped=$(($(stat -c %s "$f") - $(head -n 100 "$f" | wc -c) - $(tail -n 100 "$f" | wc -c)))
	[ "${#lines[@]}" -eq 201 ]
	[[ "$output" == "$head
...[toolrun cut 99800 lines ($dropped bytes) of cat's stdout here: lines 101-99900 of 100000; the whole stdout is in $BATS_FILE_TMPDIR/spill/$(id -u)/"*"-stdout.log]
$tail" ]]
	# The whole file is kept where the marker says.
	cmp "$(spill_path_in "${lines[100]}")" "$f"
}

@test "01-acceptance-large-pipeline: only the agent-facing stage of cat large_file.txt | grep is cut" {
	f="$TR_DIR/large_file.txt"
	run --separate-stderr tr_bash "cat $f | grep -c 9"
	[ "$status" -eq 0 ]
	[ "$output" = "$(grep -c 9 "$f")" ]
}
