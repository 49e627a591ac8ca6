#!/usr/bin/env bats
# container/run.sh: the hardening it asks the engine for, the limits and
# their overrides (flag and environment variable), its output, and the
# image's healthcheck.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

inspect() { docker inspect --format "$1" "${2:-$CT_BOX}"; }

@test "07-run-script: run.sh prints the container's name alone on stdout" {
	run --separate-stderr ct_start printed
	[ "$status" -eq 0 ]
	[ "$output" = "$CT_PREFIX-printed" ]
	docker rm -f "$CT_PREFIX-printed" >/dev/null
}

@test "07-run-script: the box has the hardening flags" {
	[ "$(inspect '{{.HostConfig.NetworkMode}}')" = none ]
	[ "$(inspect '{{.HostConfig.ReadonlyRootfs}}')" = true ]
	[ "$(inspect '{{json .HostConfig.CapDrop}}')" = '["ALL"]' ]
	# Only what toolrund needs to run each program as its caller; PID 1
	# starts as root to give them to it (the agent is `docker exec -u`).
	run inspect '{{json .HostConfig.CapAdd}}'
	[[ $output == *'"CAP_SETUID"'* || $output == *'"SETUID"'* ]]
	[[ $output == *'"CAP_SETGID"'* || $output == *'"SETGID"'* ]]
	[[ $output == *'"CAP_KILL"'* || $output == *'"KILL"'* ]]
	[[ $output == *'"CAP_CHOWN"'* || $output == *'"CHOWN"'* ]]
	[ "$(tr -cd , <<<"$output")" = ,,, ]
	[ "$(inspect '{{.Config.User}}')" = 0:0 ]
	[ "$(inspect '{{.Config.WorkingDir}}')" = /workspace ]
	run inspect '{{json .HostConfig.SecurityOpt}}'
	[[ $output == *'"no-new-privileges"'* ]]
	[[ $output == *'seccomp='* ]]
	[[ $output == *'clone3'* ]]
	run inspect '{{json .HostConfig.Tmpfs}}'
	[[ $output == *'"/tmp":'* ]]
	[[ $output == *'"/run/toolrun":"'*'uid=999'*'mode=0755'* ]]
	run inspect '{{range .Mounts}}{{.Destination}} {{.RW}}{{end}}'
	[ "$output" = "/workspace true" ]
}

@test "07-run-script: the default limits: 1g of memory and no more swap, 1 CPU, 256 pids" {
	[ "$(inspect '{{.HostConfig.Memory}}')" = $((1024 * 1024 * 1024)) ]
	[ "$(inspect '{{.HostConfig.MemorySwap}}')" = $((1024 * 1024 * 1024)) ]
	[ "$(inspect '{{.HostConfig.NanoCpus}}')" = 1000000000 ]
	[ "$(inspect '{{.HostConfig.PidsLimit}}')" = 256 ]
	run inspect '{{index .HostConfig.Tmpfs "/tmp"}}'
	[[ $output == *size=256m* ]]
}

@test "07-run-script: every limit is overridden by a flag" {
	local name
	name=$(ct_start flags --memory 300m --cpus 0.5 --pids 64 --tmp-size 16m)
	[ "$(inspect '{{.HostConfig.Memory}}' "$name")" = $((300 * 1024 * 1024)) ]
	[ "$(inspect '{{.HostConfig.NanoCpus}}' "$name")" = 500000000 ]
	[ "$(inspect '{{.HostConfig.PidsLimit}}' "$name")" = 64 ]
	run inspect '{{index .HostConfig.Tmpfs "/tmp"}}' "$name"
	[[ $output == *size=16m* ]]
	run docker exec -u 1000 "$name" bash -lc 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	docker rm -f "$name" >/dev/null
}

@test "07-run-script: every limit is overridden by an environment variable" {
	local name
	name=$(TOOLRUN_MEMORY=200m TOOLRUN_CPUS=0.25 TOOLRUN_PIDS=50 TOOLRUN_TMP_SIZE=8m ct_start env)
	[ "$(inspect '{{.HostConfig.Memory}}' "$name")" = $((200 * 1024 * 1024)) ]
	[ "$(inspect '{{.HostConfig.NanoCpus}}' "$name")" = 250000000 ]
	[ "$(inspect '{{.HostConfig.PidsLimit}}' "$name")" = 50 ]
	run inspect '{{index .HostConfig.Tmpfs "/tmp"}}' "$name"
	[[ $output == *size=8m* ]]
	docker rm -f "$name" >/dev/null
}

@test "07-run-script: the pids limit holds inside" {
	local name
	name=$(ct_start pids --pids 40)
	# 60 processes at once, where 40 are allowed: the sleeps outlive the
	# loop however slow the machine. bash gives up on a fork after 15 s of
	# retries, and its EXIT trap ends the sleeps.
	run docker exec -u 1000 "$name" bash -c 'p=(); trap "kill \${p[*]} 2>/dev/null" EXIT
		for i in {1..60}; do sleep 600 & p+=($!); done; wait'
	[[ $output == *"Resource temporarily unavailable"* ]]
	docker rm -f "$name" >/dev/null
}

@test "07-run-script: run.sh refuses root and an existing name" {
	run ct_start root --user 0:0
	[ "$status" -ne 0 ]
	[[ $output == *"non-root"* ]]
	run "$CT_RUN" --image "$CT_IMAGE" "$CT_BOX" "$BATS_TEST_TMPDIR"
	[ "$status" -ne 0 ]
	[[ $output == *"exists"* ]]
}

@test "07-run-script: the healthcheck turns healthy" {
	ct_wait_for "$CT_WAIT" bash -c "[ \"\$(docker inspect --format '{{.State.Health.Status}}' '$CT_BOX')\" = healthy ]"
	run inspect '{{json .Config.Healthcheck.Test}}'
	[[ $output == *toolrun*ping* ]]
}
