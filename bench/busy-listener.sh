#!/usr/bin/env bash
# busy-listener.sh: what another client's shaped stream costs a tool whose
# streams are not shaped (bench/README.md, "The launcher answers").
#
#   bench/busy-listener.sh [--build DIR] [--rounds N] [--calls N] [--out DIR]
#
# Starts a private toolrund from the build (default: build) and times
# `bash -c 'cat small_file'` (cat listed, its output a pipe nobody
# declared as the agent's: not shaped) N calls a round (default 200),
# three ways in rotation for --rounds rounds (default 5):
#
#   direct    no library
#   idle      through toolrun, nothing else running
#   busy      through toolrun while another client's `cat /dev/zero`,
#             its stdout declared as the agent's, is shaped and drained
#             by the listener without end (one CPU of the two, busy)
#
# Reports the median time per call of each way, and the ratios busy/idle
# and idle/direct; writes OUT/busy-listener.json and .md when --out is
# given. A call that fails ends the run with status 1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
upstream_prog=busy-listener
# shellcheck source=bench/figures.sh
. "$here/figures.sh"

build=build
rounds=5
calls=200
out=
while [ $# -gt 0 ]; do
	case $1 in
	--build) need "$1" $#; build=$2; shift 2 ;;
	--rounds) need "$1" $#; rounds=$2; shift 2 ;;
	--calls) need "$1" $#; calls=$2; shift 2 ;;
	--out) need "$1" $#; out=$2; shift 2 ;;
	*) die "unknown option $1 (see the comment at the top)" ;;
	esac
done
build=$(cd "$build" && pwd)
lib=$build/preload/libtoolrun.so
[ -x "$build/daemon/toolrund" ] && [ -f "$lib" ] || die "no toolrund or library in $build"

dir=$(mktemp -d /tmp/trbusy.XXXXXX)
daemon=
loader=
cleanup() {
	[ -z "$loader" ] || kill "$loader" 2>/dev/null || true
	[ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

cat >"$dir/toolrun.conf" <<CONF
socket = $dir/s.sock
socket_fallback =
tools = cat
max_bytes = 4000
max_lines = 200
timeout = 600
truncate = sink
fallback = fail
spill_dir =
audit_log = $dir/audit.jsonl
preload = $lib
CONF
head -c 300 /etc/services >"$dir/small"
"$build/daemon/toolrund" --config "$dir/toolrun.conf" 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 250); do [ -S "$dir/s.sock" ] && break; sleep 0.02; done
[ -S "$dir/s.sock" ] || die "toolrund did not come up: $(tail -1 "$dir/daemon.log")"
launcher=$(pgrep -x toolrund-launch -P "$daemon")

# The calls: one bash loop per round, so that only the calls are timed.
# TOOLRUN_AGENT_STDOUT empty: this tree declares no stream as the agent's.
cat >"$dir/loop" <<EOF
#!/usr/bin/env bash
for ((i = 0; i < $calls; i++)); do
	bash -c 'cat $dir/small' >/dev/null || exit 1
done
EOF
chmod +x "$dir/loop"
# The other client: its stdout, a pipe to a drain, declared as the agent's.
cat >"$dir/load" <<EOF
#!/usr/bin/env bash
exec > >(cat >/dev/null)
export TOOLRUN_CONFIG=$dir/toolrun.conf LD_PRELOAD=$lib
export TOOLRUN_AGENT_STDOUT=\$(stat -L -c '%d:%i' /proc/\$\$/fd/1)
exec bash -c 'exec cat /dev/zero'
EOF
chmod +x "$dir/load"

now_ns() { date +%s%N; }
# round WAY: microseconds per call of one round, the way given.
round() {
	local t0 t1
	case $1 in
	direct)
		t0=$(now_ns)
		env -u LD_PRELOAD "$dir/loop" || die "a direct call failed"
		t1=$(now_ns) ;;
	idle | busy)
		if [ "$1" = busy ]; then
			"$dir/load" &
			loader=$!
			# Wait until the launcher runs it (the listener shapes it
			# from then on).
			for _ in $(seq 250); do
				pgrep -x cat -P "$launcher" >/dev/null && break
				sleep 0.02
			done
			pgrep -x cat -P "$launcher" >/dev/null || die "the loading stream did not start"
		fi
		t0=$(now_ns)
		TOOLRUN_CONFIG=$dir/toolrun.conf TOOLRUN_AGENT_STDOUT= LD_PRELOAD=$lib \
			"$dir/loop" || die "a call through toolrun failed ($1)"
		t1=$(now_ns)
		if [ "$1" = busy ]; then
			pkill -P "$loader" 2>/dev/null || true
			kill "$loader" 2>/dev/null || true
			wait "$loader" 2>/dev/null || true
			loader=
		fi ;;
	esac
	echo $(((t1 - t0) / 1000 / calls))
}

declare -A samples=([direct]= [idle]= [busy]=)
ways=(direct idle busy)
for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < 3; k++)); do
		way=${ways[$(((r + k) % 3))]}
		samples[$way]+="$(round "$way") "
	done
done
# median_us WAY: the median of its samples, in whole microseconds.
median_us() { tr ' ' '\n' <<<"${samples[$1]}" | median | awk '{printf "%.0f", $1}'; }
d=$(median_us direct)
i=$(median_us idle)
b=$(median_us busy)
busy_ratio=$(awk -v b="$b" -v i="$i" 'BEGIN {printf "%.3f", b / i}')
idle_ratio=$(awk -v i="$i" -v d="$d" 'BEGIN {printf "%.3f", i / d}')
when=$(date -u '+%Y-%m-%d %H:%M UTC')
line="$when, $(nproc) CPUs: $calls calls x $rounds rounds each way; median per call: direct $d us, through toolrun $i us (x$idle_ratio), with the listener shaping another client's endless stream $b us (busy / idle x$busy_ratio)"
echo "$line"
echo "samples (us per call): direct ${samples[direct]}| idle ${samples[idle]}| busy ${samples[busy]}"
if [ -n "$out" ]; then
	mkdir -p "$out"
	printf '{"when": "%s", "calls": %d, "rounds": %d, "direct_us": %s, "idle_us": %s, "busy_us": %s, "idle_over_direct": %s, "busy_over_idle": %s}\n' \
		"$when" "$calls" "$rounds" "$d" "$i" "$b" "$idle_ratio" "$busy_ratio" >"$out/busy-listener.json"
	echo "$line" >"$out/busy-listener.md"
fi
