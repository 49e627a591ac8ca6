#!/usr/bin/env bats
# Ways out of the sandbox that a program might try, each shown to work
# directly (as the same root user) and to fail through toolrun.

load helpers

setup_file() {
	tr_start "tools = escape unshare mount"
	mkdir "$TR_DIR/mnt"
}

teardown_file() {
	tr_stop
}

# Yama's highest setting forbids attaching even to root, directly too.
ptrace_possible() {
	[ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 3 ] ||
		skip "kernel.yama.ptrace_scope = 3: no process may attach, toolrun or not"
}

# The trailing command keeps bash from exec'ing the program in its own
# place: $$ stays the caller, a live process that the program then aims at.

@test "01-ptrace-attach: a program cannot attach to its caller with PTRACE_ATTACH" {
	ptrace_possible
	run plain_bash "$ESCAPE ptrace-attach \$\$; true"
	[ "$output" = "ptrace-attach ok" ]
	run tr_bash "$ESCAPE ptrace-attach \$\$; true"
	[ "$status" -eq 0 ]
	[ "$output" = "ptrace-attach EPERM" ]
}

@test "02-ptrace-seize: a program cannot attach to its caller with PTRACE_SEIZE" {
	ptrace_possible
	run plain_bash "$ESCAPE ptrace-seize \$\$; true"
	[ "$output" = "ptrace-seize ok" ]
	run tr_bash "$ESCAPE ptrace-seize \$\$; true"
	[ "$status" -eq 0 ]
	[ "$output" = "ptrace-seize EPERM" ]
}

@test "03-unshare-user: unshare -U cannot make a user namespace" {
	run plain_bash "unshare -U true"
	[ "$status" -eq 0 ]
	run --separate-stderr tr_bash "unshare -U true"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"unshare failed: Operation not permitted"* ]]
}

@test "04-mount: mount -t tmpfs fails, and nothing is mounted" {
	# Directly, in a mount namespace of its own so as not to touch the
	# machine's: root may mount there.
	run plain_bash "unshare -m --propagation private sh -c 'mount -t tmpfs none $TR_DIR/mnt && findmnt -n -o FSTYPE $TR_DIR/mnt'"
	[ "$status" -eq 0 ]
	[ "$output" = tmpfs ]
	run --separate-stderr tr_bash "mount -t tmpfs none $TR_DIR/mnt"
	[ "$status" -eq 32 ] # mount(8): mount failure
	[[ "$stderr" == *"permission denied"* ]]
	run findmnt -n "$TR_DIR/mnt"
	[ -z "$output" ]
}

@test "05-tiocsti: a program cannot type into its caller's terminal" {
	command -v script >/dev/null || skip "script(1) is not installed"
	# script gives the shell a terminal on stdin, stdout and stderr; the
	# program gets the caller's stdin as it is.
	run timeout 20 script -qec "'$PLAIN_BASH' '$ESCAPE tiocsti 0'" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"fd 0 tty yes"* ]]
	[[ "$output" == *"tiocsti ok"* ]]
	# The terminal echoes what was typed into it.
	[[ "$output" == *"#"* ]]
	run timeout 20 script -qec "'$TR_BASH' '$ESCAPE tiocsti 0'" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"fd 0 tty yes"* ]]
	[[ "$output" == *"tiocsti EPERM"* ]]
	[[ "$output" != *"#"* ]]
}
