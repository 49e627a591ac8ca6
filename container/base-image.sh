#!/bin/bash
# base-image.sh: make sure the Docker engine has debian:bookworm-slim.
#
#   container/base-image.sh
#
# 1. The image is already there: nothing to do.
# 2. `docker pull` it, bounded by TOOLRUN_PULL_TIMEOUT seconds (default 20;
#    0 skips the pull, for machines that know no registry answers).
# 3. Build it locally: mmdebstrap --variant=minbase writes Debian bookworm
#    into a tarball, `docker import` turns it into an image tagged
#    debian:bookworm-slim. Its apt sources are the ones the official image
#    has (bookworm, bookworm-updates, bookworm-security), so `apt-get`
#    inside `docker build` works as with the pulled image.
#
# Environment:
#   TOOLRUN_BASE_IMAGE    tag to provide (default debian:bookworm-slim)
#   TOOLRUN_PULL_TIMEOUT  seconds for `docker pull` (default 20, 0: skip)
#   TOOLRUN_MIRROR        Debian mirror (default http://deb.debian.org/debian)
#   TOOLRUN_SECURITY_MIRROR  (default http://deb.debian.org/debian-security)
#
# Each step prints one line on stderr. Exit 0: the image is there.
set -euo pipefail

image=${TOOLRUN_BASE_IMAGE:-debian:bookworm-slim}
pull_timeout=${TOOLRUN_PULL_TIMEOUT:-20}
mirror=${TOOLRUN_MIRROR:-http://deb.debian.org/debian}
security=${TOOLRUN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm

say() { printf 'base-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is not installed"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
	die "no Docker engine answers (is dockerd running?)"

if docker image inspect "$image" >/dev/null 2>&1; then
	say "$image is present"
	exit 0
fi

if [ "$pull_timeout" != 0 ]; then
	say "pulling $image (at most ${pull_timeout}s)"
	if timeout --kill-after=5 "$pull_timeout" docker pull -q "$image" >/dev/null 2>&1; then
		say "$image pulled"
		exit 0
	fi
	say "cannot pull $image; building it locally with mmdebstrap"
fi

command -v mmdebstrap >/dev/null 2>&1 ||
	die "mmdebstrap is not installed (apt-get install mmdebstrap)"
[ "$(id -u)" = 0 ] || command -v newuidmap >/dev/null 2>&1 ||
	die "mmdebstrap needs root, or newuidmap (uidmap) for its unshare mode"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/toolrun-base.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Like the official slim image: no manuals, no documentation beyond the
# copyright files, no translations (kept for every later install too).
start=$(date +%s)
# Merged /usr is set up by mmdebstrap's hook (as debootstrap does) rather
# than by the usrmerge package, which would pull perl into the image.
mmdebstrap --quiet --variant=minbase --format=tar \
	--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-include=/usr/share/locale/locale.alias' \
	--aptopt='Acquire::Languages "none"' \
	"$suite" "$tmp/rootfs.tar" \
	"deb $mirror $suite main" \
	"deb $mirror $suite-updates main" \
	"deb $security $suite-security main" >"$tmp/mmdebstrap.log" 2>&1 || {
	tail -n 30 "$tmp/mmdebstrap.log" >&2
	die "mmdebstrap failed (its last lines are above)"
}

docker import \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'CMD ["bash"]' \
	--message "debian $suite minbase, built by toolrun's container/base-image.sh" \
	"$tmp/rootfs.tar" "$image" >/dev/null ||
	die "docker import failed"
say "$image built locally in $(( $(date +%s) - start ))s ($(du -h "$tmp/rootfs.tar" | cut -f1) tarball)"
