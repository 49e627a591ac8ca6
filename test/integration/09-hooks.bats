#!/usr/bin/env bats
# Every hooked function hands a listed program to the daemon, and leaves
# other programs to the real function.

load helpers

setup_file() {
	tr_start
	printf 'hooked\n' >"$TR_DIR/data"
}

teardown_file() {
	tr_stop
}

# hookcall FUNCTION runs cat through it; the daemon must log the job.
through() {
	local fn=$1 prog=$2
	local n
	n=$(tr_job_count)
	run --separate-stderr tr_bash "$TR_HOOKCALL $fn $prog $TR_DIR/data"
	[ "$status" -eq 0 ]
	[ "$output" = hooked ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "09-hooks-execve" { through execve /bin/cat; }
@test "09-hooks-execv" { through execv /bin/cat; }
@test "09-hooks-execvp" { through execvp cat; }
@test "09-hooks-execvpe" { through execvpe cat; }
@test "09-hooks-execl" { through execl /bin/cat; }
@test "09-hooks-execle" { through execle /bin/cat; }
@test "09-hooks-execlp" { through execlp cat; }
@test "09-hooks-execveat" { through execveat /usr/bin/cat; }
@test "09-hooks-execveat-empty-path" { through execveat-fd /usr/bin/cat; }
@test "09-hooks-fexecve" { through fexecve /usr/bin/cat; }
@test "09-hooks-posix_spawn" { through posix_spawn /bin/cat; }
@test "09-hooks-posix_spawnp" { through posix_spawnp cat; }
@test "09-hooks-vfork-execve" { through vfork /bin/cat; }
@test "09-hooks-fork-execve" { through fork /bin/cat; }

@test "09-hooks-unlisted: each function runs an unlisted program itself" {
	n=$(tr_job_count)
	for fn in execve execv execvp execvpe execl execle execlp execveat execveat-fd \
		fexecve posix_spawn posix_spawnp vfork fork; do
		prog=/bin/echo
		case $fn in execvp | execvpe | execlp | posix_spawnp) prog=echo ;; execveat*|fexecve) prog=/usr/bin/echo ;; esac
		run --separate-stderr tr_bash "$TR_HOOKCALL $fn $prog via-$fn"
		[ "$status" -eq 0 ]
		[ "$output" = "via-$fn" ]
	done
	[ "$(tr_job_count)" -eq "$n" ]
}

@test "09-hooks-errno: a failing exec returns the errno it would without toolrun" {
	for fn in execve execvp posix_spawn posix_spawnp; do
		run --separate-stderr tr_bash "$TR_HOOKCALL $fn /nonexistent/cat x"
		via="$status $stderr"
		run --separate-stderr plain_bash "$TR_HOOKCALL $fn /nonexistent/cat x"
		[ "$via" = "$status $stderr" ]
		[[ "$stderr" == *ENOENT* ]]
	done
}

@test "09-hooks-path-search: execvp skips a directory entry whose match is not executable" {
	mkdir -p "$TR_DIR/p1" "$TR_DIR/p2"
	printf 'not a program\n' >"$TR_DIR/p1/cat"
	ln -sf /usr/bin/cat "$TR_DIR/p2/cat"
	n=$(tr_job_count)
	run --separate-stderr tr_bash "PATH=$TR_DIR/p1:$TR_DIR/p2 $TR_HOOKCALL execvp cat $TR_DIR/data"
	[ "$status" -eq 0 ]
	[ "$output" = hooked ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "09-hooks-path-empty-element: an empty PATH element is the current directory" {
	mkdir -p "$TR_DIR/here"
	cp /usr/bin/cat "$TR_DIR/here/cat"
	n=$(tr_job_count)
	run --separate-stderr tr_bash "cd $TR_DIR/here && PATH=/nonexistent: $TR_HOOKCALL execvp cat $TR_DIR/data"
	[ "$status" -eq 0 ]
	[ "$output" = hooked ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "09-hooks-script-without-shebang: execvp runs it with /bin/sh, execve fails with ENOEXEC" {
	mkdir -p "$TR_DIR/scripts"
	printf 'echo from-script "$@"\n' >"$TR_DIR/scripts/cat"
	chmod +x "$TR_DIR/scripts/cat"
	for fn in execvp execve; do
		run --separate-stderr tr_bash "PATH=$TR_DIR/scripts:/usr/bin $TR_HOOKCALL $fn $([ $fn = execve ] && echo "$TR_DIR/scripts/")cat x"
		via="$status|$output|$stderr"
		run --separate-stderr plain_bash "PATH=$TR_DIR/scripts:/usr/bin $TR_HOOKCALL $fn $([ $fn = execve ] && echo "$TR_DIR/scripts/")cat x"
		[ "$via" = "$status|$output|$stderr" ]
	done
	[ "$output" = "" ]
	[[ "$stderr" == *ENOEXEC* ]]
	run tr_bash "PATH=$TR_DIR/scripts:/usr/bin $TR_HOOKCALL execvp cat x"
	[ "$output" = "from-script x" ]
}

@test "09-hooks-e2big: arguments past the kernel's limit fail with E2BIG, as directly" {
	# 3 MiB: past ARG_MAX but within a frame; 12 MiB: past the frame too.
	# The kernel's limit is a quarter of the stack limit (at most 6 MiB):
	# 2 MiB under the usual 8 MiB, which the caller's shell might have
	# raised (ulimit -s unlimited lets 3 MiB through). A lower limit only
	# lowers it.
	local stack='ulimit -S -s 8192 2>/dev/null;'
	for bytes in 3145728 12582912; do
		run --separate-stderr tr_bash "$stack $TR_PROBE big-exec $bytes /bin/cat"
		via=$output
		run --separate-stderr plain_bash "$stack $TR_PROBE big-exec $bytes /bin/cat"
		[ "$output" = E2BIG ]
		[ "$via" = E2BIG ]
	done
}
