#!/bin/bash
# demo.sh: build the image, start a hardened box, and show toolrun at work.
#
#   container/demo.sh [--stop]
#
# 1. Builds the image (container/build.sh: the base image is pulled, or
#    built locally when no registry answers).
# 2. Starts the box `demo` (TOOLRUN_DEMO_NAME) with container/run.sh on a
#    new workspace that holds large_file.txt (100000 lines).
# 3. Runs, as an agent would (`docker exec -u sandbox demo bash -lc "..."`):
#    who runs as whom (and a SIGSTOP to toolrund that fails), echo, a grep
#    in a pipeline, a cat cut to its head and tail, the file that
#    keeps the whole of it, the same cat into a pipe, a failing ls
#    (stderr and exit code), the same cat with TOOLRUN=off, and shows the
#    daemon's log lines for them.
#
# The box is left running for you to try (the last lines say how to stop
# it); --stop removes it at the end instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=${TOOLRUN_DEMO_NAME:-demo}
image=${TOOLRUN_IMAGE:-toolrun:latest}
stop=false

case ${1-} in
--stop) stop=true ;;
-h|--help) sed -n '2,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
'') ;;
*) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

bold=$(tput bold 2>/dev/null || true)
dim=$(tput dim 2>/dev/null || true)
plain=$(tput sgr0 2>/dev/null || true)
title() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }

# demo_exec [DOCKER_EXEC_OPTIONS...] COMMAND: run it, show both streams
# apart and the exit code.
demo_exec() {
	local command=${*: -1}
	local opts=("${@:1:$#-1}")
	local out err code=0
	out=$(mktemp) err=$(mktemp)
	local shown=$command
	[[ $command == *"'"* ]] && shown=$(printf '%q' "$command") || shown="'$command'"
	printf '%s$ docker exec -u sandbox %s%s bash -lc %s%s\n' "$bold" "${opts[*]:+${opts[*]} }" "$name" "$shown" "$plain"
	docker exec -u sandbox "${opts[@]}" "$name" bash -lc "$command" >"$out" 2>"$err" || code=$?
	if [ -s "$out" ]; then
		local n
		n=$(wc -l <"$out")
		printf '%sstdout, %d line(s), %d bytes:%s\n' "$dim" "$n" "$(wc -c <"$out")" "$plain"
		if [ "$n" -gt 12 ]; then
			# Long: its first lines, toolrun's marker where it cut the
			# output, its last lines.
			awk -v n="$n" -v dim="$dim" -v plain="$plain" '
				NR <= 4 || NR > n - 3 || /^\.\.\.\[toolrun cut / {
					if (NR > shown + 1)
						printf "  %s[... %d lines not repeated here by the demo ...]%s\n", dim, NR - shown - 1, plain
					print "  " $0
					shown = NR
				}' "$out"
		else
			sed 's/^/  /' "$out"
		fi
	fi
	if [ -s "$err" ]; then
		printf '%sstderr:%s\n' "$dim" "$plain"
		sed 's/^/  /' "$err"
	fi
	printf '%sexit code: %d%s\n' "$dim" "$code" "$plain"
	rm -f "$out" "$err"
}

title "Building $image"
TOOLRUN_IMAGE=$image "$here/build.sh" --quiet

title "Starting the box '$name'"
workspace=$(mktemp -d "${TMPDIR:-/tmp}/toolrun-demo.XXXXXX")
seq -f 'line %.0f of large_file.txt' 1 100000 >"$workspace/large_file.txt"
chmod 0755 "$workspace"
chmod 0644 "$workspace/large_file.txt"
if [ "$(id -u)" = 0 ]; then
	chown -R 1000:1000 "$workspace"
else
	chmod 0777 "$workspace"
fi
echo "workspace: $workspace (large_file.txt: $(wc -l <"$workspace/large_file.txt") lines, $(wc -c <"$workspace/large_file.txt") bytes)"
TOOLRUN_IMAGE=$image "$here/run.sh" --replace "$name" "$workspace" >/dev/null
docker exec -u sandbox "$name" toolrun ping

title "Who runs as whom: the agent is sandbox; toolrund is its own user, which the agent cannot stop"
demo_exec 'id -un; ps -o user=,comm= -C toolrund,toolrund-listen,toolrund-launch; kill -STOP $(pgrep -x toolrund-listen)'

title "A builtin: not a listed tool, toolrun stays out of the way"
demo_exec 'echo hello'

title "A pipeline: cat and grep both run through toolrund"
demo_exec 'cat /etc/passwd | grep root'

title "A large output to the agent: its head and tail, and a marker between (4000 bytes, 200 lines)"
demo_exec 'cat large_file.txt'

title "The whole output is kept, in the file the marker names (readable by the agent's uid alone)"
demo_exec 'f=$(ls -t /tmp/toolrun-output/$(id -u)/*-stdout.log | head -n 1); wc -l "$f"; sed -n 500p "$f"'

title "The same file into a pipe: every byte gets through, only the final output is shaped"
demo_exec 'cat large_file.txt | wc -l'

title "stderr apart from stdout, and the exact exit code"
demo_exec 'ls large_file.txt /nonexistent'

title "toolrun off for one call (docker exec -e TOOLRUN=off): nothing is shaped"
demo_exec -e TOOLRUN=off 'cat large_file.txt | head -n 2; cat large_file.txt | wc -l'

title "What the daemon logged for these calls (docker logs $name)"
docker logs "$name" 2>&1 | grep ' info: job ' | sed 's/^/  /'

title "Done"
if $stop; then
	docker rm -f "$name" >/dev/null
	rm -rf "$workspace"
	echo "The box '$name' and its workspace are removed."
else
	cat <<EOF
The box '$name' is still running. Try it:
  docker exec -u sandbox $name bash -lc 'find / -name "*.conf" 2>/dev/null'
  docker exec -u sandbox -e TOOLRUN=off $name bash -lc 'ls -l'
  docker logs -f $name
Stop and remove it:
  docker rm -f $name && rm -rf $workspace
EOF
fi
