#!/bin/bash
# container-exec.sh: what toolrun costs an agent's call in the container.
#
#   bench/container-exec.sh [--rounds N] [--box NAME] [--build] [--keep]
#
# Times, in one running box, two calls an agent makes:
#     docker exec -u 1000 BOX bash -lc 'cat /etc/hostname'   (a listed tool)
#     docker exec -u 1000 BOX bash -lc true                  (the login shell alone)
# each with toolrun on (A: the image as it is) and off (B: docker exec -e
# TOOLRUN=off -e LD_PRELOAD=, no library at all), the four interleaved
# (cat A, cat B, true A, true B) for N rounds (default 50, at most 1000)
# after 3 warm-up rounds of each, and prints the median and p90 of each
# and the ratio of the medians, A/B, per call. It checks that every cat A
# call went through toolrund (one tool job line each) and no other call
# ran a tool there. Every A call is an agent command, run by toolrund whole.
#
# Then, with --sessions N (default 200; 0: not), a session command from
# inside the box: one `docker exec -u 1000 BOX bash -c` that makes a
# session and times N `toolrun session run ID -- true` in a loop (a toolrun
# process and a connection per call, no docker exec), against A's
# `bash -lc true` per call.
#
# Also prints the image's size, and with --build the time to build the
# image from the local base image without the layer cache.
#
#   --rounds N   rounds (TOOLRUN_BENCH_ROUNDS; default 50)
#   --sessions N session commands timed in the box (default 200, at most
#                10000; 0: none)
#   --box NAME   use this running box (default: start one with
#                container/run.sh, removed at the end unless --keep)
#   --build      first time `container/build.sh --no-cache`
#   --keep       leave the box it started running
#
# Bounded: it stops after TOOLRUN_BENCH_MAX_S seconds (default 300) and
# reports the rounds done.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
image=${TOOLRUN_IMAGE:-toolrun:latest}
rounds=${TOOLRUN_BENCH_ROUNDS:-50}
sessions=200
max_s=${TOOLRUN_BENCH_MAX_S:-300}
box=
build=false
keep=false
bench_name=bench
# shellcheck source=bench/box.sh
. "$here/box.sh"

while [ $# -gt 0 ]; do
	case $1 in
	--sessions) [ $# -ge 2 ] || die "--sessions needs a value"; sessions=$2; shift 2 ;;
	--build) build=true; shift ;;
	*) bench_option "$@"; shift "$bench_took" ;;
	esac
done
bench_check_rounds 1000
[[ $sessions =~ ^(0|[1-9][0-9]*)$ ]] && [ "$sessions" -le 10000 ] ||
	die "--sessions must be 0 to 10000, not '$sessions'"

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
	die "no Docker engine answers"

build_s=
if $build; then
	say "building $image without the layer cache (from the local base image)"
	start=$(date +%s.%N)
	TOOLRUN_IMAGE=$image "$repo/container/build.sh" --no-cache --quiet
	build_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
else
	bench_image
fi
bench_box toolrun-bench
hostname=$(docker exec -u 1000 "$box" cat /etc/hostname)

# Listed tools' job lines (each A call is an agent command too, whose
# own line says command=).
jobs() { docker logs "$box" 2>&1 | grep -c ' info: job [0-9]* uid=[0-9]* tool=' || true; }

# one CALL MODE: time one call (cat or true, on or off) in ms (3
# decimals); check its output.
one() {
	local start end out want= off=()
	[ "$2" = on ] || off=(-e TOOLRUN=off -e LD_PRELOAD=)
	start=$(date +%s%N)
	if [ "$1" = cat ]; then
		out=$(docker exec -u 1000 "${off[@]}" "$box" bash -lc 'cat /etc/hostname')
		want=$hostname
	else
		out=$(docker exec -u 1000 "${off[@]}" "$box" bash -lc true)
	fi
	end=$(date +%s%N)
	[ "$out" = "$want" ] || die "unexpected output from the $1 $2 call: '$out'"
	awk -v ns=$((end - start)) 'BEGIN { printf "%.3f\n", ns / 1e6 }'
}

# stats FILE: "median p90 min max" of a column of numbers.
stats() {
	sort -n "$1" | awk '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			i = int(0.9 * NR + 0.999999); if (i < 1) i = 1
			printf "%.2f %.2f %.2f %.2f\n", m, v[i], v[1], v[NR]
		}'
}

calls="cat:on cat:off true:on true:off"
for _ in 1 2 3; do
	for c in $calls; do one "${c%:*}" "${c#*:}" >/dev/null; done
done
# The warm-up's job lines are in the log once a marker job's line is.
marker() {
	local n
	n=$(jobs)
	docker exec -u 1000 "$box" bash -c "cat /etc/hostname" >/dev/null
	for _ in $(seq 300); do
		[ "$(jobs)" -gt "$n" ] && return 0
		sleep 0.1
	done
	die "the daemon logged no job line for the marker call"
}
marker
jobs_before=$(jobs)

mkdir "$bench_tmp/times"
deadline=$((SECONDS + max_s))
done_rounds=0
say "$rounds rounds of: cat A, cat B, true A, true B (A: toolrun on, B: -e TOOLRUN=off -e LD_PRELOAD=), interleaved, in box $box"
for ((i = 0; i < rounds; i++)); do
	for c in $calls; do
		one "${c%:*}" "${c#*:}" >>"$bench_tmp/times/${c/:/-}"
	done
	done_rounds=$((i + 1))
	if [ $SECONDS -ge $deadline ]; then
		say "time limit of ${max_s}s reached after $done_rounds rounds"
		break
	fi
done
marker
jobs_after=$(jobs)
[ $((jobs_after - jobs_before)) -eq $((done_rounds + 1)) ] ||
	die "expected $done_rounds cat jobs (and the marker's) in the daemon's log, found $((jobs_after - jobs_before))"

# Session commands from inside the box: the loop's wall time, in ns.
session_ms=
if [ "$sessions" -gt 0 ]; then
	say "$sessions session commands (toolrun session run ID -- true) in one docker exec"
	session_ns=$(docker exec -u 1000 "$box" bash -c '
		id=$(toolrun session new) || exit 1
		toolrun session run "$id" -- true || exit 1
		start=$(date +%s%N)
		for ((i = 0; i < $1; i++)); do
			out=$(toolrun session run "$id" -- true) || exit 1
			[ -z "$out" ] || exit 1
		done
		end=$(date +%s%N)
		# Its answer says closed (the exit status is not the point here).
		closed=$(toolrun session close "$id" --json 2>/dev/null)
		[[ $closed == *"\"state\":\"closed\""* ]] || exit 1
		echo $((end - start))' - "$sessions") || die "the session loop failed"
	session_ms=$(awk -v ns="$session_ns" -v n="$sessions" 'BEGIN { printf "%.2f", ns / n / 1e6 }')
fi

size=$(docker image inspect --format '{{.Size}}' "$image")
echo "container exec benchmark: docker exec BOX bash -lc CMD, toolrun on (A) / off (B: -e TOOLRUN=off -e LD_PRELOAD=)"
echo "  engine $(docker version --format '{{.Server.Version}}'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), box limits: $(docker inspect --format '{{.HostConfig.NanoCpus}}' "$box" | awk '{ printf "%g", $1 / 1e9 }') CPU(s), memory $(docker inspect --format '{{.HostConfig.Memory}}' "$box" | awk '{ printf "%d MiB", $1 / 1048576 }'), $done_rounds rounds"
printf '  %-28s %8s %8s %8s %8s\n' "" "median" "p90" "min" "max"
for cmd in cat true; do
	read -r on_med on_p90 on_min on_max < <(stats "$bench_tmp/times/$cmd-on")
	read -r off_med off_p90 off_min off_max < <(stats "$bench_tmp/times/$cmd-off")
	label="'cat /etc/hostname'"
	[ "$cmd" = cat ] || label=true
	printf '  %-28s %8s %8s %8s %8s   (ms%s)\n' "A $label" "$on_med" "$on_p90" "$on_min" "$on_max" \
		"$([ "$cmd" = cat ] && echo ', each through toolrund')"
	printf '  %-28s %8s %8s %8s %8s   (ms)\n' "B $label" "$off_med" "$off_p90" "$off_min" "$off_max"
	awk -v a="$on_med" -v b="$off_med" -v l="$label" 'BEGIN {
		printf "  median ratio A/B, bash -lc %s: %.3f (A - B: %+.1f ms per call)\n", l, a / b, a - b }'
done
if [ -n "$session_ms" ]; then
	read -r true_med _ < <(stats "$bench_tmp/times/true-on")
	awk -v s="$session_ms" -v a="$true_med" -v n="$sessions" 'BEGIN {
		printf "  session command in the box, toolrun session run ID -- true (a toolrun process per call, no docker exec): %.2f ms per call, mean of %d\n", s, n
		printf "  against A docker exec bash -lc true: %.2f ms median; ratio %.3f (%+.1f ms per call)\n", a, s / a, s - a }'
fi
printf '  image %s: %d bytes (%.1f MB)\n' "$image" "$size" "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')"
if [ -n "$build_s" ]; then
	printf '  image build from the local base, no cache: %s s\n' "$build_s"
fi
