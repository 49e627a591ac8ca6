#!/usr/bin/env bats
# Bombs are contained by the per-tool limits, and the daemon keeps serving
# other requests, with bounded memory, while one goes off.
#
# RLIMIT_NPROC does not bind root, so as root the bombs go off as a test
# user ($TR_CALLER, whose programs run as that user); otherwise as the
# user running the tests. The limit counts every process of that user:
# this is the one file that sets off process bombs as that user.

load helpers

AS_MIB=256
# The listener's peak resident memory, whatever goes through it.
MEMORY_BOUND_KIB=$((64 * 1024))

setup_file() {
	# Whose processes the bombs count against.
	if [ "$(id -u)" -eq 0 ]; then
		ensure_test_users || true
		BOMB_UID=${CALLER_UID:-}
	else
		BOMB_UID=$(id -u)
	fi
	export BOMB_UID
	# RLIMIT_NPROC counts every task of that user's, the machine's own
	# among them (a service may run as nobody; a developer's session runs
	# as the developer): room for 64 more than it has.
	if [ -n "$BOMB_UID" ]; then
		NPROC=$((64 + $(tasks_of_uid "$BOMB_UID")))
		export NPROC
	fi
	# No spill file: a flood would fill it up to spill_max.
	local config=("spill_dir =" "[tool.bomb]" "rlimit_nproc = $NPROC" "rlimit_as = ${AS_MIB}M"
		"[tool.head]" "rlimit_fsize = 1M" "timeout = 0"
		"[tool.cat]" "timeout = 3"
		"[tool.tr]" "timeout = 3")
	if [ "$(id -u)" -eq 0 ]; then
		tr_start_nobody "tools = bomb" "${config[@]}" || return
		[ -z "$TR_FILE_SKIP" ] || return 0
	else
		tr_start "tools = bomb tr" "${config[@]}" || return
	fi
	echo "hello from a small file" >"$TR_DIR/small"
	chmod 644 "$TR_DIR/small"
	# Where the caller's commands write: the caller's own directory.
	WORK=$TR_DIR/work
	mkdir -p "$WORK"
	[ "$(id -u)" -ne 0 ] || chown "$CALLER_UID:$CALLER_GID" "$WORK"
	export WORK
}

teardown_file() {
	tr_stop
}

setup() {
	file_skipped
}

# The pids of the processes in process group PGID.
in_group() {
	local pgid=$1 f stat rest pgrp
	for f in /proc/[0-9]*/stat; do
		read -r stat 2>/dev/null <"$f" || continue
		rest=${stat##*) }
		read -r _ _ pgrp _ <<<"$rest"
		if [ "$pgrp" = "$pgid" ]; then
			f=${f#/proc/}
			echo "${f%/stat}"
		fi
	done
}

# A request from another shell that must be served meanwhile.
small_request_served() {
	run timeout 60 "$TR_BASH" "cd / && cat $TR_DIR/small"
	[ "$status" -eq 0 ]
	[ "$output" = "hello from a small file" ]
}

# Wait for background job PID to end, killing it after 30 s; its status
# in job_status.
wait_job() {
	local pid=$1 i
	for i in $(seq 1 600); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	job_status=0
	wait "$pid" || job_status=$?
}

# Set off a fork bomb and wait until fork failed: it then holds all its
# processes until stop_fork_bomb. Leaves its report in $WORK/fork.out.
start_fork_bomb() {
	rm -f "$WORK/hold" "$WORK/fork.out"
	mkfifo -m 644 "$WORK/hold"
	# Read and write: opening a FIFO so never waits for the other end.
	exec 7<>"$WORK/hold"
	"$TR_BASH" "cd $WORK && $BOMB fork 1000 <hold >fork.out 2>&1" 3>&- 7>&- &
	BOMB_CLIENT=$!
	local i
	for i in $(seq 1 600); do
		grep -q '^fork ' "$WORK/fork.out" 2>/dev/null && break
		sleep 0.05
	done
	BOMB_GROUP=$(sed -n 's/^group //p' "$WORK/fork.out")
	BOMB_FORKED=$(sed -n 's/^forked //p' "$WORK/fork.out")
}

# End of its stdin: the bomb exits, leaving its children to the daemon.
stop_fork_bomb() {
	exec 7>&-
	wait_job "$BOMB_CLIENT"
}

# Run LINE through toolrun with its stdout a pipe (the agent's), while
# sampling the listener's resident memory. Sets via_status, and leaves the
# output in $TR_DIR/out, stderr in $TR_DIR/err, the samples in $TR_DIR/rss.
output_bomb() {
	local listener sampler
	listener=$(tr_listener_pid)
	: >"$TR_DIR/rss"
	while proc_status "$listener" VmRSS >>"$TR_DIR/rss"; do sleep 0.1; done 3>&- &
	sampler=$!
	{
		local st=0
		# Killed, not ended, if it hangs: 137 cannot pass for a timeout.
		timeout -s KILL 60 "$TR_BASH" "cd / && $1" 2>"$TR_DIR/err" || st=$?
		echo "$st" >"$TR_DIR/status"
	} | cat >"$TR_DIR/out"
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" || true
	via_status=$(cat "$TR_DIR/status")
}

# The listener's peak and sampled memory stayed under the bound.
memory_bounded() {
	local hwm max
	hwm=$(proc_status "$(tr_listener_pid)" VmHWM)
	hwm=${hwm%kB}
	max=$(sed 's/kB$//' "$TR_DIR/rss" | sort -n | tail -n 1)
	[ "$(wc -l <"$TR_DIR/rss")" -gt 0 ]
	echo "# listener: VmHWM ${hwm} kB, largest VmRSS sample ${max} kB" >&3
	[ "$hwm" -lt "$MEMORY_BOUND_KIB" ]
	[ "$max" -lt "$MEMORY_BOUND_KIB" ]
}

@test "01-fork-limit: a fork bomb stops at rlimit_nproc, fork failing with EAGAIN" {
	before=$(tasks_of_uid "$BOMB_UID")
	start_fork_bomb
	stop_fork_bomb
	grep -qx 'fork EAGAIN' "$WORK/fork.out"
	# Every task of the user counts, the bomb and the shell that stands
	# in for it among them; others may come and go meanwhile.
	expected=$((NPROC - before - 2))
	echo "# forked $BOMB_FORKED, $before tasks of uid $BOMB_UID before" >&3
	[ "$BOMB_FORKED" -le $((NPROC - 2)) ]
	[ "$BOMB_FORKED" -ge $((expected - 10)) ]
	[ "$BOMB_FORKED" -le $((expected + 10)) ]
}

@test "02-fork-serving: while a fork bomb holds its processes, other requests are served" {
	start_fork_bomb
	grep -qx 'fork EAGAIN' "$WORK/fork.out"
	# Still held: every process of the bomb is alive.
	[ "$(in_group "$BOMB_GROUP" | wc -l)" -eq $((BOMB_FORKED + 1)) ]
	small_request_served
	"$TR_CLI" ping >/dev/null
	[ "$(in_group "$BOMB_GROUP" | wc -l)" -eq $((BOMB_FORKED + 1)) ]
	stop_fork_bomb
}

@test "03-fork-cleanup: when the bomb exits, every process it made is gone" {
	start_fork_bomb
	# Held by the limit, not cleaned up by the bomb itself.
	grep -qx 'fork EAGAIN' "$WORK/fork.out"
	[ "$BOMB_FORKED" -gt 0 ]
	[ -n "$BOMB_GROUP" ]
	stop_fork_bomb
	# The daemon ends the group as it reaps the leader; the children go as
	# soon as they are reaped in turn.
	no_group() { [ -z "$(in_group "$BOMB_GROUP")" ]; }
	wait_for 60 no_group
	[ -z "$(processes_named "$BOMB_UID" bomb)" ]
}

@test "04-memory: a memory bomb fails with ENOMEM below rlimit_as" {
	run timeout 60 "$TR_BASH" "cd / && $BOMB mem 1024"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "malloc ENOMEM" ]
	mib=$(sed -n 's/^allocated \([0-9]*\) MiB$/\1/p' <<<"${lines[0]}")
	echo "# allocated $mib MiB under a limit of $AS_MIB MiB" >&3
	[ "$mib" -lt "$AS_MIB" ]
	# What stopped it was the limit: the program's own mappings take
	# some of the address space, not half of it.
	[ "$mib" -ge $((AS_MIB / 2)) ]
}

@test "05-file-size: a file-size bomb dies of SIGXFSZ as it would directly, the file exactly 1 MiB" {
	run --separate-stderr plain_bash "cd $WORK && ulimit -f 1024 && head -c 10M /dev/zero > direct.big"
	[ "$status" -eq 153 ] # 128 + SIGXFSZ
	[[ "$stderr" == *"File size limit exceeded"* ]]
	[ "$(stat -c %s "$WORK/direct.big")" -eq 1048576 ]
	run --separate-stderr tr_bash "cd $WORK && head -c 10M /dev/zero > via.big"
	[ "$status" -eq 153 ]
	[[ "$stderr" == *"File size limit exceeded"* ]]
	[ "$(stat -c %s "$WORK/via.big")" -eq 1048576 ]
	rm -f "$WORK/direct.big" "$WORK/via.big"
}

@test "06-output-timeout: cat /dev/zero to the agent ends at the timeout, summarised as binary, memory bounded" {
	output_bomb "cat /dev/zero"
	[ "$via_status" -eq 124 ]
	grep -qx 'toolrun: cat: timed out after 3 s' "$TR_DIR/err"
	# NULs: not one of them, only the summary line of the whole stream.
	[ "$(wc -l <"$TR_DIR/out")" -eq 1 ]
	[ "$(tr -d '\0' <"$TR_DIR/out" | wc -c)" -eq "$(wc -c <"$TR_DIR/out")" ]
	summary='^\[toolrun: binary stdout of cat, ([0-9]+) bytes, data, sha256 [0-9a-f]{64}; the whole stdout is not kept: spill_dir is empty\]$'
	[[ "$(cat "$TR_DIR/out")" =~ $summary ]]
	# Far more than the budget went through the listener.
	[ "${BASH_REMATCH[1]}" -gt $((1024 * 1024)) ]
	memory_bounded
}

@test "07-output-serving: while output floods in, other requests are served" {
	# head, with no timeout, floods until its caller is told to stop. Its
	# input is text (yes, unlisted, through a FIFO the caller opens), so
	# that the head part of its output reaches the agent at once: a
	# binary stream would show nothing before it ends.
	listener=$(tr_listener_pid)
	: >"$TR_DIR/rss"
	rm -f "$TR_DIR/flood.out" "$TR_DIR/flood"
	mkfifo -m 644 "$TR_DIR/flood"
	yes 2>/dev/null 3>&- >"$TR_DIR/flood" &
	feeder=$!
	"$TR_BASH" "cd / && exec head -c 1T <$TR_DIR/flood" 2>/dev/null 3>&- > >(cat >"$TR_DIR/flood.out") &
	client=$!
	# The head part: max_lines / 2 lines of "y".
	for i in $(seq 1 600); do
		[ "$(stat -c %s "$TR_DIR/flood.out" 2>/dev/null || echo 0)" -ge 200 ] && break
		sleep 0.05
	done
	[ "$(head -c 200 "$TR_DIR/flood.out")" = "$(yes | head -n 100)" ]
	proc_status "$listener" VmRSS >>"$TR_DIR/rss"
	small_request_served
	proc_status "$listener" VmRSS >>"$TR_DIR/rss"
	# Still flooding: the caller has not ended.
	kill -0 "$client"
	kill -TERM "$client"
	# 128 + SIGTERM: forwarded, the program died of it, and so its caller.
	wait_job "$client"
	[ "$job_status" -eq 143 ]
	# head is gone, so yes ends on a broken pipe.
	wait_job "$feeder"
	memory_bounded
}

@test "08-many-lines: a flood of empty lines is cut to max_lines, memory bounded" {
	# tr alone, its stdin /dev/zero: in a pipeline from cat, cat's own
	# timeout could end the flood before tr's.
	output_bomb "tr '\\0' '\\n' </dev/zero"
	[ "$via_status" -eq 124 ]
	grep -qx 'toolrun: tr: timed out after 3 s' "$TR_DIR/err"
	# The first 100 empty lines, the marker, the last 100.
	[ "$(wc -l <"$TR_DIR/out")" -eq 201 ]
	[ "$(sed '101d' "$TR_DIR/out" | tr -d '\n' | wc -c)" -eq 0 ]
	marker="^\.\.\.\[toolrun cut ([0-9]+) lines \(([0-9]+) bytes\) of tr's stdout here: lines 101-([0-9]+) of ([0-9]+); the whole stdout is not kept: spill_dir is empty\]$"
	[[ "$(sed -n 101p "$TR_DIR/out")" =~ $marker ]]
	cut=${BASH_REMATCH[1]} bytes=${BASH_REMATCH[2]} last=${BASH_REMATCH[3]} total=${BASH_REMATCH[4]}
	[ "$bytes" -eq "$cut" ]
	[ "$last" -eq $((total - 100)) ]
	[ "$cut" -eq $((total - 200)) ]
	memory_bounded
}

@test "09-long-line: one endless line is cut to max_bytes, memory bounded" {
	output_bomb "tr '\\0' x </dev/zero"
	[ "$via_status" -eq 124 ]
	grep -qx 'toolrun: tr: timed out after 3 s' "$TR_DIR/err"
	# Its first max_bytes / 2 bytes, the marker on a line of its own, its
	# last max_bytes / 2 bytes (with no newline, as the line had none).
	xs=$(printf 'x%.0s' $(seq 1 2000))
	[ "$(wc -l <"$TR_DIR/out")" -eq 2 ]
	[ "$(sed -n 1p "$TR_DIR/out")" = "$xs" ]
	[ "$(sed -n 3p "$TR_DIR/out")" = "$xs" ]
	[ "$(tail -c 1 "$TR_DIR/out")" = x ]
	marker="^\.\.\.\[toolrun cut ([0-9]+) bytes of tr's stdout here: bytes 2001-([0-9]+) of ([0-9]+), inside line 1; the whole stdout is not kept: spill_dir is empty\]$"
	[[ "$(sed -n 2p "$TR_DIR/out")" =~ $marker ]]
	cut=${BASH_REMATCH[1]} last=${BASH_REMATCH[2]} total=${BASH_REMATCH[3]}
	[ "$last" -eq $((total - 2000)) ]
	[ "$cut" -eq $((total - 4000)) ]
	memory_bounded
}
