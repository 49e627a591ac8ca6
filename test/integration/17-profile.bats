#!/usr/bin/env bats
# The profile snippet: a login bash restarts itself with the library,
# exactly as it was started, and its commands then reach the daemon. A
# shell that LD_PRELOAD already gives the library (an image's ENV) is not
# restarted, only declared agent-facing; one that has the library hidden
# (below a listed tool) is left alone; TOOLRUN=off leaves every shell alone.

load helpers

setup_file() {
	tr_start
	export TR_HOME="$TR_DIR/home"
	mkdir -p "$TR_HOME"
	# TR_COUNT names a file that gets a line each time a login bash
	# reads its profile: twice when the snippet restarts bash.
	{
		echo '[ -z "${TR_COUNT-}" ] || echo "$$" >>"$TR_COUNT"'
		echo ". '$TR_SNIPPET'"
	} >"$TR_HOME/.bash_profile"
	echo ". '$TR_SNIPPET'" >"$TR_HOME/.profile"
}

teardown_file() {
	tr_stop
}

login() {
	env -u LD_PRELOAD -u BASH_ENV -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR \
		HOME="$TR_HOME" TR_MARK="$TR_MARK" "$@"
}

@test "17-profile-c: bash -lc keeps its string, \$0 and arguments" {
	run --separate-stderr login bash -lc 'echo "$0|$1|$2"; cat /etc/hostname' zero one 'two words'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "zero|one|two words" ]
	[ "${lines[1]}" = "$(cat /etc/hostname)" ]
	[ -z "$stderr" ]
}

@test "17-profile-intercepts: commands of bash -lc reach the daemon" {
	n=$(tr_job_count)
	run login bash -lc 'cat /etc/hostname | wc -c'
	[ "$status" -eq 0 ]
	jobs_since "$n" | grep -q ' tool=cat '
	jobs_since "$n" | grep -q ' tool=wc '
}

@test "17-profile-options: options given on the command line survive the restart" {
	run login bash -l -o pipefail -c 'false | true; echo $?'
	[ "$output" = 1 ]
	run login bash -l -e -c 'false; echo unreachable'
	[ "$status" -eq 1 ]
	[ -z "$output" ]
}

@test "17-profile-login: the restarted shell is still a login shell" {
	run login bash -lc 'shopt -q login_shell && echo login'
	[ "$output" = login ]
}

@test "17-profile-stdin: commands read from stdin run once, through toolrun" {
	n=$(tr_job_count)
	run bash -c "printf 'echo from-stdin\ncat /etc/hostname\n' | env -u LD_PRELOAD -u BASH_ENV HOME='$TR_HOME' TR_MARK='$TR_MARK' bash -l"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = from-stdin ]
	[ "${lines[1]}" = "$(cat /etc/hostname)" ]
	[ "${#lines[@]}" -eq 2 ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "17-profile-script: a script and its arguments" {
	printf 'echo "script:$1:$2"\n' >"$TR_DIR/s.sh"
	run login bash -l "$TR_DIR/s.sh" a 'b c'
	[ "$output" = "script:a:b c" ]
}

@test "17-profile-declares: the login shell's stdout and stderr are declared agent-facing" {
	run login bash -lc 'echo "$TOOLRUN_AGENT_STDOUT $TOOLRUN_AGENT_STDERR"'
	[[ "$output" =~ ^[0-9]+:[0-9]+\ [0-9]+:[0-9]+$ ]]
}

@test "17-profile-off: TOOLRUN=off leaves the shell alone" {
	n=$(tr_job_count)
	run login env TOOLRUN=off bash -lc 'echo "[${LD_PRELOAD-}]"; cat /etc/hostname'
	[ "${lines[0]}" = "[]" ]
	[ "$(tr_job_count)" -eq "$n" ]
}

@test "17-profile-sh: sh reads the snippet without error and passes the library on" {
	run --separate-stderr login sh -lc 'echo "$LD_PRELOAD"'
	[ "$status" -eq 0 ]
	[ "$output" = "$TR_LIB" ]
	[ -z "$stderr" ]
}

@test "17-profile-nested: a login bash started below a listed tool does not restart itself" {
	printf 'x\n' >"$TR_DIR/x"
	n=$(tr_job_count)
	run timeout 120 env -u LD_PRELOAD -u BASH_ENV HOME="$TR_HOME" TR_MARK="$TR_MARK" \
		bash -lc "find $TR_DIR/x -exec bash -lc 'cat \$1; echo depth-ok' sh {} \\;"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'x\ndepth-ok')" ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "17-profile-restart: without the library, a login bash reads its profile twice (the restart)" {
	local count="$BATS_TEST_TMPDIR/count"
	run login TR_COUNT="$count" bash -lc 'true'
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$count")" -eq 2 ]
}

@test "17-profile-env: LD_PRELOAD naming the library: no restart, the profile is read once" {
	local count="$BATS_TEST_TMPDIR/count"
	run --separate-stderr login TR_COUNT="$count" LD_PRELOAD="$TR_LIB" \
		bash -lc 'echo "$0|$1"; shopt -q login_shell && echo login' zero one
	[ "$status" -eq 0 ]
	[ "$output" = $'zero|one\nlogin' ]
	[ -z "$stderr" ]
	[ "$(wc -l <"$count")" -eq 1 ]
}

@test "17-profile-env-declares: LD_PRELOAD naming the library: the shell's stdout and stderr are declared" {
	# The library declares them before the profile runs: a pipe (what
	# `docker exec` gives) is the agent's; a file or /dev/null is not.
	local out="$BATS_TEST_TMPDIR/out"
	login LD_PRELOAD="$TR_LIB" bash -lc 'echo "$TOOLRUN_AGENT_STDOUT $TOOLRUN_AGENT_STDERR"' \
		2>/dev/null | cat >"$out"
	[[ "$(cat "$out")" =~ ^[0-9]+:[0-9]+\ $ ]]
	login LD_PRELOAD="$TR_LIB" bash -lc 'echo "[$TOOLRUN_AGENT_STDOUT $TOOLRUN_AGENT_STDERR]"' \
		>"$out" 2>/dev/null
	[ "$(cat "$out")" = "[ ]" ]
}

@test "17-profile-env-intercepts: LD_PRELOAD naming the library: commands reach the daemon, LD_PRELOAD unchanged" {
	n=$(tr_job_count)
	run --separate-stderr login LD_PRELOAD="$TR_LIB" bash -lc 'cat /etc/hostname; echo "$LD_PRELOAD"'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(cat /etc/hostname)" ]
	[ "${lines[1]}" = "$TR_LIB" ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "17-profile-env-kept: LD_PRELOAD naming the library: a declaration already made is kept" {
	run login LD_PRELOAD="$TR_LIB" TOOLRUN_AGENT_STDOUT=1:2 TOOLRUN_AGENT_STDERR=3:4 \
		bash -lc 'echo "$TOOLRUN_AGENT_STDOUT $TOOLRUN_AGENT_STDERR"'
	[ "$output" = "1:2 3:4" ]
}

@test "17-profile-env-other: the library among other LD_PRELOAD entries counts as preloaded" {
	local count="$BATS_TEST_TMPDIR/count"
	run login TR_COUNT="$count" LD_PRELOAD="libc.so.6:$TR_LIB" bash -lc 'echo "$LD_PRELOAD"'
	[ "$output" = "libc.so.6:$TR_LIB" ]
	[ "$(wc -l <"$count")" -eq 1 ]
}

@test "17-profile-off-env: TOOLRUN=off with LD_PRELOAD naming the library: nothing declared, no restart" {
	local count="$BATS_TEST_TMPDIR/count"
	run login TR_COUNT="$count" TOOLRUN=off LD_PRELOAD="$TR_LIB" \
		bash -lc 'echo "[${TOOLRUN_AGENT_STDOUT-unset}] [${TOOLRUN_AGENT_STDERR-unset}]"'
	[ "$output" = "[unset] [unset]" ]
	[ "$(wc -l <"$count")" -eq 1 ]
}

@test "17-profile-off-count: TOOLRUN=off: the profile is read once" {
	local count="$BATS_TEST_TMPDIR/count"
	run login TR_COUNT="$count" TOOLRUN=off bash -lc 'true'
	[ "$(wc -l <"$count")" -eq 1 ]
}

@test "17-profile-nested-quiet: a login bash below a listed tool declares nothing and reads its profile once" {
	local count="$BATS_TEST_TMPDIR/count"
	printf 'x\n' >"$TR_DIR/x"
	# The outer shell is restarted (two lines); the inner one must add one.
	run timeout 20 env -u LD_PRELOAD -u BASH_ENV -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR \
		HOME="$TR_HOME" TR_MARK="$TR_MARK" TR_COUNT="$count" \
		bash -lc "find $TR_DIR/x -exec bash -lc 'echo \"[\${TOOLRUN_AGENT_STDOUT-unset}] [\${TOOLRUN_AGENT_STDERR-unset}]\"' sh {} \\;"
	[ "$status" -eq 0 ]
	[ "$output" = "[unset] [unset]" ]
	[ "$(wc -l <"$count")" -eq 3 ]
}

@test "17-profile-nested-env: with LD_PRELOAD naming the library, a login bash below a listed tool declares nothing" {
	local count="$BATS_TEST_TMPDIR/count"
	printf 'x\n' >"$TR_DIR/x"
	run timeout 20 env -u BASH_ENV -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR \
		LD_PRELOAD="$TR_LIB" HOME="$TR_HOME" TR_MARK="$TR_MARK" TR_COUNT="$count" \
		bash -lc "find $TR_DIR/x -exec bash -lc 'echo \"[\${TOOLRUN_AGENT_STDOUT-unset}]\"; cat \$1' sh {} \\;"
	[ "$status" -eq 0 ]
	[ "$output" = $'[unset]\nx' ]
	[ "$(wc -l <"$count")" -eq 2 ]
}
