#!/bin/bash
# workloads.sh: real workloads with their tools listed, through toolrun
# and directly (issue 15's target: toolrun / direct <= 1.15).
#
#   bench/workloads.sh [--rounds N] [--check-rounds N] [--tests LIST|all]
#                      [--quick] [--only configure|check] [--whole] [--work DIR]
#                      [--build BUILD] [--out DIR] [--jobs N] [--setup]
#
# Two workloads on GNU grep, from Debian's source package `grep`
# (apt-get source grep), each run directly and through toolrun, the two
# interleaved (round 1 direct first, round 2 toolrun first, ...):
#
#   configure  ./configure in a fresh copy of the unpacked (and, as
#              Debian's build does, autoreconf'd) source each time; every
#              run must exit 0 and give the same config.h and the same
#              substitutions and definitions in config.status
#   check      grep's `make check`, tests only: the tree is configured,
#              built and `make check TESTS=` made once first; every run
#              must give the same per-test results as the first direct
#              run (and the same exit status)
#
# Through toolrun, a command runs as test/upstream/run.sh runs it, the
# way an agent's command runs in the box: a private toolrund with
# container/toolrun.conf (its limits, `truncate = sink`, its `tools`:
# those a configure runs), `bash -lc COMMAND` reading the uninstalled
# profile snippet, its stdout and stderr a pipe declared as the agent's.
# For `check` the tools also list grep's own programs by name and by the
# absolute path of the built binaries. The config's command_timeout is
# the run's backstop (2 hours), not the box's 300 s, and its `preload` is
# the build's library. With --whole, the library is preloaded from the
# command's first instruction instead, as the image's `ENV LD_PRELOAD`
# does in the box: the whole command is then handed to toolrund
# (agent_commands) and every process of it runs there. Directly, the
# same `bash -lc` with TOOLRUN=off and no library.
#
# Reports the median wall time of each side and their ratio, per
# workload; a figure whose runs failed or differ is flagged (`ok`: false)
# and the script then exits 1. Writes OUT/workloads.json and
# OUT/workloads.md (default OUT: a new temporary directory, printed).
# Exits 77 (skipped) when grep's source or build dependencies cannot be
# had and --setup was not given.
#
#   --rounds N        rounds of each workload, each way (default 3)
#   --check-rounds N  rounds of `check` only (default: --rounds)
#   --tests LIST      the tests `check` runs: `all` (default: grep's whole
#                     `make check`, gnulib's tests too, 20 to 30 minutes a
#                     run on 2 cores) or test names of grep's tests/
#                     directory (`make -C tests check TESTS='LIST'`)
#   --quick           --tests with a subset of 20 of grep's tests
#   --only W          run one workload: configure or check
#   --whole           through toolrun, the command handed to toolrund whole
#                     (the library preloaded, as in the box's image)
#   --work DIR        scratch directory, kept (default: a new temporary
#                     one, removed at the end); a kept one keeps the
#                     fetched source and the built tree for the next run
#   --build BUILD     toolrun's meson build directory (default: build)
#   --out DIR         where workloads.json and workloads.md go
#   --jobs N          make -j (default 2)
#   --test-timeout S  per-test watchdog of `check` (default 300 s)
#   --setup           as root: add a deb-src entry for this machine's
#                     Debian release when apt has none (then apt-get
#                     update), and `apt-get build-dep grep`
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cmdline=bench/workloads.sh
for a in "$@"; do cmdline+=" $(printf '%q' "$a")"; done

rounds=3
check_rounds=
tests=all
quick_tests="backref backref-word bre context-0 count-newline empty ere
fedora file foad1 grep-dir include-exclude khadafy max-count-vs-context
options pcre status two-files word-multi-file yesno"
only=
work=
build=$repo/build
out=
jobs=2
test_timeout=300
run_timeout=7200
setup=false
how=snippet
target=1.15
pkg='grep'

upstream_prog=workloads
# shellcheck source=bench/figures.sh
. "$here/figures.sh"

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) need "$1" $#; rounds=$2; shift 2 ;;
	--check-rounds) need "$1" $#; check_rounds=$2; shift 2 ;;
	--tests) need "$1" $#; tests=$2; shift 2 ;;
	--quick) tests=$quick_tests; shift ;;
	--only) need "$1" $#; only=$2; shift 2 ;;
	--work) need "$1" $#; work=$2; shift 2 ;;
	--build) need "$1" $#; build=$2; shift 2 ;;
	--out) need "$1" $#; out=$2; shift 2 ;;
	--jobs) need "$1" $#; jobs=$2; shift 2 ;;
	--test-timeout) need "$1" $#; test_timeout=$2; shift 2 ;;
	--setup) setup=true; shift ;;
	--whole) how=whole; shift ;;
	-h|--help) sed -n '2,62s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
check_rounds=${check_rounds:-$rounds}
for v in rounds check_rounds jobs test_timeout; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--${v//_/-} must be a positive number, not '${!v}'"
done
case $only in
'') workloads="configure check" ;;
configure|check) workloads=$only ;;
*) die "--only takes configure or check, not '$only'" ;;
esac
tests=$(printf '%s\n' "$tests" | tr -s ' \t\n' ' ' | sed 's/^ //; s/ $//')
[ -n "$tests" ] || die "--tests is empty"
[[ $tests =~ ^[A-Za-z0-9._\ -]+$ ]] || die "--tests takes test names, not '$tests'"

build=$(cd "$build" 2>/dev/null && pwd) || die "no toolrun build at $build (meson setup build && ninja -C build)"

tmp_work=
# shellcheck disable=SC2317 # the EXIT trap's
cleanup() {
	upstream_cleanup
	[ -z "$tmp_work" ] || rm -rf "$tmp_work"
}
scratch_work workloads

# shellcheck source=test/upstream/lib.sh
. "$repo/test/upstream/lib.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM
upstream_init || exit 1

# --- grep's source and build dependencies --------------------------------

add_deb_src() {
	local f=/etc/apt/sources.list.d/debian-src.sources id
	id=$(. /etc/os-release 2>/dev/null && echo "${ID:-}")
	[ "$id" = debian ] || die "--setup adds deb-src entries on Debian only (this is '${id:-unknown}'): add them by hand"
	[ "$(id -u)" = 0 ] || die "--setup needs root to write $f"
	[ ! -e "$f" ] || die "$f exists but apt-get source finds no deb-src entry: look at it"
	say "workloads: adding $f and running apt-get update"
	deb_src_entry >"$f"
	apt-get update -q >&2 || die "apt-get update failed after adding $f"
}

src=
rc=0
src=$(fetch "$pkg") || rc=$?
if [ "$rc" = 2 ] && $setup; then
	add_deb_src
	rc=0
	src=$(fetch "$pkg") || rc=$?
fi
if [ "$rc" != 0 ]; then
	$setup && die "apt-get source $pkg failed (its log: $work/src/$pkg.fetch.log)"
	skip "grep's source cannot be had (apt-get source $pkg; --setup adds a deb-src entry as root)"
fi

mkdir -p "$work/$pkg"

# The build dependencies, unless the tree is already built.
tree=$work/$pkg/tree
if [ ! -e "$tree/.upstream-built" ]; then
	if apt-get -s build-dep "$pkg" 2>/dev/null | grep -q '^Inst '; then
		if $setup; then
			[ "$(id -u)" = 0 ] || die "--setup needs root for apt-get build-dep $pkg"
			say "workloads: apt-get build-dep $pkg"
			DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q "$pkg" >&2 ||
				die "apt-get build-dep $pkg failed"
		else
			skip "grep's build dependencies are missing (apt-get build-dep $pkg, or --setup as root)"
		fi
	fi
fi

# The pristine tree every configure copies: the source as Debian builds
# it (autoreconf'd when its patches touch the build system).
say "== $pkg: ${src##*/} in $work"
regen_pkg "$src" >"$work/src/$pkg.regen.log" 2>&1 ||
	die "autoreconf in $src failed (its log: $work/src/$pkg.regen.log)"

# --- the runs -------------------------------------------------------------

# One run of workload W, MODE (direct or toolrun), round R: its files go
# to $work/runs/W-MODE-R (status, wall, the agent's output, and for
# toolrun the config and the daemon's log).
run_one() {
	local w=$1 mode=$2 r=$3
	local dir=$work/runs/$w-$mode-$r cwd cmd
	rm -rf "$dir"
	mkdir -p "$dir"
	case $w in
	configure)
		cwd=$work/$pkg/configure
		rm -rf "$cwd"
		cp -a "$src" "$cwd"
		cmd=./configure
		[ "$mode" != toolrun ] || write_config "" "" "$dir"
		;;
	check)
		cwd=$tree
		clean_results "$cwd"
		if [ "$tests" = all ]; then
			cmd=$(check_command)
		else
			cmd=$(check_command -C tests "TESTS='$tests'")
		fi
		[ "$mode" != toolrun ] || write_config "$pkg" "$tree" "$dir"
		;;
	esac
	if [ "$mode" = toolrun ]; then
		start_daemon "$dir" || die "toolrund did not start for $w, round $r"
	fi
	set_run_env "$mode" "$dir" "$how"
	say "== $w, $mode, round $r"
	run_agent_command "$cwd" "$dir/output" "$dir" "$cmd"
	stop_daemon
	say "   $(cat "$dir/wall") s, exit $(cat "$dir/status")"
	case $w in
	configure)
		if [ -e "$cwd/config.h" ]; then cp "$cwd/config.h" "$dir/config.h"; fi
		if [ -e "$cwd/config.status" ]; then
			grep -E '^[SD]\["' "$cwd/config.status" | LC_ALL=C sort >"$dir/config.status.subst" || true
		fi
		;;
	check)
		save_results "$cwd" "$dir/results"
		;;
	esac
}

# Why run $2 of workload $1 does not count: nothing when it does. The
# first direct run is the reference.
problems_of() {
	local w=$1 dir=$2 ref=$work/runs/$1-direct-1 d
	case $w in
	configure)
		[ "$(cat "$dir/status")" = 0 ] || echo "exit $(cat "$dir/status")"
		[ -s "$dir/config.status.subst" ] || echo "no config.status"
		if [ "$dir" != "$ref" ]; then
			cmp -s "$dir/config.h" "$ref/config.h" || echo "config.h differs from direct round 1's"
			cmp -s "$dir/config.status.subst" "$ref/config.status.subst" ||
				echo "config.status differs from direct round 1's"
		fi
		;;
	check)
		[ -n "$(results_of "$dir/results")" ] || echo "no test results"
		if [ "$dir" != "$ref" ]; then
			[ "$(cat "$dir/status")" = "$(cat "$ref/status")" ] ||
				echo "exit $(cat "$dir/status"), direct round 1 $(cat "$ref/status")"
			d=$(results_diff "$ref/results" "$dir/results" | awk -F '\t' '{ printf "%s%s: %s, not %s", (NR > 1 ? "; " : ""), $1, $3, $2 }')
			[ -z "$d" ] || echo "tests differ from direct round 1's: $d"
		fi
		;;
	esac
}

command -v jq >/dev/null || die "jq is needed for the JSON report (apt-get install jq)"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
write_watchdog
mkdir -p "$work/runs"

figures=()
for w in $workloads; do
	n=$rounds
	if [ "$w" = check ]; then
		n=$check_rounds
		if [ ! -e "$tree/.upstream-built" ]; then
			rm -rf "$tree"
			cp -a "$src" "$tree"
		fi
		build_pkg "$pkg" "$tree" || die "building $pkg in $tree failed (its log: $tree/upstream-build.log)"
	fi
	for r in $(seq 1 "$n"); do
		if [ $((r % 2)) = 1 ]; then order="direct toolrun"; else order="toolrun direct"; fi
		for mode in $order; do
			run_one "$w" "$mode" "$r"
		done
	done
	# The figure: walls, medians, ratio, problems.
	walls() { local r; for r in $(seq 1 "$n"); do cat "$work/runs/$w-$1-$r/wall"; done; }
	problems=$(for mode in direct toolrun; do
		for r in $(seq 1 "$n"); do
			problems_of "$w" "$work/runs/$w-$mode-$r" | sed "s/^/$mode round $r: /"
		done
	done)
	case $w in
	configure) what="./configure of ${src##*/} (a fresh copy each run)" ;;
	check)
		if [ "$tests" = all ]; then what="make check of ${src##*/} (all tests)"
		else what="make -C tests check of ${src##*/}, $(wc -w <<<"$tests") tests"; fi
		;;
	esac
	extra=$(jq -n --arg what "$what" '{what: $what}')
	if [ "$w" = check ]; then
		extra=$(jq -n --arg what "$what" --arg tests "$tests" \
			--arg totals "$(totals_of "$work/runs/check-direct-1/results")" \
			'{what: $what, tests: $tests, direct_totals: $totals}')
	fi
	figures+=("$(figure_json "$w" "$n" "$(walls direct)" "$(walls toolrun)" "$target" \
		"$problems" "$extra")")
done

# --- the report -------------------------------------------------------------

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/workloads-out.XXXXXX")
mkdir -p "$out"
if [ "$how" = whole ]; then
	setup_text="whole: the library preloaded, the command handed to toolrund"
else
	setup_text="snippet: bash -lc with the profile snippet, tools handed over"
fi
printf '%s\n' "${figures[@]}" | report_json "$cmdline" "$started" "$load_before" \
	"$(jq -n --arg s "$setup_text" '{toolrun_setup: $s}')" >"$out/workloads.json"

jq -r '
	"# Real workloads, toolrun / direct",
	"",
	"\(.date), \(.machine.os), \(.machine.nproc) CPUs, Linux \(.machine.kernel), load average \(.machine.loadavg_before) before, \(.machine.loadavg_after) after; toolrun \(.toolrun) (\(.toolrun_setup)); `\(.command)`",
	"",
	"| workload | rounds | direct (median) | toolrun (median) | ratio | target | checks |",
	"|---|---|---|---|---|---|---|",
	(.figures[] | "| \(.what) | \(.rounds) | \(.direct_median_s) s | \(.toolrun_median_s) s | **\(.ratio)** | ≤ \(.target): \(if .met then "met" else "missed" end) | \(if .ok then "same results" else "FLAGGED" end) |"),
	"",
	(.figures[] | select(.direct_totals) | "\(.name) results (direct round 1): \(.direct_totals)"),
	(.figures[] | .name as $n | .problems[] | "- \($n): \(.)")
' "$out/workloads.json" >"$out/workloads.md"

cat "$out/workloads.md"
say "workloads: results in $out/workloads.json and $out/workloads.md"
if jq -e 'all(.figures[]; .ok)' "$out/workloads.json" >/dev/null; then
	exit 0
fi
exit 1
