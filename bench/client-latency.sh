#!/bin/bash
# client-latency.sh: what a call costs through the Python client
# (clients/python), against a docker exec per call.
#
#   bench/client-latency.sh [--rounds N] [--box NAME] [--keep] [--out DIR]
#
# Starts a box with container/run.sh (the image TOOLRUN_IMAGE, default
# toolrun:latest, built with container/build.sh if missing), unless --box
# names a running one, then runs bench/client-latency.py in it with
# Debian's python3: `docker exec BOX bash -lc true`, box.exec("true") and a
# session's run("true"), interleaved, as medians and ratios (bench/README.md,
# "The Python client"). The box it started is removed at the end unless
# --keep.
#
#   --rounds N   rounds of the three calls (default 100)
#   --box NAME   use this running box
#   --keep       leave the box it started running
#   --out DIR    also write client-latency.json and client-latency.txt there
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
image=${TOOLRUN_IMAGE:-toolrun:latest}
rounds=100
box=
keep=false
out=
bench_name=bench
# shellcheck source=bench/box.sh
. "$here/box.sh"

while [ $# -gt 0 ]; do
	bench_option "$@"
	shift "$bench_took"
done
bench_check_rounds 100000

python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3) || { say "no python3: skipped"; exit 77; }
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || { say "no Docker engine answers: skipped"; exit 77; }

if [ -z "$box" ]; then
	bench_image
	bench_box toolrun-client-bench
fi

args=(--box "$box" --rounds "$rounds")
[ -z "$out" ] || args+=(--out "$out")
PYTHONDONTWRITEBYTECODE=1 "$python" "$here/client-latency.py" "${args[@]}"
