#!/usr/bin/env bats
# `toolrun mcp` in the box, driven from outside by the official SDK's
# Client over `docker exec -i BOX toolrun mcp` (test/mcp/client.mjs, the
# same scenarios as test/integration/25-mcp.bats), as an agent's MCP
# client would reach it.
#
# The client runs on this machine from test/mcp/node_modules
# (scripts/setup-deps.sh); without it, or without node, the tests skip
# with the reason, except under CI=true, where that is a failure.

load helpers

MCP_DIR="$CT_SRC/test/mcp"

setup_file() {
	local why=
	if ! command -v node >/dev/null 2>&1; then
		why="node is not installed"
	elif [ ! -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
		why="test/mcp/node_modules is missing (scripts/setup-deps.sh runs npm ci there)"
	fi
	if [ -n "$why" ]; then
		if [ "${CI-}" = true ]; then
			echo "14-mcp: $why; under CI=true the MCP clients must be installed" >&2
			return 1
		fi
		export CT_SKIP="MCP client tests skipped: $why"
		return 0
	fi
	ct_setup_file
}
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

# scenario NAME: client.mjs's scenario against the box's server, run as
# the agent (1000) with the workspace as its root.
scenario() {
	run --separate-stderr timeout 300 node "$MCP_DIR/client.mjs" --scenario "$1" -- \
		docker exec -i -u 1000 "$CT_BOX" toolrun mcp --root /workspace
	printf '%s\n' "$output"
	[ -z "$stderr" ] || printf 'stderr: %s\n' "$stderr"
	[ "$status" -eq 0 ]
	[[ $output == *"ok 1 - $1"* ]]
}

@test "14-mcp: initialize, both protocol versions" { scenario initialize; }
@test "14-mcp: tools/list: nine tools, each with input and output schemas" { scenario tools-list; }
@test "14-mcp: each tool once, its result valid against its outputSchema" { scenario tools-each; }
@test "14-mcp: a session across calls: cd and export kept; input to a waiting command" { scenario session; }
@test "14-mcp: seq 1 100000: cut with a marker, the whole in the spill file" { scenario large-output; }
@test "14-mcp: a cancelled call interrupts its command in the box" { scenario cancel; }
@test "14-mcp: a cancellation on the wire: no answer for it, pings answered meanwhile" { scenario cancel-raw; }
@test "14-mcp: progress notifications through docker exec" { scenario progress; }
@test "14-mcp: paths outside /workspace are refused (VALIDATION)" { scenario paths; }
@test "14-mcp: arguments a tool does not accept" { scenario bad-arguments; }
@test "14-mcp: garbage on stdin: JSON-RPC errors, the server goes on; EOF ends it with 0" { scenario garbage; }
@test "14-mcp: requests in flight at once" { scenario concurrent; }
@test "14-mcp: --tools codex and all list exec_command and write_stdin" { scenario codex-list; }
@test "14-mcp: exec_command: exit code or session_id; write_stdin polls and interrupts" { scenario codex-exec; }
@test "14-mcp: exec_command: a prompt gives waiting_input; write_stdin answers it" { scenario codex-prompt; }
@test "14-mcp: exec_command: cut output, max_output_tokens and the files that keep the whole" { scenario codex-cut; }
@test "14-mcp: exec_command tty=true runs on a terminal" { scenario codex-tty; }
@test "14-mcp: exec_command workdir under /workspace, outside it refused" { scenario codex-workdir; }

@test "14-mcp: the server's commands run as the agent, in /workspace" {
	run --separate-stderr timeout 120 env -C "$MCP_DIR" node --input-type=module -e '
		import { Client } from "@modelcontextprotocol/sdk/client/index.js";
		import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
		const [cmd, ...args] = process.argv.slice(1);
		const c = new Client({ name: "t", version: "1" }, { capabilities: {} });
		await c.connect(new StdioClientTransport({ command: cmd, args, stderr: "pipe" }));
		const r = await c.callTool({ name: "bash", arguments: { command: "id -u; pwd" } });
		console.log(r.structuredContent.stdout.trim().replace("\n", " "));
		await c.close();
	' docker exec -i -u 1000 "$CT_BOX" toolrun mcp --root /workspace
	printf '%s\n' "$output" "$stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "1000 /workspace" ]
}
