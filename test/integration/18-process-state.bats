#!/usr/bin/env bats
# Process state that survives exec reaches the program as it would
# directly: umask, limits, ignored and blocked signals, argv[0], the
# working directory, descriptors at any number. Each case is run both
# ways and compared.

load helpers

setup_file() {
	# more: a program made for a terminal; diff for <(...) arguments (a
	# second `tools` line adds to the first).
	tr_start "tools = more diff"
	printf 'a\nb\n' >"$TR_DIR/ab"
}

teardown_file() {
	tr_stop
}

# bash names the pid of a job it reports; pids differ between runs.
without_pids() {
	sed -E 's/^(bash: line [0-9]+: +)[0-9]+ /\1PID /'
}

# same LINE: toolrun on and off give the same stdout, stderr and status;
# the toolrun run went through the daemon.
same() {
	local n
	n=$(tr_job_count)
	run --separate-stderr tr_bash "cd $TR_DIR && $1"
	local via="status=$status
$output
--
$(without_pids <<<"$stderr")"
	run --separate-stderr plain_bash "cd $TR_DIR && $1"
	local direct="status=$status
$output
--
$(without_pids <<<"$stderr")"
	if [ "$via" != "$direct" ]; then
		diff -u <(echo "$direct") <(echo "$via") | sed 's/^/# /' >&3
		return 1
	fi
	[ "$(tr_job_count)" -gt "$n" ]
}

@test "18-state-umask: the caller's umask" {
	same 'umask 027; cat /proc/self/status | grep ^Umask'
	same 'umask 077; sed -n 1p ab > made; stat -c %a made'
}

@test "18-state-limits: the caller's resource limits" {
	same 'ulimit -n 300; ulimit -S -s 4096; cat /proc/self/limits | grep -E "open files|stack"'
}

@test "18-state-limits-effective: a file size limit stops the program as it would directly" {
	same 'ulimit -f 1; cat /dev/zero > big; echo $?; stat -c %s big'
}

@test "18-state-ignored: trap '' and nohup-style ignored signals stay ignored" {
	same "trap '' INT HUP; cat /proc/self/status | grep ^SigIgn"
	same "nohup cat /proc/self/status 2>/dev/null | grep ^SigIgn"
}

@test "18-state-blocked: the caller's signal mask" {
	same "$TR_PROBE block 10 cat /proc/self/status | grep ^SigBlk"
}

@test "18-state-argv0: exec -a keeps argv[0] apart from the file run" {
	same "(exec -a renamed $TR_PROBE args x)"
}

@test "18-state-deleted-cwd: a working directory that was deleted" {
	same 'mkdir -p gone && cd gone && rmdir ../gone && cat ../ab 2>&1; cat /proc/self/stat >/dev/null; ls 2>&1; echo $?'
}

@test "18-state-fd-high: a descriptor above 255 is inherited at its number" {
	same "exec 300<ab; cat <&300"
	same "exec 1000<ab; $TR_PROBE fds | grep -x 1000"
}

@test "18-state-cloexec: a close-on-exec descriptor is not inherited" {
	# bash opens its script fds 255+ close-on-exec; exec 7< ... is not.
	same "exec 7<ab; $TR_PROBE fds | grep -c -x 7; $TR_PROBE fds | grep -c -x 255"
}

@test "18-state-procsub: process substitution gives the program /dev/fd paths" {
	same 'cat <(echo one) <(echo two)'
	same 'grep -f <(echo b) ab'
}

@test "18-state-fd-dup: output sent to a saved descriptor" {
	same 'exec 5>log; cat ab >&5; exec 5>&-; cat log'
}

@test "18-state-nested: nested shells keep interception" {
	n=$(tr_job_count)
	run tr_bash "bash -c \"sh -c 'cat $TR_DIR/ab'\""
	[ "$output" = "$(printf 'a\nb')" ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "18-state-xargs: xargs running a listed tool" {
	n=$(tr_job_count)
	run tr_bash "echo $TR_DIR/ab | xargs cat"
	[ "$output" = "$(printf 'a\nb')" ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "18-state-static: a statically linked program's exec is not intercepted" {
	n=$(tr_job_count)
	run tr_bash "'$TOOLRUN_BUILD/test/progs/static-exec' /bin/cat $TR_DIR/ab"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb')" ]
	[ "$(tr_job_count)" -eq "$n" ]
}

@test "18-state-stop-cont: a job stopped and continued stops and continues the program" {
	# Each state is waited for (at most 30 s), not given a fixed time: on
	# a loaded machine the stop may take a while to reach the program, and
	# a continued program is running (R) for a moment before it sleeps
	# again (S).
	line="set -m; $TR_PROBE pid > pid & until [ -s pid ]; do sleep 0.02; done
		state() { cut -d' ' -f3 /proc/\$(cat pid)/stat; }
		kill -TSTP %1
		for i in \$(seq 1 600); do [ \$(state) = T ] && [[ \$(jobs) == *Stopped* ]] && break; sleep 0.05; done
		jobs; echo \"program state \$(state)\"
		kill -CONT %1
		for i in \$(seq 1 600); do [ \$(state) = S ] && break; sleep 0.05; done
		echo \"program state \$(state)\"
		kill -TERM %1; wait; rm pid"
	run --separate-stderr timeout 120 "$TR_BASH" "cd $TR_DIR && $line"
	[ "$status" -eq 0 ]
	# bash reports the stopped job: from `jobs` on stdout or, when its own
	# wait noticed the stop first, on stderr (a shell with no terminal
	# does either, with or without toolrun).
	[[ "$output"$'\n'"$stderr" == *"[1]+  Stopped"*"$TR_PROBE pid > pid"* ]]
	[ "$(grep '^program state' <<<"$output")" = $'program state T\nprogram state S' ]
	# The run without toolrun is not compared here: in a shell with no
	# terminal, bash's own job control there sometimes found the program a
	# zombie, with nothing of toolrun's involved.
}

@test "18-state-core: a core-dumping signal is reported by the shell as that signal" {
	same "ulimit -c 0; $TR_PROBE kill 6; echo \$?"
	[ "${lines[0]}" = 134 ]
	[[ "$stderr" == *Aborted* ]]
}

@test "18-state-core-file: the program's core file is the program's own" {
	# Cores land in the working directory, under whatever name the
	# pattern makes (core, core.PID, %e.core...), unless it pipes them to
	# a program (systemd-coredump, apport) or names another directory.
	pattern=$(cat /proc/sys/kernel/core_pattern)
	[[ $pattern != "|"* && $pattern != */* ]] ||
		skip "core_pattern is '$pattern': cores do not land in the working directory"
	(ulimit -c unlimited) 2>/dev/null || skip "the hard limit on core files is $(ulimit -H -c)"
	rm -rf "$TR_DIR/cores"
	mkdir -p "$TR_DIR/cores"
	run --separate-stderr tr_bash "cd $TR_DIR/cores && ulimit -c unlimited; $TR_PROBE kill 6; echo \$?"
	[ "${lines[0]}" = 134 ]
	# The one file there is the core.
	local core
	core=$(find "$TR_DIR/cores" -mindepth 1)
	[ -n "$core" ] && [ "$(wc -l <<<"$core")" -eq 1 ]
	[ -s "$core" ]
	# The core's NT_FILE note lists the files mapped: the probe's, not
	# bash's (which a core of the client would be).
	head -c 65536 "$core" | grep -aq "$TOOLRUN_BUILD/test/progs/probe"
	[ "$(head -c 65536 "$core" | grep -ac /usr/bin/bash)" -eq 0 ]
	rm -rf "$TR_DIR/cores"
}

@test "18-state-kill-tree: a caller killed with SIGKILL takes the program and its children along" {
	# find runs in the daemon; its child (sleep, not a tool) is find's own.
	"$TR_BASH" "find $TR_DIR/ab -exec sh -c 'echo \$\$ >$TR_DIR/tree.pid; exec sleep 1000' \\;" &
	client=$!
	wait_for 60 test -s "$TR_DIR/tree.pid"
	child=$(cat "$TR_DIR/tree.pid")
	find_pid=$(awk '{print $4}' "/proc/$child/stat") # the sleep's parent: find
	[ "$(cat "/proc/$find_pid/comm")" = find ]
	kill -KILL "$client"
	wait "$client" || true
	wait_for 60 gone "$child"
	wait_for 60 gone "$find_pid"
	rm -f "$TR_DIR/tree.pid"
}

@test "18-state-terminal: a program run from a terminal has none of its own and never hangs" {
	command -v script >/dev/null || skip "script(1) is not installed"
	# script gives the shell a terminal on stdin, stdout and stderr.
	run timeout 120 script -qec "'$TR_BASH' '$TR_PROBE tty; more $TR_DIR/ab'" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"no controlling terminal"* ]]
	[[ "$output" == *a*b* ]]
}

@test "18-state-setuid: a setuid program ignores the preload, as ld.so requires" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to make a setuid file"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	# On a file system mounted nosuid, the bit would do nothing.
	local base dir=
	for base in /tmp /var/tmp; do
		findmnt -n -o OPTIONS -T "$base" | grep -qw nosuid && continue
		dir=$(mktemp -d "$base/trsuid.XXXXXX")
		break
	done
	[ -n "$dir" ] || skip "/tmp and /var/tmp are both mounted nosuid"
	cp "$TOOLRUN_BUILD/test/progs/hookcall" "$dir/"
	chmod 755 "$dir" "$TR_DIR" && chmod 4755 "$dir/hookcall"
	n=$(tr_job_count)
	run setpriv --reuid=65534 --regid=65534 --clear-groups env \
		LD_PRELOAD="$TR_LIB" TOOLRUN_CONFIG="$TOOLRUN_CONFIG" \
		"$dir/hookcall" execve /bin/cat "$TR_DIR/ab"
	rm -rf "$dir"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb')" ]
	[ "$(tr_job_count)" -eq "$n" ]
}

@test "18-state-diff-procsub: diff <(cat a) <(cat b) with diff listed" {
	printf 'a\nc\n' >"$TR_DIR/ac"
	same "diff <(cat ab) <(cat ac); echo status=\$?"
}

@test "18-state-session: the program leads a session of its own (a stated limit)" {
	run tr_bash "$TR_PROBE session"
	[ "$output" = "session leader yes, group leader yes" ]
	run plain_bash "$TR_PROBE session"
	[[ "$output" == "session leader no, "* ]]
}

# A root shell without the capabilities that bypass file permissions.
uncapable() {
	setpriv --bounding-set=-dac_override,-dac_read_search "$@"
}

@test "18-state-unreadable-cwd: a working directory the caller cannot read" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to drop capabilities"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	mkdir -p "$TR_DIR/u" && chmod 311 "$TR_DIR/u"
	line="cd $TR_DIR/u && cat ../ab && grep -c a ../ab && pwd"
	run --separate-stderr uncapable "$TR_BASH" "$line"
	via="$status|$output|$stderr"
	run --separate-stderr uncapable "$PLAIN_BASH" "$line"
	[ "$via" = "$status|$output|$stderr" ]
	[ "${lines[3]}" = "$TR_DIR/u" ]
}

@test "18-state-credentials: the program has the daemon's capabilities (a stated limit)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to drop capabilities"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	mkdir -p "$TR_DIR/u" && chmod 311 "$TR_DIR/u"
	run uncapable "$TR_BASH" "cd $TR_DIR/u && ls >/dev/null 2>&1; echo \$?"
	[ "$output" = 0 ]
	run uncapable "$PLAIN_BASH" "cd $TR_DIR/u && ls >/dev/null 2>&1; echo \$?"
	[ "$output" = 2 ]
}
