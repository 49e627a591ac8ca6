#!/usr/bin/env bash
# The test command: on a fresh Debian 12 machine (as root) it installs the
# dependencies, starts a Docker engine if none runs, builds toolrun with
# warnings as errors, and runs every suite:
#   - every suite (unit, integration, differential, security, container)
#     in the normal build;
#   - unit, integration and security again in an ASan/UBSan build;
#   - the fuzzer, built with clang, for a fixed number of runs.
# It ends with one line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup-deps.sh || exit 1
scripts/ensure-docker.sh || { [ "${CI:-}" = true ] && exit 1; }

configure() { # DIR [OPTIONS...]
	local dir=$1
	shift
	if [ -d "$dir/meson-private" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

failed=0
configure build -Dwerror=true || exit 1
configure build-san -Dwerror=true -Dsanitize=true || exit 1
CC=clang configure build-fuzz -Dwerror=true || exit 1
meson compile -C build || exit 1
meson compile -C build-san || exit 1

meson test -C build --print-errorlogs || failed=1
meson test -C build-san --suite unit --suite integration --suite security --print-errorlogs || failed=1
meson test -C build-fuzz --suite fuzz --print-errorlogs || failed=1

python3 scripts/test-summary.py build/meson-logs build-san/meson-logs build-fuzz/meson-logs || failed=1
exit "$failed"
