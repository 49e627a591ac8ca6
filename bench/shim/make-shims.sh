#!/bin/bash
# make-shims.sh: install the PATH shim for some tools.
#
#   bench/shim/make-shims.sh DIR TOOL...
#
# Creates DIR and copies shim.sh (beside this script) to DIR/TOOL, mode
# 0755, for each TOOL. Put DIR first in PATH, and start shimd with a PATH
# without DIR, or the daemon would run the shims themselves.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { printf 'make-shims: %s\n' "$*" >&2; exit 1; }

[ $# -ge 2 ] || die "usage: make-shims.sh DIR TOOL..."
dir=$1
shift
for tool in "$@"; do
	case $tool in
	''|*/*|.|..) die "not a tool name: '$tool'" ;;
	esac
done
mkdir -p -- "$dir" || die "cannot create $dir"
for tool in "$@"; do
	install -m 0755 -- "$here/shim.sh" "$dir/$tool" ||
		die "cannot install $dir/$tool"
done
