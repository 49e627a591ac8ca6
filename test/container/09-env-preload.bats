#!/usr/bin/env bats
# The image gives the library to every process through `ENV LD_PRELOAD`:
# the agent's login shell has it from its first instruction, so the
# profile snippet does not restart bash (the login scripts run once); it
# only declares the shell's stdout and stderr agent-facing. A login shell
# below a listed tool declares nothing, and TOOLRUN=off turns it all off.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

@test "09-env-preload: the image's environment names the library, and it exists" {
	run docker image inspect --format '{{json .Config.Env}}' "$CT_IMAGE"
	[[ $output == *'"LD_PRELOAD=/opt/toolrun/lib/toolrun/libtoolrun.so"'* ]]
	# The shell counts its own mappings itself: a listed tool (grep) exec'd
	# in place would leave this pid to the tool's stand-in, whose maps
	# toolrun keeps from the programs it serves.
	run docker exec -u 1000 "$CT_BOX" bash -c '
		test -r "$LD_PRELOAD" || exit 1
		n=0
		while IFS= read -r line; do
			[[ $line == *"$LD_PRELOAD"* ]] && n=$((n + 1))
		done </proc/$$/maps
		echo "$n"'
	[ "$status" -eq 0 ]
	[ "$output" -ge 1 ]
}

@test "09-env-preload: bash -lc is an agent command: toolrund starts it with its streams declared" {
	# The first exec image of the shell is toolrund's (its parent is the
	# launcher), with the declaration of the pipes toolrund gave it.
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc '
		n=0
		while IFS= read -r -d "" v; do
			case $v in TOOLRUN_AGENT_*) n=$((n + 1)) ;; esac
		done </proc/$$/environ
		read -r parent </proc/$PPID/comm
		echo "initial=$n declared=${TOOLRUN_AGENT_STDOUT:+yes} parent=$parent"'
	[ "$status" -eq 0 ]
	[[ "$output" == "initial=2 declared=yes parent=toolrund-launch"* ]]
	[ -z "$stderr" ]
}

@test "09-env-preload: the login shell's stdout and stderr are declared as they are" {
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc '
		echo "$TOOLRUN_AGENT_STDOUT"; stat -L -c %d:%i /proc/$$/fd/1
		echo "$TOOLRUN_AGENT_STDERR" >&2; stat -L -c %d:%i /proc/$$/fd/2 >&2'
	[ "$status" -eq 0 ]
	[[ ${lines[0]} =~ ^[0-9]+:[0-9]+$ ]]
	[ "${lines[0]}" = "${lines[1]}" ]
	local err=()
	mapfile -t err <<<"$stderr"
	[[ ${err[0]} =~ ^[0-9]+:[0-9]+$ ]]
	[ "${err[0]}" = "${err[1]}" ]
}

@test "09-env-preload: a declaration made by the caller is kept" {
	run docker exec -u 1000 -e TOOLRUN_AGENT_STDOUT=1:2 -e TOOLRUN_AGENT_STDERR=3:4 "$CT_BOX" \
		bash -lc 'echo "$TOOLRUN_AGENT_STDOUT $TOOLRUN_AGENT_STDERR"'
	[ "$output" = "1:2 3:4" ]
}

@test "09-env-preload: shaped for the agent, whole into a pipe, under bash -lc" {
	ct_shaped_and_whole "$CT_BIG" 1000
}

@test "09-env-preload: a shell that is not a login shell has the library too" {
	local before
	before=$(ct_job_count)
	run docker exec -u 1000 "$CT_BOX" bash -c 'cat words.txt'
	[ "$status" -eq 0 ]
	[ "$output" = $'alpha\nbeta\ngamma\nbeta' ]
	ct_wait_job "$before" ' tool=cat .* exit=0 '
}

@test "09-env-preload: a login bash below a listed tool declares nothing" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc \
		'find . -name words.txt -exec bash -lc '\''
			echo "[${TOOLRUN_AGENT_STDOUT-unset}] [${TOOLRUN_AGENT_STDERR-unset}]"
			cat "$1" | wc -l'\'' sh {} \;'
	[ "$status" -eq 0 ]
	[ "$output" = $'[unset] [unset]\n4' ]
	[ -z "$stderr" ]
	ct_wait_job "$before" ' tool=find .* exit=0 '
	ct_wait_job "$before" ' tool=wc .* exit=0 '
}

@test "09-env-preload: TOOLRUN=off: nothing declared, nothing handed to the daemon" {
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -lc \
		"echo \"[\${TOOLRUN_AGENT_STDOUT-unset}]\"; cat $CT_BIG | head -n 1; cat $CT_BIG | wc -l"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "[unset]" ]
	[ "${#lines[@]}" -eq 3 ]
	ct_no_jobs_since "$before"
}

@test "09-env-preload: TOOLRUN=off and an empty LD_PRELOAD: no library at all" {
	run docker exec -u 1000 -e TOOLRUN=off -e LD_PRELOAD= "$CT_BOX" bash -lc 'grep -c libtoolrun /proc/$$/maps'
	[ "$output" = 0 ]
}
