#!/usr/bin/env bash
# Install everything toolrun needs to build, test and run its container,
# from Debian's archive, and the MCP tests' clients from npm's registry.
# Idempotent; needs root for the packages.
set -euo pipefail

packages=(
	# build
	meson ninja-build gcc pkg-config libc6-dev
	libseccomp-dev libprotobuf-c-dev protobuf-c-compiler libinih-dev
	libjson-c-dev nettle-dev libsqlite3-dev
	# tests
	libcmocka-dev bats python3 make procps
	# the fuzzer: clang's libFuzzer and sanitizer runtimes, llvm-symbolizer
	clang libclang-rt-14-dev llvm
	# benchmarks: results as JSON, the PATH-shim baseline, the plot
	socat gnuplot-nox
	# container: the engine, and the base image built without a registry
	docker.io mmdebstrap
	# Kubernetes manifests played without a cluster (test/container/18-kubernetes):
	# podman, catatonit for the pod's pause image built locally, YAML in python
	podman catatonit python3-yaml
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "setup-deps: all packages present"
elif [ "$(id -u)" -ne 0 ]; then
	echo "setup-deps: missing packages (${missing[*]}); run as root" >&2
	exit 1
else
	echo "setup-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
	echo "setup-deps: done"
fi

# The MCP clients the tests drive toolrun mcp with (test/mcp: the official
# SDK and the MCP Inspector), from npm's registry, exactly as the lock file
# pins them. Installed again only when the lock file or package.json
# changed since (a stamp of their hash in node_modules).
mcp_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/mcp
mcp_stamp=$mcp_dir/node_modules/.toolrun-installed
mcp_hash=$(cat "$mcp_dir/package.json" "$mcp_dir/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ -f "$mcp_stamp" ] && [ "$(cat "$mcp_stamp")" = "$mcp_hash" ]; then
	echo "setup-deps: test/mcp's node_modules up to date"
elif ! command -v npm >/dev/null 2>&1; then
	echo "setup-deps: npm is not installed: test/mcp's clients are missing (the MCP tests skip, or fail under CI=true)" >&2
	exit 1
else
	echo "setup-deps: npm ci in test/mcp"
	(cd "$mcp_dir" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$mcp_hash" >"$mcp_stamp"
fi
