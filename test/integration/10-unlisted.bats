#!/usr/bin/env bats
# Programs that are not listed run untouched; listed ones get a clean
# environment and exactly the caller's cwd and fds.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

@test "10-unlisted-untouched: unlisted programs, and env -i / env -u, behave as directly" {
	n=$(tr_job_count)
	for line in 'echo hi' '/bin/true; echo $?' 'date +%Y' 'printf "%s\n" a b' 'expr 1 + 2' 'env -i /usr/bin/env' 'env -i cat /etc/hostname' 'env -u LD_PRELOAD cat /etc/hostname'; do
		run --separate-stderr tr_bash "$line"
		via="$status|$output|$stderr"
		run --separate-stderr plain_bash "$line"
		[ "$via" = "$status|$output|$stderr" ]
	done
	# the two `env ... cat` lines: cat is still listed, and still goes
	# through the daemon, with the environment env gave it
	[ "$(jobs_since "$n" | grep -c ' tool=cat ')" -eq 2 ]
	[ "$(jobs_since "$n" | grep -vc ' tool=cat ')" -eq 0 ]
}

@test "10-unlisted-env: the program gets the caller's environment without toolrun's" {
	run tr_bash "FOO=bar $TR_PROBE env FOO LD_PRELOAD TOOLRUN_CONFIG TOOLRUN_AGENT_STDOUT TR_MARK"
	[ "${lines[0]}" = FOO=bar ]
	[ "${lines[1]}" = "LD_PRELOAD unset" ]
	[ "${lines[2]}" = "TOOLRUN_CONFIG unset" ]
	[ "${lines[3]}" = "TOOLRUN_AGENT_STDOUT unset" ]
	[ "${lines[4]}" = "TR_MARK=$TR_MARK" ]
}

@test "10-unlisted-other-preload: another LD_PRELOAD entry is kept for the program" {
	# Wherever this system keeps it (multiarch or not).
	other=$(ls /lib/x86_64-linux-gnu/libdl.so.2 /lib/*/libdl.so.2 /lib64/libdl.so.2 \
		/usr/lib/*/libdl.so.2 /usr/lib64/libdl.so.2 2>/dev/null | head -n 1)
	[ -n "$other" ]
	run tr_bash "export LD_PRELOAD=\"\$LD_PRELOAD:$other\"; $TR_PROBE env LD_PRELOAD"
	[ "$output" = "LD_PRELOAD=$other" ]
}

@test "10-unlisted-cwd: the program runs in the caller's directory" {
	run tr_bash "cd $TR_DIR && $TR_PROBE cwd"
	[ "$output" = "$TR_DIR" ]
}

@test "10-unlisted-fds: the program sees the caller's fds and none of the daemon's" {
	# The same list as a direct run, whatever the test runner left open.
	run tr_bash "$TR_PROBE fds"
	via=$output
	run plain_bash "$TR_PROBE fds"
	[ "$via" = "$output" ]
	run tr_bash "exec 5</etc/hostname 7>$TR_DIR/seven; $TR_PROBE fds"
	via=$output
	run plain_bash "exec 5</etc/hostname 7>$TR_DIR/seven; $TR_PROBE fds"
	[ "$via" = "$output" ]
	[[ "$via" == *$'\n5\n'*7* ]]
}

@test "10-unlisted-fd-use: a program reads a pattern file given as /dev/fd/3" {
	printf 'root\n' >"$TR_DIR/pats"
	run tr_bash "grep -c -f /dev/fd/3 /etc/passwd 3<$TR_DIR/pats"
	[ "$output" = "$(grep -c root /etc/passwd)" ]
}
