#!/usr/bin/env bats
# A session's command runs in the session's own bash, and cannot speak for
# it: the end of a command and its status count only with the key
# toolrund sent with it, which only toolrun's builtin in that bash holds
# (daemon/listener/sessions/internal.h, preload/sessionbuiltin.c). Its errors read as under
# bash -c, and the audit says which facts the shell reported.

load helpers
load sessions

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

# The audit records of the session's commands.
session_records() {
	grep -F '"kind":"command"' "$TR_DIR/audit.jsonl" | grep -F "\"argv\":[\"$1\"]" || true
}

@test "28-session-channel-fd: a status a command writes to the shell's copies of the status pipe does not end it" {
	new_session
	# Every descriptor of the shell, its saved copies of fds 3 and 4
	# included, gets a record that looks like the loop's.
	attack='for fd in $(ls /proc/$$/fd); do [ "$fd" -ge 3 ] && printf "0 /fake\0" >&"$fd"; done 2>/dev/null; sleep 2; echo real; false'
	run session run "$sid" --json --timeout 60 -- "$attack"
	[ "$(jf state)" = done ]
	[ "$(jf stdout)" = real ]
	[ "$(jf exit_code)" = 1 ]
	# The next command starts where the shell is, not at /fake.
	run session run "$sid" --json -- 'pwd'
	[ "$(jf stdout)" = "$PWD" ]
	wait_for 30 bash -c "grep -qF '\"argv\":[\"pwd\"]' '$TR_DIR/audit.jsonl'"
	record=$(session_records pwd | tail -n 1)
	[[ "$record" == *"\"cwd\":\"$PWD\""* ]]
	[[ "$record" != *fake* ]]
	session close "$sid"
}

@test "28-session-channel-order: the tools a command ran are logged before its end is told" {
	new_session
	echo in >"$TR_DIR/order.txt"
	n=$(tr_job_count)
	# cat's end reaches its caller from the launcher, the command's end
	# comes from the shell's status pipe: the listener takes in the
	# launcher's news first. No waiting: the line is there when run returns.
	for i in 1 2 3 4 5 6 7 8; do
		run session run "$sid" --json -- "cat $TR_DIR/order.txt"
		[ "$(jf stdout)" = in ]
		[ "$(grep ' info: job [0-9]* uid=' "$TR_DIR/daemon.log" | tail -n +$((n + 1)) | grep -c ' tool=cat ')" -eq "$i" ]
	done
	session close "$sid"
}

@test "28-session-channel-functions: functions named like the loop's builtins change nothing it reports" {
	new_session
	session run "$sid" -- 'printf() { builtin printf "0 /pwned\0" >&4; }; toolrun_session() { builtin toolrun_session report 0; }; read() { :; }'
	run session run "$sid" --json --timeout 60 -- 'false'
	[ "$(jf state)" = done ]
	[ "$(jf exit_code)" = 1 ]
	run session run "$sid" --json --timeout 60 -- 'command pwd'
	[ "$(jf stdout)" = "$PWD" ]
	# Called from a command, the builtin refuses: it answers the loop only.
	run session run "$sid" --json --timeout 60 -- 'builtin toolrun_session report 0; echo "refused $?"; exit_now=1; false'
	[ "$(jf stdout)" = "refused 1" ]
	[ "$(jf exit_code)" = 1 ]
	session close "$sid"
}

@test "28-session-channel-errors: bash's errors read as under bash -c" {
	new_session
	run -127 session run "$sid" --json -- 'nosuchcmd'
	[ "$(jf stderr)" = "bash: line 1: nosuchcmd: command not found" ]
	[ "$(jf exit_code)" = 127 ]
	run -127 session run "$sid" --json -- $'true\nnosuchcmd2'
	[ "$(jf stderr)" = "bash: line 2: nosuchcmd2: command not found" ]
	# As bash -c prints them, here too.
	[ "$(bash -c $'true\nnosuchcmd2' 2>&1)" = "bash: line 2: nosuchcmd2: command not found" ]
	session close "$sid"
}

@test "28-session-channel-audit: the audit says which facts the shell reported" {
	new_session
	session run "$sid" -- 'cd /tmp && true'
	wait_for 30 bash -c "grep -qF '\"argv\":[\"cd /tmp && true\"]' '$TR_DIR/audit.jsonl'"
	record=$(grep -F '"argv":["cd /tmp && true"]' "$TR_DIR/audit.jsonl" | tail -n 1)
	[[ "$record" == *'"exit":0,"reported_by_shell":["exit","cwd"]'* ]]
	session close "$sid"
}

@test "28-session-channel-broken-loop: a command that redefines builtin ends its session, and forges nothing" {
	new_session
	run session run "$sid" --json --timeout 60 -- 'builtin() { printf "0 /pwned\0" >&4; command builtin "$@"; return 0; }; false'
	[ "$(jf state)" = closed ]
	[ "$(jf exit_code)" != 0 ]
	[[ "$(jf message)" == *"a command broke the session's loop"* ]]
	[[ "$output" != *pwned* ]]
}

@test "28-session-channel-traps: a trap a command sets cannot report for the loop, before or after an interrupt" {
	new_session
	# DEBUG runs before the loop's own report; EXIT when the shell ends.
	session run "$sid" -- 'trap "builtin toolrun_session report 0" DEBUG ERR RETURN USR1'
	run session run "$sid" --json --timeout 60 -- 'false'
	[ "$(jf state)" = done ]
	[ "$(jf exit_code)" = 1 ]
	# After an interrupt, as before it.
	run session run "$sid" --json --timeout 1 -- 'sleep 30'
	[ "$(jf state)" = running ]
	run session interrupt "$sid" --json --timeout 60
	[ "$(jf state)" = done ]
	run session run "$sid" --json --timeout 60 -- 'kill -USR1 $$; false'
	[ "$(jf state)" = done ]
	[ "$(jf exit_code)" = 1 ]
	run session run "$sid" --json --timeout 60 -- 'trap - DEBUG ERR RETURN USR1; trap "builtin toolrun_session report 0" EXIT; exit 3'
	[ "$(jf state)" = closed ]
	[ "$(jf exit_code)" = 3 ]
}

@test "28-session-channel-interrupt-status: an interrupted builtin loop reports 130, and the shell goes on" {
	new_session
	run session run "$sid" --json --timeout 1 -- 'while :; do :; done'
	[ "$(jf state)" = running ]
	run session interrupt "$sid" --json --timeout 60
	[ "$(jf state)" = done ]
	[ "$(jf exit_code)" = 130 ]
	run session run "$sid" --json -- 'echo alive'
	[ "$(jf stdout)" = alive ]
	session close "$sid"
}

@test "28-session-channel-deferred-interrupt: an interrupt a subshell ignored ends the command with the status of what killed it" {
	new_session
	run session run "$sid" --json --timeout 0.5 -- "(trap '' INT; exec sleep 301)"
	[ "$(jf state)" = running ]
	run session interrupt "$sid" --json --timeout 2
	[ "$(jf state)" = running ]
	run session kill "$sid" --json --timeout 60
	[ "$(jf state)" = done ]
	[ "$(jf exit_code)" = 137 ]
	session close "$sid"
}
