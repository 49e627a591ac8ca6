# Shared by the security tests: the integration helpers (a real toolrund
# on a private socket, a real bash with toolrun on, the leftover check),
# this suite's programs, and a toolrund that starts as root and runs as
# nobody.

# shellcheck source=../integration/helpers.bash
source "$BATS_TEST_DIRNAME/../integration/helpers.bash"

SEC_BIN="$TOOLRUN_BUILD/test/security"
TRY="$SEC_BIN/try-syscall"
ESCAPE="$SEC_BIN/escape"
BOMB="$SEC_BIN/bomb"

# The user a daemon with `user = nobody` runs as, and its group, as this
# machine numbers them (empty if it has no such user).
NOBODY_UID=$(id -u nobody 2>/dev/null) || NOBODY_UID=
NOBODY_GID=$(id -g nobody 2>/dev/null) || NOBODY_GID=

# Callers other than root, for a daemon that runs programs as their
# callers: made once on this machine (ensure_test_users), under a lock,
# since test files run in parallel.
TR_CALLER=toolrun-t-caller
TR_CALLER2=toolrun-t-caller2
# A user in a supplementary group of its own (toolrun-t-extra), whose
# groups differ from every other user's.
TR_MEMBER=toolrun-t-member

ensure_test_users() {
	[ "$(id -u)" -eq 0 ] || return 1
	command -v useradd >/dev/null || return 1
	local u
	(
		flock 9
		for u in "$TR_CALLER" "$TR_CALLER2"; do
			id -u "$u" >/dev/null 2>&1 ||
				useradd --system --user-group --no-create-home \
					--home-dir /nonexistent --shell /usr/sbin/nologin "$u" ||
				exit 1
		done
		getent group toolrun-t-extra >/dev/null || groupadd --system toolrun-t-extra || exit 1
		id -u "$TR_MEMBER" >/dev/null 2>&1 ||
			useradd --system --user-group --groups toolrun-t-extra --no-create-home \
				--home-dir /nonexistent --shell /usr/sbin/nologin "$TR_MEMBER" ||
			exit 1
	) 9>/tmp/toolrun-test-users.lock || return 1
	CALLER_UID=$(id -u "$TR_CALLER") CALLER_GID=$(id -g "$TR_CALLER")
	CALLER2_UID=$(id -u "$TR_CALLER2") CALLER2_GID=$(id -g "$TR_CALLER2")
	export CALLER_UID CALLER_GID CALLER2_UID CALLER2_GID
}

# The wrappers (tr_write_wrappers) run as USER: the shells of a caller
# that is not root.
tr_wrappers_as() {
	local user=$1 w
	for w in "$TR_BASH" "$PLAIN_BASH" "$AGENT_BASH"; do
		sed -i "s|^exec env |exec setpriv --reuid=$(id -u "$user") --regid=$(id -g "$user") --init-groups env |" "$w"
	done
}

# Why this run cannot switch to nobody, or start a daemon as root that
# drops to nobody ("" if it can): only root can, where nobody exists.
no_nobody_reason() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root to $1"
	elif [ -z "$NOBODY_UID" ]; then
		echo "this machine has no user nobody"
	fi
}

# In a test: skip unless this runs as root on a machine with a user nobody.
need_root_and_nobody() {
	local why
	why=$(no_nobody_reason "$1")
	[ -z "$why" ] || skip "$why"
}

# In a test: skip if setup_file found that its daemon cannot run here
# (bats runs no skip in setup_file: it leaves the reason in TR_FILE_SKIP).
file_skipped() {
	[ -z "${TR_FILE_SKIP:-}" ] || skip "$TR_FILE_SKIP"
}

# has_cap N: this shell holds capability number N in its effective set
# (19 CAP_SYS_PTRACE, 21 CAP_SYS_ADMIN).
has_cap() {
	local eff
	eff=$(proc_status self CapEff) || return 1
	(((16#$eff >> $1) & 1))
}

# What yama's kernel.yama.ptrace_scope is here (0 without yama).
ptrace_scope() {
	cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0
}

# Whether this shell may attach with ptrace to a process of its own uid
# that is not its descendant: yama 1 and 2 allow it only with
# CAP_SYS_PTRACE, 3 never.
may_ptrace_others() {
	local scope
	scope=$(ptrace_scope)
	[ "$scope" -eq 0 ] || { [ "$scope" -lt 3 ] && has_cap 19; }
}

# The pid of the running daemon (its supervisor).
tr_daemon_pid() {
	cat "$TR_DIR/daemon.pid"
}

# The pids of the children of PID whose comm is NAME, one per line.
children_named() {
	local ppid=$1 name=$2 f stat comm rest parent
	for f in /proc/[0-9]*/stat; do
		read -r stat 2>/dev/null <"$f" || continue
		# comm may hold spaces and parentheses: it ends at the last ')'.
		comm=${stat#*(}
		comm=${comm%)*}
		rest=${stat##*) }
		read -r _ parent _ <<<"$rest"
		if [ "$parent" = "$ppid" ] && [ "$comm" = "$name" ]; then
			f=${f#/proc/}
			echo "${f%/stat}"
		fi
	done
}

# The value of FIELD in /proc/PID/status ("Seccomp", "VmHWM"...).
# The file is taken in one read: bash's read builtin reads a file again
# from each line's offset, and a running process's status changes length
# in between ("R (running)", "S (sleeping)"), so lines read one by one
# can come out shifted.
proc_status() {
	local pid=$1 field=$2 text line
	text=$(<"/proc/$pid/status") || return 1
	while IFS= read -r line; do
		if [[ $line == "$field:"* ]]; then
			line=${line#*:}
			echo "${line//[[:space:]]/}"
			return 0
		fi
	done <<<"$text"
	return 1
}

# The number of tasks (threads included, as RLIMIT_NPROC counts them)
# whose real uid is UID.
# (ps reads each task's status whole: see proc_status.)
tasks_of_uid() {
	ps -e -L -o ruid= | awk -v uid="$1" '$1 == uid { n++ } END { print n + 0 }'
}

# Processes of uid UID named NAME (pid and command line).
processes_named() {
	local uid=$1 name=$2 f pid comm
	for f in /proc/[0-9]*/comm; do
		pid=${f#/proc/}
		pid=${pid%/comm}
		read -r comm 2>/dev/null <"$f" || continue
		[ "$comm" = "$name" ] || continue
		[ "$(stat -c %u "/proc/$pid" 2>/dev/null)" = "$uid" ] || continue
		echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	done
}

# Start a daemon as root that runs as nobody and serves root, $TR_CALLER
# and $TR_CALLER2, each caller's programs running as that caller; tr_bash,
# plain_bash and tr_agent run as $TR_CALLER. Everything they use is
# copied into a directory every user can read, since the build tree need
# not be: the library and its helper (with a profile snippet that loads
# this copy), and this suite's programs ($TRY, $ESCAPE, $BOMB then name
# the copies). The config lists cat, head and tr plus the extra lines
# given.
#
# Where that cannot be (not root, no nobody, no useradd), it starts
# nothing and leaves the reason in TR_FILE_SKIP, for the file's tests to
# skip with (file_skipped).
tr_start_nobody() {
	TR_FILE_SKIP=$(no_nobody_reason "start a daemon that drops from root to nobody")
	[ -n "$TR_FILE_SKIP" ] || ensure_test_users || TR_FILE_SKIP="cannot make the test users"
	export TR_FILE_SKIP
	[ -z "$TR_FILE_SKIP" ] || return 0
	TR_DIR=$(mktemp -d /tmp/trt.XXXXXX)
	chmod 755 "$TR_DIR"
	export TR_DIR
	export TOOLRUN_CONFIG="$TR_DIR/toolrun.conf"
	export TR_MARK="trmark-$TR_DIR"
	mkdir -m 755 "$TR_DIR/lib" "$TR_DIR/bin"
	cp "$TR_LIB" "$TOOLRUN_BUILD/preload/toolrun-exec" "$TOOLRUN_BUILD/preload/toolrun-session.so" \
		"$TR_DIR/lib/"
	cp "$TRY" "$ESCAPE" "$BOMB" "$TR_DIR/bin/"
	chmod 755 "$TR_DIR"/lib/* "$TR_DIR"/bin/*
	export TRY="$TR_DIR/bin/try-syscall" ESCAPE="$TR_DIR/bin/escape" BOMB="$TR_DIR/bin/bomb"
	sed "s|^toolrun_lib=.*|toolrun_lib='$TR_DIR/lib/libtoolrun.so'|" "$TR_SNIPPET" \
		>"$TR_DIR/lib/toolrun.sh"
	TR_SNIPPET="$TR_DIR/lib/toolrun.sh"
	TR_LIB="$TR_DIR/lib/libtoolrun.so"
	# The socket's directory is the daemon's to create, for its user.
	TR_SOCKET="$TR_DIR/run/s.sock"
	export TR_SOCKET
	{
		echo "socket = $TR_SOCKET"
		echo "socket_fallback ="
		# Beside the socket, a directory the daemon makes for its user,
		# unless the test sets them.
		case " $* " in
		*" audit_log ="*) ;;
		*) echo "audit_log = $TR_DIR/run/audit.jsonl" ;;
		esac
		case " $* " in
		*" spill_dir ="*) ;;
		*) echo "spill_dir = $TR_DIR/run/spill" ;;
		esac
		echo "preload = $TR_DIR/lib/libtoolrun.so"
		echo "user = nobody"
		echo "allow_uids = root $TR_CALLER $TR_CALLER2"
		echo "tools = cat head tr"
		echo "trusted_dirs =" # $TR_DIR/bin and setuid copies, by name
		echo "max_bytes = 4000"
		echo "max_lines = 200"
		echo "timeout = 20"
		local line
		for line in "$@"; do
			echo "$line"
		done
	} >"$TOOLRUN_CONFIG"
	chmod 644 "$TOOLRUN_CONFIG"
	tr_write_wrappers
	tr_wrappers_as "$TR_CALLER"
	tr_launch
}

# Fail, showing both, unless the two texts are equal.
same_text() {
	if [ "$1" != "$2" ]; then
		diff -u <(echo "$1") <(echo "$2") | sed 's/^/# /' >&3
		return 1
	fi
}
