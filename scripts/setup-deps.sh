#!/usr/bin/env bash
# Install everything toolrun needs to build, test and run its container,
# from Debian's archive. Idempotent; needs root.
set -euo pipefail

packages=(
	# build
	meson ninja-build gcc pkg-config libc6-dev
	libseccomp-dev libprotobuf-c-dev protobuf-c-compiler libinih-dev
	libjson-c-dev libssl-dev libsqlite3-dev
	# tests
	libcmocka-dev bats python3 make procps
	# the fuzzer: clang's libFuzzer and sanitizer runtimes, llvm-symbolizer
	clang libclang-rt-14-dev llvm
	# benchmarks: results as JSON, the PATH-shim baseline, the plot
	socat gnuplot-nox
	# container: the engine, and the base image built without a registry
	docker.io mmdebstrap
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "setup-deps: all packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "setup-deps: missing packages (${missing[*]}); run as root" >&2
	exit 1
fi
echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
echo "setup-deps: done"
