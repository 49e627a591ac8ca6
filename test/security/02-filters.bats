#!/usr/bin/env bats
# The filters are in place: every program, and the daemon's listener and
# launcher, run in seccomp filter mode with no_new_privs, as the kernel
# itself reports in /proc/PID/status.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

# The status lines that tell: "Seccomp:\t2" is filter mode.
FILTERED=$'NoNewPrivs:\t1\nSeccomp:\t2'

@test "01-program: a program run through toolrun is filtered, with no_new_privs" {
	run tr_bash "cat /proc/self/status | grep -E '^(NoNewPrivs|Seccomp):'"
	[ "$status" -eq 0 ]
	same_text "$FILTERED" "$output"
	# Directly, the same command has only what every process here has
	# (the test itself: in a container it may be filtered already); where
	# that is not the above, the difference is toolrun's doing.
	run plain_bash "cat /proc/self/status | grep -E '^(NoNewPrivs|Seccomp):'"
	same_text "$(grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status)" "$output"
	[ "$output" != "$FILTERED" ] ||
		echo "# this test runs filtered, with no_new_privs, already: no difference to show" >&3
}

@test "02-program-children: what a program starts inherits the filter" {
	# find runs in the daemon; its sh child is not a tool, so it is
	# find's own child, started without toolrun.
	run tr_bash "find /proc/self/status -exec sh -c 'grep -E \"^(NoNewPrivs|Seccomp):\" /proc/\$\$/status' \\;"
	[ "$status" -eq 0 ]
	same_text "$FILTERED" "$output"
}

@test "03-listener: the listener is filtered, with no_new_privs" {
	daemon=$(tr_daemon_pid)
	pids=$(children_named "$daemon" toolrund-listen)
	[ "$(wc -w <<<"$pids")" -eq 1 ]
	[ "$(proc_status "$pids" Seccomp)" = 2 ]
	[ "$(proc_status "$pids" NoNewPrivs)" = 1 ]
}

@test "04-launcher: the launcher is filtered, with no_new_privs" {
	daemon=$(tr_daemon_pid)
	pids=$(children_named "$daemon" toolrund-launch)
	[ "$(wc -w <<<"$pids")" -eq 1 ]
	[ "$(proc_status "$pids" Seccomp)" = 2 ]
	[ "$(proc_status "$pids" NoNewPrivs)" = 1 ]
}

@test "05-own-filter: a program gets a filter of its own on top of the launcher's" {
	# Filters stack: a program holds the launcher's, inherited through
	# fork, plus the one installed for it before execve, which is the
	# only one that carries the network policy.
	daemon=$(tr_daemon_pid)
	launcher=$(children_named "$daemon" toolrund-launch)
	own=$(proc_status "$launcher" Seccomp_filters) || skip "the kernel does not count filters"
	run tr_bash "cat /proc/self/status | grep '^Seccomp_filters:'"
	[ "$status" -eq 0 ]
	[ "$output" = "Seccomp_filters:"$'\t'"$((own + 1))" ]
}

@test "06-supervisor: the supervisor is filtered too, and its children share its filter" {
	daemon=$(tr_daemon_pid)
	[ "$(proc_status "$daemon" Seccomp)" = 2 ]
	[ "$(proc_status "$daemon" NoNewPrivs)" = 1 ]
	# The launcher inherits the supervisor's deny-list instead of adding
	# a copy that every program would run through again.
	launcher=$(children_named "$daemon" toolrund-launch)
	own=$(proc_status "$daemon" Seccomp_filters) || skip "the kernel does not count filters"
	[ "$(proc_status "$launcher" Seccomp_filters)" = "$own" ]
}
