#!/usr/bin/env bats
# toolrun tags (docs/tags.md): a model's tagged text run as it streams,
# through the path policy, the search index and a toolrund session.

load helpers

PY=$(command -v /usr/bin/python3 || command -v python3)
GOLDEN="$TOOLRUN_SOURCE/test/integration/golden/tags"

setup_file() {
	tr_start
	REPO="$TR_DIR/repo"
	export REPO
	mkdir -p "$REPO/src" "$REPO/.git"
	printf 'hello\nworld\n' >"$REPO/README.md"
	printf 'int main(void)\n{\n\treturn 0; /* zanzibar */\n}\n' >"$REPO/src/main.c"
	printf 'secret\n' >"$REPO/.git/config"
}

teardown_file() {
	tr_stop
}

# tags ARGS...: toolrun tags on the test's repository, its index in TR_DIR.
tags() {
	"$TR_CLI" tags --root "$REPO" --index "$TR_DIR/index.sqlite" "$@"
}

# feed TEXT ARGS...: TEXT on the stdin of `tags ARGS...`.
feed() {
	local text=$1
	shift
	printf '%s' "$text" | tags "$@"
}

# jl N FIELD [TEXT]: a field of the Nth JSON line (from 1) of TEXT (by
# default $output): a string as it is, anything else as JSON.
jl() {
	"$PY" -c '
import json, sys
v = json.loads(sys.argv[3].split("\n")[int(sys.argv[1]) - 1])
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v.get(k)
sys.stdout.write(v if isinstance(v, str) else json.dumps(v))
' "$1" "$2" "${3-$output}"
}

# Every line of $output is one JSON object; prints how many.
json_lines() {
	"$PY" -c '
import json, sys
n = 0
for line in sys.stdin.read().splitlines():
    json.loads(line)
    n += 1
print(n)' <<<"$output"
}

# The JSON lines on stdin with the fields that vary from run to run
# (times, scores, session ids, the repository's path) made constant.
normalise() {
	"$PY" -c '
import json, os, sys
def fix(v):
    if isinstance(v, str):
        return v.replace(os.environ["REPO"], "REPO")
    if isinstance(v, dict):
        return {k: (0 if k in ("duration_ms", "score") else
                    "SESSION" if k == "session" else fix(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [fix(x) for x in v]
    return v
for line in sys.stdin:
    print(json.dumps(fix(json.loads(line)), separators=(",", ":"), ensure_ascii=False))
'
}

@test "the seed's path attacks are each refused with their code, exit 1" {
	local attacks=(
		'../../../etc/passwd OUTSIDE_ROOT'
		'..\..\..\windows\system32\config\sam BACKSLASH_PATH'
		'foo/../../../etc/passwd OUTSIDE_ROOT'
		'/etc/passwd OUTSIDE_ROOT'
		'~/.ssh/id_rsa HOME_PATH'
		'file:///etc/passwd URL_PATH'
	)
	local a
	for a in "${attacks[@]}"; do
		run feed "<open ${a% *}>" --json
		[ "$status" -eq 1 ]
		[ "$(json_lines)" -eq 1 ]
		[ "$(jl 1 ok)" = false ]
		[ "$(jl 1 command)" = open ]
		[ "$(jl 1 argument)" = "${a% *}" ]
		[ "$(jl 1 error.category)" = VALIDATION ]
		[ "$(jl 1 error.code)" = "${a##* }" ]
		# The same path to <write> is refused too, and nothing is written.
		run feed "<write ${a% *}>x</write>" --json
		[ "$status" -eq 1 ]
		[ "$(jl 1 error.category)" = VALIDATION ]
	done
	grep -q root: /etc/passwd
}

@test "<open> gives the file with numbered lines" {
	run feed '<open README.md>' --json
	[ "$status" -eq 0 ]
	[ "$(jl 1 index)" = 1 ]
	[ "$(jl 1 line)" = 1 ]
	[ "$(jl 1 ok)" = true ]
	[ "$(jl 1 result.path)" = README.md ]
	[ "$(jl 1 result.total_lines)" = 2 ]
	[ "$(jl 1 result.text)" = "$(printf '     1\thello\n     2\tworld\n')" ]
}

@test "<write> then <open> in one stream" {
	run feed $'<write notes/../w.txt>\nfirst\nsecond\n</write> and <open w.txt>' --json
	[ "$status" -eq 0 ]
	[ "$(json_lines)" -eq 2 ]
	[ "$(jl 1 command)" = write ]
	[ "$(jl 1 result.created)" = true ]
	[ "$(jl 1 result.bytes)" = 13 ]
	[ "$(jl 2 result.text)" = "$(printf '     1\tfirst\n     2\tsecond\n')" ]
	[ "$(cat "$REPO/w.txt")" = "$(printf 'first\nsecond')" ]
	rm -f "$REPO/w.txt"
}

@test "<search> finds a word" {
	run feed '<search zanzibar>' --json
	[ "$status" -eq 0 ]
	[ "$(jl 1 result.hits.0.path)" = src/main.c ]
	[ "$(jl 1 result.hits.0.line)" = 3 ]
}

@test "<grep> and <tree>" {
	run feed '<grep "return [0-9]" src><grep zanzibar><tree><tree src>' --json
	[ "$status" -eq 0 ]
	[ "$(jl 1 result.matches.0.path)" = src/main.c ]
	[ "$(jl 1 result.matches.0.line)" = 3 ]
	[ "$(jl 2 result.matches.0.path)" = src/main.c ]
	[ "$(jl 3 result.entries)" = '["README.md", "src/", "src/main.c"]' ]
	[ "$(jl 4 result.entries)" = '["main.c"]' ]
	run feed '<grep secret><tree ../>' --json
	[ "$status" -eq 1 ]
	[ "$(jl 1 result.matches)" = '[]' ]
	[ "$(jl 2 error.code)" = OUTSIDE_ROOT ]
	run feed '<grep (unclosed>' --json
	[ "$(jl 1 error.category)" = SYNTAX ]
	[ "$(jl 1 error.code)" = BAD_PATTERN ]
}

@test "<tree> of an empty directory says (empty), and its JSON says so" {
	mkdir -p "$REPO/hollow"
	run feed '<tree hollow>'
	[ "$status" -eq 0 ]
	[ "$(tail -n 1 <<<"$output")" = "(empty)" ]
	run feed '<tree hollow><tree src>' --json
	[ "$status" -eq 0 ]
	[ "$(jl 1 result.entries)" = '[]' ]
	[ "$(jl 1 result.empty)" = true ]
	[ "$(jl 2 result.empty)" = false ]
	rmdir "$REPO/hollow"
}

@test "--json lines are UTF-8 whatever bytes a file name or an argument held" {
	mkdir -p "$REPO/names"
	touch "$REPO/names/caf"$'\xe9'".txt"
	run feed $'<tree names><grep x names/caf\xe9.txt><open nothere\xff>' --json
	printf '%s\n' "$output" >"$TR_DIR/names.jsonl"
	rm -r "$REPO/names"
	run "$PY" -c '
import json, sys
lines = [json.loads(l.decode("utf-8")) for l in open(sys.argv[1], "rb")]
assert lines[0]["result"]["entries"] == ["caf\ufffd.txt"], lines[0]
assert lines[1]["argument"] == "x names/caf\ufffd.txt", lines[1]
assert "nothere\ufffd" in lines[2]["error"]["message"], lines[2]
print(len(lines))' "$TR_DIR/names.jsonl"
	printf '%s\n' "$output"
	[ "$output" = 3 ]
}

@test "<exec> is refused without --exec-enabled, and runs with it" {
	run feed '<exec echo hi>' --json
	[ "$status" -eq 1 ]
	[ "$(jl 1 error.category)" = VALIDATION ]
	[ "$(jl 1 error.code)" = EXEC_DISABLED ]
	run feed '<exec echo hi>' --json --exec-enabled
	[ "$status" -eq 0 ]
	[ "$(jl 1 ok)" = true ]
	[ "$(jl 1 result.stdout)" = hi ]
	[ "$(jl 1 result.exit_code)" = 0 ]
}

@test "<exec>: cd persists, '>' in quotes, a non-zero exit fails the command" {
	run feed "<exec cd src><exec pwd; echo 'a>b'><exec (exit 3)><exec exit 4><exec pwd>" \
		--json --exec-enabled
	[ "$status" -eq 1 ]
	[ "$(jl 1 ok)" = true ]
	[ "$(jl 2 result.stdout)" = "$(printf '%s\na>b' "$REPO/src")" ]
	[ "$(jl 3 ok)" = false ]
	[ "$(jl 3 result.exit_code)" = 3 ]
	[ "$(jl 3 error.category)" = EXECUTION ]
	[ "$(jl 3 error.code)" = EXIT_STATUS ]
	# `exit` ends the session's bash: the next <exec> runs in a new one.
	[ "$(jl 4 result.exit_code)" = 4 ]
	[ "$(jl 4 result.state)" = closed ]
	[ "$(jl 5 ok)" = true ]
	[ "$(jl 5 result.stdout)" = "$REPO" ]
	[ "$(jl 5 result.session)" != "$(jl 1 result.session)" ]
}

@test "--session ID: <exec> runs in a session of the caller's, left open" {
	local sid
	sid=$("$TR_CLI" session new --cwd "$REPO")
	run feed '<exec cd src; X=kept>' --json --exec-enabled --session "$sid"
	[ "$status" -eq 0 ]
	[ "$(jl 1 result.session)" = "$sid" ]
	run "$TR_CLI" session run "$sid" -- 'echo "$X $PWD"'
	[ "$status" -eq 0 ]
	[ "$output" = "kept $REPO/src" ]
	run "$TR_CLI" session close "$sid"
	[ "$status" -eq 0 ]
	run feed '<exec true>' --json --exec-enabled --session "$sid"
	[ "$status" -eq 1 ]
	[ "$(jl 1 error.code)" = SESSION_ERROR ]
}

@test "an <exec> past --timeout is interrupted: RESOURCE TIMEOUT, exit 124, the session goes on" {
	run feed '<exec echo start; sleep 30><exec echo after>' --json --exec-enabled --timeout 1
	[ "$status" -eq 124 ]
	[ "$(jl 1 error.category)" = RESOURCE ]
	[ "$(jl 1 error.code)" = TIMEOUT ]
	[ "$(jl 1 result.stdout)" = start ]
	[ "$(jl 2 ok)" = true ]
	[ "$(jl 2 result.stdout)" = after ]
}

@test "an <exec> waiting for input is interrupted at once: EXECUTION WAITING_INPUT, not a timeout" {
	# The long --timeout would be waited out if the wait were not seen.
	run feed '<exec printf "Name? "; read x><exec echo after>' --json --exec-enabled --timeout 60
	[ "$status" -eq 1 ]
	[ "$(jl 1 error.category)" = EXECUTION ]
	[ "$(jl 1 error.code)" = WAITING_INPUT ]
	[ "$(jl 1 result.stdout)" = 'Name? ' ]
	[ "$(jl 2 ok)" = true ]
	[ "$(jl 2 result.stdout)" = after ]
}

@test "a live stream: a command's answer comes before the input ends" {
	local fifo="$TR_DIR/live.fifo" out="$TR_DIR/live.out"
	mkfifo "$fifo"
	tags --json --exec-enabled <"$fifo" >"$out" 2>&1 &
	local pid=$!
	local w
	# Not fd 3: bats reports on it.
	exec {w}>"$fifo"
	printf 'thinking... <exec echo live>' >&"$w"
	wait_for 20 grep -q '"stdout":"live' "$out"
	# Still reading: the input has not ended.
	run gone "$pid"
	[ "$status" -ne 0 ]
	printf ' and <open README.md>' >&"$w"
	wait_for 20 grep -q '"command":"open"' "$out"
	exec {w}>&-
	wait "$pid"
	[ "$(wc -l <"$out")" -eq 2 ]
	rm -f "$fifo" "$out"
}

@test "a stream fed byte by byte, slowly, gives the JSON it gives whole" {
	local text=$'a < b <open README.md> <write s.txt>x</wri\nte></write>\n<exec echo "1>2">, <tree src>'
	# With the text too: one object for each stretch of it.
	run feed "$text" --json --exec-enabled --passthrough
	[ "$status" -eq 0 ]
	[ "$(jl 1 text)" = 'a < b ' ]
	local whole
	whole=$(normalise <<<"$output")
	rm "$REPO/s.txt"
	slow() {
		local i
		for ((i = 0; i < ${#text}; i++)); do
			printf '%s' "${text:i:1}"
			sleep 0.01
		done
	}
	local bytes
	bytes=$(slow | tags --json --exec-enabled --passthrough | normalise)
	[ "$bytes" = "$whole" ]
	[ "$(cat "$REPO/s.txt")" = "$(printf 'x</wri\nte>')" ]
	rm -f "$REPO/s.txt"
}

@test "text mode: a block per command; --passthrough echoes the text" {
	run feed 'Read <open README.md> please.' --json --passthrough
	[ "$status" -eq 0 ]
	[ "$(jl 1 text)" = 'Read ' ]
	[ "$(jl 2 command)" = open ]
	[ "$(jl 3 text)" = ' please.' ]
	run feed 'Read <open README.md> please.'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = '==> [1] open README.md (line 1) <==' ]
	[ "${lines[1]}" = "$(printf '     1\thello')" ]
	[ "${#lines[@]}" -eq 3 ]
	run feed 'Read <open README.md> please.' --passthrough
	[ "${lines[0]}" = 'Read ' ]
	[ "${lines[1]}" = '==> [1] open README.md (line 1) <==' ]
	[ "${lines[4]}" = ' please.' ]
	run feed '<open nope.txt>'
	[ "$status" -eq 1 ]
	[[ "${lines[1]}" == 'error: EXECUTION NOT_FOUND: '* ]]
}

@test "exit statuses: 0, 1, 2 and 124" {
	run feed 'no commands at all'
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run feed '<open README.md><open nope>'
	[ "$status" -eq 1 ]
	run feed '<open README.md>' --no-such-flag
	[ "$status" -eq 2 ]
	run "$TR_CLI" tags --root "$REPO/README.md" </dev/null
	[ "$status" -eq 2 ]
	run "$TR_CLI" tags --root "$REPO/none" </dev/null
	[ "$status" -eq 2 ]
	run tags "$TR_DIR/no-such-input"
	[ "$status" -eq 2 ]
	run feed '<open README.md>' --timeout 0
	[ "$status" -eq 2 ]
	run feed '<exec sleep 30>' --exec-enabled --timeout 0.5
	[ "$status" -eq 124 ]
}

@test "options take --opt=value too; an unknown option or one without its value is a usage error naming it" {
	run "$TR_CLI" tags --root="$REPO" --index="$TR_DIR/index.sqlite" --json <<<'<open README.md>'
	[ "$status" -eq 0 ]
	[ "$(jl 1 ok)" = true ]
	run feed '<exec sleep 30>' --exec-enabled --timeout=0.5
	[ "$status" -eq 124 ]
	for bad in --bogus --json=1 -x --timeout; do
		run --separate-stderr feed '<open README.md>' "$bad"
		[ "$status" -eq 2 ]
		[ "${stderr%%$'\n'*}" = "toolrun tags: unknown option or missing value: $bad" ]
		[ -z "$output" ]
	done
}

@test "--json golden transcript" {
	rm -f "$REPO/golden.txt"
	run tags --json --exec-enabled "$GOLDEN/basic.in"
	[ "$status" -eq 1 ]
	# TOOLRUN_UPDATE_GOLDEN=1 writes the file anew, to be read and committed.
	if [ -n "${TOOLRUN_UPDATE_GOLDEN:-}" ]; then
		normalise <<<"$output" >"$GOLDEN/basic.jsonl"
	fi
	diff -u "$GOLDEN/basic.jsonl" <(normalise <<<"$output")
	rm -f "$REPO/golden.txt"
}

@test "garbage: random bytes and an unterminated <write> end with SYNTAX, no hang" {
	head -c 65536 /dev/urandom >"$TR_DIR/random.bin"
	run timeout 30 "$TR_CLI" tags --root "$REPO" --json "$TR_DIR/random.bin"
	[ "$status" -le 1 ]
	run bash -c 'tr -dc "<>a-z /\n" </dev/urandom | head -c 20000 | sed "s/exec/xx/g" >"$1"' _ \
		"$TR_DIR/tags.txt"
	run timeout 30 "$TR_CLI" tags --root "$REPO" --json "$TR_DIR/tags.txt"
	[ "$status" -le 1 ]
	run feed '<write u.txt>never </wri' --json
	[ "$status" -eq 1 ]
	[ "$(jl 1 error.category)" = SYNTAX ]
	[ "$(jl 1 error.code)" = UNTERMINATED ]
	[ ! -e "$REPO/u.txt" ]
	run feed 'x <open> <write' --json
	[ "$status" -eq 1 ]
	[ "$(jl 1 error.code)" = MISSING_ARGUMENT ]
	[ "$(jl 2 error.code)" = UNTERMINATED ]
	[ "$(jl 2 index)" = 2 ]
}

@test "file commands are audited by toolrund; without it, tags says so once and goes on" {
	run feed '<open README.md>' --json
	[ "$status" -eq 0 ]
	wait_for 10 grep -q '"kind":"front".*"front":"tags".*"tool":"open"' "$TR_DIR/audit.jsonl"
	TOOLRUN_CONFIG="$TR_DIR/none.conf"
	tr_write_config "$TOOLRUN_CONFIG"
	sed -i "s|^socket = .*|socket = $TR_DIR/absent.sock|" "$TOOLRUN_CONFIG"
	run feed '<open README.md><open src/main.c>' --json
	[ "$status" -eq 0 ]
	[ "$(grep -c 'cannot be reached' <<<"$output")" -eq 1 ]
}
