# shellcheck shell=bash disable=SC2154
# Shared by test/upstream/run.sh and bench/workloads.sh: a Debian source
# package fetched and built, and a command run the way an agent's command
# runs in the box (a private toolrund with container/toolrun.conf's
# limits, `bash -lc` reading the uninstalled profile snippet), or directly.
#
# Sourced, not run. The caller sets:
#   upstream_prog   the name its messages start with
#   repo            the toolrun source tree
#   work            the scratch directory (absolute)
#   build           toolrun's meson build directory (absolute)
#   jobs            make -j
#   test_timeout    seconds per test before the watchdog kills it
#   run_timeout     seconds per whole run, a backstop
# and calls upstream_init once. It works with or without `set -e`.

say() { printf '%s\n' "$*" >&2; }

upstream_init() {
	daemon=$build/daemon/toolrund
	cli=$build/cli/toolrun
	snippet=$build/preload/toolrun-uninstalled.sh
	local f
	for f in "$daemon" "$cli" "$snippet" "$build/preload/libtoolrun.so"; do
		[ -e "$f" ] || { say "$upstream_prog: $f is missing: build toolrun first"; return 1; }
	done
}

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

# A deb-src entry (deb822) for this machine's Debian release.
deb_src_entry() {
	local codename
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || codename=bookworm
	printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$codename" "$codename"
}

# How to enable source archives, for a message.
deb_src_hint() {
	cat <<EOF
$upstream_prog: apt has no source archives. Enable them, as root:
  printf '$(deb_src_entry | sed -z 's/\n/\\n/g')' \\
    >/etc/apt/sources.list.d/debian-src.sources && apt-get update
and install the build dependencies: apt-get build-dep PACKAGE
EOF
}

# The first unpacked PACKAGE-VERSION directory under $1, if any.
source_dir() {
	local dir
	for dir in "$1/$2"-[0-9]*/; do
		if [ -d "$dir" ]; then
			echo "${dir%/}"
			return 0
		fi
	done
	return 1
}

# apt-get source PACKAGE into $work/src, once; prints the directory.
# Returns 2 when apt has no deb-src entries (the log says so), 1 on
# another failure.
fetch() {
	local pkg=$1 log=$work/src/$1.fetch.log
	mkdir -p "$work/src"
	source_dir "$work/src" "$pkg" && return 0
	say "== $pkg: apt-get source"
	if ! (cd "$work/src" && apt-get source -q "$pkg") >"$log" 2>&1; then
		cat "$log" >&2
		if grep -q "You must put some 'deb-src' URIs" "$log"; then
			deb_src_hint >&2
			return 2
		fi
		return 1
	fi
	source_dir "$work/src" "$pkg" && return 0
	say "$upstream_prog: apt-get source $pkg made no $pkg-VERSION directory"
	return 1
}

# Does Debian's own build run dh_autoreconf? From debhelper compat 10
# on it does by default; before, only with dh-autoreconf (gawk is at 9).
debian_autoreconfs() {
	local src=$1 compat
	compat=$(cat "$src/debian/compat" 2>/dev/null ||
		sed -n 's/.*debhelper-compat *(= *\([0-9]*\)).*/\1/p' "$src/debian/control")
	[ "${compat:-0}" -ge 10 ] || grep -qs 'dh-autoreconf\|autoreconf' "$src/debian/control"
}

# Debian's patches that touch the build system need autoreconf, where
# Debian's own build (dh_autoreconf) does it. Once per tree: a copy of a
# regenerated tree is not regenerated again.
regen_pkg() {
	local src=$1
	[ -e "$src/.upstream-regen" ] && return 0
	if debian_autoreconfs "$src" && [ -d "$src/debian/patches" ] &&
		grep -hs '^+++ ' "$src/debian/patches"/* |
		grep -qE '(Makefile\.am|\.mk|configure\.ac|\.m4)([[:space:]]|$)'; then
		(cd "$src" && autoreconf -fi) || return 1
	fi
	touch "$src/.upstream-regen"
}

# What debian/rules does after configure. gawk's source package lacks
# the manual (GFDL, README.source): Debian stands in empty, old files, so
# that make does not try to build them.
after_configure() {
	case $1 in
	gawk)
		touch --date='Jan 01 2000' doc/gawktexi.in doc/sidebar.awk \
			doc/gawk.texi doc/gawk.info doc/gawkinet.texi doc/gawkinet.info \
			doc/gawkworkflow.texi doc/gawkworkflow.info \
			doc/pm-gawk.texi doc/pm-gawk.info
		;;
	esac
}

# configure, make, and build what `make check` would build (TESTS= runs
# none), so that the runs after it only run tests.
build_pkg() {
	local pkg=$1 src=$2 rebuild=${3:-}
	if [ -z "$rebuild" ] && [ -e "$src/.upstream-built" ]; then
		return 0
	fi
	say "== $pkg: configure and build (logs in $src/upstream-build.log)"
	rm -f "$src/.upstream-built"
	if [ -n "$rebuild" ]; then
		rm -f "$src/.upstream-regen"
	fi
	(
		regen_pkg "$src" &&
		cd "$src" &&
		./configure &&
		after_configure "$pkg" &&
		make -j"$jobs" &&
		make -j"$jobs" check TESTS= XFAIL_TESTS=
	) >"$src/upstream-build.log" 2>&1 || {
		tail -n 30 "$src/upstream-build.log" >&2
		say "$upstream_prog: building $pkg failed (apt-get build-dep $pkg?)"
		return 1
	}
	touch "$src/.upstream-built"
}

# Remove the results of an earlier `make check` (gawk's: test/_NAME).
clean_results() {
	local src=$1 trs
	while IFS= read -r trs; do
		rm -f "$trs" "${trs%.trs}.log"
	done < <(find "$src" -name '*.trs')
	find "$src" -name test-suite.log -delete
	if is_gawk_tree "$src"; then
		rm -f "$src"/test/_*
	fi
}

# gawk's suite is its own Makefile, not automake's test driver: it prints
# each test's name, leaves test/_NAME for a test whose output differs
# from NAME.ok, and ends with "ALL TESTS PASSED" or "N TESTS FAILED".
is_gawk_tree() {
	[ -e "$1/test/Gentests" ] && [ -e "$1/awkgram.y" ]
}

# For gawk, automake-style results from that: test/NAME.trs, PASS or FAIL,
# for every name make printed that has a NAME.ok; the difference (_NAME)
# as NAME.log. $1 the tree, $2 the output of make check.
gawk_results() {
	local src=$1 out=$2 name r
	while IFS= read -r name; do
		[ -e "$src/test/$name.ok" ] || continue
		r=PASS
		[ -e "$src/test/_$name" ] && r=FAIL
		printf ':test-result: %s\n:global-test-result: %s\n' "$r" "$r" >"$src/test/$name.trs"
		if [ "$r" = FAIL ]; then
			cp "$src/test/_$name" "$src/test/$name.log"
		fi
	done < <(grep -E '^[A-Za-z0-9_+-]+$' "$out" | LC_ALL=C sort -u)
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
		if [ -e "${trs%.trs}.log" ]; then
			cp "${trs%.trs}.log" "$dest/${rel%.trs}.log"
		fi
	done < <(find "$src" -name '*.trs')
	while IFS= read -r rel; do
		mkdir -p "$dest/$(dirname "$rel")"
		cp "$src/$rel" "$dest/$rel"
	done < <(find "$src" -name test-suite.log -printf '%P\n')
}

# The per-test watchdog: wraps automake's test driver, kills the test's
# whole process group after $UPSTREAM_TEST_TIMEOUT seconds, and then
# writes an ERROR result that says so.
write_watchdog() {
	cat >"$work/watchdog-driver" <<'EOF'
#!/bin/sh
# The upstream runs' per-test watchdog around automake's test-driver.
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

# `make -k check` with every test under the watchdog; more make
# arguments (TESTS=..., -C DIR) may follow.
check_command() {
	# shellcheck disable=SC2016 # make's variables, expanded by make
	local drv='$(SHELL) '$work'/watchdog-driver $(SHELL) $(top_srcdir)/build-aux/test-driver'
	# BASH_ENV only stands in for the box's /etc/profile.d/toolrun.sh,
	# which only login shells read: the shells below must not.
	local cmd="unset BASH_ENV; make -k -j$jobs check" v
	for v in LOG_DRIVER SH_LOG_DRIVER PL_LOG_DRIVER TEST_LOG_DRIVER; do
		cmd+=" $v='$drv'"
	done
	[ -z "$*" ] || cmd+=" $*"
	printf '%s\n' "$cmd"
}

# End the child PID: SIGTERM, up to 100 polls SECS apart, then SIGKILL;
# reap it.
end_child() {
	kill -TERM "$1" 2>/dev/null || true
	for _ in $(seq 1 100); do
		kill -0 "$1" 2>/dev/null || break
		sleep "$2"
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

daemon_pid=
stop_daemon() {
	[ -n "$daemon_pid" ] || return 0
	end_child "$daemon_pid" 0.05
	daemon_pid=
}

# A config like the box's (container/toolrun.conf): the same limits and
# truncate = sink, a private socket, spill directory and audit log, a
# command timeout of the whole run's, the build's library as `preload`,
# and the package's programs in $src added to the tools (none when
# PACKAGE is empty).
write_config() {
	local pkg=$1 src=$2 dir=$3 p extra='' listed
	listed=" $(sed -n 's/^tools *= *//p' "$repo/container/toolrun.conf") "
	for p in $(own_programs "$pkg"); do
		case $listed in *" ${p##*/} "*) ;; *) extra+=" ${p##*/}" ;; esac
		extra+=" $src/$p"
	done
	mkdir -p "$dir/spill" "$dir/audit"
	sed -e "s|^socket *=.*|socket    = $dir/toolrun.sock\npreload   = $build/preload/libtoolrun.so|" \
		-e "s|^spill_dir *=.*|spill_dir = $dir/spill|" \
		-e "s|^audit_log *=.*|audit_log = $dir/audit/audit.jsonl|" \
		-e "s|^command_timeout *=.*|command_timeout = $run_timeout|" \
		-e "/^tools *=/s|\$|$extra|" \
		"$repo/container/toolrun.conf" >"$dir/toolrun.conf"
	# The library of this build, not an installed one, is toolrun's own.
}

start_daemon() {
	local dir=$1
	rm -f "$dir/toolrun.sock"
	"$daemon" --config "$dir/toolrun.conf" -v 2>>"$dir/daemon.log" &
	daemon_pid=$!
	for _ in $(seq 1 100); do
		if [ -S "$dir/toolrun.sock" ] &&
			TOOLRUN_CONFIG=$dir/toolrun.conf "$cli" ping >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.05
	done
	say "$upstream_prog: toolrund did not come up; its log:"
	cat "$dir/daemon.log" >&2
	stop_daemon
	return 1
}

# The environment of one run, in the array run_env (a command prefix):
# `toolrun` (the config in $2, written by write_config) or `direct`.
# Through toolrun the profile snippet (BASH_ENV) adds the library and
# declares the agent's streams, and bash restarts itself with it; with
# $3 `whole`, the library is preloaded from the first instruction
# instead, as the image's `ENV LD_PRELOAD` does, so that the whole
# command is handed to toolrund (agent_commands).
set_run_env() {
	local mode=$1 dir=${2:-} how=${3:-}
	run_env=(env -u LD_PRELOAD -u BASH_ENV -u TOOLRUN_AGENT_STDOUT
		-u TOOLRUN_AGENT_STDERR -u TOOLRUN_NESTED -u TOOLRUN_CONFIG
		UPSTREAM_TEST_TIMEOUT="$test_timeout")
	if [ "$mode" != toolrun ]; then
		run_env+=(TOOLRUN=off)
	elif [ "$how" = whole ]; then
		run_env+=(TOOLRUN_CONFIG="$dir/toolrun.conf" LD_PRELOAD="$build/preload/libtoolrun.so")
	else
		run_env+=(TOOLRUN_CONFIG="$dir/toolrun.conf" BASH_ENV="$snippet")
	fi
}

# Run COMMAND in $1 as an agent's command would be: bash -lc COMMAND,
# its stdout and stderr a pipe to the agent (here to cat, into the file
# $2), under the environment of set_run_env. Writes its status to
# $3/status and its wall time in seconds to $3/wall; returns 0. It runs
# in the background, so that a signal's trap (upstream_cleanup) can end
# it at once.
agent_pid=
run_agent_command() {
	local src=$1 out=$2 dir=$3 cmd=$4 t0 t1 rc=0 cat_pid
	rm -f "$dir/agent.fifo"
	mkfifo "$dir/agent.fifo"
	cat <"$dir/agent.fifo" >"$out" &
	cat_pid=$!
	t0=$(date +%s.%N)
	(cd "$src" && exec timeout -k 30 "$run_timeout" "${run_env[@]}" bash -lc "$cmd") \
		>"$dir/agent.fifo" 2>&1 &
	agent_pid=$!
	wait "$agent_pid" || rc=$?
	agent_pid=
	t1=$(date +%s.%N)
	wait "$cat_pid" || true
	rm -f "$dir/agent.fifo"
	echo "$rc" >"$dir/status"
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' >"$dir/wall"
}

# End a command still running (timeout passes the signal on to the
# command's process group) and the daemon.
upstream_cleanup() {
	if [ -n "$agent_pid" ]; then
		end_child "$agent_pid" 0.1
		agent_pid=
	fi
	stop_daemon
}

# test<TAB>global result (with "killed" when the watchdog ended it)
results_of() {
	local dir=$1 trs rel g
	[ -d "$dir" ] || return 0
	while IFS= read -r rel; do
		trs=$dir/$rel
		g=$(sed -n 's/^:global-test-result: *//p' "$trs" | head -n 1)
		[ -n "$g" ] || g=$(sed -n 's/^:test-result: *//p' "$trs" | sort -u | paste -sd/)
		if grep -q '^:watchdog: killed' "$trs"; then
			g="$g(killed)"
		fi
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

# The tests whose results differ between two saved runs: a header line
# and test<TAB>first<TAB>second lines; nothing when none differ.
results_diff() {
	LC_ALL=C join -t $'\t' -a 1 -a 2 -e '-' -o 0,1.2,2.2 \
		<(results_of "$1") <(results_of "$2") |
		awk -F '\t' '$2 != $3'
}
