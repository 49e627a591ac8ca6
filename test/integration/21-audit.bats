#!/usr/bin/env bats
# The audit log: written by the daemon, one chained JSON line per job,
# checked by `toolrun audit verify` (docs/audit.md).

load helpers

setup_file() {
	tr_start
	mkdir -p "$TR_DIR/work"
	make_lines "$TR_DIR/work/in.txt" 3
}

teardown_file() {
	tr_stop
}

ZEROS=0000000000000000000000000000000000000000000000000000000000000000

# chain FILE FIRST LAST [PREV]: append records FIRST..LAST to FILE, chained
# as the daemon chains them, from PREV (default: the start of a chain);
# prints the hash of the last line.
chain() {
	local file=$1 first=$2 last=$3 prev=${4:-$ZEROS} i line
	for ((i = first; i <= last; i++)); do
		line="{\"prev\":\"$prev\",\"kind\":\"tool\",\"job\":$i,\"argv\":[\"cat\",\"f$i\"]}"
		printf '%s\n' "$line" >>"$file"
		prev=$(printf '%s' "$line" | sha256sum | cut -c1-64)
	done
	echo "$prev"
}

# The audit lines of tool jobs, once there are at least $1 (up to 5 s).
audit_lines_at_least() {
	[ "$(grep -c '"kind":"tool"' "$TR_DIR/audit.jsonl")" -ge "$1" ]
}

@test "21-audit-file: the daemon makes its audit log, 0600, and names it in Pong" {
	[ -f "$TR_DIR/audit.jsonl" ]
	[ "$(stat -c %a "$TR_DIR/audit.jsonl")" = 600 ]
	# A config that names another file: the daemon's answer wins.
	sed "s|^audit_log = .*|audit_log = $TR_DIR/other.jsonl|" "$TOOLRUN_CONFIG" >"$TR_DIR/other.conf"
	run --separate-stderr env TOOLRUN_CONFIG="$TR_DIR/other.conf" "$TR_CLI" audit verify
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^"$TR_DIR/audit.jsonl: "[0-9]+" line"s?", chain intact"$ ]]
	[ -z "$stderr" ]
}

@test "21-audit-no-daemon: without a daemon, verify checks the config's audit_log" {
	chain "$TR_DIR/kept.jsonl" 1 3 >/dev/null
	cat >"$TR_DIR/down.conf" <<EOF
socket = $TR_DIR/nobody.sock
socket_fallback =
tools = cat
audit_log = $TR_DIR/kept.jsonl
EOF
	run --separate-stderr env TOOLRUN_CONFIG="$TR_DIR/down.conf" "$TR_CLI" audit verify
	[ "$status" -eq 0 ]
	[ "$output" = "$TR_DIR/kept.jsonl: 3 lines, chain intact" ]
	[[ "$stderr" == *"checking the config's audit_log, $TR_DIR/kept.jsonl"* ]]
}

@test "21-audit-tool-job: one line per tool job, with argv, cwd and exit status" {
	run --separate-stderr tr_bash "cd $TR_DIR/work && cat in.txt && grep -c line in.txt"
	[ "$status" -eq 0 ]
	wait_for 30 audit_lines_at_least 2
	cat_line=$(grep -F '"argv":["cat","in.txt"]' "$TR_DIR/audit.jsonl")
	grep_line=$(grep -F '"argv":["grep","-c","line","in.txt"]' "$TR_DIR/audit.jsonl")
	for l in "$cat_line" "$grep_line"; do
		[[ "$l" == '{"prev":"'* ]]
		[[ "$l" == *"\"cwd\":\"$TR_DIR/work\""* ]]
		[[ "$l" == *'"exit":0'* ]]
		[[ "$l" == *'"timed_out":false'* ]]
		[[ "$l" == *"\"uid\":$(id -u),"* ]]
	done
	[[ "$cat_line" == *'"tool":"cat"'* ]]
	[[ "$cat_line" == *'"stdout":{"bytes":21,"lines":3,'* ]]
	run "$TR_CLI" audit verify "$TR_DIR/audit.jsonl"
	[ "$status" -eq 0 ]
}

@test "21-audit-status: a failing job's exit status is recorded" {
	n=$(grep -c '"kind":"tool"' "$TR_DIR/audit.jsonl" || true)
	run tr_bash "cd $TR_DIR/work && grep nomatch in.txt; cat /nonexistent"
	wait_for 30 audit_lines_at_least $((n + 2))
	grep -F '"argv":["grep","nomatch","in.txt"]' "$TR_DIR/audit.jsonl" | grep -qF '"exit":1'
	grep -F '"argv":["cat","/nonexistent"]' "$TR_DIR/audit.jsonl" | grep -qF '"exit":1'
}

@test "21-audit-cpu: a job's CPU time, which its caller's times() cannot see, is in its record" {
	n=$(grep -c '"kind":"tool"' "$TR_DIR/audit.jsonl" || true)
	# About a third of a second of CPU in awk itself; none in the caller.
	run tr_bash "awk 'BEGIN { for (i = 0; i < 4000000; i++) s += i % 7; print s }'; times"
	[ "$status" -eq 0 ]
	wait_for 30 audit_lines_at_least $((n + 1))
	line=$(grep -F '"argv":["awk",' "$TR_DIR/audit.jsonl" | tail -n 1)
	user=$(sed -n 's/.*"cpu_user_ms":\([0-9.]*\),.*/\1/p' <<<"$line")
	sys=$(sed -n 's/.*"cpu_system_ms":\([0-9.]*\),.*/\1/p' <<<"$line")
	[ -n "$user" ] && [ -n "$sys" ]
	awk -v u="$user" -v s="$sys" 'BEGIN { exit !(u + s > 0) }'
}

@test "21-audit-tamper-daemon: a line of the daemon's log changed with sed is named" {
	run tr_bash "cd $TR_DIR/work && cat in.txt; cat in.txt; cat in.txt"
	wait_for 30 audit_lines_at_least 3
	cp "$TR_DIR/audit.jsonl" "$TR_DIR/copy.jsonl"
	sed -i '2s/"uid":[0-9]*/"uid":4242/' "$TR_DIR/copy.jsonl"
	run "$TR_CLI" audit verify "$TR_DIR/copy.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == "$TR_DIR/copy.jsonl:2: changed"* ]]
}

@test "21-audit-tamper: verify names a line changed with sed, and exits 1" {
	f="$TR_DIR/t.jsonl"
	chain "$f" 1 6 >/dev/null
	run "$TR_CLI" audit verify "$f"
	[ "$status" -eq 0 ]
	[ "$output" = "$f: 6 lines, chain intact" ]

	sed -i '3s/"job":3/"job":33/' "$f"
	run "$TR_CLI" audit verify "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == "$f:3: changed"* ]]
}

@test "21-audit-removed: verify names where a line was removed" {
	f="$TR_DIR/r.jsonl"
	chain "$f" 1 6 >/dev/null
	sed -i '4d' "$f"
	run "$TR_CLI" audit verify "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == "$f:3: changed, or the lines after it removed"* ]]
}

@test "21-audit-rotated: FILE.2, FILE.1 and FILE are verified as one chain" {
	f="$TR_DIR/rot.jsonl"
	p=$(chain "$f.2" 1 3)
	p=$(chain "$f.1" 4 6 "$p")
	chain "$f" 7 8 "$p" >/dev/null
	run "$TR_CLI" audit verify "$f"
	[ "$status" -eq 0 ]
	[ "$output" = "$f.2: 3 lines, chain intact
$f.1: 3 lines, chain intact
$f: 2 lines, chain intact" ]

	# A line inserted into a rotated file is named in that file.
	sed -i "2a $(sed -n 2p "$f.1")" "$f.1"
	run "$TR_CLI" audit verify "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == "$f.1:"[23]": inserted"* ]]
}

@test "21-audit-unreadable: a file that cannot be read exits 2" {
	run --separate-stderr "$TR_CLI" audit verify "$TR_DIR/missing.jsonl"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"cannot open $TR_DIR/missing.jsonl: No such file or directory"* ]]
	run "$TR_CLI" audit
	[ "$status" -eq 2 ]
}
