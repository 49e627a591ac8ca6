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

# What attaching to the caller gives directly here: the caller is no
# descendant of the program, which yama's ptrace_scope may forbid (see
# may_ptrace_others). Through toolrun, the filter refuses it whatever the
# machine allows.
ptrace_direct() {
	if may_ptrace_others; then echo ok; else echo EPERM; fi
}

# What TIOCSTI gives directly here: with dev.tty.legacy_tiocsti = 0
# (Linux 6.2 on), only CAP_SYS_ADMIN may use it.
tiocsti_direct() {
	if [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 1)" = 1 ] || has_cap 21; then
		echo ok
	else
		echo EPERM
	fi
}

# The trailing command keeps bash from exec'ing the program in its own
# place: $$ stays the caller, a live process that the program then aims at.

@test "01-ptrace-attach: a program cannot attach to its caller with PTRACE_ATTACH" {
	run plain_bash "$ESCAPE ptrace-attach \$\$; true"
	[ "$output" = "ptrace-attach $(ptrace_direct)" ]
	run tr_bash "$ESCAPE ptrace-attach \$\$; true"
	[ "$status" -eq 0 ]
	[ "$output" = "ptrace-attach EPERM" ]
}

@test "02-ptrace-seize: a program cannot attach to its caller with PTRACE_SEIZE" {
	run plain_bash "$ESCAPE ptrace-seize \$\$; true"
	[ "$output" = "ptrace-seize $(ptrace_direct)" ]
	run tr_bash "$ESCAPE ptrace-seize \$\$; true"
	[ "$status" -eq 0 ]
	[ "$output" = "ptrace-seize EPERM" ]
}

@test "03-unshare-user: unshare -U cannot make a user namespace" {
	# Directly it may fail too where user namespaces are off (no
	# CONFIG_USER_NS, user.max_user_namespaces = 0, a container's own
	# filter...); through toolrun the filter refuses it before the kernel.
	run plain_bash "unshare -U true"
	[ "$status" -eq 0 ] || echo "# directly too, this machine makes no user namespace: $output" >&3
	run --separate-stderr tr_bash "unshare -U true"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"unshare failed: Operation not permitted"* ]]
}

@test "04-mount: mount -t tmpfs fails, and nothing is mounted" {
	# Directly, in a mount namespace of its own so as not to touch the
	# machine's: root with CAP_SYS_ADMIN may mount there.
	if [ "$(id -u)" -eq 0 ] && has_cap 21; then
		run plain_bash "unshare -m --propagation private sh -c 'mount -t tmpfs none $TR_DIR/mnt && findmnt -n -o FSTYPE $TR_DIR/mnt'"
		[ "$status" -eq 0 ]
		[ "$output" = tmpfs ]
	else
		echo "# not root with CAP_SYS_ADMIN: no mount directly to compare with" >&3
	fi
	run --separate-stderr tr_bash "mount -t tmpfs none $TR_DIR/mnt"
	[ "$status" -ne 0 ]
	# As root, mount(8) makes the call, which the filter refuses (another
	# user's mount(8) refuses by itself first).
	if [ "$(id -u)" -eq 0 ]; then
		[ "$status" -eq 32 ] # mount(8): mount failure
		[[ "$stderr" == *"permission denied"* ]]
	fi
	run findmnt -n "$TR_DIR/mnt"
	[ -z "$output" ]
}

@test "05-tiocsti: a program cannot type into its caller's terminal" {
	command -v script >/dev/null || skip "script(1) is not installed"
	# script gives the shell a terminal on stdin, stdout and stderr; the
	# program gets the caller's stdin as it is.
	local direct
	direct=$(tiocsti_direct)
	run timeout 60 script -qec "'$PLAIN_BASH' '$ESCAPE tiocsti 0'" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"fd 0 tty yes"* ]]
	[[ "$output" == *"tiocsti $direct"* ]]
	# The terminal echoes what was typed into it.
	[ "$direct" != ok ] || [[ "$output" == *"#"* ]]
	run timeout 60 script -qec "'$TR_BASH' '$ESCAPE tiocsti 0'" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"fd 0 tty yes"* ]]
	[[ "$output" == *"tiocsti EPERM"* ]]
	[[ "$output" != *"#"* ]]
}
