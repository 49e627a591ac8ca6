#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine (as root): install what is
# needed, start a Docker engine if none runs, build the base image when no
# registry can provide it, build the toolrun image, start the hardened
# container and show a few commands through toolrun.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/ensure-docker.sh
exec container/demo.sh "$@"
