#!/usr/bin/env bats
# `toolrun mcp` driven by real MCP clients over stdio: the official SDK's
# Client (test/mcp/client.mjs, one scenario a test) and the MCP
# Inspector's CLI mode, against this file's own toolrund.
#
# The clients come from test/mcp/node_modules (scripts/setup-deps.sh runs
# `npm ci` there); nothing is fetched at test time. Without them (or
# without node) every test is skipped with the reason, except under
# CI=true, where that is a failure.

load helpers

MCP_DIR="$TOOLRUN_SOURCE/test/mcp"
PY=$(command -v /usr/bin/python3 || command -v python3)

# Why the clients cannot run here, if they cannot.
mcp_missing() {
	if ! command -v node >/dev/null 2>&1; then
		echo "node is not installed"
	elif [ ! -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
		[ ! -f "$MCP_DIR/node_modules/@modelcontextprotocol/inspector/package.json" ]; then
		echo "test/mcp/node_modules is missing (scripts/setup-deps.sh runs npm ci there)"
	fi
}

setup_file() {
	local why
	why=$(mcp_missing)
	if [ -n "$why" ]; then
		if [ "${CI-}" = true ]; then
			echo "25-mcp: $why; under CI=true the MCP clients must be installed" >&2
			return 1
		fi
		export MCP_SKIP="MCP client tests skipped: $why"
		return 0
	fi
	tr_start
	MCP_ROOT="$TR_DIR/root"
	mkdir -p "$MCP_ROOT"
	export MCP_ROOT
}

teardown_file() {
	[ -n "${MCP_SKIP-}" ] || tr_stop
}

setup() {
	[ -z "${MCP_SKIP-}" ] || skip "$MCP_SKIP"
}

# scenario NAME: client.mjs's scenario against `toolrun mcp --root ROOT`;
# its TAP lines are in the output when it fails.
scenario() {
	run --separate-stderr timeout 300 node "$MCP_DIR/client.mjs" --scenario "$1" -- \
		"$TR_CLI" mcp --root "$MCP_ROOT"
	printf '%s\n' "$output"
	[ -z "$stderr" ] || printf 'stderr: %s\n' "$stderr"
	[ "$status" -eq 0 ]
	[[ $output == *"ok 1 - $1"* ]]
}

@test "25-mcp: initialize, both protocol versions; an unknown one gets the latest" {
	scenario initialize
}

@test "25-mcp: tools/list: nine tools, each with input and output schemas" {
	scenario tools-list
}

@test "25-mcp: each tool once, its result valid against its outputSchema" {
	scenario tools-each
}

@test "25-mcp: a session across calls: cd and export kept; input to a waiting command" {
	scenario session
}

@test "25-mcp: seq 1 100000: cut with a marker, the whole in the spill file" {
	scenario large-output
}

@test "25-mcp: a cancelled call interrupts its command" {
	scenario cancel
}

@test "25-mcp: a cancelled call in another session interrupts that one, not the server's own" {
	scenario cancel-other-session
}

@test "25-mcp: a cancellation on the wire: no answer for it, pings answered meanwhile" {
	scenario cancel-raw
}

@test "25-mcp: progress notifications while a command runs" {
	scenario progress
}

@test "25-mcp: paths outside the root are refused (VALIDATION)" {
	scenario paths
}

@test "25-mcp: arguments a tool does not accept" {
	scenario bad-arguments
}

@test "25-mcp: garbage on stdin gets JSON-RPC errors; the server goes on; EOF ends it with 0" {
	scenario garbage
}

@test "25-mcp: requests in flight at once" {
	scenario concurrent
}

@test "25-mcp: pipelined calls cancelled in the same write never run; a ping behind them is answered at once" {
	scenario pipelined
}

@test "25-mcp: bash_kill: a command that ignores Ctrl-C is killed, the shell and its state kept" {
	scenario kill
}

# exec_command and write_stdin: each scenario starts its servers with
# --tools codex or --tools all itself.
@test "25-mcp: --tools codex and all: exec_command and write_stdin listed, schemas valid (ajv)" {
	scenario codex-list
}

@test "25-mcp: exec_command: a quick command's exit code, no session; one that runs on gets a session_id; write_stdin polls to its end" {
	scenario codex-exec
}

@test "25-mcp: exec_command: a prompt gives waiting_input at once; write_stdin with y and a newline finishes it" {
	scenario codex-prompt
}

@test "25-mcp: exec_command: a cut output's fields, its spill file readable; max_output_tokens lowers what is shown" {
	scenario codex-cut
}

@test "25-mcp: exec_command tty=true runs on a terminal" {
	scenario codex-tty
}

@test "25-mcp: exec_command workdir: under the root, outside it refused" {
	scenario codex-workdir
}

# ---------------------------------------------------------------------
# The server and its session, over raw lines.

# rpc ID TOOL ARGS_JSON: one tools/call line.
rpc() {
	printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' \
		"$1" "$2" "$3"
}

# The ids of the sessions toolrund lists, one a line.
listed_sessions() {
	"$TR_CLI" session list --json |
		"$PY" -c 'import json, sys
for s in json.load(sys.stdin)["sessions"]: print(s["session"])'
}

# session_of FILE: the session named by the first result in FILE (the
# server's output).
session_of() {
	"$PY" -c 'import json, sys
for line in open(sys.argv[1], "rb"):
    m = json.loads(line)
    sc = m.get("result", {}).get("structuredContent")
    if sc and "session" in sc:
        print(sc["session"]); break' "$1"
}

@test "25-mcp: at the end of its input the server closes the session it made" {
	rpc 1 bash '{"command":"echo made"}' | "$TR_CLI" mcp --root "$MCP_ROOT" >"$TR_DIR/eof.out"
	local sid
	sid=$(session_of "$TR_DIR/eof.out")
	[[ "$sid" =~ ^[0-9a-f]{8}$ ]]
	run listed_sessions
	[ "$status" -eq 0 ]
	[[ "$output" != *"$sid"* ]]
}

@test "25-mcp: --keep-sessions keeps it; a session named by --session is never the server's to close" {
	rpc 1 bash '{"command":"echo kept"}' |
		"$TR_CLI" mcp --root "$MCP_ROOT" --keep-sessions >"$TR_DIR/keep.out"
	local sid other
	sid=$(session_of "$TR_DIR/keep.out")
	[[ "$sid" =~ ^[0-9a-f]{8}$ ]]
	[[ "$(listed_sessions)" == *"$sid"* ]]
	other=$("$TR_CLI" session new)
	rpc 1 bash '{"command":"echo named"}' |
		"$TR_CLI" mcp --root "$MCP_ROOT" --session "$other" >"$TR_DIR/named.out"
	[ "$(session_of "$TR_DIR/named.out")" = "$other" ]
	[[ "$(listed_sessions)" == *"$other"* ]]
	"$TR_CLI" session close "$sid"
	"$TR_CLI" session close "$other"
}

# toolrun_session_of FILE: the toolrund session named by the first
# exec_command result in FILE.
toolrun_session_of() {
	"$PY" -c 'import json, sys
for line in open(sys.argv[1], "rb"):
    sc = json.loads(line).get("result", {}).get("structuredContent")
    if sc and "toolrun_session" in sc:
        print(sc["toolrun_session"]); break' "$1"
}

@test "25-mcp: at the end of its input the server closes the sessions exec_command left running, unless --keep-sessions" {
	rpc 1 exec_command '{"cmd":"sleep 300","yield_time_ms":0}' |
		"$TR_CLI" mcp --root "$MCP_ROOT" --tools codex >"$TR_DIR/exec-eof.out"
	local sid
	sid=$(toolrun_session_of "$TR_DIR/exec-eof.out")
	grep -q '"session_id":1,"state":"running"' "$TR_DIR/exec-eof.out"
	[[ "$sid" =~ ^[0-9a-f]{8}$ ]]
	run listed_sessions
	[ "$status" -eq 0 ]
	[[ "$output" != *"$sid"* ]]
	wait_for 20 eval '! session_processes_of "$sid"'
	# --keep-sessions leaves it running, for toolrun session.
	rpc 1 exec_command '{"cmd":"sleep 300","yield_time_ms":0}' |
		"$TR_CLI" mcp --root "$MCP_ROOT" --tools codex --keep-sessions >"$TR_DIR/exec-keep.out"
	sid=$(toolrun_session_of "$TR_DIR/exec-keep.out")
	[[ "$sid" =~ ^[0-9a-f]{8}$ ]]
	run listed_sessions
	[ "$status" -eq 0 ]
	[[ "$output" == *"$sid"* ]]
	"$TR_CLI" session close "$sid"
}

@test "25-mcp: exec_command: max_output_tokens must be an integer from 1; the refusal names the arguments" {
	local bad
	for bad in 1.5 0 -3 '"8"'; do
		rpc 1 exec_command "{\"cmd\":\"echo never\",\"max_output_tokens\":$bad}" |
			"$TR_CLI" mcp --root "$MCP_ROOT" --tools codex >"$TR_DIR/tokens.out"
		grep -q '"isError":true' "$TR_DIR/tokens.out"
		grep -q 'max_output_tokens an integer from 1' "$TR_DIR/tokens.out"
		run grep -c '"exit_code"' "$TR_DIR/tokens.out"
		[ "$output" = 0 ]
	done
	rpc 1 exec_command '{"cmd":"echo ran","max_output_tokens":2}' |
		"$TR_CLI" mcp --root "$MCP_ROOT" --tools codex >"$TR_DIR/tokens.out"
	grep -q '"exit_code":0' "$TR_DIR/tokens.out"
}

@test "25-mcp: --tools takes toolrun, codex or all" {
	run --separate-stderr "$TR_CLI" mcp --root "$MCP_ROOT" --tools bash </dev/null
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--tools takes toolrun, codex or all"* ]]
	rpc 1 exec_command '{"cmd":"echo hidden"}' | "$TR_CLI" mcp --root "$MCP_ROOT" >"$TR_DIR/notools.out"
	grep -q '"code":-32602,"message":"unknown tool: exec_command' "$TR_DIR/notools.out"
}

@test "25-mcp: options take --opt=value too; an unknown option or one without its value is a usage error naming it" {
	echo "under the equals root" >"$MCP_ROOT/equals.txt"
	{
		rpc 1 read_file '{"path":"equals.txt"}'
		rpc 2 exec_command '{"cmd":"echo codex-by-equals"}'
	} | "$TR_CLI" mcp --root="$MCP_ROOT" --tools=codex >"$TR_DIR/equals.out"
	grep -q 'under the equals root' "$TR_DIR/equals.out"
	grep -q 'codex-by-equals' "$TR_DIR/equals.out"
	run --separate-stderr "$TR_CLI" mcp --root="$MCP_ROOT" --tools=bash </dev/null
	[ "$status" -eq 2 ]
	[ "${stderr%%$'\n'*}" = "toolrun mcp: --tools takes toolrun, codex or all" ]
	local bad
	for bad in --bogus --keep-sessions=1 -x --root; do
		run --separate-stderr "$TR_CLI" mcp --tools codex "$bad" </dev/null
		[ "$status" -eq 2 ]
		[ "${stderr%%$'\n'*}" = "toolrun mcp: unknown option or missing value: $bad" ]
		[ -z "$output" ]
	done
	# toolrun mcp takes no words, after "--" either.
	run --separate-stderr "$TR_CLI" mcp --tools codex -- stray </dev/null
	[ "$status" -eq 2 ]
	[ "${stderr%%$'\n'*}" = "toolrun mcp: unknown option: stray" ]
	[ -z "$output" ]
}

# A process carries TOOLRUN_SESSION=ID in its environment.
session_processes_of() {
	grep -qzx "TOOLRUN_SESSION=$1" /proc/[0-9]*/environ 2>/dev/null
}

@test "25-mcp: SIGTERM, SIGHUP and SIGINT close the server's session, and the command running in it" {
	local sig sid pid st
	for sig in TERM HUP INT; do
		rm -f "$TR_DIR/in.fifo" "$TR_DIR/sig.out"
		mkfifo "$TR_DIR/in.fifo"
		"$TR_CLI" mcp --root "$MCP_ROOT" <"$TR_DIR/in.fifo" >"$TR_DIR/sig.out" &
		pid=$!
		exec 7>"$TR_DIR/in.fifo"
		rpc 1 bash '{"command":"sleep 300","timeout":0.5}' >&7
		wait_for 60 grep -q '"state":"running"' "$TR_DIR/sig.out"
		sid=$(session_of "$TR_DIR/sig.out")
		[[ "$(listed_sessions)" == *"$sid"* ]]
		kill -"$sig" "$pid"
		# The server ends by the signal, its input still open.
		st=0
		wait "$pid" || st=$?
		exec 7>&-
		[ "$st" -eq $((128 + $(kill -l "$sig"))) ]
		[[ "$(listed_sessions)" != *"$sid"* ]]
		wait_for 20 eval '! session_processes_of "$sid"'
	done
}

@test "25-mcp: every line the server writes is UTF-8 JSON: a path of bytes \\xff\\xfe, a command's bytes" {
	{
		printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"bad\xff\xfename"}}}\n'
		rpc 2 bash '{"command":"printf \"text that stays text, with one stray byte: \\\\377 here\\\\n\""}'
		printf '{"jsonrpc":"2.0","id":3,"method":"no/such/\xff"}\n'
	} | "$TR_CLI" mcp --root "$MCP_ROOT" >"$TR_DIR/utf8.out"
	run "$PY" -c '
import json, sys
texts = {}
for raw in open(sys.argv[1], "rb"):
    m = json.loads(raw.decode("utf-8"))  # strict: a byte that is not UTF-8 fails
    r = m.get("result") or m.get("error")
    texts[m["id"]] = r["content"][0]["text"] if "content" in r else r["message"]
assert "bad\ufffd\ufffdname" in texts[1], texts[1]
assert "byte: \ufffd here" in texts[2], texts[2]
assert "no/such/\ufffd" in texts[3], texts[3]
print(len(texts))' "$TR_DIR/utf8.out"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
	[ "$output" = 3 ]
}

@test "25-mcp: the last line of a bash result repeats the cut: range and spill file; none while it runs" {
	{
		rpc 1 bash '{"command":"seq 1 100000; echo err >&2"}'
		rpc 2 bash '{"command":"seq 1 100000; sleep 2","timeout":0.5}'
		rpc 3 bash_output '{"timeout":30}'
	} | "$TR_CLI" mcp --root "$MCP_ROOT" >"$TR_DIR/cut.out"
	run "$PY" -c '
import json, re, sys
r = {}
for raw in open(sys.argv[1], "rb"):
    m = json.loads(raw)
    r[m["id"]] = m["result"]
for i in (1, 3):
    sc, text = r[i]["structuredContent"], r[i]["content"][0]["text"]
    marker = re.search(r"\.\.\.\[toolrun cut \d+ lines \(\d+ bytes\) of stdout here: (lines \d+-\d+ of 100000);", sc["stdout"])
    assert marker, sc["stdout"][:300]
    last = text.split("\n")[-1]
    assert last == "[cut: stdout %s (at the marker above); the whole stdout is in %s]" % (marker.group(1), sc["stdout_spill"]), last
running = r[2]["content"][0]["text"].split("\n")[-1]
assert r[2]["structuredContent"]["state"] == "running" and running.startswith("[still running"), running
assert "cut" not in running, running
print("ok")' "$TR_DIR/cut.out"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

# ---------------------------------------------------------------------
# The MCP Inspector's CLI mode (the local copy: no network).

# inspector ARGS...: `mcp-inspector --cli` against toolrun mcp (with
# --session $MCP_SESSION when that is set); the answer (JSON) in $output.
inspector() {
	# Each call is a server of its own: the session the first makes must
	# outlive it for the calls that name it.
	local server=("$TR_CLI" mcp --root "$MCP_ROOT" --keep-sessions)
	[ -z "${MCP_SESSION-}" ] || server+=(--session "$MCP_SESSION")
	run --separate-stderr timeout 120 env -C "$MCP_DIR" npm_config_offline=true \
		npx --no-install @modelcontextprotocol/inspector --cli \
		-e TOOLRUN_CONFIG="$TOOLRUN_CONFIG" -e TR_MARK="$TR_MARK" \
		"${server[@]}" "$@"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
}

# jget EXPR [JSON]: a Python expression over the answer `r` (the JSON in
# $output), or over JSON as `r0`.
jget() {
	"$PY" -c 'import json, sys; r = r0 = json.loads(sys.argv[2]); v = eval(sys.argv[1]); print(v if isinstance(v, str) else json.dumps(v))' "$1" "${2-$output}"
}

# inspector_tool NAME ARGS...: tools/call through the Inspector; fails
# unless the result is a success with structuredContent.
inspector_tool() {
	local name=$1
	shift
	local a targs=()
	for a in "$@"; do targs+=(--tool-arg "$a"); done
	inspector --method tools/call --tool-name "$name" "${targs[@]}"
	[ "$(jget 'r.get("isError", False)')" = false ]
	[ "$(jget '"structuredContent" in r')" = true ]
}

@test "25-mcp: Inspector CLI: tools/list" {
	inspector --method tools/list
	[ "$(jget 'sorted(t["name"] for t in r["tools"])')" = \
		'["bash", "bash_input", "bash_interrupt", "bash_kill", "bash_output", "edit_file", "read_file", "search", "write_file"]' ]
	[ "$(jget 'all("outputSchema" in t and "inputSchema" in t for t in r["tools"])')" = true ]
}

@test "25-mcp: Inspector CLI: each tool once" {
	unset MCP_SESSION
	inspector_tool bash 'command=echo inspected; printf "%s\n" one two > insp.txt'
	[ "$(jget 'r["structuredContent"]["stdout"]')" = inspected ]
	local first=$output
	[ "$(jget 'r["structuredContent"]["exit_code"]')" = 0 ]
	inspector_tool read_file path=insp.txt
	[ "$(jget 'r["structuredContent"]["total_lines"]')" = 2 ]
	inspector_tool write_file path=insp2.txt 'content=inspector wrote this'
	[ "$(jget 'r["structuredContent"]["created"]')" = true ]
	inspector_tool edit_file path=insp2.txt old_string=wrote new_string=edited
	[ "$(jget 'r["structuredContent"]["replacements"]')" = 1 ]
	[ "$(cat "$MCP_ROOT/insp2.txt")" = "inspector edited this" ]
	inspector_tool search query=inspector
	[ "$(jget 'any(h["path"].endswith("insp2.txt") for h in r["structuredContent"]["hits"])')" = true ]
	# Each Inspector call is a server of its own: the session tools go to
	# the first call's session (--session), where a command is left running.
	MCP_SESSION=$(jget 'r0["structuredContent"]["session"]' "$first")
	inspector_tool bash 'command=sleep 30; echo slept' timeout=1
	[ "$(jget 'r["structuredContent"]["state"]')" = running ]
	[ "$(jget 'r["structuredContent"]["session"]')" = "$MCP_SESSION" ]
	inspector_tool bash_output timeout=1
	[ "$(jget 'r["structuredContent"]["state"]')" = running ]
	inspector_tool bash_interrupt timeout=5
	[ "$(jget 'r["structuredContent"]["state"]')" = done ]
	# Ctrl-C: bash reports 130, or the signal itself.
	[ "$(jget 'r["structuredContent"]["signal"] == "SIGINT" or r["structuredContent"]["exit_code"] == 130')" = true ]
	inspector_tool bash 'command=read x; echo "got $x"' timeout=5
	[ "$(jget 'r["structuredContent"]["state"]')" = waiting_input ]
	inspector_tool bash_input text=hello timeout=5
	[ "$(jget 'r["structuredContent"]["state"]')" = done ]
	[ "$(jget 'r["structuredContent"]["stdout"]')" = "got hello" ]
	"$TR_CLI" session close "$MCP_SESSION"
}

@test "25-mcp: Inspector CLI: a path outside the root is a tool error" {
	inspector --method tools/call --tool-name read_file --tool-arg path=/etc/passwd
	[ "$(jget 'r.get("isError")')" = true ]
	[[ "$(jget 'r["content"][0]["text"]')" == VALIDATION\ * ]]
}
