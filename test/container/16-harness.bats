#!/usr/bin/env bats
# A harness's own traffic through a real `docker exec` (README.md, "Using
# toolrun from an agent harness"): the programs it runs directly (tar,
# cat FILE, diff, git diff, a test script, a stdio server) pass every
# byte and their status, compared with the same bytes made with toolrun
# off (-e TOOLRUN=off -e LD_PRELOAD=); the model's command strings (bash
# -lc) are still shaped; TOOLRUN=agent and TOOLRUN=off move one exec
# across that line.

load helpers

setup_file() {
	ct_setup_file || return 1
	[ -z "${CT_SKIP-}" ] || return 0
	local fix=$BATS_FILE_TMPDIR/fixture
	make_fixture "$fix"
	# Put in place with toolrun off: the tests' subject is not their set-up.
	tar -C "$fix" -cf - proj run-tests.sh server.awk server.py |
		docker exec -i -u sandbox -e TOOLRUN=off "$CT_BOX" tar -C /workspace -xf -
}
teardown_file() { ct_teardown_file; }
setup() {
	ct_setup
	FIX=$BATS_FILE_TMPDIR/fixture
}

# make_fixture DIR: a tree with text files over the budget (4000 bytes,
# 200 lines), UTF-8, a line longer than the budget, binary files, an
# empty file and a name with a space; a test script; two stdio servers.
make_fixture() {
	local f=$1
	mkdir -p "$f/proj/src" "$f/proj/data" "$f/proj/with space"
	seq 1 20000 >"$f/proj/src/numbers.txt"
	awk 'BEGIN { for (i = 1; i <= 3000; i++) printf "line %d: h\303\251llo w\303\266rld \342\234\223\n", i }' \
		>"$f/proj/src/utf8.txt"
	head -c 30000 /dev/zero | tr '\0' x >"$f/proj/src/one-long-line.txt"
	head -c 300000 /dev/urandom >"$f/proj/data/random.bin"
	head -c 65536 /dev/zero >"$f/proj/data/zeros.bin"
	cp /bin/true "$f/proj/data/true.elf"
	: >"$f/proj/empty"
	printf 'a name with a space\n' >"$f/proj/with space/file one.txt"
	chmod -R u+rwX,go+rX "$f/proj"
	test_script >"$f/run-tests.sh"
	chmod 0755 "$f/run-tests.sh"
	awk_server >"$f/server.awk"
	py_server >"$f/server.py"
}

# An evaluation run: 3000 result lines, three failures (their details on
# stderr), listed tools writing below it (cat, grep, awk, sed), a summary,
# status 1.
test_script() {
	cat <<-'EOF'
	#!/bin/bash
	for i in $(seq 1 3000); do
		if [ $((i % 1000)) -eq 0 ]; then
			echo "not ok $i - case $i"
			echo "case $i: expected 1, got 2" >&2
		else
			echo "ok $i - case $i"
		fi
	done
	cat proj/src/numbers.txt | grep -c 7
	awk 'END { print "# " NR " numbers" }' proj/src/numbers.txt
	sed -n '1,300p' proj/src/utf8.txt >&2
	echo "# 3 failed"
	exit 1
	EOF
}

# A stdio MCP server in gawk, which both images have (the base image has
# neither python3 nor node): newline-delimited JSON-RPC 2.0, enough for a
# client to initialize, list 40 tools (about 7 KB in one line) and call
# one, which returns N lines.
awk_server() {
	cat <<-'EOF'
	function field(re,   m) { return match($0, re, m) ? m[1] : "" }
	function reply(id, result) {
		printf "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n", id, result
		fflush()
	}
	{
		id = field("\"id\":(\"[^\"]*\"|-?[0-9]+)")
		method = field("\"method\":\"([^\"]*)\"")
		if (id == "")
			next
		if (method == "initialize") {
			reply(id, "{\"protocolVersion\":\"" field("\"protocolVersion\":\"([^\"]*)\"") \
				"\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"awk-box\",\"version\":\"1.0\"}}")
		} else if (method == "tools/list") {
			s = ""
			for (i = 1; i <= 40; i++)
				s = s (i > 1 ? "," : "") "{\"name\":\"tool_" i "\",\"description\":\"Tool " i \
					" of 40, described at enough length that the list is longer than the budget.\"," \
					"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}}"
			reply(id, "{\"tools\":[" s "]}")
		} else if (method == "tools/call") {
			n = field("\"n\":([0-9]+)") + 0
			s = ""
			for (i = 1; i <= n; i++)
				s = s "line " i "\\n"
			reply(id, "{\"content\":[{\"type\":\"text\",\"text\":\"" s "\"}]}")
		} else {
			reply(id, "{}")
		}
	}
	EOF
}

# The same server in python3 (the dev image has it).
py_server() {
	cat <<-'EOF'
	import json, sys
	for line in sys.stdin:
	    msg = json.loads(line)
	    if "id" not in msg:
	        continue
	    method, params = msg["method"], msg.get("params", {})
	    if method == "initialize":
	        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
	                  "serverInfo": {"name": "py-box", "version": "1.0"}}
	    elif method == "tools/list":
	        result = {"tools": [{"name": f"tool_{i}",
	                             "description": f"Tool {i} of 40, described at enough length that the list is longer than the budget.",
	                             "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
	                            for i in range(1, 41)]}
	    elif method == "tools/call":
	        n = params["arguments"]["n"]
	        result = {"content": [{"type": "text", "text": "".join(f"line {i}\n" for i in range(1, n + 1))}]}
	    else:
	        result = {}
	    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
	EOF
}

# ref ARGS...: the same program in the box without toolrun (neither the
# library nor its switch): the bytes to compare with.
ref() {
	docker exec -u sandbox -e TOOLRUN=off -e LD_PRELOAD= "$CT_BOX" "$@"
}

# The servers the box can run: gawk's always, python3's where it has one.
servers() {
	echo "gawk -f /workspace/server.awk"
	if ref sh -c 'command -v python3' >/dev/null; then
		echo "python3 /workspace/server.py"
	fi
}

# The number of job lines once every job before has been logged: a marker
# job (head, in a terminal, so no command) is logged after them.
settled_job_count() {
	local before
	before=$(ct_job_count)
	docker exec -u sandbox -t "$CT_BOX" bash -c 'head -c 0 /dev/null' >/dev/null || return 1
	ct_wait_job "$before" ' tool=head .* exit=0 ' >/dev/null || return 1
	ct_job_count
}

# no_command_since N: toolrund ran no agent command after the first N job
# lines (listed tools may have run).
no_command_since() {
	settled_job_count >/dev/null || return 1
	if ct_new_jobs "$1" | grep -E ' command='; then
		echo "agent commands logged after job line $1 (above)" >&2
		return 1
	fi
}

# shaped OUTPUT FILE: OUTPUT is FILE (in the box, 20000 short lines) as
# the budget shapes it: 200 lines and one marker, the whole kept in the
# file the marker names.
shaped() {
	local out=$1 file=$2 marker spill
	marker=$(ct_markers "$out")
	[ -n "$marker" ] && [ "$(wc -l <<<"$marker")" -eq 1 ] || {
		echo "not one marker in: $out" >&2
		return 1
	}
	[ "$(wc -l <<<"$out")" -eq 201 ]
	[ "$(sed -n 101p <<<"$out")" = "$marker" ]
	[[ $marker == *"lines 101-19900 of 20000"* ]]
	spill=$(sed -n 's#.*the whole stdout is in \(/tmp/toolrun-output/1000/[^] ]*\)\]$#\1#p' <<<"$marker")
	[ -n "$spill" ]
	ref cmp "$spill" "$file"
}

@test "16-harness: upload (tar -x over docker exec -i) and download (tar -c, cat) keep every byte" {
	local t=$BATS_TEST_TMPDIR n
	n=$(settled_job_count)
	docker exec -u sandbox "$CT_BOX" mkdir -p /workspace/up
	tar -C "$FIX/proj" -cf - . | docker exec -i -u sandbox "$CT_BOX" tar -C /workspace/up -xf -
	# What landed is what was sent.
	[ "$(ref bash -c 'cd /workspace/up && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2')" = \
		"$(cd "$FIX/proj" && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2)" ]
	# Back: the archive is the one tar makes without toolrun, and holds
	# the tree sent.
	docker exec -u sandbox "$CT_BOX" tar -C /workspace/up -cf - . >"$t/down.tar"
	ref tar -C /workspace/up -cf - . >"$t/ref.tar"
	[ "$(wc -c <"$t/down.tar")" -gt 400000 ]
	cmp "$t/down.tar" "$t/ref.tar"
	mkdir "$t/down"
	tar -C "$t/down" -xf "$t/down.tar"
	diff -r "$FIX/proj" "$t/down"
	# One file at a time, binary or text.
	docker exec -u sandbox "$CT_BOX" cat /workspace/up/data/random.bin | cmp - "$FIX/proj/data/random.bin"
	docker exec -u sandbox "$CT_BOX" cat /workspace/up/src/utf8.txt | cmp - "$FIX/proj/src/utf8.txt"
	docker exec -u sandbox "$CT_BOX" cat /workspace/up/src/one-long-line.txt |
		cmp - "$FIX/proj/src/one-long-line.txt"
	# toolrund ran none of it.
	ct_no_jobs_since "$n"
}

@test "16-harness: the final patch, diff -ruN run directly: whole, with its status 1" {
	local t=$BATS_TEST_TMPDIR n status=0
	ref bash -c 'cd /workspace && rm -rf a b && cp -r proj/src a && cp -r a b &&
		sed -i "s/7\$/7 changed/" b/numbers.txt && rm b/utf8.txt && echo new >b/new.txt'
	n=$(settled_job_count)
	docker exec -u sandbox -w /workspace "$CT_BOX" diff -ruN a b >"$t/patch.diff" || status=$?
	[ "$status" -eq 1 ]
	status=0
	ref diff -ruN a b >"$t/ref.diff" || status=$?
	[ "$status" -eq 1 ]
	cmp "$t/patch.diff" "$t/ref.diff"
	[ "$(wc -c <"$t/patch.diff")" -gt 4000 ]
	[ "$(wc -l <"$t/patch.diff")" -gt 200 ]
	ct_no_jobs_since "$n"
}

@test "16-harness: the final patch, git diff run directly or with TOOLRUN=off: whole" {
	local t=$BATS_TEST_TMPDIR n
	ref sh -c 'command -v git' >/dev/null ||
		skip "the $CT_VARIANT image has no git (the dev image has; diff -ruN is tested in both)"
	ref bash -c 'set -e; rm -rf /workspace/repo; mkdir /workspace/repo; cd /workspace/repo
		git init -q; cp -r /workspace/proj/src .
		git add -A; git -c user.name=h -c user.email=h@example.invalid commit -qm base
		sed -i "s/7\$/7 changed/" src/numbers.txt; rm src/utf8.txt'
	n=$(settled_job_count)
	docker exec -u sandbox -w /workspace/repo "$CT_BOX" git diff >"$t/patch.diff"
	docker exec -u sandbox -w /workspace/repo -e TOOLRUN=off "$CT_BOX" bash -lc 'git diff' >"$t/off.diff"
	ref git -C /workspace/repo diff >"$t/ref.diff"
	cmp "$t/patch.diff" "$t/ref.diff"
	cmp "$t/off.diff" "$t/ref.diff"
	[ "$(wc -c <"$t/patch.diff")" -gt 4000 ]
	[ "$(wc -l <"$t/patch.diff")" -gt 200 ]
	no_command_since "$n"
}

@test "16-harness: an evaluation run, direct or with TOOLRUN=off: its whole log and its status" {
	local t=$BATS_TEST_TMPDIR n status=0
	n=$(settled_job_count)
	docker exec -u sandbox -w /workspace "$CT_BOX" ./run-tests.sh >"$t/test.log" 2>"$t/test.err" || status=$?
	[ "$status" -eq 1 ]
	status=0
	docker exec -u sandbox -w /workspace -e TOOLRUN=off "$CT_BOX" bash -lc './run-tests.sh' \
		>"$t/off.log" 2>"$t/off.err" || status=$?
	[ "$status" -eq 1 ]
	status=0
	ref ./run-tests.sh >"$t/ref.log" 2>"$t/ref.err" || status=$?
	[ "$status" -eq 1 ]
	cmp "$t/test.log" "$t/ref.log"
	cmp "$t/test.err" "$t/ref.err"
	cmp "$t/off.log" "$t/ref.log"
	cmp "$t/off.err" "$t/ref.err"
	# What a harness parses: every result, the failures, the summary.
	[ "$(grep -c '^ok ' "$t/test.log")" -eq 2997 ]
	[ "$(grep '^not ok ' "$t/test.log" | tr '\n' ' ')" = 'not ok 1000 - case 1000 not ok 2000 - case 2000 not ok 3000 - case 3000 ' ]
	[ "$(tail -n 1 "$t/test.log")" = '# 3 failed' ]
	[ "$(wc -l <"$t/test.err")" -eq 303 ]
	# The listed tools below it ran through toolrund, as the policy says,
	# and nothing of theirs was cut.
	ct_wait_job "$n" ' uid=1000 tool=grep .* exit=0 ' >/dev/null
	ct_wait_job "$n" ' uid=1000 tool=sed .* exit=0 ' >/dev/null
	no_command_since "$n"
}

@test "16-harness: an in-box stdio server over docker exec -i: replies longer than the budget, whole" {
	local t=$BATS_TEST_TMPDIR server
	cat >"$t/requests" <<-'EOF'
	{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
	{"jsonrpc":"2.0","method":"notifications/initialized"}
	{"jsonrpc":"2.0","id":2,"method":"tools/list"}
	{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_7","arguments":{"n":2000}}}
	EOF
	# The dev image has python3 (container/Dockerfile): both servers there.
	[ "$CT_VARIANT" = base ] || [ "$(servers | wc -l)" -eq 2 ]
	while read -r server; do
		docker exec -i -u sandbox "$CT_BOX" $server <"$t/requests" >"$t/replies"
		docker exec -i -u sandbox -e TOOLRUN=off -e LD_PRELOAD= "$CT_BOX" $server <"$t/requests" >"$t/ref"
		cmp "$t/replies" "$t/ref"
		# Three replies, each one whole JSON line.
		run python3 -c 'import json, sys
replies = [json.loads(l) for l in open(sys.argv[1])]
print(len(replies), [r["id"] for r in replies], len(replies[1]["result"]["tools"]),
      replies[2]["result"]["content"][0]["text"].count("\n"), max(len(l) for l in open(sys.argv[1])) > 4000)' "$t/replies"
		[ "$status" -eq 0 ]
		[ "$output" = "3 [1, 2, 3] 40 2000 True" ]
	done < <(servers)
}

@test "16-harness: an MCP client (the official SDK) reaches an in-box server over docker exec -i" {
	local mcp=$CT_SRC/test/mcp why= server
	if ! command -v node >/dev/null 2>&1; then
		why="node is not installed"
	elif [ ! -f "$mcp/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
		why="test/mcp/node_modules is missing (scripts/setup-deps.sh runs npm ci there)"
	fi
	if [ -n "$why" ]; then
		[ "${CI-}" != true ] || { echo "$why; under CI=true the MCP client must be installed" >&2; return 1; }
		skip "$why"
	fi
	while read -r server; do
		run --separate-stderr timeout 300 env -C "$mcp" node --input-type=module -e '
			import { Client } from "@modelcontextprotocol/sdk/client/index.js";
			import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
			const [cmd, ...args] = process.argv.slice(1);
			const c = new Client({ name: "harness", version: "1" }, { capabilities: {} });
			await c.connect(new StdioClientTransport({ command: cmd, args, stderr: "pipe" }));
			const list = await c.listTools();
			const r = await c.callTool({ name: "tool_7", arguments: { n: 2000 } });
			const text = r.content[0].text;
			console.log(list.tools.length, JSON.stringify(list.tools).length > 4000,
				text.split("\n").length - 1, text.endsWith("line 2000\n"));
			await c.close();
		' docker exec -i -u sandbox "$CT_BOX" $server </dev/null
		printf '%s: %s\n' "$server" "$output"
		[ -z "$stderr" ] || printf 'stderr: %s\n' "$stderr"
		[ "$status" -eq 0 ]
		[ "$output" = "40 true 2000 true" ]
	done < <(servers)
}

@test "16-harness: the model's command string is shaped; the harness's direct exec of the same file is not" {
	local f=/workspace/proj/src/numbers.txt
	run --separate-stderr docker exec -u sandbox "$CT_BOX" bash -lc "cat $f"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	shaped "$output" "$f"
	docker exec -u sandbox "$CT_BOX" cat "$f" | cmp - "$FIX/proj/src/numbers.txt"
}

@test "16-harness: a program that execs the command string in its place hands it over; one that forks it does not" {
	local f=/workspace/proj/src/numbers.txt
	run --separate-stderr docker exec -u sandbox "$CT_BOX" env LC_ALL=C bash -lc "cat $f"
	[ "$status" -eq 0 ]
	shaped "$output" "$f"
	docker exec -u sandbox "$CT_BOX" timeout 60 bash -lc "cat $f" | cmp - "$FIX/proj/src/numbers.txt"
}

@test "16-harness: -e TOOLRUN=agent makes a direct exec the agent's command; -e TOOLRUN=off passes a command string whole" {
	local f=/workspace/proj/src/numbers.txt n
	n=$(settled_job_count)
	docker exec -u sandbox "$CT_BOX" cat "$f" | cmp - "$FIX/proj/src/numbers.txt"
	run --separate-stderr docker exec -u sandbox -e TOOLRUN=agent "$CT_BOX" cat "$f"
	[ "$status" -eq 0 ]
	shaped "$output" "$f"
	ct_wait_job "$n" ' uid=1000 command=cat .* exit=0 ' >/dev/null
	# The model's command, wrapped in timeout by its harness.
	run --separate-stderr docker exec -u sandbox -e TOOLRUN=agent "$CT_BOX" timeout 60 bash -lc "cat $f"
	[ "$status" -eq 0 ]
	shaped "$output" "$f"
	docker exec -u sandbox -e TOOLRUN=off "$CT_BOX" bash -lc "cat $f" | cmp - "$FIX/proj/src/numbers.txt"
}
