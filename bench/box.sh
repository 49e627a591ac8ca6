# Sourced by the benchmarks that run in a box (client-latency.sh,
# container-exec.sh, mcp-peers.sh): their messages, the image, a box of
# their own started with container/run.sh (its hardening and limits), and
# its removal at exit.
#
# The sourcing script sets, before sourcing it: bench_name (its messages'
# prefix), repo (the checkout), image, rounds, box (empty: start one),
# keep (true: leave the box it started, and that box's workspace) and,
# if it takes --out, out.
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

# bench_option ARGS...: the option ARGS begins with, one of those every
# box benchmark takes (--rounds N, --box NAME, --keep, --out DIR where
# the script has out, --help: the script's opening comment); sets
# bench_took to the words it took. Any other ends the script.
bench_option() {
	case $1 in
	--rounds | --box | --out)
		[ "$1" != --out ] || [ -n "${out+set}" ] || die "unknown argument '$1' (see --help)"
		[ $# -ge 2 ] || die "$1 needs a value"
		printf -v "${1#--}" '%s' "$2"
		bench_took=2
		;;
	--keep) keep=true; bench_took=1 ;;
	-h | --help) sed -n '2,${/^#/!q;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
}

# bench_check_rounds MAX: --rounds is 1 to MAX.
bench_check_rounds() {
	[[ $rounds =~ ^[1-9][0-9]*$ ]] && [ "$rounds" -le "$1" ] ||
		die "--rounds must be 1 to $1, not '$rounds'"
}

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
