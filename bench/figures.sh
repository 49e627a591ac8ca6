#!/bin/bash
# figures.sh: what the suite benchmarks share (bench/workloads.sh,
# bench/upstream-suites.sh; bench/busy-listener.sh takes its errors and
# median), sourced after they set `upstream_prog` (the
# name their messages start with) and `repo`: their errors, the median of
# a column of seconds, one figure as JSON, and the report around the
# figures (date, command, machine, load, toolrun's revision).

: "${upstream_prog:?set by the script that sources figures.sh}" "${repo:?set by the script that sources figures.sh}"

die() { printf '%s: %s\n' "$upstream_prog" "$*" >&2; exit 1; }
skip() { printf '%s: skipped: %s\n' "$upstream_prog" "$*" >&2; exit 77; }
need() { [ "$2" -ge 2 ] || die "$1 needs a value"; }

# scratch_work NAME: $work made absolute, and made: a new temporary
# directory when it is empty, then also in $tmp_work for the EXIT trap
# to remove.
scratch_work() {
	if [ -z "$work" ]; then
		tmp_work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
		work=$tmp_work
	fi
	mkdir -p "$work" || die "cannot make the scratch directory $work"
	work=$(cd "$work" && pwd)
}

# The median of the numbers on stdin, one a line; fails when there are none.
median() { LC_ALL=C sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) exit 1; printf "%.2f\n", n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }

# figure_json NAME ROUNDS DIRECT TOOLRUN TARGET PROBLEMS [EXTRA]: one
# figure. DIRECT and TOOLRUN are the runs' wall times in seconds, one a
# line; PROBLEMS what makes the figure unreliable, one a line (none: it
# is ok); EXTRA a JSON object of the benchmark's own fields.
figure_json() {
	local name=$1 rounds=$2 direct=$3 toolrun=$4 target=$5 problems=$6 extra=${7:-'{}'}
	local md mt ratio
	md=$(median <<<"$direct") || md=0
	mt=$(median <<<"$toolrun") || mt=0
	ratio=$(awk -v a="$md" -v b="$mt" 'BEGIN { printf "%.3f\n", (a > 0 ? b / a : 0) }')
	jq -n --arg name "$name" --argjson rounds "$rounds" \
		--argjson direct "$(grep . <<<"$direct" | jq -s .)" \
		--argjson toolrun "$(grep . <<<"$toolrun" | jq -s .)" \
		--argjson md "$md" --argjson mt "$mt" --argjson ratio "$ratio" \
		--argjson target "$target" --argjson extra "$extra" \
		--argjson problems "$(printf '%s' "$problems" | jq -Rs 'split("\n") | map(select(length > 0))')" \
		'{name: $name, rounds: $rounds,
		  direct_s: $direct, toolrun_s: $toolrun,
		  direct_median_s: $md, toolrun_median_s: $mt,
		  ratio: $ratio, target: $target, met: ($ratio <= $target),
		  ok: ($problems | length == 0), problems: $problems} + $extra'
}

# report_json COMMAND STARTED LOAD_BEFORE [EXTRA]: the figures on stdin
# (one JSON object each) in the report, with the machine and its load
# before and now; EXTRA a JSON object of the benchmark's own fields.
report_json() {
	jq -s --arg command "$1" --arg date "$2" --arg lb "$3" --argjson extra "${4:-"{}"}" \
		--arg nproc "$(nproc)" --arg kernel "$(uname -r)" \
		--arg os "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")" \
		--arg la "$(cut -d' ' -f1-3 /proc/loadavg)" \
		--arg toolrun "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)" \
		'{date: $date, command: $command, toolrun: $toolrun} + $extra +
		 {machine: {nproc: ($nproc | tonumber), kernel: $kernel, os: $os,
		            loadavg_before: $lb, loadavg_after: $la},
		  figures: .}'
}
