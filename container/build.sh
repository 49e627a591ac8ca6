#!/bin/bash
# build.sh: build toolrun's image from the repository.
#
#   container/build.sh [--image TAG] [--variant base|dev] [--target install]
#                      [--no-cache] [--quiet]
#
# Makes sure debian:bookworm-slim exists (container/base-image.sh: pulled,
# or built locally with mmdebstrap when no registry answers), then runs
# `docker build -f container/Dockerfile` on the repository root. The
# engine's layer cache makes a build with unchanged sources take seconds.
#
#   --variant dev     the development image (python3, git, make, gcc, ...)
#   --target install  toolrun's self-contained tree alone, to copy into
#                     other images (container/README.md)
#
# Environment:
#   TOOLRUN_IMAGE    image tag (default toolrun:latest, toolrun:dev for the
#                    dev variant, toolrun-install:latest for the install
#                    target; --image overrides)
#   TOOLRUN_VARIANT  base or dev (--variant overrides)
#   TOOLRUN_WERROR   -Dwerror of the image's meson build (default true)
#
# Prints the build time and the image size on stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
image=${TOOLRUN_IMAGE-}
variant=${TOOLRUN_VARIANT:-base}
target=
werror=${TOOLRUN_WERROR:-true}
extra=()
quiet=false

say() { printf 'build: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--image) [ $# -ge 2 ] || die "--image needs a value"; image=$2; shift 2 ;;
	--image=*) image=${1#*=}; shift ;;
	--variant) [ $# -ge 2 ] || die "--variant needs a value"; variant=$2; shift 2 ;;
	--variant=*) variant=${1#*=}; shift ;;
	--target) [ $# -ge 2 ] || die "--target needs a value"; target=$2; shift 2 ;;
	--target=*) target=${1#*=}; shift ;;
	--no-cache) extra+=(--no-cache); shift ;;
	--quiet|-q) quiet=true; shift ;;
	-h|--help) sed -n '2,24s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
case $variant in base|dev) ;; *) die "--variant must be base or dev, not '$variant'" ;; esac
case $target in '') ;; install) ;; *) die "--target must be install, not '$target'" ;; esac
if [ -z "$image" ]; then
	if [ "$target" = install ]; then
		image=toolrun-install:latest
	elif [ "$variant" = dev ]; then
		image=toolrun:dev
	else
		image=toolrun:latest
	fi
fi
extra+=(--build-arg "VARIANT=$variant")
[ -z "$target" ] || extra+=(--target "$target")

"$here/base-image.sh"

start=$(date +%s.%N)
log=$(mktemp "${TMPDIR:-/tmp}/toolrun-build.XXXXXX")
trap 'rm -f "$log"' EXIT
say "building $image from $repo"
if $quiet; then
	if ! docker build "${extra[@]}" --build-arg "WERROR=$werror" \
		-f "$here/Dockerfile" -t "$image" "$repo" >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		die "docker build failed (its last lines are above)"
	fi
else
	docker build "${extra[@]}" --build-arg "WERROR=$werror" \
		-f "$here/Dockerfile" -t "$image" "$repo" >&2 ||
		die "docker build failed"
fi
end=$(date +%s.%N)
size=$(docker image inspect --format '{{.Size}}' "$image")
say "$image built in $(printf '%.1f' "$(echo "$end - $start" | bc 2>/dev/null ||
	awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")s; size $((size / 1000000)) MB ($size bytes)"
