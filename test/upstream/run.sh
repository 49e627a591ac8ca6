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
daemon=$build/daemon/toolrund
cli=$build/cli/toolrun
snippet=$build/preload/toolrun-uninstalled.sh
for f in "$daemon" "$cli" "$snippet" "$build/preload/libtoolrun.so"; do
	[ -e "$f" ] || { echo "run.sh: $f is missing: build toolrun first" >&2; exit 1; }
done

say() { printf '%s\n' "$*" >&2; }

# The package's own programs, as built, relative to its tree: added to the
# tools list by name and by absolute path.
own_programs() {
	case $1 in
	grep) echo src/grep src/egrep src/fgrep ;;
	sed) echo sed/sed ;;
	diffutils) echo src/diff src/cmp src/sdiff src/diff3 ;;
	findutils) echo find/find xargs/xargs locate/locate locate/frcode ;;
	gawk) echo gawk ;;
	esac
}

fetch() {
	local pkg=$1 dir
	mkdir -p "$work/src"
	for dir in "$work/src/$pkg"-[0-9]*/; do
		echo "${dir%/}"
		return 0
	done
	say "== $pkg: apt-get source"
	if ! (cd "$work/src" && apt-get source -q "$pkg") >"$work/src/$pkg.fetch.log" 2>&1; then
		cat "$work/src/$pkg.fetch.log" >&2
		if grep -q "You must put some 'deb-src' URIs" "$work/src/$pkg.fetch.log"; then
			cat >&2 <<'EOF'
run.sh: apt has no source archives. Enable them, e.g. for Debian 12:
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    >/etc/apt/sources.list.d/debian-src.sources && apt-get update
and install the build dependencies: apt-get build-dep PACKAGE
EOF
		fi
		return 1
	fi
	for dir in "$work/src/$pkg"-[0-9]*/; do
		echo "${dir%/}"
		return 0
	done
	say "run.sh: apt-get source $pkg made no $pkg-VERSION directory"
	return 1
}

# configure, make, and build what `make check` would build (TESTS= runs
# none), so that both runs only run tests.
build_pkg() {
	local pkg=$1 src=$2
	if [ -z "$rebuild" ] && [ -e "$src/.upstream-built" ]; then
		return 0
	fi
	say "== $pkg: configure and build (logs in $src/upstream-build.log)"
	rm -f "$src/.upstream-built"
	# Debian's patches that touch the build system need autoreconf, as
	# Debian's own build (dh_autoreconf) does.
	local regen=
	if [ -d "$src/debian/patches" ] &&
		grep -hs '^+++ ' "$src/debian/patches"/* |
		grep -qE '(Makefile\.am|\.mk|configure\.ac|\.m4)([[:space:]]|$)'; then
		regen=1
	fi
	(
		cd "$src" &&
		if [ -n "$regen" ]; then autoreconf -fi; fi &&
		./configure &&
		make -j"$jobs" &&
		make -j"$jobs" check TESTS= XFAIL_TESTS=
	) >"$src/upstream-build.log" 2>&1 || {
		tail -n 30 "$src/upstream-build.log" >&2
		say "run.sh: building $pkg failed (apt-get build-dep $pkg?)"
		return 1
	}
	touch "$src/.upstream-built"
}

# Remove the results of an earlier `make check`.
clean_results() {
	local src=$1 trs
	while IFS= read -r trs; do
		rm -f "$trs" "${trs%.trs}.log"
	done < <(find "$src" -name '*.trs')
	find "$src" -name test-suite.log -delete
}

# Copy the .trs and .log files of the run into $2.
save_results() {
	local src=$1 dest=$2 trs rel
	rm -rf "$dest"
	mkdir -p "$dest"
	while IFS= read -r trs; do
		rel=${trs#"$src"/}
		mkdir -p "$dest/$(dirname "$rel")"
		cp "$trs" "$dest/$rel"
		[ -e "${trs%.trs}.log" ] && cp "${trs%.trs}.log" "$dest/${rel%.trs}.log"
	done < <(find "$src" -name '*.trs')
	find "$src" -name test-suite.log -printf '%P\n' | while IFS= read -r rel; do
		mkdir -p "$dest/$(dirname "$rel")"
		cp "$src/$rel" "$dest/$rel"
	done
}

# The per-test watchdog: wraps automake's test driver, kills the test's
# whole process group after $UPSTREAM_TEST_TIMEOUT seconds, and then
# writes an ERROR result that says so.
write_watchdog() {
	cat >"$work/watchdog-driver" <<'EOF'
#!/bin/sh
# run.sh's per-test watchdog around automake's test-driver.
trs= log= tname= prev=
for a in "$@"; do
	case $prev in
	--trs-file) trs=$a ;;
	--log-file) log=$a ;;
	--test-name) tname=$a ;;
	esac
	prev=$a
done
timeout -k 10 "${UPSTREAM_TEST_TIMEOUT:-300}" "$@"
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "run.sh watchdog: killed after ${UPSTREAM_TEST_TIMEOUT:-300} s" >>"$log"
	printf ':test-result: ERROR\n:global-test-result: ERROR\n:recheck: yes\n:copy-in-global-log: yes\n:watchdog: killed\n' >"$trs"
	echo "ERROR: $tname (killed by the watchdog)"
	exit 0
fi
exit $rc
EOF
	chmod +x "$work/watchdog-driver"
}

daemon_pid=
stop_daemon() {
	[ -n "$daemon_pid" ] || return 0
	kill -TERM "$daemon_pid" 2>/dev/null
	local i
	for i in $(seq 1 100); do
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.05
	done
	daemon_pid=
}
trap stop_daemon EXIT
trap 'stop_daemon; exit 130' INT TERM

# A config like the box's (container/toolrun.conf): the same limits and
# truncate = sink, a private socket, and the package's programs added.
write_config() {
	local pkg=$1 src=$2 dir=$3 p extra= listed
	listed=" $(sed -n 's/^tools *= *//p' "$repo/container/toolrun.conf") "
	for p in $(own_programs "$pkg"); do
		case $listed in *" ${p##*/} "*) ;; *) extra+=" ${p##*/}" ;; esac
		extra+=" $src/$p"
	done
	sed -e "s|^socket *=.*|socket    = $dir/toolrun.sock|" \
		-e "/^tools *=/s|\$|$extra|" \
		"$repo/container/toolrun.conf" >"$dir/toolrun.conf"
}

start_daemon() {
	local dir=$1 i
	rm -f "$dir/toolrun.sock"
	"$daemon" --config "$dir/toolrun.conf" -v 2>>"$dir/daemon.log" &
	daemon_pid=$!
	for i in $(seq 1 100); do
		[ -S "$dir/toolrun.sock" ] &&
			TOOLRUN_CONFIG=$dir/toolrun.conf "$cli" ping >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	say "run.sh: toolrund did not come up; its log:"
	cat "$dir/daemon.log" >&2
	return 1
}

# One `make check`, started as an agent's command would be:
# bash -lc 'make check', its stdout and stderr a pipe to the agent (here
# a file behind cat). Through toolrun, the profile snippet (BASH_ENV)
# declares those as the agent's streams and preloads the library.
run_check() {
	local pkg=$1 src=$2 mode=$3 dir=$work/$pkg/$mode
	rm -rf "$dir"
	mkdir -p "$dir"
	clean_results "$src"
	local drv='$(SHELL) '$work'/watchdog-driver $(SHELL) $(top_srcdir)/build-aux/test-driver'
	# BASH_ENV only stands in for the box's /etc/profile.d/toolrun.sh,
	# which only login shells read: the shells below must not.
	local cmd="unset BASH_ENV; make -k -j$jobs check"
	local v
	for v in LOG_DRIVER SH_LOG_DRIVER PL_LOG_DRIVER TEST_LOG_DRIVER; do
		cmd+=" $v='$drv'"
	done
	local -a envv=(env -u LD_PRELOAD -u BASH_ENV -u TOOLRUN_AGENT_STDOUT
		-u TOOLRUN_AGENT_STDERR -u TOOLRUN_NESTED -u TOOLRUN_CONFIG
		UPSTREAM_TEST_TIMEOUT="$test_timeout")
	if [ "$mode" = toolrun ]; then
		write_config "$pkg" "$src" "$dir"
		start_daemon "$dir" || return 1
		envv+=(TOOLRUN_CONFIG="$dir/toolrun.conf" BASH_ENV="$snippet")
	else
		envv+=(TOOLRUN=off)
	fi
	say "== $pkg: make check, $mode (per-test watchdog ${test_timeout} s)"
	local t0 t1 rc
	t0=$(date +%s.%N)
	(cd "$src" && "${envv[@]}" timeout -k 30 "$run_timeout" bash -lc "$cmd" 2>&1 |
		cat >"$dir/make-check.out"; exit "${PIPESTATUS[0]}")
	rc=$?
	t1=$(date +%s.%N)
	echo "$rc" >"$dir/status"
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/wall"
	[ "$mode" = toolrun ] && stop_daemon
	save_results "$src" "$dir/results"
}

# test<TAB>global result (with "killed" when the watchdog ended it)
results_of() {
	local dir=$1 trs rel g
	[ -d "$dir" ] || return 0
	while IFS= read -r rel; do
		trs=$dir/$rel
		g=$(sed -n 's/^:global-test-result: *//p' "$trs" | head -n 1)
		[ -n "$g" ] || g=$(sed -n 's/^:test-result: *//p' "$trs" | sort -u | paste -sd/)
		grep -q '^:watchdog: killed' "$trs" && g="$g(killed)"
		printf '%s\t%s\n' "${rel%.trs}" "${g:-?}"
	done < <(cd "$dir" && find . -name '*.trs' -printf '%P\n') |
		LC_ALL=C sort -t "$(printf '\t')" -k1,1
}

# Totals of the :test-result: lines, as automake counts them.
totals_of() {
	local dir=$1
	[ -d "$dir" ] || { echo "not run"; return 0; }
	find "$dir" -name '*.trs' -exec sed -n 's/^:test-result: *//p' {} + |
		LC_ALL=C sort | uniq -c |
		awk '{ printf "%s%d %s", (NR > 1 ? ", " : ""), $1, $2 } END { if (NR == 0) printf "no results"; print "" }'
}

report() {
	local pkg=$1 src=$2 d=$work/$pkg/direct t=$work/$pkg/toolrun
	echo "== $pkg (${src##*/})"
	if [ ! -d "$d/results" ] || [ ! -d "$t/results" ]; then
		echo "only one run: nothing to compare"
	else
	LC_ALL=C join -t $'\t' -a 1 -a 2 -e '-' -o 0,1.2,2.2 \
		<(results_of "$d/results") <(results_of "$t/results") |
		awk -F '\t' '
			$2 != $3 { if (!n++) printf "%-44s %-14s %s\n", "test", "direct", "toolrun";
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
		build_pkg "$pkg" "$src" || { status=1; continue; }
		for mode in $modes; do
			run_check "$pkg" "$src" "$mode" || status=1
		done
	else
		src=$(for d in "$work/src/$pkg"-[0-9]*/; do echo "${d%/}"; done | head -n 1)
	fi
	report "$pkg" "$src"
done
exit $status
