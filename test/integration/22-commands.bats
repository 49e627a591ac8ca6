#!/usr/bin/env bats
# Agent commands: the first process of a tree that has the library hands
# itself to toolrund, and everything the command writes to the agent is
# shaped against one budget, whoever writes it.

load helpers

setup_file() {
	tr_start "truncate = sink" "spill_dir = $BATS_FILE_TMPDIR/spill" \
		"[tool.tail]" "timeout = 2" "[tool.sort]" "max_lines = 500"
	seq 1 100000 >"$TR_DIR/seq"
}

teardown_file() {
	tr_stop
}

# The lines of $output before the marker, the marker, the lines after.
split_marker() {
	marker=$(grep -n '^\.\.\.\[toolrun cut ' <<<"$output" | head -n 1)
	marker_line=${marker%%:*}
	marker=${marker#*:}
}

@test "22-commands-unlisted: an unlisted program's output is bounded, head and tail" {
	n=$(tr_job_count)
	run tr_agent 'seq 1 100000'
	[ "$status" -eq 0 ]
	split_marker
	[ -n "$marker" ]
	# The first 100 lines, the marker, the last 100.
	[ "$(head -n 100 <<<"$output")" = "$(seq 1 100)" ]
	[ "$marker_line" -eq 101 ]
	[ "$(tail -n 100 <<<"$output")" = "$(seq 99901 100000)" ]
	[ "${#lines[@]}" -eq 201 ]
	[[ "$marker" == *"lines 101-99900 of 100000"* ]]
	commands_since "$n" | grep -q 'command=bash'
}

@test "22-commands-spill: the whole output is in the file the marker names, for the caller only" {
	run tr_agent 'seq 1 100000'
	split_marker
	path=$(spill_path_in "$marker")
	[ -n "$path" ]
	cmp "$path" "$TR_DIR/seq"
	[ "$(stat -c '%a %u' "$path")" = "600 $(id -u)" ]
	[ "$(sed -n '101,103p' "$path")" = "$(seq 101 103)" ]
}

@test "22-commands-builtins: a shell loop's echo is bounded too" {
	run tr_agent 'for i in $(seq 1 5000); do echo "row $i"; done'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 201 ]
	[ "${lines[0]}" = "row 1" ]
	[ "${lines[200]}" = "row 5000" ]
}

@test "22-commands-one-budget: many small listed calls share one budget, one marker" {
	run tr_agent "for i in \$(seq 1 29); do head -100 $TR_DIR/seq; done"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^\.\.\.\[toolrun cut ' <<<"$output")" -eq 1 ]
	[ "${#lines[@]}" -eq 201 ]
}

@test "22-commands-tool-section: a listed tool with limits of its own is cut once, by the command, with what it wrote" {
	# sort's section allows 500 lines; the command's budget 200. The
	# agent sees one marker whose numbers are sort's real output, and the
	# file it names holds all of that output.
	n=$(tr_job_count)
	run --separate-stderr tr_agent "sort -n $TR_DIR/seq"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^\.\.\.\[toolrun cut ' <<<"$output")" -eq 1 ]
	split_marker
	[ "$marker_line" -eq 101 ]
	dropped=$(($(stat -c %s "$TR_DIR/seq") - $(seq 1 100 | wc -c) - $(seq 99901 100000 | wc -c)))
	[[ "$marker" == "...[toolrun cut 99800 lines ($dropped bytes) of stdout here: lines 101-99900 of 100000; the whole stdout is in $BATS_FILE_TMPDIR/spill/$(id -u)/"*"-stdout.log]" ]]
	cmp "$(spill_path_in "$marker")" "$TR_DIR/seq"
	[ "$(tail -n 100 <<<"$output")" = "$(seq 99901 100000)" ]
	# sort wrote into the command's pipe itself.
	jobs_since "$n" | grep -q ' tool=sort .*stdout=direct'
}

@test "22-commands-every-byte: pipes, files and substitutions get every byte" {
	run tr_agent "seq 1 100000 | wc -l; seq 1 100000 > $TR_DIR/copy; x=\$(seq 1 100000); echo \${#x}"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 100000 ]
	[ "${lines[1]}" = "$(($(stat -c %s "$TR_DIR/seq") - 1))" ]
	cmp "$TR_DIR/copy" "$TR_DIR/seq"
}

@test "22-commands-small: output within the budget arrives untouched" {
	run tr_agent 'printf "a\nb\n"; printf "no newline"'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb\nno newline')" ]
}

@test "22-commands-status: exit codes and signals are the command's" {
	run tr_agent 'exit 7'
	[ "$status" -eq 7 ]
	run tr_agent 'kill -SEGV $$'
	[ "$status" -eq 139 ]
	run tr_agent 'true'
	[ "$status" -eq 0 ]
}

@test "22-commands-stdin-cwd-env: the command reads its stdin, in its directory, with its env" {
	run bash -c "cd '$TR_DIR' && echo piped | MY_VAR=kept '$AGENT_BASH' 'read l; echo \$l \$PWD \$MY_VAR'"
	[ "$status" -eq 0 ]
	[ "$output" = "piped $TR_DIR kept" ]
}

@test "22-commands-env: a command keeps its environment, plus the declaration of its streams" {
	run tr_agent 'echo "$LD_PRELOAD"; env | cut -d= -f1 | sort'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$TR_LIB" ]
	# What the caller passed, and three variables more.
	expected=$(printf '%s\n' $(env -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR -u BASH_ENV \
		LD_PRELOAD=x TR_MARK=x TOOLRUN_CONFIG=x TOOLRUN_AGENT_STDOUT=x TOOLRUN_AGENT_STDERR=x \
		TOOLRUN_COMMAND=x bash -c 'env | cut -d= -f1') | sort)
	[ "$(tail -n +2 <<<"$output")" = "$expected" ]
}

is_sleep3004() {
	[ "$(tr -d '\0' <"/proc/$1/cmdline")" = sleep3004 ]
}

@test "22-commands-background: a command's background process outlives it, as after docker exec" {
	run tr_agent 'sleep 3004 >/dev/null 2>&1 & echo $!'
	[ "$status" -eq 0 ]
	pid=$output
	[ -d "/proc/$pid" ]
	# $! is the forked shell, which becomes sleep when it execs: on a
	# loaded machine, a moment after the command has returned.
	wait_for 30 is_sleep3004 "$pid" || { kill "$pid"; false; }
	kill "$pid"
	wait_for 30 gone "$pid"
}

@test "22-commands-off: TOOLRUN=off leaves the command alone" {
	run env TOOLRUN=off LD_PRELOAD="$TR_LIB" TOOLRUN_CONFIG="$TOOLRUN_CONFIG" bash -c 'seq 1 1000'
	[ "${#lines[@]}" -eq 1000 ]
}

@test "22-commands-file: a command whose stdout is a file is not taken over" {
	tr_agent 'seq 1 100000' >"$TR_DIR/out" 2>/dev/null
	cmp "$TR_DIR/out" "$TR_DIR/seq"
}

@test "22-commands-producer: a tool's timeout waits for a producer still running" {
	# tail's timeout is 2 s; its producer takes longer.
	run tr_agent '(sleep 5; echo BUILD FAILED) 2>&1 | tail -5'
	[ "$status" -eq 0 ]
	[ "$output" = "BUILD FAILED" ]
}

@test "22-commands-tool-timeout: a tool that is not waiting on a producer still times out" {
	run tr_agent "tail -f $TR_DIR/seq </dev/null >/dev/null"
	[ "$status" -eq 124 ]
	[[ "$output" == *"toolrun: tail: timed out after 2 s"* ]]
}

@test "22-commands-binary: binary output is one line with its SHA-256" {
	head -c 100000 /bin/bash >"$TR_DIR/bin"
	run tr_agent "cat $TR_DIR/bin"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"binary"* ]]
	[[ "$output" == *"$(sha256sum <"$TR_DIR/bin" | cut -d' ' -f1)"* ]]
	[[ "$output" == *ELF* ]]
	path=$(spill_path_in "$output")
	cmp "$path" "$TR_DIR/bin"
}

@test "22-commands-timeout: command_timeout ends the whole command with 124" {
	tr_write_config "$TOOLRUN_CONFIG" "command_timeout = 2" "spill_dir = $BATS_FILE_TMPDIR/spill"
	"$TR_CLI" reload
	# A background job in a process group of its own (job control on),
	# one in the command's group, and the command itself waiting.
	run tr_agent 'echo before; set -m; sleep 3001 & set +m; sleep 3002 & sleep 3003; echo after'
	tr_write_config "$TOOLRUN_CONFIG" "spill_dir = $BATS_FILE_TMPDIR/spill" "[tool.tail]" "timeout = 2" \
		"[tool.sort]" "max_lines = 500"
	"$TR_CLI" reload
	[ "$status" -eq 124 ]
	[ "${lines[0]}" = before ]
	[[ "$output" == *"toolrun: the command timed out after 2 s (command_timeout)"* ]]
	[ "$(grep -cx after <<<"$output")" -eq 0 ]
	# Every process of the command's session is gone.
	wait_for 30 bash -c "! pgrep -x -f 'sleep 300[123]' >/dev/null"
}

@test "22-commands-timeout-escaped: command_timeout also ends what left the command's session" {
	tr_write_config "$TOOLRUN_CONFIG" "command_timeout = 2" "spill_dir = $BATS_FILE_TMPDIR/spill"
	"$TR_CLI" reload
	# setsid -f: a new session, its parent gone; nohup; a double fork.
	run tr_agent 'setsid -f sleep 3021; nohup sleep 3022 >/dev/null 2>&1 & ( (sleep 3023 &) & ); sleep 3024'
	tr_write_config "$TOOLRUN_CONFIG" "spill_dir = $BATS_FILE_TMPDIR/spill" "[tool.tail]" "timeout = 2"
	"$TR_CLI" reload
	[ "$status" -eq 124 ]
	# The line says what was killed and how to run longer work (bash
	# execs the last sleep: the three others are below it).
	[[ "$output" == *"toolrun: the command timed out after 2 s (command_timeout) and was killed, with the 3 other processes running below it; for longer work, use a session"* ]]
	wait_for 30 bash -c "! pgrep -x -f 'sleep 302[1234]' >/dev/null"
}

@test "22-commands-tool-follows-command: a tool without a timeout of its own runs as long as the command" {
	# The global timeout is 1 s; tail has no section here. coreutils'
	# timeout (not listed) ends it after 4 s, as it would directly.
	tr_write_config "$TOOLRUN_CONFIG" "spill_dir = $BATS_FILE_TMPDIR/spill"
	sed -i 's/^timeout = .*/timeout = 1/' "$TOOLRUN_CONFIG"
	"$TR_CLI" reload
	run tr_agent "timeout 4 tail -f $TR_DIR/seq </dev/null >/dev/null; echo status \$?"
	tr_write_config "$TOOLRUN_CONFIG" "spill_dir = $BATS_FILE_TMPDIR/spill" "[tool.tail]" "timeout = 2"
	"$TR_CLI" reload
	[ "$status" -eq 0 ]
	[ "$output" = "status 124" ]
}

@test "22-commands-audit-link: a tool's command is the one it runs in, whatever its environment says" {
	: >"$TR_DIR/audit.jsonl"
	run tr_agent 'TOOLRUN_COMMAND=424242 cat /etc/hostname >/dev/null; echo done'
	[ "$output" = done ]
	wait_for 30 grep -qF '"kind":"command"' "$TR_DIR/audit.jsonl"
	command_job=$(grep -F '"kind":"command"' "$TR_DIR/audit.jsonl" | tail -n 1 |
		sed -n 's/.*"job":\([0-9]*\).*/\1/p')
	tool=$(grep -F '"argv":["cat","/etc/hostname"]' "$TR_DIR/audit.jsonl" | tail -n 1)
	[ -n "$command_job" ]
	[[ "$tool" == *"\"command_job\":$command_job"[,}]* ]]
	[[ "$tool" != *424242* ]]
	# Outside any command, the claim links to nothing.
	TOOLRUN_COMMAND=424242 tr_bash 'cat /etc/hostname >/dev/null'
	wait_for 30 bash -c "[ \$(grep -cF '\"argv\":[\"cat\",\"/etc/hostname\"]' '$TR_DIR/audit.jsonl') -eq 2 ]"
	tool=$(grep -F '"argv":["cat","/etc/hostname"]' "$TR_DIR/audit.jsonl" | tail -n 1)
	[[ "$tool" != *command_job* ]]
}

# A program run directly, as `docker exec BOX PROGRAM` runs it: the first
# process of its tree to have the library, its stdout a pipe.
tr_direct() {
	env -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR -u TOOLRUN_DIRECT -u BASH_ENV \
		LD_PRELOAD="$TR_LIB" TR_MARK="$TR_MARK" TOOLRUN_CONFIG="$TOOLRUN_CONFIG" "$@"
}

@test "22-commands-direct: a program run directly is the harness's: every byte, below it too" {
	n=$(tr_job_count)
	# Its own output, into a pipe.
	[ "$(tr_direct seq 1 100000 | cksum)" = "$(seq 1 100000 | cksum)" ]
	[ "$(tr_direct cat "$TR_DIR/seq" | cksum)" = "$(cksum <"$TR_DIR/seq")" ]
	# A listed tool below it, writing to its stdout; and a shell command
	# string a program below it runs (make's recipes, subprocess).
	[ "$(tr_direct find "$TR_DIR/seq" -exec cat {} \; | cksum)" = "$(cksum <"$TR_DIR/seq")" ]
	[ "$(tr_direct python3 -c 'import subprocess; subprocess.run(["sh", "-c", "seq 1 100000"])' | cksum)" = \
		"$(seq 1 100000 | cksum)" ]
	# None of them was a command.
	[ -z "$(commands_since "$n")" ]
}

@test "22-commands-shell-string: a shell given a command string is the agent's command" {
	for shell in "bash -c" "bash -lc" "bash --norc -c" "bash -o pipefail -c" "sh -c" "sh -ec"; do
		run tr_direct $shell 'seq 1 100000'
		[ "$status" -eq 0 ]
		[ "${#lines[@]}" -eq 201 ]
		[[ "${lines[100]}" == '...[toolrun cut '* ]]
	done
	# A shell reading a script file, or commands from stdin, is not.
	printf 'seq 1 100000\n' >"$TR_DIR/script.sh"
	[ "$(tr_direct bash "$TR_DIR/script.sh" | wc -l)" -eq 100000 ]
	[ "$(tr_direct bash <"$TR_DIR/script.sh" | wc -l)" -eq 100000 ]
}

@test "22-commands-switches: TOOLRUN=agent shapes a direct program, TOOLRUN=off passes a command string" {
	run tr_direct env TOOLRUN=agent seq 1 100000
	[ "${#lines[@]}" -eq 201 ]
	[[ "${lines[100]}" == '...[toolrun cut '* ]]
	[ "$(tr_direct env TOOLRUN=off bash -lc 'seq 1 100000' | wc -l)" -eq 100000 ]
}

@test "22-commands-exec-chain: a direct program that execs a shell command string in its place hands over the shell" {
	# env (the first process, direct) execs bash -c with the same pid.
	run tr_direct env X=1 bash -c 'echo "X=$X"; seq 1 100000'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = X=1 ]
	[ "${#lines[@]}" -eq 201 ]
	# Its children are not first processes: a shell that env starts
	# as a child (not in its place) stays the harness's.
	[ "$(tr_direct timeout 30 bash -c 'seq 1 100000' | wc -l)" -eq 100000 ]
}

@test "22-commands-harness-timeout: a tool below a harness's direct program runs as long as it would directly" {
	tr_write_config "$TOOLRUN_CONFIG" "spill_dir = $BATS_FILE_TMPDIR/spill"
	sed -i 's/^timeout = .*/timeout = 1/' "$TOOLRUN_CONFIG"
	"$TR_CLI" reload
	printf 'timeout 4 tail -f %s </dev/null >/dev/null; echo "status $?"\n' "$TR_DIR/seq" >"$TR_DIR/eval.sh"
	run tr_direct bash "$TR_DIR/eval.sh"
	tr_write_config "$TOOLRUN_CONFIG" "spill_dir = $BATS_FILE_TMPDIR/spill" "[tool.tail]" "timeout = 2"
	"$TR_CLI" reload
	[ "$status" -eq 0 ]
	[ "$output" = "status 124" ]
}
