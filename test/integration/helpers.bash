# Shared by the integration tests: a real toolrund on a private socket, and
# a real bash that turns toolrun on through the profile snippet.
#
# Each test file starts its own daemon in setup_file (tr_start) with a
# config it may extend, and stops it in teardown_file (tr_stop), which
# also fails if a program started by the daemon is still alive.

bats_require_minimum_version 1.5.0

: "${TOOLRUN_BUILD:?run through meson test}"
: "${TOOLRUN_SOURCE:?run through meson test}"

# Messages are compared as text (bash's, coreutils', util-linux's): in the
# C locale, whatever the caller's language. Programs run through toolrun
# get the caller's environment, so they speak it too.
export LC_ALL=C

TR_DAEMON="$TOOLRUN_BUILD/daemon/toolrund"
TR_CLI="$TOOLRUN_BUILD/cli/toolrun"
TR_LIB="$TOOLRUN_BUILD/preload/libtoolrun.so"
TR_SNIPPET="$TOOLRUN_BUILD/preload/toolrun-uninstalled.sh"
TR_PROBE="$TOOLRUN_BUILD/test/progs/probe"
TR_HOOKCALL="$TOOLRUN_BUILD/test/progs/hookcall"
TR_RAWFRAME="$TOOLRUN_BUILD/test/progs/rawframe"

# Write the config: the usual tools, the probe, small limits. Extra lines
# (global keys first, then sections) come from the arguments.
tr_write_config() {
	local file=$1
	shift
	{
		echo "socket = $TR_DIR/s.sock"
		# Only this file's daemon: never one at the default fallbacks.
		echo "socket_fallback ="
		echo "preload = $TR_LIB"
		echo "tools = cat grep find ls head tail sed awk sort uniq wc $TR_PROBE"
		# Tests list programs they copy into their own directories by name.
		echo "trusted_dirs ="
		echo "max_bytes = 4000"
		echo "max_lines = 200"
		echo "timeout = 20"
		# The audit log and the spill files in the test's directory,
		# unless the test sets them.
		case " $* " in
		*" audit_log ="*) ;;
		*) echo "audit_log = $TR_DIR/audit.jsonl" ;;
		esac
		case " $* " in
		*" spill_dir ="*) ;;
		*) echo "spill_dir = $TR_DIR/spill" ;;
		esac
		local line
		for line in "$@"; do
			echo "$line"
		done
	} >"$file"
}

# Start a daemon with the default config plus extra lines.
tr_start() {
	TR_DIR=$(mktemp -d /tmp/trt.XXXXXX)
	export TR_DIR
	export TOOLRUN_CONFIG="$TR_DIR/toolrun.conf"
	# Every program of this file carries the marker, so that tr_stop can
	# find any that outlived the daemon.
	export TR_MARK="trmark-$TR_DIR"
	tr_write_config "$TOOLRUN_CONFIG" "$@"
	tr_write_wrappers
	tr_launch
}

# $TR_BASH / $PLAIN_BASH / $AGENT_BASH: scripts for tr_bash / plain_bash /
# tr_agent, for use under timeout(1) or from another shell.
tr_write_wrappers() {
	TR_BASH="$TR_DIR/tr-bash"
	PLAIN_BASH="$TR_DIR/plain-bash"
	export TR_BASH PLAIN_BASH
	cat >"$TR_BASH" <<EOF2
#!/bin/bash
exec env -u LD_PRELOAD -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR \\
	BASH_ENV='$TR_SNIPPET' TR_MARK='$TR_MARK' TOOLRUN_CONFIG="\$TOOLRUN_CONFIG" \\
	bash -c "\$@"
EOF2
	cat >"$PLAIN_BASH" <<EOF2
#!/bin/bash
exec env -u LD_PRELOAD -u BASH_ENV TR_MARK='$TR_MARK' bash -c "\$@"
EOF2
	AGENT_BASH="$TR_DIR/agent-bash"
	export AGENT_BASH
	cat >"$AGENT_BASH" <<EOF2
#!/bin/bash
exec env -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR -u BASH_ENV \\
	LD_PRELOAD='$TR_LIB' TR_MARK='$TR_MARK' TOOLRUN_CONFIG="\$TOOLRUN_CONFIG" \\
	bash -c "\$@"
EOF2
	chmod +x "$TR_BASH" "$PLAIN_BASH" "$AGENT_BASH"
}

# wait_for SECONDS COMMAND...: run COMMAND every 50 ms until it succeeds;
# fails if it has not within SECONDS. The bound is for a hang only: on a
# loaded machine (a sanitizer build, other builds sharing the CPUs) what
# takes milliseconds may take seconds, and a wait returns as soon as it
# can.
wait_for() {
	local seconds=$1 i
	shift
	for ((i = 0; i < seconds * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}

# The daemon on $TOOLRUN_CONFIG answers.
tr_serving() {
	[ -S "${TR_SOCKET:-$TR_DIR/s.sock}" ] && "$TR_CLI" ping >/dev/null 2>&1
}

# Start the daemon on $TOOLRUN_CONFIG and wait until it answers on its
# socket ($TR_SOCKET, by default $TR_DIR/s.sock).
tr_launch() {
	"$TR_DAEMON" --config "$TOOLRUN_CONFIG" -v 2>>"$TR_DIR/daemon.log" &
	TR_PID=$!
	echo "$TR_PID" >"$TR_DIR/daemon.pid"
	wait_for 60 tr_serving && return 0
	echo "toolrund did not come up; its log:" >&2
	cat "$TR_DIR/daemon.log" >&2
	return 1
}

# The process PID has ended (or is a zombie nobody reaped yet).
gone() {
	local stat
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
	# The state follows the name, which ends at the last ')'.
	stat=${stat##*) }
	[ "${stat%% *}" = Z ]
}

tr_kill_daemon() {
	local pid
	pid=$(cat "$TR_DIR/daemon.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait_for 60 gone "$pid" || echo "toolrund (pid $pid) is still running" >&2
	rm -f "$TR_DIR/daemon.pid"
}

# Processes that carry this file's marker in their environment. One grep
# reads every environment (two processes per pid would take half a minute
# on a loaded machine).
tr_marked_processes() {
	local f pid
	for f in $(grep -lzx "TR_MARK=$TR_MARK" /proc/[0-9]*/environ 2>/dev/null); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		[ "$pid" = "$$" ] && continue
		echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	done
}

tr_stop() {
	[ -n "${TR_DIR:-}" ] || return 0
	tr_kill_daemon
	# In a sanitizer build, a finding in the daemon fails the file.
	if grep -qE 'Sanitizer|runtime error:' "$TR_DIR/daemon.log"; then
		echo "sanitizer report in the daemon's log:" >&2
		cat "$TR_DIR/daemon.log" >&2
		return 1
	fi
	local left
	left=$(tr_marked_processes)
	if [ -n "$left" ]; then
		echo "processes left behind:" >&2
		echo "$left" >&2
		return 1
	fi
	rm -rf "$TR_DIR"
}

# Run a command line in bash with toolrun on, as a login shell in the
# container would (the snippet declares this bash's stdout and stderr as
# the agent's). The caller's TOOLRUN_CONFIG points at the test daemon.
tr_bash() {
	"$TR_BASH" "$@"
}

# The same command line without toolrun, for comparisons.
plain_bash() {
	"$PLAIN_BASH" "$@"
}

# The pid of the running daemon's listener.
tr_listener_pid() {
	pgrep -P "$(cat "$TR_DIR/daemon.pid")" -x toolrund-listen
}

# Stop the listener (SIGSTOP): a toolrund that accepts and reads nothing.
# The file's teardown calls tr_resume_listener, whatever the test did.
tr_stop_listener() {
	local pid
	pid=$(tr_listener_pid)
	[ "$(wc -w <<<"$pid")" -eq 1 ]
	echo "$pid" >"$TR_DIR/stopped"
	kill -STOP "$pid"
}

tr_resume_listener() {
	[ -s "${TR_DIR:-/nonexistent}/stopped" ] || return 0
	kill -CONT "$(cat "$TR_DIR/stopped")" 2>/dev/null || true
	rm -f "$TR_DIR/stopped"
}

# Wait until the listener has logged every job whose caller has gone on.
# The launcher tells a tool's caller its end (Exit) just after it told the
# listener (Exited), so the caller can read its log before the line is
# written. A Status goes through the launcher and back on the same
# channel: once it is answered, every earlier Exited has been taken in.
# Not with the listener stopped (it would wait for it), nor with no daemon
# (its log is whole).
tr_log_settled() {
	[ ! -e "$TR_DIR/stopped" ] || return 0
	timeout 30 "$TR_CLI" status >/dev/null 2>&1 || true
}

# The number of job lines in the daemon log so far; jobs_since N prints
# the job lines after the first N.
tr_job_count() {
	tr_log_settled
	grep -c ' info: job [0-9]* uid=' "$TR_DIR/daemon.log" || true
}

jobs_since() {
	tr_log_settled
	grep ' info: job [0-9]* uid=' "$TR_DIR/daemon.log" | tail -n +"$(($1 + 1))"
}

# A file of N numbered lines ("line 1" ...).
make_lines() {
	seq -f 'line %g' 1 "$2" >"$1"
}

# Run a command line as an agent's `docker exec BOX bash -c` runs in the
# image: the library preloaded from the first instruction, nothing
# declared, so that the first bash hands itself to toolrund as an agent
# command.
tr_agent() {
	"$AGENT_BASH" "$@"
}

# The command job lines in the daemon log after the first N job lines.
commands_since() {
	jobs_since "$1" | grep ' command=' || true
}

# The spill file a marker or a binary summary names (the first in $1).
spill_path_in() {
	sed -n 's/.*the whole [a-z]* is in \([^] ]*\).*/\1/p' <<<"$1" | head -n 1
}
