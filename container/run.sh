#!/bin/bash
# run.sh: start a long-lived, hardened toolrun container.
#
#   container/run.sh [OPTIONS] NAME [WORKSPACE_DIR]
#
# WORKSPACE_DIR (a host directory) is mounted read-write at /workspace.
# Without it, a new empty directory is made under ${TMPDIR:-/tmp} (never
# the current directory: the agent gets write access to nothing it was not
# given); its path is printed on stderr.
#
# Each limit has a flag and an environment variable (the flag wins):
#   --image IMAGE       TOOLRUN_IMAGE      image (toolrun:latest)
#   --memory SIZE       TOOLRUN_MEMORY     memory, no swap beyond it (1g)
#   --cpus N            TOOLRUN_CPUS       CPUs (1)
#   --pids N            TOOLRUN_PIDS       processes and threads (256)
#   --tmp-size SIZE     TOOLRUN_TMP_SIZE   the /tmp tmpfs (256m)
#   --user UID:GID      TOOLRUN_USER       the agent's user, non-root (1000:1000):
#                                          it owns a new workspace, and the config
#                                          must serve it (the image's serves 1000)
#   --seccomp FILE      TOOLRUN_SECCOMP    profile (seccomp.json beside this script)
#   --wait SECONDS      TOOLRUN_WAIT       how long to wait for the daemon (20)
#   --config FILE       TOOLRUN_CONF       a toolrun.conf mounted read-only over
#                                          the image's (default: the image's own)
#   --replace           TOOLRUN_REPLACE=1  remove a container of that name first
#
# The hardening (container/README.md says why): --network=none, a
# read-only root filesystem with tmpfs on /tmp and /run/toolrun (the
# daemon's socket directory, owned by its user toolrun, 999, mode 0755),
# no-new-privileges, our seccomp profile, the limits above, and of all
# capabilities only the four toolrund needs to run each program as its
# caller (CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_CHOWN). PID 1 starts as
# root so that toolrund can become its own user with them; the agent then
# runs as its user, without any:
#
#   docker exec -u sandbox NAME bash -lc '<command>'
#
# (`docker exec` without -u is root in the box, with those capabilities.)
#
# It returns once `toolrun ping` succeeds inside the container, and prints
# the container's name on stdout. On failure: a message, the container's
# last log lines, exit 1 (the container is left for inspection).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

image=${TOOLRUN_IMAGE:-toolrun:latest}
memory=${TOOLRUN_MEMORY:-1g}
cpus=${TOOLRUN_CPUS:-1}
pids=${TOOLRUN_PIDS:-256}
tmp_size=${TOOLRUN_TMP_SIZE:-256m}
user=${TOOLRUN_USER:-1000:1000}
seccomp=${TOOLRUN_SECCOMP:-$here/seccomp.json}
wait_s=${TOOLRUN_WAIT:-20}
config=${TOOLRUN_CONF-}
replace=${TOOLRUN_REPLACE:-0}

say() { printf 'run: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
usage() { sed -n '2,43s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

need() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--image) need "$@"; image=$2; shift 2 ;;
	--memory) need "$@"; memory=$2; shift 2 ;;
	--cpus) need "$@"; cpus=$2; shift 2 ;;
	--pids) need "$@"; pids=$2; shift 2 ;;
	--tmp-size) need "$@"; tmp_size=$2; shift 2 ;;
	--user) need "$@"; user=$2; shift 2 ;;
	--seccomp) need "$@"; seccomp=$2; shift 2 ;;
	--wait) need "$@"; wait_s=$2; shift 2 ;;
	--config) need "$@"; config=$2; shift 2 ;;
	--replace) replace=1; shift ;;
	--image=*|--memory=*|--cpus=*|--pids=*|--tmp-size=*|--user=*|--seccomp=*|--wait=*|--config=*)
		opt=${1%%=*}; set -- "$opt" "${1#*=}" "${@:2}" ;;
	-h|--help) usage; exit 0 ;;
	--) shift; args+=("$@"); break ;;
	-*) die "unknown option '$1' (see --help)" ;;
	*) args+=("$1"); shift ;;
	esac
done
[ ${#args[@]} -ge 1 ] && [ ${#args[@]} -le 2 ] || { usage >&2; exit 2; }
name=${args[0]}
workspace=${args[1]-}

[[ $name =~ ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$ ]] || die "invalid container name '$name'"
[[ $user =~ ^[1-9][0-9]*:[0-9]+$ ]] || die "--user must be a non-root UID:GID, not '$user'"
[[ $pids =~ ^[1-9][0-9]*$ ]] || die "--pids must be a positive number, not '$pids'"
[[ $wait_s =~ ^[1-9][0-9]*$ ]] || die "--wait must be a positive number of seconds, not '$wait_s'"
[ -r "$seccomp" ] || die "cannot read the seccomp profile $seccomp"
uid=${user%%:*}
# toolrund's user in the image (container/Dockerfile).
daemon_uid=999 daemon_gid=999
config_mount=()
if [ -n "$config" ]; then
	[ -r "$config" ] || die "cannot read the config $config"
	config=$(cd "$(dirname "$config")" && pwd -P)/$(basename "$config")
	config_mount=(--volume "$config:/etc/toolrun/toolrun.conf:ro")
fi
gid=${user##*:}

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
	die "no Docker engine answers (is dockerd running?)"
docker image inspect "$image" >/dev/null 2>&1 ||
	die "no image $image (build it: container/build.sh)"

if docker container inspect "$name" >/dev/null 2>&1; then
	[ "$replace" = 1 ] || die "a container named $name exists (remove it, or pass --replace)"
	docker rm -f "$name" >/dev/null || die "cannot remove the container $name"
fi

if [ -z "$workspace" ]; then
	workspace=$(mktemp -d "${TMPDIR:-/tmp}/toolrun-workspace.XXXXXX")
	# Ours: give it to the container's user.
	if [ "$(id -u)" = 0 ]; then
		chown "$uid:$gid" "$workspace"
	elif [ "$(id -u)" != "$uid" ]; then
		chmod 0777 "$workspace"
	fi
	say "workspace: $workspace"
fi
[ -d "$workspace" ] || die "the workspace $workspace is not a directory"
workspace=$(cd "$workspace" && pwd -P)
owner=$(stat -c %u "$workspace")
if [ "$owner" != "$uid" ] && [ -z "$(find "$workspace" -maxdepth 0 -perm -0002)" ]; then
	say "warning: $workspace belongs to uid $owner and is not world-writable: uid $uid may not write there"
fi

docker run --detach --name "$name" --hostname "$name" \
	--network=none \
	--read-only \
	--tmpfs "/tmp:rw,nosuid,nodev,size=$tmp_size" \
	--tmpfs "/run/toolrun:rw,nosuid,nodev,noexec,size=16m,uid=$daemon_uid,gid=$daemon_gid,mode=0755" \
	--cap-drop=ALL \
	--cap-add=SETUID --cap-add=SETGID --cap-add=KILL --cap-add=CHOWN \
	--security-opt=no-new-privileges \
	--security-opt "seccomp=$seccomp" \
	--memory "$memory" --memory-swap "$memory" \
	--cpus "$cpus" \
	--pids-limit "$pids" \
	--user 0:0 \
	--volume "$workspace:/workspace:rw" "${config_mount[@]}" \
	--workdir /workspace \
	--log-driver json-file --log-opt max-size=10m --log-opt max-file=3 \
	--label org.toolrun.workspace="$workspace" \
	"$image" >/dev/null || die "docker run failed for $name"

# Ready when the daemon answers, as the healthcheck asks it.
deadline=$((SECONDS + wait_s))
while :; do
	if docker exec -u "$user" "$name" toolrun ping >/dev/null 2>&1; then
		break
	fi
	state=$(docker container inspect --format '{{.State.Status}}' "$name" 2>/dev/null || echo gone)
	if [ "$state" != running ] || [ $SECONDS -ge $deadline ]; then
		say "toolrund did not answer in $name within ${wait_s}s (container $state); its last log lines:"
		docker logs --tail 20 "$name" 2>&1 | sed 's/^/  /' >&2 || true
		exit 1
	fi
	sleep 0.2
done
printf '%s\n' "$name"
