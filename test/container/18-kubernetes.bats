#!/usr/bin/env bats
# deploy/kubernetes's manifests, played by podman (`podman kube play`, the
# Kubernetes Pod YAML without a cluster): pod-full.yaml (full privilege
# separation, Baseline), pod-restricted.yaml (the Restricted standard,
# single identity) and the pod template of sandboxtemplate.yaml, each with
# the image this suite builds, and checked as 08-docker-run-matrix checks
# a `docker run`: a command shaped, a pipeline exact, a session, MCP over
# `podman exec -i`, the Python host client, the audit log verified, what
# `toolrun status` reports and the readiness probe's command; and a policy
# change through the mounted ConfigMap and `toolrun reload`; and the full
# pod on an audit volume made root's 0777 as a cluster's emptyDir is,
# refused without its volume-modes init container, toolrund's with it. The agent is reached as docs/kubernetes.md tells a host to
# reach it with kubectl: an exec as the container's user, through setpriv
# to uid 1000 in the full pod.
#
# Podman is installed by scripts/setup-deps.sh; without it every test is
# skipped with the reason, except under CI=true, where that is a failure.

load helpers

KUBE_DIR="$CT_SRC/deploy/kubernetes"
MCP_DIR="$CT_SRC/test/mcp"
# The image in podman's store: `docker save | podman load` names it so.
KUBE_IMAGE="localhost/$CT_IMAGE"
# Pod and volume names of this run: podman 4.3 makes each emptyDir and
# configMap volume a named volume, shared by every pod that names it (and
# the configMap's kept after `podman kube down`), so every name is this
# run's own.
KUBE_PREFIX="trtest-$CT_RUN_ID-kube"

setup_file() {
	local why=
	if ! command -v podman >/dev/null 2>&1; then
		why="podman is not installed"
	elif ! python3 -c 'import yaml' 2>/dev/null; then
		why="python3's yaml module is missing (Debian's python3-yaml)"
	elif ! command -v node >/dev/null 2>&1 ||
		[ ! -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
		why="the MCP client is missing (node, test/mcp/node_modules: scripts/setup-deps.sh)"
	fi
	if [ -n "$why" ]; then
		if [ "${CI-}" = true ]; then
			echo "18-kubernetes: $why; under CI=true it must run (scripts/setup-deps.sh installs it)" >&2
			return 1
		fi
		export CT_SKIP="Kubernetes manifests not played: $why"
		return 0
	fi
	ct_setup_image || return 1
	[ -n "${CT_SKIP-}" ] && return 0
	kube_containers_conf
	kube_remove_all
	# A copy an earlier run left would stay behind, untagged, at the load.
	podman rmi -f "$KUBE_IMAGE" >/dev/null 2>&1 || true
	docker save "$CT_IMAGE" | podman load -q >&2 || {
		echo "18-kubernetes: podman load of $CT_IMAGE failed" >&2
		return 1
	}
}

teardown_file() {
	[ -n "${CT_SKIP-}" ] && return 0
	kube_remove_all
	podman rmi -f "$KUBE_IMAGE" >/dev/null 2>&1 || true
}

setup() { ct_setup; }

# Podman 4.3, as root, asks runc for nofile 1048576 and an nproc of its
# own choosing for every container, the pod's infra container included.
# A machine whose own limits are lower and which cannot raise them (a
# runner that is itself a container without CAP_SYS_RESOURCE) refuses
# that ("error setting rlimit type 6: operation not permitted") and no
# container starts. This run's containers.conf asks for limits within
# this shell's (nproc at most 32768, podman's conmon's own here).
kube_containers_conf() {
	local nofile nproc
	nofile=$(ulimit -Hn)
	nproc=$(ulimit -Hu)
	[ "$nofile" = unlimited ] && nofile=1048576
	{ [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
	printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' \
		"$nofile" "$nofile" "$nproc" "$nproc" >"$BATS_FILE_TMPDIR/containers.conf"
	export CONTAINERS_CONF="$BATS_FILE_TMPDIR/containers.conf"
}

# Every pod and volume of this run.
kube_remove_all() {
	local pods vols
	pods=$(podman pod ps -q --filter "name=^$KUBE_PREFIX-" 2>/dev/null) || true
	[ -z "$pods" ] || podman pod rm -f $pods >/dev/null 2>&1 || true
	vols=$(podman volume ls -q --filter "name=^$KUBE_PREFIX-" 2>/dev/null) || true
	[ -z "$vols" ] || podman volume rm -f $vols >/dev/null 2>&1 || true
}

# kube_prepare MANIFEST KIND NAME: write, under BATS_FILE_TMPDIR, the Pod
# podman plays (NAME.yaml) and its ConfigMap (NAME-configmap.yaml): the
# manifest's Pod (KIND pod) or the pod template of a SandboxTemplate
# (KIND template), with this suite's image, the pod and every volume and
# ConfigMap named for this run. Prints the container's name.
kube_prepare() {
	python3 - "$1" "$2" "$3" "$KUBE_IMAGE" "$KUBE_DIR/configmap.yaml" "$BATS_FILE_TMPDIR" <<'EOF'
import os, sys, yaml
manifest, kind, name, image, configmap, out = sys.argv[1:]
doc = yaml.safe_load(open(manifest))
if kind == "template":
    assert doc["kind"] == "SandboxTemplate", doc["kind"]
    tmpl = doc["spec"]["podTemplate"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"labels": tmpl.get("metadata", {}).get("labels", {})},
           "spec": tmpl["spec"]}
else:
    assert doc["kind"] == "Pod", doc["kind"]
    pod = doc
pod["metadata"]["name"] = name
# Podman 4.3 removes a "once" init container (its default) after the
# pod starts, and failed at it ("cannot remove container ... as it is
# running"); "always" keeps it, and runs it at every start of the pod, as
# a kubelet does when it recreates the pod's sandbox.
pod["metadata"].setdefault("annotations", {})["io.podman.annotations.init.container.type"] = "always"
spec = pod["spec"]
cm = yaml.safe_load(open(configmap))
for v in spec["volumes"]:
    if "configMap" in v:
        assert v["configMap"]["name"] == cm["metadata"]["name"]
        v["configMap"]["name"] = cm["metadata"]["name"] = name + "-" + cm["metadata"]["name"]
    v["name"] = name + "-" + v["name"]
# KUBE_NO_INIT=1: without the init containers, as a pod before them.
if os.environ.get("KUBE_NO_INIT") == "1":
    spec.pop("initContainers", None)
for i in spec.get("initContainers", []):
    i["image"] = image
    for m in i.get("volumeMounts", []):
        m["name"] = name + "-" + m["name"]
(c,) = spec["containers"]
c["image"] = image
for m in c["volumeMounts"]:
    m["name"] = name + "-" + m["name"]
yaml.safe_dump(pod, open(f"{out}/{name}.yaml", "w"))
yaml.safe_dump(cm, open(f"{out}/{name}-configmap.yaml", "w"))
print(f"{name}-{c['name']}")
EOF
}

# kube_probe NAME: the readiness probe's command of the Pod written for
# NAME, one word a line.
kube_probe() {
	python3 -c 'import sys, yaml
(c,) = yaml.safe_load(open(sys.argv[1]))["spec"]["containers"]
print("\n".join(c["readinessProbe"]["exec"]["command"]))' "$BATS_FILE_TMPDIR/$1.yaml"
}

kube_serves() { podman exec "$1" toolrun ping >/dev/null 2>&1; }

# kube_play MANIFEST KIND SUFFIX: play it; sets KUBE_C (the container)
# and KUBE_POD, and waits until toolrund answers in it.
kube_play() {
	KUBE_POD="$KUBE_PREFIX-$3"
	KUBE_C=$(kube_prepare "$1" "$2" "$KUBE_POD")
	run podman kube play --network none \
		--configmap "$BATS_FILE_TMPDIR/$KUBE_POD-configmap.yaml" "$BATS_FILE_TMPDIR/$KUBE_POD.yaml"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
	ct_wait_for "$CT_WAIT" kube_serves "$KUBE_C" || {
		echo "$KUBE_POD: toolrun ping never answered; the log:" >&2
		podman logs "$KUBE_C" 2>&1 | tail -n 20 >&2
		return 1
	}
}

# The agent's exec, as docs/kubernetes.md gives it for each pod: the full
# pod's container user is root (with toolrund's capabilities, under
# kubectl), so the agent's programs go through setpriv to uid 1000.
kube_agent() {
	if [ "$KUBE_MODE" = full ]; then
		podman exec -i "$KUBE_C" setpriv --reuid=1000 --regid=1000 --clear-groups \
			env HOME=/home/sandbox "$@"
	else
		podman exec -i "$KUBE_C" "$@"
	fi
}

kube_log() { podman logs "$KUBE_C" 2>&1; }
kube_job_count() { kube_log | grep -cE ' toolrund\[[0-9]+\] listener info: job [0-9]+ uid=' || true; }
# kube_wait_job N PATTERN: a job line after the first N matching PATTERN.
kube_wait_job() {
	local before=$1 pattern=$2 deadline=$((SECONDS + CT_WAIT))
	until kube_log | grep -E ' toolrund\[[0-9]+\] listener info: job [0-9]+ uid=' |
		tail -n +$((before + 1)) | grep -qE -- "$pattern"; do
		if [ $SECONDS -ge $deadline ]; then
			echo "no job line matching '$pattern'; the log ends with:" >&2
			kube_log | tail -n 10 >&2
			return 1
		fi
		sleep 0.1
	done
}

# The checks, on the pod kube_play started; KUBE_MODE is the identity
# toolrund must have there (full or single).
kube_checks() {
	local label=$1 size expected marker path got before sum id audit

	# The agent is uid 1000, without capabilities.
	run --separate-stderr kube_agent bash -c 'id -u; grep ^CapEff: /proc/self/status'
	[ "$status" -eq 0 ]
	[ "$output" = $'1000\nCapEff:\t0000000000000000' ]
	if [ "$KUBE_MODE" = full ]; then
		# podman exec gives root no capability here, where a kubelet's
		# exec has the container's four: from an exec that holds them
		# (--privileged holds every one), setpriv still leaves none.
		run podman exec --privileged "$KUBE_C" grep ^CapEff: /proc/self/status
		[ "$output" != $'CapEff:\t0000000000000000' ]
		run podman exec --privileged "$KUBE_C" setpriv --reuid=1000 --regid=1000 --clear-groups \
			grep -E '^(Uid|CapPrm|CapEff):' /proc/self/status
		[ "$output" = $'Uid:\t1000\t1000\t1000\t1000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000' ]
		# The audit volume is toolrund's, 0700: the agent can neither
		# move the audit directory aside nor make one in its place.
		# (Root's exec without capabilities cannot look inside; the
		# privileged one can.)
		run podman exec --privileged "$KUBE_C" stat -c '%u %a' /var/log/toolrun /var/log/toolrun/audit
		[ "$output" = $'999 700\n999 700' ]
		run --separate-stderr kube_agent mv /var/log/toolrun/audit /var/log/toolrun/old
		[ "$status" -ne 0 ]
		[[ $stderr == *"Permission denied"* ]]
		run podman exec --privileged "$KUBE_C" stat -c '%u %a' /var/log/toolrun/audit /var/log/toolrun/old
		[ "${lines[0]}" = "999 700" ]
		[[ ${lines[1]} == *"No such file or directory"* ]]
	fi

	# A command shaped: CT_BIG cut to the budget around one marker, byte
	# for byte as the reference model says, the whole in the spill file.
	size=$(podman exec -e TOOLRUN=off -e LD_PRELOAD= "$KUBE_C" wc -c "$CT_BIG")
	size=${size%% *}
	expected=$(podman exec -e TOOLRUN=off -e LD_PRELOAD= "$KUBE_C" cat "$CT_BIG" |
		python3 "$CT_SRC/test/differential/shape-ref.py" --spill SPILL 4000 200)
	before=$(kube_job_count)
	run --separate-stderr kube_agent bash -lc "cat $CT_BIG"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ] || { echo "stderr: $stderr"; return 1; }
	marker=$(ct_markers "$output")
	[ "$(wc -l <<<"$marker")" -eq 1 ]
	path=$(sed -n 's#.*the whole stdout is in \(/tmp/toolrun-output/1000/[^] ]*-stdout\.log\)\]$#\1#p' <<<"$marker")
	[ -n "$path" ] || { echo "$label: the marker names no spill file of uid 1000's: $marker"; return 1; }
	got=$(sed "s#$path#SPILL#" <<<"$output")
	[ "$got" = "$expected" ]
	[ "${#output}" -le $((4000 + ${#marker} + 1)) ]
	run kube_agent cmp "$path" "$CT_BIG"
	[ "$status" -eq 0 ]
	kube_wait_job "$before" ' uid=1000 command=bash .* exit=0 '
	kube_wait_job "$before" ' uid=1000 tool=cat .* exit=0 .* stdout=direct '
	echo "# $label: shaped: $marker" >&3

	# A pipeline exact: every byte through the listed tools into a pipe.
	sum=$(podman exec -e TOOLRUN=off -e LD_PRELOAD= "$KUBE_C" sha256sum "$CT_BIG")
	run --separate-stderr kube_agent bash -lc "cat $CT_BIG | sort | sort -n | sha256sum"
	[ "$status" -eq 0 ]
	[ "$output" = "$(podman exec -e TOOLRUN=off -e LD_PRELOAD= "$KUBE_C" bash -c \
		"sort $CT_BIG | sort -n | sha256sum")" ]
	run --separate-stderr kube_agent bash -lc "cat $CT_BIG | cat | wc -c"
	[ "$output" = "$size" ]
	run --separate-stderr kube_agent bash -lc "cat $CT_BIG > /tmp/copy; sha256sum < /tmp/copy"
	[ "$output" = "${sum%% *}  -" ]
	kube_wait_job "$before" ' uid=1000 tool=sort .* exit=0 '
	echo "# $label: pipeline exact: $size bytes, sha256 ${sum%% *}" >&3

	# A session: state kept across execs, run as uid 1000.
	id=$(kube_agent toolrun session new --cwd /workspace)
	[ -n "$id" ]
	run --separate-stderr kube_agent toolrun session run "$id" -- 'cd /tmp && export MODE=kube'
	[ "$status" -eq 0 ]
	run --separate-stderr kube_agent toolrun session run "$id" -- 'echo $MODE; pwd; id -u'
	[ "$status" -eq 0 ]
	[ "$output" = $'kube\n/tmp\n1000' ]
	run --separate-stderr kube_agent toolrun session close "$id" --json
	[ "$status" -eq 0 ]
	[[ $output == *'"state":"closed"'* ]]
	echo "# $label: session $id: state kept, uid 1000, closed" >&3

	# MCP over `podman exec -i`, driven by the official SDK's client.
	local scenario
	for scenario in initialize session large-output; do
		run --separate-stderr timeout 300 node "$MCP_DIR/client.mjs" --scenario "$scenario" -- \
			bash -c "$(declare -f kube_agent); KUBE_MODE=$KUBE_MODE KUBE_C=$KUBE_C kube_agent toolrun mcp --root /workspace"
		[ "$status" -eq 0 ] || { printf '%s\n%s\n' "$output" "$stderr"; return 1; }
		[[ $output == *"ok 1 - $scenario"* ]]
	done
	echo "# $label: MCP: initialize, session, large-output passed" >&3

	# The Python host client over the same exec (docs/kubernetes.md's
	# Command transport; kubectl's is the same argv with kubectl in front).
	local prefix=(podman exec -i "$KUBE_C")
	[ "$KUBE_MODE" = full ] && prefix+=(setpriv --reuid=1000 --regid=1000 --clear-groups)
	run --separate-stderr env PYTHONPATH="$CT_SRC/clients/python" timeout 300 python3 -c '
import sys
from toolrun import Box, Command
with Box(Command(sys.argv[1:], label="pod")) as box:
    r = box.exec("id -u; seq 1 100000")
    print(r.exit_code, r.stdout.split()[0], r.stdout_dropped_lines, r.stdout_spill)' "${prefix[@]}"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[[ $output == "0 1000 99801 /tmp/toolrun-output/1000/"*-stdout.log ]] ||
		{ echo "python client: $output"; return 1; }
	echo "# $label: python client: $output" >&3

	# The audit log: on its own volume, not a fallback, with the commands
	# above, its chain intact; in full identity the agent cannot read it.
	audit=/var/log/toolrun/audit/audit.jsonl
	if [ "$KUBE_MODE" = full ]; then
		run kube_agent cat "$audit"
		[ "$status" -ne 0 ]
		owner=999
	else
		# What single identity loses: the agent is the log's owner.
		run kube_agent cat "$audit"
		[ "$status" -eq 0 ]
		owner=1000
	fi
	run podman exec -u "$owner" -e TOOLRUN=off "$KUBE_C" grep -c '"kind":"command"' "$audit"
	[ "$status" -eq 0 ]
	[ "$output" -ge 3 ]
	run podman exec -u "$owner" -e TOOLRUN=off "$KUBE_C" toolrun audit verify "$audit"
	[ "$status" -eq 0 ]
	[[ $output == *"chain intact"* ]]
	echo "# $label: audit: $output" >&3

	# What toolrun status reports, and the readiness probe's own command,
	# which podman does not run (docs/kubernetes.md).
	run --separate-stderr podman exec "$KUBE_C" toolrun status --json
	[ "$status" -eq 0 ] || { echo "toolrun status: $status: $output $stderr"; return 1; }
	run python3 -c 'import json, sys
s = json.load(sys.stdin)
print(s["identity"]["mode"], sorted({p["uid"] for p in s["processes"]}))' <<<"$output"
	[ "$status" -eq 0 ]
	if [ "$KUBE_MODE" = full ]; then
		[ "$output" = "full [999]" ]
	else
		[ "$output" = "single [1000]" ]
	fi
	echo "# $label: toolrun status: identity, uids: $output" >&3
	# Full identity keeps the agent from signalling toolrund; single
	# identity cannot (docs/kubernetes.md).
	pid=$(podman exec "$KUBE_C" toolrun status --json | python3 -c 'import json, sys
print(next(p["pid"] for p in json.load(sys.stdin)["processes"] if p["role"] == "supervisor"))')
	[ -n "$pid" ]
	run --separate-stderr kube_agent bash -c "kill -0 $pid"
	if [ "$KUBE_MODE" = full ]; then
		[ "$status" -ne 0 ]
		[[ $stderr == *"Operation not permitted"* ]]
	else
		[ "$status" -eq 0 ]
	fi
	mapfile -t probe < <(kube_probe "$KUBE_POD")
	run podman exec "$KUBE_C" "${probe[@]}"
	[ "$status" -eq 0 ] || { echo "readiness probe ${probe[*]}: $status: $output"; return 1; }
	echo "# $label: readiness probe '${probe[*]}': exit 0" >&3
	# The other pod's requirement fails here when identity is single.
	if [ "$KUBE_MODE" = single ]; then
		run podman exec "$KUBE_C" toolrun status --require full
		[ "$status" -eq 1 ]
	fi
}

@test "18-kubernetes: the ConfigMap's policy is the image's, the audit log on its volume" {
	run python3 -c 'import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["data"]["toolrun.conf"], end="")' "$KUBE_DIR/configmap.yaml"
	[ "$status" -eq 0 ]
	diff <(grep -v '^#' "$CT_SRC/container/toolrun.conf" | grep .) <(grep -v '^#' <<<"$output" | grep .) |
		grep '^[<>]' >"$BATS_TEST_TMPDIR/diff" || true
	cat "$BATS_TEST_TMPDIR/diff"
	[ "$(cat "$BATS_TEST_TMPDIR/diff")" = "< audit_log  = /run/toolrun/audit/audit.jsonl
> audit_log  = /var/log/toolrun/audit/audit.jsonl" ]
}

@test "18-kubernetes: the SandboxTemplate's pod is pod-full.yaml's; the pool, the claim and the NetworkPolicy refer to them" {
	run python3 -c 'import sys, yaml
t = yaml.safe_load(open(sys.argv[1])); p = yaml.safe_load(open(sys.argv[2]))
assert t["apiVersion"] == "extensions.agents.x-k8s.io/v1beta1" and t["kind"] == "SandboxTemplate"
assert t["spec"]["podTemplate"]["spec"] == p["spec"], "the pod templates differ"
w = yaml.safe_load(open(sys.argv[3])); c = yaml.safe_load(open(sys.argv[4]))
assert w["spec"]["sandboxTemplateRef"]["name"] == t["metadata"]["name"]
assert c["spec"]["warmPoolRef"]["name"] == w["metadata"]["name"]
assert "env" not in c["spec"] and "volumeClaimTemplates" not in c["spec"]
# The NetworkPolicy selects both Pods and has no rule either way.
n = yaml.safe_load(open(sys.argv[5])); r = yaml.safe_load(open(sys.argv[6]))
sel = n["spec"]["podSelector"]["matchLabels"].items()
assert sel <= p["metadata"]["labels"].items() and sel <= r["metadata"]["labels"].items()
assert sorted(n["spec"]["policyTypes"]) == ["Egress", "Ingress"]
assert not n["spec"].get("ingress") and not n["spec"].get("egress")
print("ok")' "$KUBE_DIR/sandboxtemplate.yaml" "$KUBE_DIR/pod-full.yaml" \
		"$KUBE_DIR/sandboxwarmpool.yaml" "$KUBE_DIR/sandboxclaim.yaml" \
		"$KUBE_DIR/networkpolicy.yaml" "$KUBE_DIR/pod-restricted.yaml"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

@test "18-kubernetes: pod-full.yaml: full identity" {
	KUBE_MODE=full
	kube_play "$KUBE_DIR/pod-full.yaml" pod full
	kube_checks pod-full
}

# kube_open_volume SUFFIX VOLUME: the volume VOLUME (audit, tmp) of pod
# SUFFIX, made before the play as a cluster makes an emptyDir: root's,
# 0777, not sticky. Mounted once first, so that podman does not fill it
# from the image's directory (1777) at the play.
kube_open_volume() {
	local vol="$KUBE_PREFIX-$1-$2" dir
	podman volume create "$vol" >/dev/null
	podman run --rm --network none -e LD_PRELOAD= -v "$vol:/mnt" --entrypoint /bin/true \
		"$KUBE_IMAGE"
	dir=$(podman volume inspect --format '{{.Mountpoint}}' "$vol")
	chown 0:0 "$dir"
	chmod 0777 "$dir"
	[ "$(stat -c '%u %a' "$dir")" = "0 777" ]
}

@test "18-kubernetes: pod-full.yaml on volumes of mode 0777: the audit log refused without the init container, made toolrund's with it, /tmp made sticky" {
	KUBE_MODE=full
	# Without volume-modes, as a cluster would run the pod before it:
	# toolrund refuses the volume, and the probe fails naming it.
	kube_open_volume bare audit
	KUBE_NO_INIT=1 kube_play "$KUBE_DIR/pod-full.yaml" pod bare
	[ "$(podman exec "$KUBE_C" stat -c '%u %a' /var/log/toolrun)" = "0 777" ]
	run --separate-stderr podman exec "$KUBE_C" toolrun status --require full
	echo "# without volume-modes: $stderr" >&3
	[ "$status" -eq 1 ]
	[[ $stderr == *"missing audit: audit_log /var/log/toolrun/audit/audit.jsonl is not written"*"/var/log/toolrun is writable by others without the sticky bit (mode 0777): anyone could replace the log"* ]]
	podman kube down "$BATS_FILE_TMPDIR/$KUBE_POD.yaml" >/dev/null 2>&1 || true
	podman pod rm -f "$KUBE_POD" >/dev/null 2>&1 || true
	# The manifest as shipped: the init container makes it toolrund's.
	kube_open_volume open audit
	kube_open_volume open tmp
	kube_play "$KUBE_DIR/pod-full.yaml" pod open
	# /tmp, where the spill files are, sticky as a /tmp is elsewhere.
	[ "$(podman exec "$KUBE_C" stat -c '%u %a' /tmp)" = "0 1777" ]
	run --separate-stderr podman exec "$KUBE_C" toolrun status --require full
	[ "$status" -eq 0 ] || { echo "toolrun status: $status: $output $stderr"; return 1; }
	run --separate-stderr podman exec "$KUBE_C" toolrun status --json
	[ "$(python3 -c 'import json, sys; print(json.load(sys.stdin)["audit"]["path"])' <<<"$output")" = /var/log/toolrun/audit/audit.jsonl ]
	kube_checks pod-full-open
}

@test "18-kubernetes: pod-restricted.yaml: single identity" {
	KUBE_MODE=single
	kube_play "$KUBE_DIR/pod-restricted.yaml" pod restricted
	kube_checks pod-restricted
}

@test "18-kubernetes: sandboxtemplate.yaml's pod template: full identity" {
	KUBE_MODE=full
	kube_play "$KUBE_DIR/sandboxtemplate.yaml" template sandbox
	kube_checks sandboxtemplate
}

@test "18-kubernetes: a policy change reaches a running pod: the mounted ConfigMap, then toolrun reload" {
	KUBE_MODE=full
	kube_play "$KUBE_DIR/pod-full.yaml" pod reload
	run --separate-stderr kube_agent bash -lc 'seq 1 100000'
	[ "$status" -eq 0 ]
	[[ $(ct_markers "$output") == *': lines 101-99900 of 100000; '* ]]
	# The ConfigMap's new content, as the kubelet would write it into
	# the pod's volume: podman made the volume from the ConfigMap at play.
	dir=$(podman volume inspect --format '{{.Mountpoint}}' "$KUBE_POD-toolrun-policy")
	[ -f "$dir/toolrun.conf" ]
	sed 's/^max_lines = 200$/max_lines = 20/' "$dir/toolrun.conf" >"$BATS_TEST_TMPDIR/new.conf"
	! cmp -s "$dir/toolrun.conf" "$BATS_TEST_TMPDIR/new.conf"
	cat "$BATS_TEST_TMPDIR/new.conf" >"$dir/toolrun.conf"
	# Not yet: toolrund reads the file when told.
	run --separate-stderr kube_agent bash -lc 'seq 1 100000'
	[[ $(ct_markers "$output") == *': lines 101-99900 of 100000; '* ]]
	run --separate-stderr podman exec "$KUBE_C" toolrun reload
	echo "# reload: $output $stderr" >&3
	[ "$status" -eq 0 ]
	run --separate-stderr kube_agent bash -lc 'seq 1 100000'
	[ "$status" -eq 0 ]
	echo "# after: $(ct_markers "$output")" >&3
	[[ $(ct_markers "$output") == *': lines 11-99990 of 100000; '* ]]
}

teardown() {
	[ -n "${KUBE_POD-}" ] || return 0
	podman kube down "$BATS_FILE_TMPDIR/$KUBE_POD.yaml" >/dev/null 2>&1 || true
	podman pod rm -f "$KUBE_POD" >/dev/null 2>&1 || true
}
