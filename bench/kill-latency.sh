#!/usr/bin/env bash
# kill-latency.sh: how long after a caller is killed with SIGKILL its
# program and the program's children are gone.
#
#   bench/kill-latency.sh [BUILD_DIR] [ROUNDS]
#
# Starts a private toolrund from BUILD_DIR (default: build), runs
# `find FILE -exec sh -c 'exec sleep 1000' \;` through toolrun (find in
# the daemon, sleep its child), kills the calling bash with SIGKILL and
# polls /proc every millisecond until both find and sleep are gone.
# Prints the median, p90 and maximum over ROUNDS (default 20). Bounded:
# a round gives up after 5 s.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-20}
dir=$(mktemp -d /tmp/trkill.XXXXXX)
trap 'kill "$daemon" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

cat >"$dir/toolrun.conf" <<CONF
socket = $dir/s.sock
socket_fallback =
audit_log = $dir/audit.jsonl
spill_dir = $dir/spill
tools = find
CONF
"$build/daemon/toolrund" --config "$dir/toolrun.conf" 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.02; done
touch "$dir/f"

now_us() { local t; t=$(date +%s%N); echo $((t / 1000)); }
samples=()
for r in $(seq "$rounds"); do
	rm -f "$dir/pid"
	env -u LD_PRELOAD LD_PRELOAD="$build/preload/libtoolrun.so" \
		TOOLRUN_CONFIG="$dir/toolrun.conf" \
		bash -c "exec find $dir/f -exec sh -c 'echo \$\$ >$dir/pid; exec sleep 1000' \\;" &
	client=$!
	disown "$client" # no "Killed" notice from this shell
	for _ in $(seq 500); do [ -s "$dir/pid" ] && break; sleep 0.01; done
	sleeper=$(cat "$dir/pid")
	finder=$(awk '{print $4}' "/proc/$sleeper/stat")
	start=$(now_us)
	kill -KILL "$client"
	while [ -d "/proc/$sleeper" ] || [ -d "/proc/$finder" ]; do
		[ $(($(now_us) - start)) -lt 5000000 ] || { echo "round $r: still alive after 5 s" >&2; exit 1; }
		sleep 0.001
	done
	samples+=($(($(now_us) - start)))
done
printf '%s\n' "${samples[@]}" | sort -n | awk -v n="$rounds" '
	{ v[NR] = $1 }
	END {
		printf "caller killed with SIGKILL -> program and child gone, %d rounds:\n", n
		printf "  median %.1f ms, p90 %.1f ms, max %.1f ms\n",
			v[int((n + 1) / 2)] / 1000, v[int(n * 0.9 + 0.5)] / 1000, v[n] / 1000
	}'
