#!/usr/bin/env bats
# The seed's acceptance test, as an agent runs it: `docker exec box bash
# -lc "..."` in the long-lived container that container/run.sh starts.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

@test "01-acceptance: echo hello prints hello" {
	run --separate-stderr docker exec "$CT_BOX" bash -lc "echo hello"
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	[ -z "$stderr" ]
}

@test "01-acceptance: cat /etc/passwd | grep root finds root's line, both through toolrund" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec "$CT_BOX" bash -lc "cat /etc/passwd | grep root"
	[ "$status" -eq 0 ]
	[ "$output" = "root:x:0:0:root:/root:/bin/bash" ]
	[ -z "$stderr" ]
	ct_wait_job "$before" ' tool=cat .* exit=0 '
	ct_wait_job "$before" ' tool=grep .* exit=0 '
}

@test "01-acceptance: cat large_file.txt is truncated for the agent" {
	run --separate-stderr docker exec "$CT_BOX" bash -lc "cat large_file.txt"
	[ "$status" -eq 0 ]
	# The first lines as they are, then one truncation notice.
	[ "${lines[0]}" = 1 ]
	[ "${lines[1]}" = 2 ]
	[ "${#lines[@]}" -le 202 ]
	[ "${#output}" -le 5000 ]
	[[ $output == *"[truncated: "* ]]
	! [[ $output == *$'\n100000'* ]]
	[ -z "$stderr" ]
}

@test "01-acceptance: the daemon logs what it dropped from cat large_file.txt" {
	local before line
	before=$(ct_job_count)
	docker exec "$CT_BOX" bash -lc "cat large_file.txt" >/dev/null
	line=$(ct_wait_job "$before" ' tool=cat .* exit=0 ')
	# Every byte read, most dropped: 588895 bytes in 100000 lines.
	[[ $line == *"stdout=588895B/100000L-dropped:"* ]]
	! [[ $line == *"dropped:0B/0L stderr"* ]]
}

@test "01-acceptance: only the final output is truncated: a pipe gets every byte" {
	run --separate-stderr docker exec "$CT_BOX" bash -lc "cat large_file.txt | wc -l"
	[ "$status" -eq 0 ]
	[ "$output" = 100000 ]
	run --separate-stderr docker exec "$CT_BOX" bash -lc "cat large_file.txt | tail -n 1"
	[ "$status" -eq 0 ]
	[ "$output" = 100000 ]
}

@test "01-acceptance: only the final output is truncated: a file and a substitution get every byte" {
	run --separate-stderr docker exec "$CT_BOX" bash -lc \
		'cat large_file.txt >/tmp/copy && wc -c </tmp/copy && x=$(cat large_file.txt) && echo ${#x}'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 588895 ]
	[ "${lines[1]}" = 588894 ] # without the last newline
}

@test "01-acceptance: the same cat with TOOLRUN=off is not truncated and not seen by the daemon" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -e TOOLRUN=off "$CT_BOX" bash -lc "cat large_file.txt"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 100000 ]
	ct_no_jobs_since "$before"
}
