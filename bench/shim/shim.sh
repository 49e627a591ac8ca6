#!/bin/bash
# shim.sh: the PATH shim of the original design (seed 001, section 7.4).
#
# make-shims.sh copies it, once per tool, to DIR/TOOL; with DIR first in
# PATH, running TOOL runs this script, which sends "TOOL\targ1\targ2...\n"
# to shimd over a Unix socket with socat and hands the reply to
# shim-decode, which writes the tool's stdout and stderr and exits with
# its code. See README.md beside it.
#
#   TOOLRUN_SHIM_SOCKET   shimd's socket
#   TOOLRUN_SHIM_DECODE   the shim-decode program
#
# The seed's limitations are kept on purpose: a tab or newline in an
# argument breaks the request, and the tool never sees this stdin, cwd or
# environment.

name=${0##*/}
if [ -z "${TOOLRUN_SHIM_SOCKET-}" ] || [ -z "${TOOLRUN_SHIM_DECODE-}" ]; then
	printf '%s: shim: TOOLRUN_SHIM_SOCKET and TOOLRUN_SHIM_DECODE must be set\n' \
		"$name" >&2
	exit 125
fi
# The script's status is the pipeline's, which must be the decoder's (the
# tool's code), not a failure of socat: pipefail could come in through an
# exported SHELLOPTS.
set +o pipefail

# socat -t: once its stdin (the request) reaches EOF, socat half-closes
# the socket and by default waits only 0.5 s for the reply before it
# exits, so a tool running longer than that would return nothing (seen
# with `sh -c 'sleep 1; echo x'`). shimd closes the connection right after
# the reply, which ends socat at once whatever -t is; -t is only the
# longest a tool may run, and the seed has no timeout: one day.
{
	printf '%s' "$name"
	for arg in "$@"; do
		printf '\t%s' "$arg"
	done
	printf '\n'
} | socat -t 86400 - UNIX-CONNECT:"$TOOLRUN_SHIM_SOCKET" | "$TOOLRUN_SHIM_DECODE"
