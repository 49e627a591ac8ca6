#!/usr/bin/env bats
# Nothing is lost, whoever ran first (issue 23): in a freshly started
# box, root's cut output (a harness's set-up step, `docker exec -w / BOX
# bash -lc ...`), then the agent's (`-u sandbox`), then root's again, are
# each kept whole in the file the marker names. toolrund runs as toolrun
# (999); acting as uid 0 once took CAP_CHOWN from its launcher, and from
# then on no cut output of any uid was kept.
#
# The tests run in this order against the file's one box, which no other
# test has used: root first is the point.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

# cut_and_kept UID [docker exec options...]: `seq 1 100000` through
# `bash -lc` is cut, with one marker; the file it names, in
# /tmp/toolrun-output/UID/, read back as UID without toolrun, holds
# exactly seq's output.
cut_and_kept() {
	local uid=$1 marker path
	shift
	run --separate-stderr docker exec "$@" "$CT_BOX" bash -lc 'seq 1 100000'
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	marker=$(ct_markers "$output")
	echo "# uid $uid: $marker" >&3
	[ "$(wc -l <<<"$marker")" -eq 1 ]
	[[ "$marker" == *"lines 101-99900 of 100000"* ]]
	path=$(sed -n "s#.*; the whole stdout is in \\(/tmp/toolrun-output/$uid/[^] ]*-stdout\\.log\\)\\]\$#\\1#p" <<<"$marker")
	[ -n "$path" ]
	cmp <(docker exec "$@" -e TOOLRUN=off "$CT_BOX" cat "$path") <(seq 1 100000)
}

@test "15-spill-order-root-first: root's cut output, first in a fresh box, is kept whole" {
	cut_and_kept 0 -w /
}

@test "15-spill-order-agent-after-root: the agent's cut output after root's is kept whole" {
	cut_and_kept 1000 -u sandbox
}

@test "15-spill-order-root-again: root's cut output after the agent's is kept whole" {
	cut_and_kept 0 -w /
}

@test "15-spill-order-root-in-workspace: root in the agent's 0700 workspace runs as it would without toolrun, and is shaped" {
	# docker exec's default working directory is the box's /workspace,
	# the agent's; mode 0700 as container/run.sh makes a new one; root
	# there has no CAP_DAC_OVERRIDE.
	docker exec -e TOOLRUN=off -u sandbox "$CT_BOX" chmod 0700 /workspace
	[ "$(docker exec -e TOOLRUN=off "$CT_BOX" stat -c '%a %u' /workspace)" = "700 1000" ]
	local script='pwd; cat /etc/hostname; ls >/dev/null 2>&1; echo "ls $?"'
	run --separate-stderr docker exec "$CT_BOX" bash -lc "$script"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$output" = "$(docker exec -e TOOLRUN=off "$CT_BOX" bash -lc "$script")" ]
	cut_and_kept 0
}
