#!/usr/bin/env bats
# Who runs as whom: a daemon started as root that runs as nobody serves two
# callers that are not root ($TR_CALLER, $TR_CALLER2). Each program runs as
# its caller, so the kernel keeps callers apart and away from the daemon:
# no program of one caller reaches another's, none can signal or read the
# daemon, none can replace its socket.

load helpers

setup_file() {
	tr_start_nobody "tools = sleep tee rm touch bash tail" "[tool.tail]" "timeout = 1" || return
	[ -z "$TR_FILE_SKIP" ] || return 0
	# The second caller's shell.
	TR_BASH2="$TR_DIR/tr-bash2"
	sed "s|--reuid=$CALLER_UID --regid=$CALLER_GID|--reuid=$CALLER2_UID --regid=$CALLER2_GID|" \
		"$TR_BASH" >"$TR_BASH2"
	chmod 755 "$TR_BASH2"
	export TR_BASH2
	# A directory each caller may write to.
	mkdir -p "$TR_DIR/c1" "$TR_DIR/c2"
	chown "$CALLER_UID:$CALLER_GID" "$TR_DIR/c1"
	chown "$CALLER2_UID:$CALLER2_GID" "$TR_DIR/c2"
}

teardown_file() {
	pkill -KILL -u "$CALLER2_UID" sleep 2>/dev/null || true
	tr_stop
}

setup() {
	file_skipped
}

launcher_pid() {
	children_named "$(tr_daemon_pid)" toolrund-launch
}

# The pid of the program `sleep SECONDS` that the launcher runs as uid.
program_of() {
	local uid=$1 seconds=$2 pid
	for pid in $(children_named "$(launcher_pid)" sleep); do
		[ "$(stat -c %u "/proc/$pid")" = "$uid" ] &&
			[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "sleep $seconds " ] &&
			echo "$pid"
	done
}

@test "01-owner: what a program creates belongs to its caller" {
	n=$(tr_job_count)
	run tr_bash "touch $TR_DIR/c1/made"
	[ "$status" -eq 0 ]
	jobs_since "$n" | grep -q ' tool=touch '
	[ "$(stat -c '%u %g' "$TR_DIR/c1/made")" = "$CALLER_UID $CALLER_GID" ]
	# A caller's program may not write where only another caller may.
	run tr_bash "touch $TR_DIR/c2/made"
	[ "$status" -eq 1 ]
	[[ "$output" == *"Permission denied"* ]]
	[ ! -e "$TR_DIR/c2/made" ]
}

@test "01-private-cwd: a program runs in its caller's directory that toolrund's user cannot enter" {
	mkdir -p "$TR_DIR/c1/private"
	echo inside >"$TR_DIR/c1/private/f"
	chown -R "$CALLER_UID:$CALLER_GID" "$TR_DIR/c1/private"
	chmod 0700 "$TR_DIR/c1/private"
	n=$(tr_job_count)
	run tr_bash "cd $TR_DIR/c1/private && cat f && cat ./f | tr a-z A-Z"
	[ "$status" -eq 0 ]
	[ "$output" = $'inside\nINSIDE' ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "01-root-in-workspace: root without CAP_DAC_OVERRIDE in the agent's 0700 directory runs as it would without toolrun" {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	mkdir -p "$TR_DIR/c1/ws"
	chown "$CALLER_UID:$CALLER_GID" "$TR_DIR/c1/ws"
	chmod 0700 "$TR_DIR/c1/ws"
	# As `docker exec -w /workspace BOX` puts root there: in the
	# directory first, then without the capabilities a box leaves out.
	as_root_in_ws() {
		(cd "$TR_DIR/c1/ws" &&
			setpriv --bounding-set=-dac_override,-dac_read_search env -u TOOLRUN_AGENT_STDOUT \
				-u TOOLRUN_AGENT_STDERR -u BASH_ENV LD_PRELOAD="$TR_LIB" \
				TR_MARK="$TR_MARK" TOOLRUN_CONFIG="$TOOLRUN_CONFIG" "$@")
	}
	direct=$(cd "$TR_DIR/c1/ws" && setpriv --bounding-set=-dac_override,-dac_read_search \
		bash -c 'pwd; cat /etc/hostname; ls 2>&1; echo $?')
	n=$(tr_job_count)
	run as_root_in_ws bash -c 'pwd; cat /etc/hostname; ls 2>&1; echo $?'
	[ "$status" -eq 0 ]
	same_text "$output" "$direct"
	# The command was toolrund's, and so was its listed cat.
	jobs_since "$n" | grep -q ' command=bash '
	jobs_since "$n" | grep -q ' tool=cat '
	# Its output is the agent's, shaped as any command's.
	run as_root_in_ws bash -c 'seq 1 100000'
	[ "${#lines[@]}" -eq 201 ]
	[[ "${lines[100]}" == '...[toolrun cut '* ]]
}

@test "02-two-callers: each caller's program runs as that caller" {
	run tr_bash "cat /proc/self/status | grep -E '^Uid:'"
	[ "$output" = "$(printf 'Uid:\t%s\t%s\t%s\t%s' $CALLER_UID $CALLER_UID $CALLER_UID $CALLER_UID)" ]
	run "$TR_BASH2" "cat /proc/self/status | grep -E '^Uid:'"
	[ "$output" = "$(printf 'Uid:\t%s\t%s\t%s\t%s' $CALLER2_UID $CALLER2_UID $CALLER2_UID $CALLER2_UID)" ]
}

@test "03-cross-client: a program cannot read or write another caller's running program" {
	"$TR_BASH2" "cd / && exec sleep 171" >/dev/null 2>&1 &
	wait_for 60 test -n "$(program_of "$CALLER2_UID" 171)"
	local victim
	victim=$(program_of "$CALLER2_UID" 171)
	# Its environment, its memory, its agent-facing stdout.
	run tr_bash "cat /proc/$victim/environ"
	[ "$status" -eq 1 ]
	[[ "$output" == *"Permission denied"* ]]
	run tr_bash "head -c 16 /proc/$victim/mem"
	[ "$status" -eq 1 ]
	run tr_bash "echo injected | tee /proc/$victim/fd/1"
	[ "$status" -eq 1 ]
	[[ "$output" == *"Permission denied"* ]]
	kill "$victim"
}

@test "04-signals: neither a program nor the caller itself can signal the daemon's processes" {
	local pid n
	for pid in "$(tr_daemon_pid)" "$(tr_listener_pid)" "$(launcher_pid)"; do
		[ -n "$pid" ]
		# Through toolrun (bash is listed), and from the caller's own shell.
		n=$(tr_job_count)
		run tr_bash "cd / && bash -c 'kill -STOP $pid'"
		[ "$status" -eq 1 ]
		[[ "$output" == *"Operation not permitted"* ]]
		jobs_since "$n" | grep -q ' tool=bash '
		run plain_bash "kill -STOP $pid"
		[ "$status" -eq 1 ]
		[[ "$output" == *"Operation not permitted"* ]]
		[ "$(proc_status "$pid" State | cut -c1)" != T ]
	done
	# Still serving.
	run tr_bash "cat /etc/hostname"
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "05-proc: the daemon's memory and environment are closed to its callers and to its own user" {
	local pid user
	for pid in "$(tr_daemon_pid)" "$(tr_listener_pid)" "$(launcher_pid)"; do
		for user in "$TR_CALLER" nobody; do
			run setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups \
				head -c 16 "/proc/$pid/mem"
			[ "$status" -ne 0 ]
			run setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups \
				cat "/proc/$pid/environ"
			[ "$status" -ne 0 ]
		done
	done
}

@test "06-squat: no caller or program can replace the daemon's socket" {
	local run_dir
	run_dir=$(dirname "$TR_SOCKET")
	[ "$(stat -c '%u' "$run_dir")" = "$NOBODY_UID" ]
	run tr_bash "rm -f $TR_SOCKET"
	[ "$status" -eq 1 ]
	run plain_bash "rm -f $TR_SOCKET; ln -s /tmp/elsewhere $run_dir/other"
	[ -S "$TR_SOCKET" ]
	[ ! -e "$run_dir/other" ]
	[ ! -L "$run_dir/other" ]
	run tr_bash "cat /etc/hostname"
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "07-squat-trust: a socket another caller serves is not trusted" {
	# The second caller's directory and socket: what one caller's program
	# would serve to catch another caller's commands.
	mkdir -p "$TR_DIR/c2/squat"
	chown "$CALLER2_UID:$CALLER2_GID" "$TR_DIR/c2/squat"
	chmod 755 "$TR_DIR/c2" "$TR_DIR/c2/squat"
	# The system's python: one under root's home is not the caller's to run.
	local python=/usr/bin/python3
	[ -x "$python" ] || skip "no /usr/bin/python3"
	setpriv --reuid="$CALLER2_UID" --regid="$CALLER2_GID" --clear-groups "$python" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(4)
print("ready", flush=True)
c, _ = s.accept()
print("received", len(c.recv(65536)), flush=True)
' "$TR_DIR/c2/squat/s.sock" >"$TR_DIR/squat.out" 2>&1 &
	local squatter=$!
	wait_for 60 grep -q ready "$TR_DIR/squat.out"
	sed "s|^socket = .*|socket = $TR_DIR/c2/squat/s.sock|" "$TOOLRUN_CONFIG" >"$TR_DIR/squat.conf"
	chmod 644 "$TR_DIR/squat.conf"
	run env TOOLRUN_CONFIG="$TR_DIR/squat.conf" "$TR_BASH" 'cat /etc/hostname'
	kill "$squatter" 2>/dev/null || true
	wait "$squatter" || true
	[ "$status" -eq 126 ]
	[ "${lines[0]}" = "toolrun: refusing toolrund's socket $TR_DIR/c2/squat/s.sock: $TR_DIR/c2/squat is owned by uid $CALLER2_UID, not root, toolrund's user (nobody) or the caller" ]
	# It may have been connected to, but it never got a byte.
	[ "$(grep -c 'received [1-9]' "$TR_DIR/squat.out")" -eq 0 ]
}

@test "08-spill: the whole of a cut stream is the caller's own file" {
	seq 1 20000 >"$TR_DIR/c1/big"
	run tr_agent "cat $TR_DIR/c1/big"
	[ "$status" -eq 0 ]
	local path
	path=$(spill_path_in "$output")
	[ -n "$path" ]
	[ "$(stat -c '%u %a' "$path")" = "$CALLER_UID 600" ]
	[ "$(stat -c '%u %a' "$(dirname "$path")")" = "$CALLER_UID 700" ]
	cmp "$path" "$TR_DIR/c1/big"
}

@test "09-producer: a program waiting on its caller's producer is not timed out" {
	# tail's timeout is 1 s; what feeds it is the caller's own subshell,
	# which the launcher sees in /proc only as the caller.
	run tr_bash "cd / && (sleep 3; echo done) | tail -n 1"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
}

@test "10-single-identity: a daemon without CAP_SETUID serves only its own uid, and says why" {
	local dir=$TR_DIR/single
	mkdir -p "$dir"
	chown nobody "$dir"
	printf '%s\n' "socket = $dir/run/s.sock" "socket_fallback =" "tools = cat" \
		"audit_log = $dir/audit.jsonl" "spill_dir =" \
		"allow_uids = nobody $TR_CALLER" >"$dir/conf"
	chmod 644 "$dir/conf"
	setpriv --reuid=nobody --regid="$NOBODY_GID" --clear-groups \
		"$TR_DAEMON" --config "$dir/conf" 2>"$dir/log" &
	local daemon=$!
	wait_for 60 test -S "$dir/run/s.sock"
	sed "s|^socket = .*|socket = $dir/run/s.sock|; s|^user = .*|user = nobody|" \
		"$TOOLRUN_CONFIG" >"$dir/client.conf"
	chmod 644 "$dir/client.conf"
	run env TOOLRUN_CONFIG="$dir/client.conf" "$TR_BASH" 'cat /etc/hostname'
	# Its memory is closed to its own user too.
	local mem_status
	setpriv --reuid=nobody --regid="$NOBODY_GID" --clear-groups \
		head -c 16 "/proc/$daemon/mem" >/dev/null 2>&1 && mem_status=0 || mem_status=$?
	kill -TERM "$daemon"
	wait "$daemon" || true
	[ "$status" -eq 126 ]
	[[ "$output" == *"toolrund runs as uid $NOBODY_UID and cannot run programs as uid $CALLER_UID (it lacks CAP_SETUID, CAP_SETGID, CAP_KILL or CAP_CHOWN)"* ]]
	grep -q "cannot run programs as their callers" "$dir/log"
	[ "$mem_status" -ne 0 ]
}

# A daemon whose config names a `user` it cannot become: the caller's own
# uid (an image run with `docker run --user 1000`), or root without the
# capabilities (`--cap-drop=ALL`). It runs as itself, serves itself and
# root, says why at start, and the library trusts a socket of the
# caller's own uid.
single_daemon() { # DIR OWNER SETPRIV-ARGS...: start it; the pid in $daemon
	local dir=$1
	mkdir -p "$dir"
	chmod 755 "$dir"
	chown "$2" "$dir"
	shift 2
	sed "s|^socket = .*|socket = $dir/run/s.sock|; s|^allow_uids = .*|allow_uids = root $TR_CALLER2|
		s|^audit_log = .*|audit_log = $dir/audit.jsonl|; s|^spill_dir = .*|spill_dir =|" \
		"$TOOLRUN_CONFIG" >"$dir/conf"
	chmod 644 "$dir/conf"
	setpriv "$@" "$TR_DAEMON" --config "$dir/conf" 2>"$dir/log" &
	daemon=$!
	wait_for 60 test -S "$dir/run/s.sock"
}

@test "11-user-fallback: started as a caller, a daemon with a user it cannot become serves that caller" {
	local dir=$TR_DIR/c1/fallback daemon
	single_daemon "$dir" "$CALLER_UID:$CALLER_GID" --reuid="$CALLER_UID" --regid="$CALLER_GID" --clear-groups
	run env TOOLRUN_CONFIG="$dir/conf" "$TR_BASH" 'cat /proc/self/status | grep "^Uid:"; cat /etc/hostname'
	local second_status second_output
	second_output=$(env TOOLRUN_CONFIG="$dir/conf" "$TR_BASH2" 'cat /etc/hostname' 2>&1) &&
		second_status=0 || second_status=$?
	kill -TERM "$daemon"
	wait "$daemon" || true
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'Uid:\t%s\t%s\t%s\t%s' $CALLER_UID $CALLER_UID $CALLER_UID $CALLER_UID)" ]
	[ "${lines[1]}" = "$(cat /etc/hostname)" ]
	grep -q "cat .*uid=$CALLER_UID\| uid=$CALLER_UID .*tool=cat" "$dir/log"
	grep -q "warn: user = nobody, but toolrund cannot become it: it was started as uid $CALLER_UID, not as root. It runs as uid $CALLER_UID in single identity" "$dir/log"
	# Another caller does not trust a socket of the first caller's.
	[ "$second_status" -eq 126 ]
	[[ "$second_output" == *"refusing toolrund's socket $dir/run/s.sock: $dir/run is owned by uid $CALLER_UID, not root, toolrund's user (nobody) or the caller"* ]]
}

@test "11-user-fallback: root without the capabilities stays root, serves root, and refuses a caller" {
	local dir=$TR_DIR/rootless daemon
	single_daemon "$dir" 0:0 --bounding-set=-all --inh-caps=-all
	local caps
	caps=$(grep '^CapPrm:' "/proc/$daemon/status")
	run env TOOLRUN_CONFIG="$dir/conf" "$TR_BASH2" 'cat /etc/hostname'
	kill -TERM "$daemon"
	wait "$daemon" || true
	[ "$caps" = "$(printf 'CapPrm:\t0000000000000000')" ]
	[ "$status" -eq 126 ]
	[[ "$output" == *"toolrund runs as uid 0 and cannot run programs as uid $CALLER2_UID"* ]]
	grep -q "warn: user = nobody, but toolrund cannot become it: it was started as root without CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_CHOWN. It runs as uid 0 in single identity" "$dir/log"
}

@test "11-user-fallback: a user that no account names leaves root as it is, still switching to each caller" {
	local dir=$TR_DIR/nouser daemon
	mkdir -p "$dir"
	chmod 755 "$dir"
	sed "s|^socket = .*|socket = $dir/run/s.sock|; s|^allow_uids = .*|allow_uids = root $TR_CALLER2|
		s|^audit_log = .*|audit_log = $dir/audit.jsonl|; s|^spill_dir = .*|spill_dir =|
		s|^user = .*|user = toolrun-t-no-such-user|" "$TOOLRUN_CONFIG" >"$dir/conf"
	chmod 644 "$dir/conf"
	"$TR_DAEMON" --config "$dir/conf" 2>"$dir/log" &
	daemon=$!
	wait_for 60 test -S "$dir/run/s.sock"
	run env TOOLRUN_CONFIG="$dir/conf" "$TR_BASH2" 'cat /proc/self/status | grep "^Uid:"'
	kill -TERM "$daemon"
	wait "$daemon" || true
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'Uid:\t%s\t%s\t%s\t%s' $CALLER2_UID $CALLER2_UID $CALLER2_UID $CALLER2_UID)" ]
	grep -q "warn: user = toolrun-t-no-such-user, but toolrund cannot become it: no user toolrun-t-no-such-user exists here (/etc/passwd). It stays root, and still runs each program as its caller" "$dir/log"
}
