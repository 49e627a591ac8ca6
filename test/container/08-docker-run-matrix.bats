#!/usr/bin/env bats
# The image serves under any reasonable hardened `docker run`, with no
# mount of ours: the daemon answers (toolrun ping, the healthcheck), a
# listed tool is intercepted and shaped for the agent while a pipe gets
# every byte, and exit statuses pass through. Where the config's socket
# directory (/run/toolrun) cannot be used (a read-only root, a /run of
# root's, another uid), toolrund listens on the first usable
# socket_fallback (/dev/shm/toolrun, a tmpfs in every container) and the
# library finds it there.

load helpers

setup_file() { ct_setup_image; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

# Seed 002's production line.
SEED_002=(--network=none --memory=512m --cpus=1 --security-opt=no-new-privileges
	--read-only --tmpfs=/tmp:size=100M)

ct_serves() { docker exec "$1" toolrun ping >/dev/null 2>&1; }
# Serves, or cannot: toolrun-init logged 5 exits of the daemon (by then
# its backoff is at its maximum, and nothing will change).
ct_serves_or_gives_up() {
	ct_serves "$1" && return 0
	[ "$(docker logs "$1" 2>&1 | grep -c 'toolrun-init\[1\] warn: toolrund (pid [0-9]*) exited')" -ge 5 ]
}
ct_healthy() { [ "$(docker inspect --format '{{.State.Health.Status}}' "$1")" = healthy ]; }

# ct_matrix LABEL DOCKER_RUN_FLAGS...: start the image with these flags
# alone and check it; the container is removed when all is well (else
# left for teardown_file, after its log is shown).
ct_matrix() {
	local label=$1 name="$CT_PREFIX-$1" size first last before marker expected got
	shift
	docker rm -f "$name" >/dev/null 2>&1 || true
	docker run -d --name "$name" "$@" "$CT_IMAGE" >/dev/null
	ct_fail() {
		echo "$label: $1; the daemon's last words, and the container's last log lines:" >&2
		docker logs "$name" 2>&1 | grep -v ' toolrun-init\[1\] ' | tail -n 5 | sed 's/^/  /' >&2
		echo "  ..." >&2
		docker logs --tail 6 "$name" 2>&1 | sed 's/^/  /' >&2
		return 1
	}

	# The daemon serves, and the healthcheck says so.
	ct_wait_for "$CT_WAIT" ct_serves_or_gives_up "$name" && ct_serves "$name" ||
		ct_fail "toolrun ping never answered" || return 1
	run docker exec "$name" toolrun ping
	echo "# $label: $output" >&3
	ct_wait_for "$CT_WAIT" ct_healthy "$name" || ct_fail "never healthy" || return 1

	# Shaped for the agent, through the daemon; whole into a pipe.
	size=$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" wc -c "$CT_BIG")
	size=${size%% *}
	first=$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" head -n 1 "$CT_BIG")
	last=$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" tail -n 1 "$CT_BIG")
	before=$(CT_BOX=$name ct_job_count)
	run --separate-stderr docker exec "$name" bash -lc \
		"seq 1 100000 > /tmp/x 2>/dev/null || true; cat $CT_BIG"
	[ "$status" -eq 0 ] || ct_fail "cat: status $status, stderr: $stderr" || return 1
	# The command's stdout, CT_BIG alone, cut to its head and tail around
	# one marker. Where the whole is depends on the flags (a read-only
	# /tmp keeps nothing): the marker says either.
	# Byte for byte as the reference model shapes it, but for where the
	# whole is.
	marker=$(ct_markers "$output")
	expected=$(docker exec -e TOOLRUN=off -e LD_PRELOAD= "$name" cat "$CT_BIG" |
		python3 "$CT_SRC/test/differential/shape-ref.py" --spill SPILL 4000 200)
	got=$(sed -E 's/; the whole stdout (is in [^] ]*|is not kept: [^]]*)\]$/; the whole stdout is in SPILL]/' <<<"$output")
	[ "$got" = "$expected" ] ||
		ct_fail "the command's output was not shaped as the model says: ${marker:-no marker}" || return 1
	[ "$(wc -l <<<"$marker")" -eq 1 ]
	[ "${lines[0]}" = "$first" ]
	[ "${lines[-1]}" = "$last" ]
	[ "${#output}" -le $((4000 + ${#marker} + 1)) ]
	run --separate-stderr docker exec "$name" bash -lc "cat $CT_BIG | wc -c"
	[ "$status" -eq 0 ]
	[ "$output" = "$size" ]
	CT_BOX=$name ct_wait_job "$before" ' command=bash .* exit=0 ' >/dev/null
	CT_BOX=$name ct_wait_job "$before" ' tool=cat .* exit=0 ' >/dev/null
	CT_BOX=$name ct_wait_job "$before" ' tool=wc .* exit=0 ' >/dev/null

	# Exit statuses pass through.
	run docker exec "$name" bash -lc "grep -q no-such-line $CT_BIG"
	[ "$status" -eq 1 ]
	run --separate-stderr docker exec "$name" bash -lc 'ls /nonexistent'
	[ "$status" -eq 2 ]
	[[ $stderr == "ls: cannot access '/nonexistent': No such file or directory" ]]
	run docker exec "$name" bash -lc 'sort /dev/null; exit 7'
	[ "$status" -eq 7 ]
	CT_BOX=$name ct_wait_job "$before" ' tool=ls .* exit=2 ' >/dev/null

	CT_MATRIX_LOG=$(docker logs "$name" 2>&1)
	docker rm -f "$name" >/dev/null
}

@test "08-docker-run-matrix: docker run -d IMAGE" {
	ct_matrix plain
	# The image's user is 1000: toolrund cannot become its own user, and
	# says so.
	grep -q 'warn: user = toolrun, but toolrund cannot become it: it was started as uid 1000, not as root. It runs as uid 1000 in single identity' <<<"$CT_MATRIX_LOG"
}

@test "08-docker-run-matrix: --user 0:0, Docker's default capabilities: toolrund becomes its own user" {
	ct_matrix root-default-caps --user 0:0
	[ "$(grep -c 'single identity' <<<"$CT_MATRIX_LOG")" -eq 0 ]
	grep -q 'toolrund\[[0-9]*\] info: toolrund .*, uid 999, socket /run/toolrun/toolrun.sock' <<<"$CT_MATRIX_LOG"
}

@test "08-docker-run-matrix: --user 0:0 --cap-drop=ALL: root without the capabilities, in single identity" {
	ct_matrix root-no-caps --user 0:0 --cap-drop=ALL
	grep -q 'warn: user = toolrun, but toolrund cannot become it: it was started as root without CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_CHOWN' <<<"$CT_MATRIX_LOG"
}

@test "08-docker-run-matrix: seed 002's production flags" {
	ct_matrix seed-002 "${SEED_002[@]}"
}

@test "08-docker-run-matrix: --read-only" {
	ct_matrix read-only --read-only
}

@test "08-docker-run-matrix: --read-only --tmpfs /run" {
	ct_matrix read-only-tmpfs-run --read-only --tmpfs /run
}

@test "08-docker-run-matrix: --tmpfs /run" {
	ct_matrix tmpfs-run --tmpfs /run
}

@test "08-docker-run-matrix: --user 2000:2000 (a uid without a passwd entry)" {
	ct_matrix user-2000 --user 2000:2000
	[ "$(grep -c ' uid=1000 ' <<<"$CT_MATRIX_LOG")" -eq 0 ]
	grep -q ' uid=2000 ' <<<"$CT_MATRIX_LOG"
}

@test "08-docker-run-matrix: --cap-drop=ALL" {
	ct_matrix cap-drop-all --cap-drop=ALL
}

@test "08-docker-run-matrix: --network=none" {
	ct_matrix network-none --network=none
}

@test "08-docker-run-matrix: all of them at once" {
	ct_matrix all "${SEED_002[@]}" --tmpfs /run --user 2000:2000 --cap-drop=ALL
}

@test "08-docker-run-matrix: all of them, with our seccomp profile and a pids limit" {
	ct_matrix all-seccomp "${SEED_002[@]}" --tmpfs /run --user 2000:2000 --cap-drop=ALL \
		--security-opt "seccomp=$CT_SRC/container/seccomp.json" --pids-limit 256
}
