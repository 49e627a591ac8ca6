#!/usr/bin/env bats
# The seed's acceptance test, as an agent runs it: `docker exec -u 1000 box bash
# -lc "..."` in the long-lived container that container/run.sh starts.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

@test "01-acceptance: echo hello prints hello" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "echo hello"
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	[ -z "$stderr" ]
}

@test "01-acceptance: cat /etc/passwd | grep root finds root's line, both through toolrund" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "cat /etc/passwd | grep root"
	[ "$status" -eq 0 ]
	[ "$output" = "root:x:0:0:root:/root:/bin/bash" ]
	[ -z "$stderr" ]
	ct_wait_job "$before" ' tool=cat .* exit=0 '
	ct_wait_job "$before" ' tool=grep .* exit=0 '
}

@test "01-acceptance: cat large_file.txt reaches the agent cut: its head, a marker, its tail" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "cat large_file.txt"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	# max_lines = 200 binds (the lines are short): the first 100 lines,
	# one marker line that says what was cut and where the whole is, the
	# last 100.
	[ "${#lines[@]}" -eq 201 ]
	[ "$(printf '%s\n' "${lines[@]:0:100}")" = "$(seq 1 100)" ]
	[[ ${lines[100]} == "...[toolrun cut 99800 lines (588002 bytes) of stdout here: lines 101-99900 of 100000; the whole stdout is in /tmp/toolrun-output/1000/"*"-stdout.log]" ]]
	[ "$(printf '%s\n' "${lines[@]:101}")" = "$(seq 99901 100000)" ]
	# The file the marker names is the whole output, the agent's to read.
	path=${lines[100]##* is in }
	path=${path%]}
	run docker exec -u 1000 "$CT_BOX" bash -c "cmp $path large_file.txt && stat -c %a $path"
	[ "$status" -eq 0 ]
	[ "$output" = 600 ]
}

@test "01-acceptance: the daemon logs what it dropped from cat large_file.txt" {
	local before line
	before=$(ct_job_count)
	docker exec -u 1000 "$CT_BOX" bash -lc "cat large_file.txt" >/dev/null
	# The command's stdout is shaped as a whole: every byte read (588895
	# in 100000 lines), all but the head and the tail dropped.
	line=$(ct_wait_job "$before" ' command=bash .* exit=0 ')
	[[ $line == *" stdout=588895B/100000L-dropped:588002B/99800L "* ]]
	# cat, inside the command, writes straight to it.
	ct_wait_job "$before" ' tool=cat .* exit=0 .* stdout=direct '
}

@test "01-acceptance: only the final output is cut: a pipe gets every byte" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "cat large_file.txt | wc -l"
	[ "$status" -eq 0 ]
	[ "$output" = 100000 ]
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "cat large_file.txt | tail -n 1"
	[ "$status" -eq 0 ]
	[ "$output" = 100000 ]
}

@test "01-acceptance: only the final output is cut: a file and a substitution get every byte" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc \
		'cat large_file.txt >/tmp/copy && wc -c </tmp/copy && x=$(cat large_file.txt) && echo ${#x}'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 588895 ]
	[ "${lines[1]}" = 588894 ] # without the last newline
}

@test "01-acceptance: the same cat with TOOLRUN=off is not cut and not seen by the daemon" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -lc "cat large_file.txt"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 100000 ]
	ct_no_jobs_since "$before"
}
