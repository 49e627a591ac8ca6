#!/bin/bash
# Run an upstream test suite (a Debian source package's `make check`)
# directly and through toolrun, and compare the per-test results.
#
#   test/upstream/run.sh [-w DIR] [-b BUILD] [-j N] [-t SECS] PACKAGE...
#
# See test/upstream/README.md.

set -u
shopt -s nullglob

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

work=${UPSTREAM_WORK:-$PWD/upstream-work}
build=${TOOLRUN_BUILD:-$repo/build}
jobs=2
test_timeout=300     # seconds per test, then the watchdog kills it
run_timeout=7200     # seconds per `make check`, a backstop
modes="direct toolrun"
rebuild=

usage() {
	sed -n '2,8s/^# \{0,1\}//p' "$0"
	cat <<'EOF'
  -w DIR    scratch directory (default ./upstream-work, or $UPSTREAM_WORK)
  -b BUILD  toolrun's meson build directory (default BUILD of this tree,
            or $TOOLRUN_BUILD)
  -j N      make -j for the build and for make check (default 2)
  -t SECS   per-test watchdog (default 300)
  -m MODES  which runs, of "direct toolrun" (default both)
  -r        reconfigure and rebuild the package
  -c        only print the comparison of the results already saved
Packages known: grep sed diffutils findutils gawk (others: no programs
of their own are added to the tools list).
EOF
}

compare_only=
while getopts 'w:b:j:t:m:rch' opt; do
	case $opt in
	w) work=$OPTARG ;;
	b) build=$OPTARG ;;
	j) jobs=$OPTARG ;;
	t) test_timeout=$OPTARG ;;
	m) modes=$OPTARG ;;
	r) rebuild=1 ;;
	c) compare_only=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { usage >&2; exit 2; }

mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)
build=$(cd "$build" 2>/dev/null && pwd) || {
	echo "run.sh: no toolrun build at $build (meson setup build && meson compile -C build)" >&2
	exit 1
}
upstream_prog=run.sh
# shellcheck source=test/upstream/lib.sh
. "$here/lib.sh"
upstream_init || exit 1

trap upstream_cleanup EXIT
trap 'upstream_cleanup; exit 130' INT TERM

# One `make check`, started as an agent's command would be:
# bash -lc 'make check', its stdout and stderr a pipe to the agent (here
# a file behind cat). Through toolrun, the profile snippet (BASH_ENV)
# declares those as the agent's streams and preloads the library.
run_check() {
	local pkg=$1 src=$2 mode=$3
	local dir=$work/$pkg/$mode
	rm -rf "$dir"
	mkdir -p "$dir"
	clean_results "$src"
	if [ "$mode" = toolrun ]; then
		write_config "$pkg" "$src" "$dir"
		start_daemon "$dir" || return 1
	fi
	set_run_env "$mode" "$dir"
	say "== $pkg: make check, $mode (per-test watchdog ${test_timeout} s)"
	run_agent_command "$src" "$dir/make-check.out" "$dir" "$(check_command "")"
	[ "$mode" = toolrun ] && stop_daemon
	if is_gawk_tree "$src"; then
		gawk_results "$src" "$dir/make-check.out"
	fi
	save_results "$src" "$dir/results"
}

report() {
	local pkg=$1 src=$2
	local d=$work/$pkg/direct t=$work/$pkg/toolrun
	echo "== $pkg (${src##*/})"
	if [ ! -d "$d/results" ] || [ ! -d "$t/results" ]; then
		echo "only one run: nothing to compare"
	else
	results_diff "$d/results" "$t/results" |
		awk -F '\t' '
			{ if (!n++) printf "%-44s %-14s %s\n", "test", "direct", "toolrun";
			  printf "%-44s %-14s %s\n", $1, $2, $3 }
			END { if (!n) print "no per-test differences" }'
	fi
	printf 'totals  direct:  %s\n' "$(totals_of "$d/results")"
	printf 'totals  toolrun: %s\n' "$(totals_of "$t/results")"
	local wd wt
	wd=$(cat "$d/wall" 2>/dev/null)
	wt=$(cat "$t/wall" 2>/dev/null)
	printf 'wall    direct: %s s, toolrun: %s s' "${wd:--}" "${wt:--}"
	if [ -n "$wd" ] && [ -n "$wt" ]; then
		awk -v a="$wd" -v b="$wt" 'BEGIN { printf ", ratio %.2f", b / a }'
	fi
	echo
	local m k
	for m in direct toolrun; do
		k=$(results_of "$work/$pkg/$m/results" | sed -n 's/\t.*(killed)$//p' | paste -sd' ')
		[ -n "$k" ] && echo "killed by the watchdog ($m): $k"
		[ -e "$work/$pkg/$m/status" ] && [ "$(cat "$work/$pkg/$m/status")" = 124 ] &&
			echo "make check ($m) was killed after ${run_timeout} s"
	done
	echo
}

write_watchdog
status=0
for pkg in "$@"; do
	if [ -z "$compare_only" ]; then
		src=$(fetch "$pkg") || { status=1; continue; }
		build_pkg "$pkg" "$src" "$rebuild" || { status=1; continue; }
		for mode in $modes; do
			run_check "$pkg" "$src" "$mode" || status=1
		done
	else
		src=$(for d in "$work/src/$pkg"-[0-9]*/; do echo "${d%/}"; done | head -n 1)
	fi
	report "$pkg" "$src"
done
exit $status
