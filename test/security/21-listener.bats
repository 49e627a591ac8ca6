#!/usr/bin/env bats
# The listener under attack from inside: made (with ptrace, as code
# running in it would) to attempt what its allow-list forbids, it is
# killed by its own filter; the supervisor logs the call by name and
# starts a new listener, and the daemon serves again.

load helpers

INJECT="$TOOLRUN_BUILD/test/security/inject-syscall"

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

# A listener other than OLD serves; its pid in NEW_LISTENER.
new_listener_serving() {
	NEW_LISTENER=$(tr_listener_pid)
	[ -n "$NEW_LISTENER" ] && [ "$NEW_LISTENER" != "$1" ] && "$TR_CLI" ping >/dev/null 2>&1
}

# Wait until a listener other than OLD serves, and print its pid.
wait_new_listener() {
	wait_for 60 new_listener_serving "$1" || return 1
	echo "$NEW_LISTENER"
}

# inject-syscall attaches to the listener, which is no descendant of it:
# yama's ptrace_scope may forbid that (see may_ptrace_others).
can_inject() {
	may_ptrace_others ||
		skip "kernel.yama.ptrace_scope = $(ptrace_scope) forbids attaching to the listener here"
}

# Make the listener attempt CALL; check it died for it and was replaced.
attempt() {
	local call=$1 nr=$2 old new
	can_inject
	old=$(tr_listener_pid)
	[ "$(wc -w <<<"$old")" -eq 1 ]
	run "$INJECT" "$old" "$call"
	[ "$status" -ne 77 ] || skip "inject-syscall does not support this architecture"
	[ "$status" -eq 0 ]
	new=$(wait_new_listener "$old")
	[ -n "$new" ]
	grep -q "error: the listener (pid $old) was killed by its seccomp filter for calling $call ($nr)" \
		"$TR_DIR/daemon.log"
	run tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "01-execve: a listener that calls execve is killed and replaced" {
	attempt execve 59
}

@test "02-openat: a listener that opens a file is killed and replaced" {
	attempt openat 257
}

@test "03-socket: a listener that creates a socket is killed and replaced" {
	attempt socket 41
}

@test "04-fork: a listener that forks is killed and replaced" {
	attempt clone 56
}

@test "05-ptrace: a listener that calls ptrace is killed and replaced" {
	attempt ptrace 101
}

@test "06-unshare: a listener that calls unshare is killed and replaced" {
	attempt unshare 272
}

@test "07-job: a job running when the listener dies ends, and its caller says why" {
	can_inject
	# cat waits on a pipe that stays open; its caller stands by.
	mkfifo "$TR_DIR/hold"
	"$TR_BASH" 'cat <"$0"; echo "status $?" >"$0.status"' "$TR_DIR/hold" 2>"$TR_DIR/hold.err" &
	local caller=$!
	exec {keep}>"$TR_DIR/hold"
	cat_running() {
		local launcher
		launcher=$(pgrep -P "$(tr_daemon_pid)" -x toolrund-launch)
		[ -n "$launcher" ] && [ -n "$(pgrep -P "$launcher" -x cat)" ]
	}
	wait_for 60 cat_running
	attempt execve 59
	wait "$caller"
	exec {keep}>&-
	[ "$(cat "$TR_DIR/hold.status")" = "status 1" ]
	grep -q "^toolrun: cat: lost connection to toolrund" "$TR_DIR/hold.err"
}

@test "08-control: a listener made to call an allowed call lives on" {
	# The same injection with sched_yield, which the allow-list has: the
	# deaths above are the filter's doing, not the injection's.
	local old
	can_inject
	old=$(tr_listener_pid)
	run "$INJECT" "$old" sched_yield
	[ "$status" -ne 77 ] || skip "inject-syscall does not support this architecture"
	[ "$status" -eq 0 ]
	run tr_bash 'cat /etc/hostname'
	[ "$output" = "$(cat /etc/hostname)" ]
	[ "$(tr_listener_pid)" = "$old" ]
	! grep -q "listener (pid $old) was killed" "$TR_DIR/daemon.log"
}
