#!/bin/bash
# seccomp-gen.sh: write container/seccomp.json, toolrun's seccomp profile,
# from the readable lists below.
#
#   container/seccomp-gen.sh [OUTPUT]     (default: seccomp.json beside it)
#   container/seccomp-gen.sh --check      (exit 1 if seccomp.json is stale)
#
# The profile is an allow-list in the shape of Docker's default profile:
# every system call not allowed here fails with EPERM. It is written for a
# container started with --cap-drop=ALL (container/run.sh), so none of the
# default profile's capability-gated rules appear: they could never apply.
# What it tightens, and why, is in container/README.md.
#
# Names unknown on an architecture (open on arm64, arch_prctl off x86) are
# skipped by the runtime, as with Docker's own profile.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# ---------------------------------------------------------------------
# Allowed without conditions. One group per line set; '#' comments.
allowed() {
	cat <<'EOF'
# Files: open, read, write, seek, sync
open openat openat2 creat close close_range
read readv pread64 preadv preadv2 write writev pwrite64 pwritev pwritev2
lseek dup dup2 dup3 fcntl flock
fsync fdatasync sync syncfs sync_file_range fallocate ftruncate truncate
fadvise64 readahead sendfile copy_file_range splice tee vmsplice
# Files: metadata and directories
stat lstat fstat newfstatat statx statfs fstatfs
access faccessat faccessat2 getdents getdents64 getcwd chdir fchdir
mkdir mkdirat rmdir rename renameat renameat2 link linkat
symlink symlinkat unlink unlinkat readlink readlinkat
chmod fchmod fchmodat chown fchown lchown fchownat umask
utime utimes utimensat futimesat mknod mknodat
getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr
setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr
inotify_init inotify_init1 inotify_add_watch inotify_rm_watch
# Memory
brk mmap munmap mremap mprotect madvise mincore msync
mlock mlock2 munlock mlockall munlockall membarrier memfd_create
pkey_alloc pkey_free pkey_mprotect
# Processes (clone and clone3 have rules of their own below)
fork vfork execve execveat exit exit_group wait4 waitid
kill tgkill tkill pidfd_open pidfd_send_signal
getpid getppid gettid getpgid setpgid getpgrp getsid setsid
getpriority setpriority ioprio_get ioprio_set
sched_yield sched_getaffinity sched_setaffinity sched_getparam
sched_setparam sched_getscheduler sched_setscheduler sched_getattr
sched_setattr sched_get_priority_max sched_get_priority_min
sched_rr_get_interval getcpu
prctl arch_prctl set_tid_address set_robust_list get_robust_list rseq
getrlimit setrlimit prlimit64 getrusage times
capget capset seccomp landlock_create_ruleset landlock_add_rule
landlock_restrict_self
# Credentials (without capabilities only the permitted changes succeed)
getuid geteuid getgid getegid getresuid getresgid getgroups
setuid setgid setreuid setregid setresuid setresgid setgroups
setfsuid setfsgid
# Signals
rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigsuspend
rt_sigtimedwait rt_sigqueueinfo rt_tgsigqueueinfo sigaltstack
signalfd signalfd4 pause restart_syscall alarm getitimer setitimer
# Time
clock_gettime clock_getres clock_nanosleep nanosleep gettimeofday time
timer_create timer_delete timer_getoverrun timer_gettime timer_settime
timerfd_create timerfd_gettime timerfd_settime
# Waiting: poll, epoll, futexes, pipes, eventfd
poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl
epoll_wait epoll_pwait epoll_pwait2 eventfd eventfd2
futex futex_waitv pipe pipe2
# Sockets (socket and socketpair have rules of their own below)
connect accept accept4 bind listen getsockname getpeername
getsockopt setsockopt sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg
shutdown
# System V shared memory and semaphores
shmget shmat shmdt shmctl semget semop semtimedop semctl
# The rest
ioctl uname sysinfo getrandom
EOF
}

# ---------------------------------------------------------------------
# Constants for the argument rules.
AF_UNIX=1 AF_INET=2 AF_INET6=10 AF_NETLINK=16
NETLINK_ROUTE=0
PER_LINUX=0 PERSONALITY_QUERY=4294967295
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NS_FLAGS=$(( 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 |
		   0x10000000 | 0x20000000 | 0x40000000 ))
ENOSYS=38

names_json() { # words -> "a", "b", ...
	local first=true name
	for name in "$@"; do
		$first || printf ', '
		printf '"%s"' "$name"
		first=false
	done
}

rule() { # NAMES_JSON ACTION [ARGS_JSON] [EXTRA_JSON] [COMMENT]
	printf '\t\t{\n\t\t\t"names": [%s],\n\t\t\t"action": "%s"' "$1" "$2"
	if [ -n "${3-}" ]; then
		printf ',\n\t\t\t"args": [%s]' "$3"
	fi
	if [ -n "${4-}" ]; then
		printf ',\n\t\t\t%s' "$4"
	fi
	if [ -n "${5-}" ]; then
		printf ',\n\t\t\t"comment": "%s"' "$5"
	fi
	printf '\n\t\t}'
}

arg() { # INDEX OP VALUE [VALUE_TWO]
	printf '{"index": %s, "op": "%s", "value": %s' "$1" "$2" "$3"
	[ -n "${4-}" ] && printf ', "valueTwo": %s' "$4"
	printf '}'
}

generate() {
	local -a names=()
	local line

	while IFS= read -r line; do
		line=${line%%#*}
		# shellcheck disable=SC2206
		names+=($line)
	done < <(allowed)
	# Sorted and unique, so that the JSON diff of a change is readable.
	mapfile -t names < <(printf '%s\n' "${names[@]}" | LC_ALL=C sort -u)

	printf '{\n'
	printf '\t"comment": "toolrun container profile: generated by container/seccomp-gen.sh; see container/README.md",\n'
	printf '\t"defaultAction": "SCMP_ACT_ERRNO",\n'
	printf '\t"defaultErrnoRet": 1,\n'
	printf '\t"archMap": [\n'
	printf '\t\t{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": []},\n'
	printf '\t\t{"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": []}\n'
	printf '\t],\n'
	printf '\t"syscalls": [\n'
	{
		rule "$(names_json "${names[@]}")" SCMP_ACT_ALLOW
		printf ',\n'
		# Sockets: local, IP (the loopback of --network=none) and the
		# route netlink that getaddrinfo and if_nameindex query.
		rule '"socket"' SCMP_ACT_ALLOW "$(arg 0 SCMP_CMP_EQ $AF_UNIX)" "" "AF_UNIX"
		printf ',\n'
		rule '"socket"' SCMP_ACT_ALLOW "$(arg 0 SCMP_CMP_EQ $AF_INET)" "" "AF_INET"
		printf ',\n'
		rule '"socket"' SCMP_ACT_ALLOW "$(arg 0 SCMP_CMP_EQ $AF_INET6)" "" "AF_INET6"
		printf ',\n'
		rule '"socket"' SCMP_ACT_ALLOW \
			"$(arg 0 SCMP_CMP_EQ $AF_NETLINK), $(arg 2 SCMP_CMP_EQ $NETLINK_ROUTE)" \
			"" "AF_NETLINK, NETLINK_ROUTE only"
		printf ',\n'
		rule '"socketpair"' SCMP_ACT_ALLOW "$(arg 0 SCMP_CMP_EQ $AF_UNIX)" "" "AF_UNIX"
		printf ',\n'
		# The default persona, and the query of the current one.
		rule '"personality"' SCMP_ACT_ALLOW "$(arg 0 SCMP_CMP_EQ $PER_LINUX)" "" "PER_LINUX"
		printf ',\n'
		rule '"personality"' SCMP_ACT_ALLOW "$(arg 0 SCMP_CMP_EQ $PERSONALITY_QUERY)" "" "query"
		printf ',\n'
		# fork-like clones only: no flag that creates a namespace.
		rule '"clone"' SCMP_ACT_ALLOW "$(arg 0 SCMP_CMP_MASKED_EQ $CLONE_NS_FLAGS 0)" "" \
			"no CLONE_NEW* flag"
		printf ',\n'
		# clone3's flags are in memory, out of seccomp's reach: ENOSYS
		# makes glibc fall back to clone, which is filtered above.
		rule '"clone3"' SCMP_ACT_ERRNO "" "\"errnoRet\": $ENOSYS" "ENOSYS: glibc falls back to clone"
		printf '\n'
	}
	printf '\t]\n'
	printf '}\n'
}

case ${1-} in
--check)
	if ! diff -u "$here/seccomp.json" <(generate) >&2; then
		echo "seccomp-gen: $here/seccomp.json is stale; run $0" >&2
		exit 1
	fi
	;;
-h|--help)
	sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	;;
*)
	out=${1:-$here/seccomp.json}
	generate >"$out.tmp"
	mv "$out.tmp" "$out"
	echo "seccomp-gen: wrote $out" >&2
	;;
esac
