# Shared by the container suite: the image built from this tree, one box
# (a container started by container/run.sh) per test file, and helpers to
# run commands in it and read the daemon's log.
#
# Each file calls ct_setup_file in setup_file (which builds the image if
# the sources changed, then starts the file's box) and ct_teardown_file in
# teardown_file (which removes every container the file started).
#
# The suite runs once per image variant (TOOLRUN_TEST_VARIANT: base, the
# default image, or dev, the development image; test/container/meson.build
# registers both). Image tags are this tree's own (a hash of its path,
# unless TOOLRUN_TEST_TAG says otherwise), so that two checkouts testing
# on one engine never build over each other's images, and no test uses an
# image it did not build.
#
# No Docker engine: it is started (scripts/ensure-docker.sh) when dockerd
# is installed and we are root; otherwise every test is skipped with a
# message, except under CI=true, where setup_file fails: CI must run this
# suite for real.
#
# Nothing here assumes a fast machine: waits poll for the awaited state
# with generous bounds, and no test asserts how long something took.

bats_require_minimum_version 1.5.0

: "${TOOLRUN_SOURCE:?run through meson test}"

CT_SRC="$TOOLRUN_SOURCE"
CT_RUN="$CT_SRC/container/run.sh"
CT_VARIANT=${TOOLRUN_TEST_VARIANT:-base}
case $CT_VARIANT in base|dev) ;; *) echo "TOOLRUN_TEST_VARIANT must be base or dev" >&2; exit 1 ;; esac
CT_TAG=${TOOLRUN_TEST_TAG:-$(printf '%s' "$CT_SRC" | sha256sum | cut -c1-12)}
CT_IMAGE="toolrun-test:$CT_TAG-$CT_VARIANT"
# The self-contained tree (the Dockerfile's install target), and an image
# derived from a plain base with the documented lines.
CT_INSTALL_IMAGE="toolrun-test-install:$CT_TAG"
CT_DERIVED_IMAGE="toolrun-test-derived:$CT_TAG"
# The tools the image's config lists.
CT_TOOLS=$(sed -n 's/^tools[[:space:]]*=[[:space:]]*//p' "$CT_SRC/container/toolrun.conf")
# A file every Debian or Ubuntu image has, longer than the limits (200
# lines, 4000 bytes): shaped output is cut with a marker.
CT_BIG=/usr/share/common-licenses/GPL-3
# Container names: this run's and this file's prefix, so that teardown
# finds them all and two runs of the suite never touch each other's boxes.
CT_RUN_ID=${BATS_RUN_TMPDIR:-$$}
CT_RUN_ID=${CT_RUN_ID##*-}
CT_PREFIX="trtest-$CT_RUN_ID-$CT_VARIANT-$(basename "$BATS_TEST_FILENAME" .bats)"
# Bounds for waits (seconds): reached only when something is wrong.
CT_WAIT=${TOOLRUN_TEST_WAIT:-120}

# Is there an engine? Sets CT_SKIP (read by ct_setup) when there is not.
ct_engine() {
	local why=
	if ! command -v docker >/dev/null 2>&1; then
		why="docker is not installed"
	elif ! timeout 60 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
		if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null 2>&1; then
			"$CT_SRC/scripts/ensure-docker.sh" >&2 || true
		fi
		timeout 60 docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
			why="no Docker engine answers (is dockerd running? is the socket accessible?)"
	fi
	[ -z "$why" ] && return 0
	if [ "${CI-}" = true ]; then
		echo "container suite: $why; under CI=true it must run (scripts/setup-deps.sh installs docker.io, scripts/ensure-docker.sh starts dockerd)" >&2
		return 1
	fi
	export CT_SKIP="container suite skipped: $why"
	return 0
}

# Build this variant's image (the engine's cache makes an unchanged tree
# cheap).
ct_build() {
	"$CT_SRC/container/build.sh" --image "$CT_IMAGE" --variant "$CT_VARIANT" --quiet >&2
}

# A fresh workspace the container's user (1000) can write, with files.
ct_workspace() {
	local ws
	ws=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/ws.XXXXXX")
	seq 1 100000 >"$ws/large_file.txt"
	printf 'alpha\nbeta\ngamma\nbeta\n' >"$ws/words.txt"
	chmod 0755 "$ws"
	chmod 0644 "$ws"/*
	if [ "$(id -u)" = 0 ]; then
		chown -R 1000:1000 "$ws"
	else
		chmod 0777 "$ws"
	fi
	echo "$ws"
}

# ct_start SUFFIX [run.sh options...]: start a box; prints its name.
ct_start() {
	local name="$CT_PREFIX-$1"
	shift
	local ws
	ws=$(ct_workspace)
	TOOLRUN_IMAGE="$CT_IMAGE" "$CT_RUN" --replace --wait "$CT_WAIT" "$@" "$name" "$ws"
}

# ct_setup_image: the engine and this variant's image, no box.
ct_setup_image() {
	ct_engine || return 1
	[ -n "${CT_SKIP-}" ] && return 0
	ct_build || { echo "container suite: the image build failed" >&2; return 1; }
	ct_remove_all
}

ct_setup_file() {
	ct_setup_image || return 1
	[ -n "${CT_SKIP-}" ] && return 0
	CT_BOX=$(ct_start box "$@") || {
		echo "container suite: container/run.sh failed" >&2
		return 1
	}
	export CT_BOX
}

ct_setup() {
	[ -z "${CT_SKIP-}" ] || skip "$CT_SKIP"
}

ct_remove_all() {
	local ids
	ids=$(docker ps -aq --filter "name=^$CT_PREFIX-" 2>/dev/null) || return 0
	[ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
}

ct_teardown_file() {
	[ -n "${CT_SKIP-}" ] && return 0
	ct_remove_all
}

# ---------------------------------------------------------------------
# Running things in the box

# ct_sh COMMAND: the agent's way, `docker exec -u 1000 BOX bash -lc COMMAND`.
ct_sh() {
	docker exec -u 1000 "$CT_BOX" bash -lc "$1"
}

# The pid of the serving toolrund (the child of PID 1 named toolrund),
# found by scanning /proc with bash alone (no procps needed).
ct_daemon_pid() {
	docker exec -u 1000 -e TOOLRUN=off "${1:-$CT_BOX}" bash -c '
		for d in /proc/[0-9]*; do
			read -r comm <"$d/comm" 2>/dev/null || continue
			[ "$comm" = toolrund ] || continue
			read -r stat <"$d/stat" 2>/dev/null || continue
			set -- ${stat##*) }
			[ "$2" = 1 ] && echo "${d#/proc/}"
		done; true'
}

# Pids of the processes named NAME in the box.
ct_pids_named() {
	docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c '
		for d in /proc/[0-9]*; do
			read -r comm <"$d/comm" 2>/dev/null || continue
			[ "$comm" = "$1" ] && echo "${d#/proc/}"
		done; true' - "$1"
}

# Wait until COMMAND... succeeds, polling every 0.1 s, for SECONDS at most
# (a bound for a broken box, not a claim about speed).
ct_wait_for() {
	local seconds=$1
	shift
	local deadline=$((SECONDS + seconds))
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}

# ---------------------------------------------------------------------
# The daemon's log (`docker logs`: toolrun-init's and toolrund's stderr)

ct_log() {
	docker logs "${1:-$CT_BOX}" 2>&1
}

# The job lines: "... toolrund[N] listener info: job 7 uid=1000 tool=cat ..."
# for a listed tool, "... job 6 uid=1000 command=bash ..." for an agent
# command (each `docker exec -u 1000 BOX bash -lc ...`), logged when it ends, after
# the tools it ran.
ct_job_lines() {
	ct_log | grep -E ' toolrund\[[0-9]+\] listener info: job [0-9]+ uid=' || true
}

ct_job_count() {
	ct_job_lines | wc -l
}

# ct_new_jobs N: the job lines after the first N.
ct_new_jobs() {
	ct_job_lines | tail -n +$(($1 + 1))
}

# ct_wait_job N PATTERN: wait (CT_WAIT at most) for a job line after the
# first N that matches PATTERN (an extended regex); print it.
ct_wait_job() {
	local before=$1 pattern=$2 deadline=$((SECONDS + CT_WAIT)) line
	while :; do
		line=$(ct_new_jobs "$before" | grep -E -- "$pattern" | head -n 1)
		if [ -n "$line" ]; then
			echo "$line"
			return 0
		fi
		[ $SECONDS -lt $deadline ] || break
		sleep 0.1
	done
	echo "no job line matching '$pattern' after job line $before; the log ends with:" >&2
	ct_log | tail -n 15 >&2
	return 1
}

# The marker lines in a text: where toolrun cut a stream.
ct_markers() {
	grep '^\.\.\.\[toolrun cut ' <<<"$1" || true
}

# ct_shaped_and_whole FILE UID: `cat FILE` under bash -lc reaches the
# agent as the shipped budget (4000 bytes, 200 lines, head and tail)
# shapes it, byte for byte as the reference model (shape-ref.py) says,
# with one marker that names the file keeping the whole, which holds every
# byte; into a pipe, every byte; and the daemon logged the command and the
# cat in it for UID. FILE is longer than the budget, as CT_BIG is.
ct_shaped_and_whole() {
	local file=$1 uid=$2 before size expected got marker path
	size=$(docker exec -u 1000 -e TOOLRUN=off -e LD_PRELOAD= "$CT_BOX" wc -c "$file")
	size=${size%% *}
	expected=$(docker exec -u 1000 -e TOOLRUN=off -e LD_PRELOAD= "$CT_BOX" cat "$file" |
		python3 "$CT_SRC/test/differential/shape-ref.py" --spill SPILL 4000 200)
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "cat $file"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	marker=$(ct_markers "$output")
	[ "$(wc -l <<<"$marker")" -eq 1 ]
	path=$(sed -n "s#.*the whole stdout is in \\(/tmp/toolrun-output/$uid/[^] ]*-stdout\\.log\\)\\]\$#\\1#p" <<<"$marker")
	[ -n "$path" ]
	got=$(sed "s#$path#SPILL#" <<<"$output")
	[ "$got" = "$expected" ]
	# The budget and the marker's line, nothing more.
	[ "${#output}" -le $((4000 + ${#marker} + 1)) ]
	run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" cmp "$path" "$file"
	[ "$status" -eq 0 ]
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc "cat $file | wc -c"
	[ "$output" = "$size" ]
	# The command is shaped as a whole; cat in it writes straight there.
	ct_wait_job "$before" " uid=$uid command=bash .* exit=0 .* stdout=${size}B/" >/dev/null
	ct_wait_job "$before" " uid=$uid tool=cat .* exit=0 .* stdout=direct " >/dev/null
}

# ct_no_jobs_since N [BOX]: the daemon logged no job after the first N job
# lines, neither a listed tool's nor an agent command's.
# ct_no_tool_jobs_since N [BOX]: no listed tool's job (agent commands may
# have run).
# Proved without sleeping: a marker job (head, run after the commands
# under test) must be the only new line of its kind, and the daemon writes
# its lines in the order the jobs end. The marker runs in a terminal
# (docker exec -u 1000 -t), so that its bash is no agent command: a terminal is a
# person, not an agent.
ct_no_jobs_since() {
	ct_only_marker_since "$1" "${2:-$CT_BOX}" ' (tool|command)='
}

ct_no_tool_jobs_since() {
	ct_only_marker_since "$1" "${2:-$CT_BOX}" ' tool='
}

ct_only_marker_since() {
	local before=$1 box=$2 kind=$3 new
	docker exec -u 1000 -t "$box" bash -c 'head -c 0 /dev/null' >/dev/null || return 1
	CT_BOX=$box ct_wait_job "$before" ' tool=head .* exit=0 ' >/dev/null || return 1
	new=$(CT_BOX=$box ct_new_jobs "$before" | grep -E -- "$kind")
	if [ "$(printf '%s\n' "$new" | wc -l)" -ne 1 ]; then
		echo "job lines logged besides the marker's:" >&2
		printf '%s\n' "$new" >&2
		return 1
	fi
}

# Seconds since the epoch, with fractions, and a difference of two: for
# the TAP comments only (no test asserts a duration).
ct_now() { date +%s.%N; }
ct_elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
