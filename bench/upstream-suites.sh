#!/bin/bash
# upstream-suites.sh: the wall time of each upstream test suite that
# test/upstream/run.sh runs, through toolrun and directly, interleaved
# (issue 28's target: toolrun / direct <= 1.10 for each suite).
#
#   bench/upstream-suites.sh [--rounds N] [--work DIR] [--build BUILD]
#                            [--out DIR] [--jobs N] [--test-timeout S]
#                            [PACKAGE...]
#
# Each round runs every package's `make check` both ways with
# test/upstream/run.sh (the same set-up, the same comparison of per-test
# results): round 1 direct first, round 2 toolrun first, and so on, so
# that the machine's drift falls on both sides alike. Per suite it reports
# the median wall time of each side, their ratio against the target, the
# tests whose results differ between the two runs of a round, and any run
# that was killed (the per-test watchdog or the run's backstop): such a
# figure is flagged, and the script exits 1.
#
# Writes OUT/upstream-suites.json and OUT/upstream-suites.md (default OUT:
# a new temporary directory, printed). Exits 77 (skipped) when a
# package's source or build dependencies cannot be had: run.sh's README
# (test/upstream/README.md) says how to add them.
#
#   PACKAGE...        default: diffutils sed findutils gawk grep
#   --rounds N        rounds, each a run of every suite each way (default 2)
#   --work DIR        scratch directory, kept (default: a new temporary
#                     one, removed at the end); a kept one keeps the
#                     fetched sources and built trees for the next run
#   --build BUILD     toolrun's meson build directory (default: build)
#   --out DIR         where upstream-suites.json and .md go
#   --jobs N          make -j (default 2)
#   --test-timeout S  run.sh's per-test watchdog (default 300 s)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cmdline=bench/upstream-suites.sh
for a in "$@"; do cmdline+=" $(printf '%q' "$a")"; done

rounds=2
work=
build=$repo/build
out=
jobs=2
test_timeout=300
run_timeout=7200
target=1.10
packages=()

upstream_prog=upstream-suites
# shellcheck source=bench/figures.sh
. "$here/figures.sh"

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) need "$1" $#; rounds=$2; shift 2 ;;
	--work) need "$1" $#; work=$2; shift 2 ;;
	--build) need "$1" $#; build=$2; shift 2 ;;
	--out) need "$1" $#; out=$2; shift 2 ;;
	--jobs) need "$1" $#; jobs=$2; shift 2 ;;
	--test-timeout) need "$1" $#; test_timeout=$2; shift 2 ;;
	-h|--help) sed -n '2,31s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
	-*) die "unknown argument '$1' (see --help)" ;;
	*) packages+=("$1"); shift ;;
	esac
done
[ ${#packages[@]} -gt 0 ] || packages=(diffutils sed findutils gawk grep)
for v in rounds jobs test_timeout; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--${v//_/-} must be a positive number, not '${!v}'"
done
for p in "${packages[@]}"; do
	[[ $p =~ ^[a-z0-9][a-z0-9.+-]*$ ]] || die "'$p' is not a Debian package name"
done
command -v jq >/dev/null || die "jq is needed for the JSON report (apt-get install jq)"
build=$(cd "$build" 2>/dev/null && pwd) || die "no toolrun build at $build (meson setup build && meson compile -C build)"

tmp_work=
# shellcheck disable=SC2317 # the EXIT trap's
cleanup() { [ -z "$tmp_work" ] || rm -rf "$tmp_work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
scratch_work upstream-suites

# fetch and results_diff from run.sh's own library; the runs are run.sh's.
# shellcheck source=test/upstream/lib.sh
. "$repo/test/upstream/lib.sh"
upstream_init || exit 1

for pkg in "${packages[@]}"; do
	rc=0
	src=$(fetch "$pkg") || rc=$?
	[ "$rc" = 0 ] || skip "the source of $pkg cannot be had (apt-get source $pkg; test/upstream/README.md)"
	if [ ! -e "$src/.upstream-built" ] &&
		apt-get -s build-dep "$pkg" 2>/dev/null | grep -q '^Inst '; then
		skip "the build dependencies of $pkg are missing (apt-get build-dep $pkg)"
	fi
done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
runs=$work/suite-runs
mkdir -p "$runs"

# --- the runs: round by round, every suite both ways ---------------------

for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="direct toolrun"; else order="toolrun direct"; fi
	for pkg in "${packages[@]}"; do
		say "== upstream-suites: round $r of $rounds, $pkg ($order)"
		rc=0
		"$repo/test/upstream/run.sh" -w "$work" -b "$build" -j "$jobs" -t "$test_timeout" \
			-m "$order" "$pkg" >"$runs/$pkg-$r.report" 2>"$runs/$pkg-$r.log" || rc=$?
		for mode in direct toolrun; do
			d=$runs/$pkg-$mode-$r
			mkdir -p "$d"
			cp "$work/$pkg/$mode/wall" "$work/$pkg/$mode/status" "$d/" 2>/dev/null || true
			cp -r "$work/$pkg/$mode/results" "$d/" 2>/dev/null || true
		done
		echo "$rc" >"$runs/$pkg-$r.status"
		results_diff "$work/$pkg/direct/results" "$work/$pkg/toolrun/results" \
			>"$runs/$pkg-$r.diff" || true
		[ "$r" != 1 ] || totals_of "$work/$pkg/direct/results" >"$runs/$pkg.totals"
	done
done

# --- the figures ------------------------------------------------------------

# What makes a figure unreliable: a run missing, killed, or run.sh failing.
problems_of() {
	local pkg=$1 r mode d
	for r in $(seq 1 "$rounds"); do
		[ "$(cat "$runs/$pkg-$r.status")" = 0 ] ||
			echo "round $r: run.sh failed (its log: $runs/$pkg-$r.log)"
		for mode in direct toolrun; do
			d=$runs/$pkg-$mode-$r
			[ -s "$d/wall" ] || { echo "round $r: no $mode run"; continue; }
			[ "$(cat "$d/status")" != 124 ] ||
				echo "round $r: make check ($mode) killed after ${run_timeout} s"
		done
		for mode in direct toolrun; do
			results_of "$runs/$pkg-$mode-$r/results" | sed -n 's/\t.*(killed)$//p' |
				sed "s/^/round $r: killed by the watchdog ($mode): /"
		done
	done
}

figures=()
for pkg in "${packages[@]}"; do
	walls() { local r; for r in $(seq 1 "$rounds"); do cat "$runs/$pkg-$1-$r/wall" 2>/dev/null || true; done; }
	differ=$(for r in $(seq 1 "$rounds"); do cut -f1 "$runs/$pkg-$r.diff"; done | sort | uniq -c |
		awk '{ printf "%s%s (%d of '"$rounds"' rounds)", (NR > 1 ? ", " : ""), $2, $1 }')
	src=$(source_dir "$work/src" "$pkg")
	figures+=("$(figure_json "$pkg" "$rounds" "$(walls direct)" "$(walls toolrun)" "$target" \
		"$(problems_of "$pkg")" "$(jq -n --arg source "${src##*/}" --arg differ "$differ" \
			--arg totals "$(cat "$runs/$pkg.totals" 2>/dev/null)" \
			'{source: $source, direct_totals: $totals, tests_that_differ: $differ}')")")
done

# --- the report -------------------------------------------------------------

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/upstream-suites-out.XXXXXX")
mkdir -p "$out"
printf '%s\n' "${figures[@]}" | report_json "$cmdline" "$started" "$load_before" >"$out/upstream-suites.json"

jq -r '
	"# Upstream test suites, wall time, toolrun / direct",
	"",
	"\(.date), \(.machine.os), \(.machine.nproc) CPUs, Linux \(.machine.kernel), load average \(.machine.loadavg_before) before, \(.machine.loadavg_after) after; toolrun \(.toolrun); `\(.command)`",
	"",
	"| suite | rounds | direct (median) | toolrun (median) | ratio | target | tests that differ | checks |",
	"|---|---|---|---|---|---|---|---|",
	(.figures[] | "| \(.source) | \(.rounds) | \(.direct_median_s) s | \(.toolrun_median_s) s | **\(.ratio)** | ≤ \(.target): \(if .met then "met" else "missed" end) | \(if .tests_that_differ == "" then "none" else .tests_that_differ end) | \(if .ok then "ok" else "FLAGGED" end) |"),
	"",
	(.figures[] | "\(.name) results (direct, round 1): \(.direct_totals)"),
	(.figures[] | .name as $n | .problems[] | "- \($n): \(.)")
' "$out/upstream-suites.json" >"$out/upstream-suites.md"

cat "$out/upstream-suites.md"
say "upstream-suites: results in $out/upstream-suites.json and $out/upstream-suites.md"
jq -e 'all(.figures[]; .ok)' "$out/upstream-suites.json" >/dev/null
