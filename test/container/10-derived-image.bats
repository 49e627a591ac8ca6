#!/usr/bin/env bats
# toolrun drops into any glibc image: the Dockerfile's install target is a
# self-contained tree (glibc alone, no newer than the documented floor),
# and a plain debian:bookworm-slim with python3, given the lines that
# container/README.md documents (taken from it here, verbatim), intercepts
# and shapes as the shipped image does, also hardened and with a config
# of its own.

load helpers

# The documented lines, from container/README.md.
ct_snippet() {
	grep -E '^(COPY --from=toolrun-install |ENV LD_PRELOAD=|ENTRYPOINT \[)' "$CT_SRC/container/README.md"
}

setup_file() {
	ct_engine || return 1
	[ -n "${CT_SKIP-}" ] && return 0
	ct_remove_all
	"$CT_SRC/container/build.sh" --target install --image "$CT_INSTALL_IMAGE" --quiet >&2 || {
		echo "container suite: the install target's build failed" >&2
		return 1
	}
	local ctx="$BATS_FILE_TMPDIR/derived"
	mkdir -p "$ctx"
	[ "$(ct_snippet | wc -l)" -eq 3 ] || {
		echo "container/README.md must hold the three lines of the snippet once each" >&2
		return 1
	}
	{
		echo "FROM $CT_INSTALL_IMAGE AS toolrun-install"
		echo "FROM debian:bookworm-slim"
		echo "RUN apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/*"
		ct_snippet
	} >"$ctx/Dockerfile"
	docker build -q -t "$CT_DERIVED_IMAGE" "$ctx" >&2 || {
		echo "container suite: the derived image's build failed; its Dockerfile:" >&2
		cat "$ctx/Dockerfile" >&2
		return 1
	}
	CT_BOX="$CT_PREFIX-box"
	export CT_BOX
	ct_run_derived "$CT_BOX"
}
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

ct_serves() { docker exec "$1" toolrun ping >/dev/null 2>&1; }

# ct_run_derived NAME [DOCKER_RUN_FLAGS...]: start the derived image,
# wait until its daemon serves.
ct_run_derived() {
	local name=$1
	shift
	docker rm -f "$name" >/dev/null 2>&1 || true
	docker run -d --name "$name" "$@" "$CT_DERIVED_IMAGE" >/dev/null || return 1
	ct_wait_for "$CT_WAIT" ct_serves "$name" || {
		echo "toolrund never answered in $name; its log:" >&2
		docker logs --tail 15 "$name" >&2
		return 1
	}
}

@test "10-derived-image: the shipped image is built with the documented lines" {
	local line want
	while IFS= read -r line; do
		want=${line/--from=toolrun-install /--from=install }
		grep -qxF -- "$want" "$CT_SRC/container/Dockerfile"
	done < <(ct_snippet)
}

@test "10-derived-image: the install target holds the documented layout and nothing else" {
	local id
	id=$(docker create "$CT_INSTALL_IMAGE" /none)
	run bash -c "docker export '$id' | tar -tvf - | awk '\$1 !~ /^d/ { print \$6 }' |
		grep -vE '^(\\.dockerenv|dev/|proc/|sys/|etc/(hostname|hosts|resolv\\.conf|mtab)$)' | sort"
	docker rm "$id" >/dev/null
	[ "$status" -eq 0 ]
	[ "$output" = "etc/profile.d/toolrun.sh
etc/toolrun/toolrun.conf
opt/toolrun/bin/toolrun
opt/toolrun/lib/toolrun/libtoolrun.so
opt/toolrun/lib/toolrun/toolrun-exec
opt/toolrun/lib/toolrun/toolrun-session.so
opt/toolrun/sbin/toolrun-init
opt/toolrun/sbin/toolrund
usr/local/bin/toolrun" ]
	run docker exec "$CT_BOX" readlink /usr/local/bin/toolrun
	[ "$output" = /opt/toolrun/bin/toolrun ]
}

@test "10-derived-image: the programs need glibc alone" {
	local f
	for f in /opt/toolrun/bin/toolrun /opt/toolrun/sbin/toolrund /opt/toolrun/sbin/toolrun-init \
		/opt/toolrun/lib/toolrun/libtoolrun.so /opt/toolrun/lib/toolrun/toolrun-exec \
		/opt/toolrun/lib/toolrun/toolrun-session.so; do
		run docker exec -e LD_PRELOAD= "$CT_BOX" ldd "$f"
		[ "$status" -eq 0 ]
		echo "$output" | awk '{ print $1 }' >"$BATS_TEST_TMPDIR/libs"
		run grep -vE '^(linux-vdso\.so|lib(c|m|dl|pthread|rt)\.so|/?[^ ]*ld-linux[^ ]*\.so)' "$BATS_TEST_TMPDIR/libs"
		[ -z "$output" ] || { echo "$f needs: $output" >&2; return 1; }
	done
}

@test "10-derived-image: the programs need glibc 2.34 at most (the documented floor)" {
	local f newest
	for f in /opt/toolrun/bin/toolrun /opt/toolrun/sbin/toolrund /opt/toolrun/sbin/toolrun-init \
		/opt/toolrun/lib/toolrun/libtoolrun.so /opt/toolrun/lib/toolrun/toolrun-exec; do
		# The version names a binary needs are strings in it.
		newest=$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$CT_BOX" \
			bash -c "grep -ao 'GLIBC_2\.[0-9][0-9.]*' '$f' | sort -uV | tail -n 1")
		echo "# $f: $newest" >&3
		[ -n "$newest" ]
		[ "$(printf '%s\n' "${newest#GLIBC_}" 2.34 | sort -V | tail -n 1)" = 2.34 ]
	done
}

@test "10-derived-image: the daemon serves and shapes what reaches the agent" {
	ct_shaped_and_whole "$CT_BIG" 1000
	run docker exec "$CT_BOX" bash -lc 'ls /nonexistent'
	[ "$status" -eq 2 ]
}

@test "10-derived-image: python3's subprocess and exec go through the daemon" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec "$CT_BOX" bash -lc "python3 -c '
import subprocess, sys
sys.exit(subprocess.run([\"cat\", \"$CT_BIG\"]).returncode)'"
	[ "$status" -eq 0 ]
	# cat, run by python3 inside the command, writes straight to the
	# command's stdout, which is shaped as a whole.
	[ "$(ct_markers "$output" | wc -l)" -eq 1 ]
	[[ $(ct_markers "$output") == "...[toolrun cut "*" of stdout here: "*"; the whole stdout is in /tmp/toolrun-output/0/"*"-stdout.log]" ]]
	ct_wait_job "$before" ' tool=cat .* exit=0 .* stdout=direct '
	ct_wait_job "$before" ' command=bash .* exit=0 '
	run docker exec "$CT_BOX" bash -lc "python3 -c 'import os; os.execvp(\"grep\", [\"grep\", \"-q\", \"no-such-line\", \"$CT_BIG\"])'"
	[ "$status" -eq 1 ]
	ct_wait_job "$before" ' tool=grep .* exit=1 '
}

@test "10-derived-image: hardened: read-only, no capabilities, no network, another uid" {
	local name="$CT_PREFIX-hardened"
	ct_run_derived "$name" --read-only --tmpfs /tmp --cap-drop=ALL --network=none \
		--security-opt=no-new-privileges --user 2000:2000
	run --separate-stderr docker exec "$name" bash -lc "cat $CT_BIG"
	[ "$status" -eq 0 ]
	[ "$(ct_markers "$output" | wc -l)" -eq 1 ]
	[[ $(ct_markers "$output") == "...[toolrun cut "*" of stdout here: "*"; the whole stdout is in /tmp/toolrun-output/2000/"*"-stdout.log]" ]]
	CT_BOX=$name ct_wait_job 0 ' uid=2000 command=bash .* exit=0 '
	CT_BOX=$name ct_wait_job 0 ' uid=2000 tool=cat .* exit=0 '
	docker rm -f "$name" >/dev/null
}

@test "10-derived-image: a config mounted over the image's, or named by TOOLRUN_CONFIG" {
	local dir="$BATS_TEST_TMPDIR/conf" name="$CT_PREFIX-conf"
	mkdir -p "$dir"
	printf 'tools = cat\nmax_lines = 5\nmax_bytes = 0\n' >"$dir/toolrun.conf"
	chmod 0755 "$dir"
	chmod 0644 "$dir/toolrun.conf"

	ct_run_derived "$name" -v "$dir/toolrun.conf:/etc/toolrun/toolrun.conf:ro"
	# max_lines = 5 and the defaults (head+tail, spill_dir): the first 2
	# lines, the marker, the last 3.
	local total cut
	total=$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" bash -c "wc -l <$CT_BIG")
	cut=$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" bash -c "sed -n '3,$((total - 3))p' $CT_BIG | wc -c")
	run --separate-stderr docker exec "$name" bash -lc "cat $CT_BIG"
	[ "${#lines[@]}" -eq 6 ]
	[ "$(printf '%s\n' "${lines[@]:0:2}")" = "$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" head -n 2 "$CT_BIG")" ]
	[[ ${lines[2]} == "...[toolrun cut $((total - 5)) lines ($cut bytes) of stdout here: lines 3-$((total - 3)) of $total; the whole stdout is in /tmp/toolrun-output/0/"*"-stdout.log]" ]]
	[ "$(printf '%s\n' "${lines[@]:3}")" = "$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" tail -n 3 "$CT_BIG")" ]

	ct_run_derived "$name" -v "$dir:/cfg:ro" -e TOOLRUN_CONFIG=/cfg/toolrun.conf
	run --separate-stderr docker exec "$name" bash -lc "cat $CT_BIG"
	[ "${#lines[@]}" -eq 6 ]
	[[ ${lines[2]} == "...[toolrun cut $((total - 5)) lines ($cut bytes) of stdout here: lines 3-$((total - 3)) of $total; "* ]]
	# grep is not listed there: the library does not hand it over.
	local before
	before=$(CT_BOX=$name ct_job_count)
	run docker exec "$name" bash -lc "grep -c . $CT_BIG; cat /dev/null"
	CT_BOX=$name ct_wait_job "$before" ' tool=cat .* exit=0 ' >/dev/null
	! CT_BOX=$name ct_new_jobs "$before" | grep -q ' tool=grep '
	docker rm -f "$name" >/dev/null
}
