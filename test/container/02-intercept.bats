#!/usr/bin/env bats
# Every tool the image's config lists is intercepted under `bash -lc`.
# The proof is the daemon's job line for it in `docker logs`, not the
# output (which is the same with and without toolrun).

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

# ct_intercepted TOOL COMMAND: COMMAND succeeds and the daemon ran TOOL
# for uid 1000.
ct_intercepted() {
	local tool=$1 command=$2 before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "$command"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ -n "$output" ]
	ct_wait_job "$before" " uid=1000 tool=$tool pid=[0-9]+ exit=0 "
}

@test "02-intercept: the config lists exactly the tools this file checks" {
	[ "$CT_TOOLS" = "cat grep find ls head tail sed awk sort uniq wc" ]
	run docker exec -u 1000 "$CT_BOX" sed -n 's/^tools *= *//p' /etc/toolrun/toolrun.conf
	[ "$output" = "$CT_TOOLS" ]
}

@test "02-intercept: cat is intercepted" { ct_intercepted cat 'cat words.txt'; }
@test "02-intercept: grep is intercepted" { ct_intercepted grep 'grep beta words.txt'; }
@test "02-intercept: find is intercepted" { ct_intercepted find 'find . -name words.txt'; }
@test "02-intercept: ls is intercepted" { ct_intercepted ls 'ls -l'; }
@test "02-intercept: head is intercepted" { ct_intercepted head 'head -n 2 words.txt'; }
@test "02-intercept: tail is intercepted" { ct_intercepted tail 'tail -n 2 words.txt'; }
@test "02-intercept: sed is intercepted" { ct_intercepted sed 'sed -n 2p words.txt'; }
@test "02-intercept: awk is intercepted" { ct_intercepted awk "awk 'NR == 3' words.txt"; }
@test "02-intercept: sort is intercepted" { ct_intercepted sort 'sort words.txt'; }
@test "02-intercept: uniq is intercepted" { ct_intercepted uniq 'uniq words.txt'; }
@test "02-intercept: wc is intercepted" { ct_intercepted wc 'wc -l words.txt'; }

@test "02-intercept: a tool started by a listed tool (find -exec cat) is intercepted too" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'find . -name words.txt -exec cat {} \;'
	[ "$status" -eq 0 ]
	[ "$output" = $'alpha\nbeta\ngamma\nbeta' ]
	# find and the cat it starts write straight into the command's output,
	# which is shaped once, by the command.
	ct_wait_job "$before" " uid=1000 tool=find pid=[0-9]+ exit=0 .*stdout=direct"
	ct_wait_job "$before" " uid=1000 tool=cat pid=[0-9]+ exit=0 .*stdout=direct"
}

@test "02-intercept: a tool by its full path, in a pipeline and in a subshell is intercepted" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc \
		'/usr/bin/sort words.txt | (uniq -c) | wc -l'
	[ "$status" -eq 0 ]
	[ "$output" = 3 ]
	ct_wait_job "$before" ' tool=sort .* exit=0 '
	ct_wait_job "$before" ' tool=uniq .* exit=0 '
	ct_wait_job "$before" ' tool=wc .* exit=0 '
}

@test "02-intercept: an unlisted program is not handed to the daemon" {
	local before
	before=$(ct_job_count)
	run docker exec -u 1000 "$CT_BOX" bash -lc 'date +%Y >/dev/null && tr a b <words.txt && env >/dev/null'
	[ "$status" -eq 0 ]
	# The command itself is the daemon's (an agent command), its programs not.
	ct_no_tool_jobs_since "$before"
}

@test "02-intercept: TOOLRUN=off leaves every tool alone, though the image preloads the library" {
	local before
	before=$(ct_job_count)
	run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -lc \
		'cat words.txt | grep a | sort | uniq | wc -l; ls >/dev/null; echo "agent=[${TOOLRUN_AGENT_STDOUT-unset}]"'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 3 ]
	[ "${lines[1]}" = "agent=[unset]" ]
	ct_no_jobs_since "$before"
}
