#!/usr/bin/env bats
# The hooks run where exec hooks run: in vfork children (posix_spawn uses
# CLONE_VFORK) and in the fork child of a multithreaded program, where
# only async-signal-safe work is allowed. Each case starts a listed
# program 1000 times, with 8 threads holding malloc and stdio locks.

load helpers

setup_file() {
	tr_start
	printf 'safe\n' >"$TR_DIR/data"
}

teardown_file() {
	tr_stop
}

stress() {
	local mode=$1 n
	n=$(tr_job_count)
	run --separate-stderr timeout 900 "$TR_BASH" "'$TOOLRUN_BUILD/test/progs/stress' $mode 1000 \$'safe\\n' /bin/cat $TR_DIR/data"
	[ "$status" -eq 0 ]
	[ "$output" = "1000 runs ok" ]
	[ "$(jobs_since "$n" | grep -c ' tool=cat .*exit=0')" -eq 1000 ]
}

@test "16-safety-posix-spawn: posix_spawn 1000 times, with busy threads" {
	stress posix_spawn-threads
}

@test "16-safety-vfork: vfork + execve 1000 times, with busy threads" {
	stress vfork-threads
}

@test "16-safety-fork-threads: fork + execve 1000 times from 8 busy threads' process" {
	stress fork-threads
}
