#!/usr/bin/env bash
# Make sure a Docker engine answers: start dockerd in the background when
# none does (as on a fresh machine, where docker.io installs but nothing
# starts it). Exits non-zero if no engine answers within a minute.
set -euo pipefail

if docker info >/dev/null 2>&1; then
	exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
	echo "ensure-docker: no Docker engine and no dockerd to start (install docker.io)" >&2
	exit 1
fi
log=/var/log/toolrun-dockerd.log
echo "ensure-docker: starting dockerd (log: $log)"
nohup dockerd >"$log" 2>&1 </dev/null &
for _ in $(seq 1 120); do
	if docker info >/dev/null 2>&1; then
		echo "ensure-docker: engine ready"
		exit 0
	fi
	sleep 0.5
done
echo "ensure-docker: dockerd did not answer within 60 s; its log:" >&2
tail -n 20 "$log" >&2
exit 1
