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
proc_status() {
	local pid=$1 field=$2 line
	while IFS= read -r line; do
		if [[ $line == "$field:"* ]]; then
			line=${line#*:}
			echo "${line//[[:space:]]/}"
			return 0
		fi
	done <"/proc/$pid/status"
	return 1
}

# The number of tasks (threads included, as RLIMIT_NPROC counts them)
# whose real uid is UID.
tasks_of_uid() {
	local uid=$1 n=0 f line
	for f in /proc/[0-9]*/task/[0-9]*/status; do
		while IFS= read -r line; do
			if [[ $line == Uid:* ]]; then
				read -r _ line _ <<<"$line"
				[ "$line" = "$uid" ] && n=$((n + 1))
				break
			fi
		done 2>/dev/null <"$f"
	done
	echo "$n"
}

# Processes of uid UID named NAME (pid and command line).
processes_named() {
	local uid=$1 name=$2 f pid
	for f in /proc/[0-9]*/comm; do
		pid=${f#/proc/}
		pid=${pid%/comm}
		[ "$(cat "$f" 2>/dev/null)" = "$name" ] || continue
		[ "$(stat -c %u "/proc/$pid" 2>/dev/null)" = "$uid" ] || continue
		echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	done
}

# Start a daemon as root that runs as nobody and serves root, its
# programs running as nobody too. Everything they use is copied into a
# directory nobody can read, since the build tree need not be: the
# library and its helper (with a profile snippet that loads this copy),
# and this suite's programs ($TRY, $ESCAPE, $BOMB then name the copies).
# The config lists cat, head and tr plus the extra lines given.
tr_start_nobody() {
	TR_DIR=$(mktemp -d /tmp/trt.XXXXXX)
	chmod 755 "$TR_DIR"
	export TR_DIR
	export TOOLRUN_CONFIG="$TR_DIR/toolrun.conf"
	export TR_MARK="trmark-$TR_DIR"
	mkdir -m 755 "$TR_DIR/lib" "$TR_DIR/bin"
	cp "$TR_LIB" "$TOOLRUN_BUILD/preload/toolrun-exec" "$TR_DIR/lib/"
	cp "$TRY" "$ESCAPE" "$BOMB" "$TR_DIR/bin/"
	chmod 755 "$TR_DIR"/lib/* "$TR_DIR"/bin/*
	export TRY="$TR_DIR/bin/try-syscall" ESCAPE="$TR_DIR/bin/escape" BOMB="$TR_DIR/bin/bomb"
	sed "s|^toolrun_lib=.*|toolrun_lib='$TR_DIR/lib/libtoolrun.so'|" "$TR_SNIPPET" \
		>"$TR_DIR/lib/toolrun.sh"
	TR_SNIPPET="$TR_DIR/lib/toolrun.sh"
	# The socket's directory is the daemon's to create, for its user.
	TR_SOCKET="$TR_DIR/run/s.sock"
	export TR_SOCKET
	{
		echo "socket = $TR_SOCKET"
		echo "socket_fallback ="
		echo "user = nobody"
		echo "allow_uids = root"
		echo "tools = cat head tr"
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
	tr_launch
}

# Fail, showing both, unless the two texts are equal.
same_text() {
	if [ "$1" != "$2" ]; then
		diff -u <(echo "$1") <(echo "$2") | sed 's/^/# /' >&3
		return 1
	fi
}
