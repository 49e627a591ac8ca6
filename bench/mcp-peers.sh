#!/bin/bash
# mcp-peers.sh: toolrun's MCP server against a peer, Desktop Commander,
# in the same box.
#
#   bench/mcp-peers.sh [--rounds N] [--box NAME] [--out DIR] [--keep]
#
# Starts a box (container/run.sh, the image $TOOLRUN_IMAGE, default
# toolrun:latest, built if missing), copies into its /workspace/.mcp-peer
# a Node.js runtime (this machine's `node` binary: the box has none) and
# the peer's npm tree (bench/mcp-peers/, its versions pinned by its lock
# file), and runs test/mcp/peers.mjs on this machine with two MCP clients
# over stdio, both working in /workspace/work:
#
#   docker exec -i BOX toolrun mcp --root /workspace/work
#   docker exec -i -e TOOLRUN=off -e LD_PRELOAD= BOX /workspace/.mcp-peer/node \
#       /workspace/.mcp-peer/node_modules/@wonderwhy-er/desktop-commander/dist/index.js
#
# The peer runs without toolrun (TOOLRUN=off, no library), as it would in
# a plain box. The same script of 50 calls (echo, ls, cat, a pipeline,
# read a file, write a file, pwd, ...) runs through both, interleaved call
# by call, N rounds (default 3) after a warm-up; then what each returns
# for `seq 1 200000`, `sleep 40` with a 2 s timeout, and `read x; echo got
# $x`. Exits 1 if a toolrun call did not return what it must (the
# peer's misses are reported, not failed). Writes OUT/mcp-peers.json and OUT/mcp-peers.txt (default: a new
# temporary directory, printed) and prints the summary. Exits 77 (skipped)
# without node, npm or a Docker engine.
#
# Nothing of the peer enters the image: it lives in the box's workspace
# (the only place in the box that is both writable and executable: /tmp is
# a noexec tmpfs), beside the directory the servers work in.
#
#   --rounds N   rounds of the 50-call script (default 3, at most 100)
#   --box NAME   a running box to use (about 400 MB go to its /workspace)
#   --out DIR    where the results go
#   --keep       leave the box it started running
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
image=${TOOLRUN_IMAGE:-toolrun:latest}
rounds=3
box=
out=
keep=false
bench_name=mcp-peers
# shellcheck source=bench/box.sh
. "$here/box.sh"

while [ $# -gt 0 ]; do
	bench_option "$@"
	shift "$bench_took"
done
bench_check_rounds 100

# What it cannot run without: a skip (77, as meson counts it), not a failure.
skip() { say "skipped: $*"; exit 77; }
node=$(command -v node) || skip "node is not installed (the clients, and the runtime copied into the box)"
node=$(readlink -f "$node")
command -v npm >/dev/null || skip "npm is not installed"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || skip "no Docker engine answers"

# The clients' tree (test/mcp) and the peer's (bench/mcp-peers), from
# their lock files.
npm_tree() {
	local dir=$1
	shift
	local hash
	hash=$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)
	if [ "$(cat "$dir/node_modules/.toolrun-installed" 2>/dev/null)" != "$hash" ]; then
		say "npm ci in ${dir#"$repo"/}"
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error "$@" >&2)
		echo "$hash" >"$dir/node_modules/.toolrun-installed"
	fi
}
npm_tree "$repo/test/mcp"
# Its install scripts fetch a ripgrep binary from GitHub and report the
# installation; neither is needed to run commands and files.
npm_tree "$here/mcp-peers" --ignore-scripts
dc_version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
	"$here/mcp-peers/node_modules/@wonderwhy-er/desktop-commander/package.json")

if [ -z "$box" ]; then
	bench_image
	bench_box toolrun-mcp-peers
fi

# plain ARGS...: a command in the box as the agent, without toolrun.
plain() { docker exec -i -u 1000 -e TOOLRUN=off -e LD_PRELOAD= "$box" "$@"; }

peer_dir=/workspace/.mcp-peer
work=/workspace/work

if ! plain test -x "$peer_dir/node"; then
	say "copying node $("$node" --version) and desktop-commander $dc_version into $box:$peer_dir"
	plain mkdir -p "$peer_dir/home/.claude-server-commander"
	# The peer's own configuration: the directory both servers work in (by
	# default it allows its home only), no telemetry (the box has no
	# network anyway).
	printf '{"allowedDirectories": ["%s"], "telemetryEnabled": false}\n' "$work" |
		plain sh -c "cat > $peer_dir/home/.claude-server-commander/config.json"
	tar -C "$(dirname "$node")" -c "$(basename "$node")" | plain tar -x -C "$peer_dir"
	[ "$(basename "$node")" = node ] || plain mv "$peer_dir/$(basename "$node")" "$peer_dir/node"
	tar -C "$here/mcp-peers" -c node_modules | plain tar -x -C "$peer_dir"
fi
plain "$peer_dir/node" --version >/dev/null || die "the copied node does not run in the box"
plain mkdir -p "$work"

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/mcp-peers.XXXXXX")
mkdir -p "$out"
json() { "$node" -e 'process.stdout.write(JSON.stringify(process.argv.slice(1)))' -- "$@"; }
toolrun_cmd=$(json docker exec -i -u 1000 -w "$work" "$box" toolrun mcp --root "$work")
peer_cmd=$(json docker exec -i -u 1000 -w "$work" -e TOOLRUN=off -e LD_PRELOAD= \
	-e HOME="$peer_dir/home" -e SHELL=/bin/bash "$box" \
	"$peer_dir/node" "$peer_dir/node_modules/@wonderwhy-er/desktop-commander/dist/index.js")

say "box $box, $rounds rounds; results in $out"
status=0
"$node" "$repo/test/mcp/peers.mjs" --root "$work" --rounds "$rounds" \
	--out "$out/mcp-peers.json" --toolrun "$toolrun_cmd" --peer "$peer_cmd" || status=$?
exit $status
