#!/usr/bin/env bats
# Status and streams through toolrun: exit codes, stderr apart from
# stdout, stdin piped in with `docker exec -u 1000 -i`, and 124 on timeout. The box
# runs with the image's config, but a 3-second timeout (tail's own).

load helpers

setup_file() {
	local conf="$BATS_FILE_TMPDIR/toolrun.conf"
	# Inside an agent command a tool keeps only a timeout its own section
	# sets: tail gets one.
	{ sed 's/^timeout *=.*/timeout = 3/' "$TOOLRUN_SOURCE/container/toolrun.conf"
	  printf '[tool.tail]\ntimeout = 3\n'; } >"$conf"
	chmod 0644 "$conf"
	ct_setup_file --config "$conf"
}
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

@test "03-streams: exit codes of intercepted tools reach docker exec" {
	run docker exec -u 1000 "$CT_BOX" bash -lc 'grep nomatch words.txt'
	[ "$status" -eq 1 ]
	run docker exec -u 1000 "$CT_BOX" bash -lc 'ls /nonexistent'
	[ "$status" -eq 2 ]
	run docker exec -u 1000 "$CT_BOX" bash -lc 'cat /nonexistent'
	[ "$status" -eq 1 ]
	run docker exec -u 1000 "$CT_BOX" bash -lc 'grep -q beta words.txt'
	[ "$status" -eq 0 ]
}

@test "03-streams: the shell's own exit code reaches docker exec" {
	run docker exec -u 1000 "$CT_BOX" bash -lc 'cat words.txt >/dev/null; exit 7'
	[ "$status" -eq 7 ]
	run docker exec -u 1000 "$CT_BOX" bash -lc 'false'
	[ "$status" -eq 1 ]
}

@test "03-streams: the daemon reports the same exit code as the agent sees" {
	local before
	before=$(ct_job_count)
	run docker exec -u 1000 "$CT_BOX" bash -lc 'ls /nonexistent'
	[ "$status" -eq 2 ]
	ct_wait_job "$before" ' tool=ls .* exit=2 '
}

@test "03-streams: stderr is kept apart from stdout" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'cat /nonexistent'
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ "$stderr" = "cat: /nonexistent: No such file or directory" ]

	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc \
		'head -n 1 words.txt; ls /nonexistent; tail -n 1 words.txt'
	[ "$status" -eq 0 ]
	[ "$output" = $'alpha\nbeta' ]
	[[ $stderr == "ls: cannot access '/nonexistent': No such file or directory" ]]
}

@test "03-streams: stdin piped in with docker exec -u 1000 -i reaches the tool" {
	run --separate-stderr bash -c "printf 'b\na\nb\n' | docker exec -u 1000 -i '$CT_BOX' bash -lc 'sort'"
	[ "$status" -eq 0 ]
	[ "$output" = $'a\nb\nb' ]
	run --separate-stderr bash -c "printf 'b\na\nb\n' | docker exec -u 1000 -i '$CT_BOX' bash -lc 'sort | uniq -c'"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "      1 a" ]
	[ "${lines[1]}" = "      2 b" ]
}

@test "03-streams: a large stdin reaches the tool whole" {
	local before
	before=$(ct_job_count)
	run --separate-stderr bash -c "head -c 3000000 /dev/zero | docker exec -u 1000 -i '$CT_BOX' bash -lc 'wc -c'"
	[ "$status" -eq 0 ]
	[ "$output" = 3000000 ]
	ct_wait_job "$before" ' tool=wc .* exit=0 '
}

@test "03-streams: a tool that outlives the timeout ends with 124 and a message" {
	local before
	before=$(ct_job_count)
	# tail -f never ends by itself: only the timeout ends it.
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'tail -f words.txt'
	[ "$status" -eq 124 ]
	[[ $stderr == *"toolrun: tail: timed out after 3 s"* ]]
	[ "$output" = $'alpha\nbeta\ngamma\nbeta' ]
	ct_wait_job "$before" ' tool=tail .* exit=124 timeout '
}

ct_no_tail() { [ -z "$(ct_pids_named tail)" ]; }

@test "03-streams: no program outlives its timeout" {
	docker exec -u 1000 "$CT_BOX" bash -lc 'tail -f words.txt' >/dev/null 2>&1 || true
	ct_wait_for "$CT_WAIT" ct_no_tail
}
