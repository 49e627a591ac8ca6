# Sourced by the benchmarks that run in a box (client-latency.sh,
# container-exec.sh, mcp-peers.sh): their messages, the image, a box of
# their own started with container/run.sh (its hardening and limits), and
# its removal at exit.
#
# The sourcing script sets, before calling these: bench_name (its
# messages' prefix), repo (the checkout), image, box (empty: start one)
# and keep (true: leave the box it started, and that box's workspace).
# bench_tmp is a temporary directory of the run, removed at exit unless
# it holds a kept box's workspace.

say() { printf '%s: %s\n' "$bench_name" "$*" >&2; }
die() { say "$*"; exit 1; }

bench_started=false
bench_tmp=$(mktemp -d) || exit 1

bench_cleanup() {
	if $bench_started && ! $keep; then
		docker rm -f "$box" >/dev/null 2>&1 || true
	fi
	if ! $bench_started || ! $keep; then
		rm -rf "$bench_tmp"
	fi
}
trap bench_cleanup EXIT

# The image, built with container/build.sh when it is missing.
bench_image() {
	docker image inspect "$image" >/dev/null 2>&1 && return 0
	say "no image $image: building it"
	TOOLRUN_IMAGE=$image "$repo/container/build.sh" --quiet
}

# bench_box PREFIX: unless --box named one, start a box PREFIX-PID of the
# image on a fresh workspace the box's agent (uid 1000) can write.
bench_box() {
	[ -z "$box" ] || return 0
	box=$1-$$
	mkdir "$bench_tmp/workspace"
	chmod 0777 "$bench_tmp/workspace"
	TOOLRUN_IMAGE=$image "$repo/container/run.sh" --replace "$box" "$bench_tmp/workspace" >/dev/null ||
		die "container/run.sh could not start $box"
	bench_started=true
	if $keep; then say "box $box (kept)"; fi
}
