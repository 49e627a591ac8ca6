#!/usr/bin/env bats
# The system call policy of programs, call by call: try-syscall makes each
# call with harmless bad arguments, once directly and once through
# toolrun. A denied call fails with the policy's errno whatever its
# arguments; an allowed one gives what it gives directly.

load helpers

# The policy's answer through toolrun, by try-syscall's name for the call.
DENIED_EPERM="ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd
	mount umount2 umount fsopen fsconfig fsmount fspick open_tree move_mount
	mount_setattr pivot_root unshare setns
	clone-newns clone-newuts clone-newipc clone-newuser clone-newpid
	clone-newnet clone-newcgroup clone-newtime
	bpf perf_event_open userfaultfd keyctl add_key request_key
	kexec_load kexec_file_load init_module finit_module delete_module
	acct syslog iopl ioperm open_by_handle_at name_to_handle_at
	ioctl-tiocsti ioctl-tiocsti-high ioctl-tioclinux"
# libc falls back to clone and to other I/O when these say ENOSYS.
DENIED_ENOSYS="clone3 io_uring_setup io_uring_enter io_uring_register"
# network = deny: any socket family but AF_UNIX.
DENIED_EACCES="socket-inet socket-inet-udp socket-inet6 socket-netlink"
ALLOWED="socket-unix socketpair-unix clone-plain fork ioctl-tcgets getpid
	uname openat-devnull"
# Entry points of other ABIs; the filter knows only the native one.
OTHER_ABIS="ptrace-i386 unshare-x32"

# Calls that the kernel may refuse root with EPERM of its own, before it
# looks at the arguments: module loading or kexec disabled or locked down.
KERNEL_MAY_REFUSE="kexec_load kexec_file_load init_module finit_module delete_module"
# Calls for which the kernel checks a capability (CAP_SYS_ADMIN, and for
# these CAP_SYS_PACCT, CAP_SYSLOG or CAP_BPF) before the arguments: run
# without it, they are EPERM directly too.
NEED_PRIVILEGE="mount umount umount2 fsopen fsconfig fsmount fspick open_tree
	move_mount mount_setattr pivot_root acct syslog bpf"

setup_file() {
	tr_start "tools = try-syscall try-syscall-net" \
		"[tool.try-syscall-net]" "network = allow"
	# The same program under a second name, listed with network = allow.
	cp "$TRY" "$TR_DIR/try-syscall-net"
	# Every call, once each way, kept in files: nothing is shaped.
	"$TR_BASH" "cd $TR_DIR && $TRY all > via 2>via.err"
	"$PLAIN_BASH" "cd $TR_DIR && $TRY all > direct 2>direct.err"
	"$TR_BASH" "cd $TR_DIR && ./try-syscall-net all > via-net 2>via-net.err"
}

teardown_file() {
	tr_stop
}

# result FILE NAME: what the call NAME gave in that run ("" if absent).
result() {
	awk -v n="$2" '$1 == n { $1 = ""; sub(/^ /, ""); print; exit }' "$TR_DIR/$1"
}

# in_list NAME WORDS...: NAME is one of the words.
in_list() {
	local name=$1 word
	shift
	for word in "$@"; do
		[ "$word" = "$name" ] && return 0
	done
	return 1
}

# expect FILE WANT NAMES...: each call gave WANT in that run; lists those
# that did not.
expect() {
	local file=$1 want=$2 name got bad=()
	shift 2
	for name in "$@"; do
		# A call this architecture lacks is not in the table.
		[ "$name" = umount ] && [ -z "$(result direct umount)" ] && continue
		got=$(result "$file" "$name")
		[ "$got" = "$want" ] || bad+=("$name: $got")
	done
	if [ "${#bad[@]}" -gt 0 ]; then
		printf '# %s, not %s:\n' "$file" "$want" >&3
		printf '#   %s\n' "${bad[@]}" >&3
		return 1
	fi
}

@test "01-runs: the program ran both ways, through the daemon, without complaint" {
	[ -s "$TR_DIR/via" ] && [ -s "$TR_DIR/direct" ]
	[ ! -s "$TR_DIR/via.err" ] && [ ! -s "$TR_DIR/direct.err" ]
	tr_log_settled
	grep -q ' info: job [0-9]* uid=.* tool=try-syscall ' "$TR_DIR/daemon.log"
	# The same calls in the same order: only the results may differ.
	same_text "$(cut -d' ' -f1 "$TR_DIR/direct")" "$(cut -d' ' -f1 "$TR_DIR/via")"
}

@test "02-eperm: every denied call fails with EPERM through toolrun" {
	# shellcheck disable=SC2086
	expect via EPERM $DENIED_EPERM
}

@test "03-enosys: clone3 and io_uring fail with ENOSYS through toolrun" {
	# shellcheck disable=SC2086
	expect via ENOSYS $DENIED_ENOSYS
}

@test "04-network-deny: socket() of any family but AF_UNIX fails with EACCES under network = deny" {
	# shellcheck disable=SC2086
	expect via EACCES $DENIED_EACCES
	[ "$(result direct socket-inet)" = ok ]
}

@test "05-allowed: allowed calls give what they give directly" {
	local name bad=()
	for name in $ALLOWED; do
		[ -n "$(result direct "$name")" ] || bad+=("$name: not run")
		[ "$(result via "$name")" = "$(result direct "$name")" ] ||
			bad+=("$name: $(result via "$name") through toolrun, $(result direct "$name") directly")
	done
	[ "${#bad[@]}" -eq 0 ] || { printf '# %s\n' "${bad[@]}" >&3; return 1; }
	# clone() as such is allowed: only its namespace flags are refused.
	[ "$(result via clone-plain)" = EINVAL ]
	[ "$(result via fork)" = ok ]
}

@test "06-direct-differs: directly, the denied calls do not give the policy's errno" {
	# Otherwise the matrix would pass without any filter at all.
	local name want got bad=() outer=() differ=0
	# A test that runs under a filter of its own (a container's) may get
	# EPERM from that one, directly as through toolrun.
	local filtered=no
	[ "$(proc_status self Seccomp)" != 2 ] || filtered=yes
	# shellcheck disable=SC2086
	for name in $DENIED_EPERM $DENIED_ENOSYS $DENIED_EACCES; do
		[ "$name" = umount ] && [ -z "$(result direct umount)" ] && continue
		want=EPERM
		in_list "$name" $DENIED_ENOSYS && want=ENOSYS
		in_list "$name" $DENIED_EACCES && want=EACCES
		got=$(result direct "$name")
		[ -n "$got" ] || { bad+=("$name: not run"); continue; }
		if [ "$got" = "$want" ]; then
			in_list "$name" $KERNEL_MAY_REFUSE && continue
			! has_cap 21 && in_list "$name" $NEED_PRIVILEGE && continue
			# io_uring may be compiled out, so ENOSYS directly too.
			[[ $name == io_uring_* ]] && continue
			[ "$filtered" = yes ] && { outer+=("$name"); continue; }
			bad+=("$name: $got directly")
		else
			differ=$((differ + 1))
		fi
	done
	[ "${#outer[@]}" -eq 0 ] ||
		echo "# the policy's errno directly too, under this test's own filter: ${outer[*]}" >&3
	[ "${#bad[@]}" -eq 0 ] || { printf '# %s\n' "${bad[@]}" >&3; return 1; }
	# However the machine answers, some calls show the difference: the
	# socket calls at least, which nothing but toolrun refuses with EACCES.
	[ "$differ" -ge 4 ]
}

@test "07-tiocsti-high-bits: TIOCSTI with high bits set in the request is still EPERM" {
	# The kernel reads the request as 32 bits, so this is TIOCSTI.
	[ "$(result direct ioctl-tiocsti-high)" = "$(result direct ioctl-tiocsti)" ]
	[ "$(result via ioctl-tiocsti-high)" = EPERM ]
}

# other_abi_verdict DIRECT VIA: empty if VIA, what a call through another
# ABI's entry point gave through toolrun, is what the filter must make of
# it given DIRECT, what it gave without toolrun on this machine; else why
# not. A call that reached the kernel directly (a result, even an error)
# must kill the program through toolrun. Where the kernel lacks that ABI,
# the entry point faults before any filter sees the call (SIGSEGV where
# int 0x80 has no gate): through toolrun that same fault, or SIGSYS, is
# a block too. Nothing else is.
other_abi_verdict() {
	local direct=$1 via=$2
	case $direct in
	"" | lost) echo "not run directly ('$direct')" ;;
	"signal SIGSYS") echo "SIGSYS directly: something other than toolrun filters this run" ;;
	"signal "*)
		[ "$via" = "signal SIGSYS" ] || [ "$via" = "$direct" ] ||
			echo "'$via' through toolrun, where directly the kernel has no such entry point ($direct)"
		;;
	*)
		[ "$via" = "signal SIGSYS" ] ||
			echo "'$via' through toolrun, where directly the call reached the kernel ($direct)"
		;;
	esac
}

@test "08-other-abis: the 32-bit and x32 entry points never bypass the filter" {
	[ -n "$(result direct ptrace-i386)" ] || skip "no x86_64 build"
	# What this kernel does with each entry point, learnt from the direct
	# run: a result (ESRCH: no pid 0; ENOSYS: x32 compiled out) or a
	# fault (no 32-bit emulation, or it is turned off at boot).
	local name why bad=()
	for name in $OTHER_ABIS; do
		why=$(other_abi_verdict "$(result direct "$name")" "$(result via "$name")")
		[ -z "$why" ] || bad+=("$name: $why")
		echo "# $name: $(result direct "$name") directly, $(result via "$name") through toolrun" >&3
	done
	[ "${#bad[@]}" -eq 0 ] || { printf '# %s\n' "${bad[@]}" >&3; return 1; }
}

@test "08-other-abis-verdict: the rule above fails a call that got through" {
	# The rule itself, on the outcomes a kernel may give: with the ABI a
	# call that gets through returns; without it, only a fault is a block.
	[ -z "$(other_abi_verdict ESRCH 'signal SIGSYS')" ]
	[ -n "$(other_abi_verdict ESRCH ESRCH)" ]
	[ -n "$(other_abi_verdict ESRCH EPERM)" ]
	[ -n "$(other_abi_verdict ok ok)" ]
	[ -z "$(other_abi_verdict ENOSYS 'signal SIGSYS')" ]
	[ -n "$(other_abi_verdict ENOSYS ENOSYS)" ]
	[ -z "$(other_abi_verdict 'signal SIGSEGV' 'signal SIGSEGV')" ]
	[ -z "$(other_abi_verdict 'signal SIGSEGV' 'signal SIGSYS')" ]
	[ -n "$(other_abi_verdict 'signal SIGSEGV' ESRCH)" ]
	[ -n "$(other_abi_verdict 'signal SIGSEGV' 'signal SIGKILL')" ]
	[ -n "$(other_abi_verdict 'signal SIGSEGV' lost)" ]
	[ -n "$(other_abi_verdict 'signal SIGSYS' 'signal SIGSYS')" ]
	[ -n "$(other_abi_verdict '' 'signal SIGSYS')" ]
}

@test "09-network-allow: network = allow gives a tool AF_INET sockets, and only that" {
	# shellcheck disable=SC2086
	expect via-net ok socket-inet socket-inet-udp
	local name
	for name in socket-inet6 socket-netlink; do
		[ "$(result via-net "$name")" = "$(result direct "$name")" ]
	done
	# shellcheck disable=SC2086
	expect via-net EPERM $DENIED_EPERM
	# shellcheck disable=SC2086
	expect via-net ENOSYS $DENIED_ENOSYS
}

@test "10-coverage-filters: every call the daemon's filters deny is in the matrix" {
	# The deny lists as daemon/base/sandbox.c spells them; a call added there
	# must be added here too.
	local src="$TOOLRUN_SOURCE/daemon/base/sandbox.c" name missing=()
	local names
	names=$(sed -n '/^static const char \*const \(denied\|unsupported\)\[\] = {/,/^};/p' "$src" |
		grep -o '"[a-z0-9_]*"' | tr -d '"')
	[ "$(wc -w <<<"$names")" -gt 30 ]
	for name in $names; do
		# shellcheck disable=SC2086
		in_list "$name" $DENIED_EPERM $DENIED_ENOSYS || missing+=("$name")
	done
	[ "${#missing[@]}" -eq 0 ] || { echo "# not in the matrix: ${missing[*]}" >&3; return 1; }
}

@test "11-coverage-matrix: every call the program makes has an expectation here" {
	local name unexpected=()
	while read -r name _; do
		# shellcheck disable=SC2086
		in_list "$name" $DENIED_EPERM $DENIED_ENOSYS $DENIED_EACCES $ALLOWED $OTHER_ABIS ||
			unexpected+=("$name")
	done <"$TR_DIR/direct"
	[ "$(wc -l <"$TR_DIR/direct")" -gt 50 ]
	[ "${#unexpected[@]}" -eq 0 ] || { echo "# no expectation for: ${unexpected[*]}" >&3; return 1; }
}
